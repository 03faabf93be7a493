// A socket's connection as requests, calls and connection lines name it:
// "addr:port" both ways for IP; for a unix socket each end's name
// ("unix:/run/php/php-fpm.sock", "unix:@abstract", "unix:" when unnamed)
// and the peer process.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "join/event_set.h"
#include "request/request.h"

namespace jackdaw::join {

// The name a unix socket's description carries, as text: a path, "@name"
// for an abstract one, "" for none; a name longer than the capture keeps
// ends in "...".
std::string UnixName(const SockEntry& e);

// `comms`: tgid -> process name (may be null).
model::Endpoint EndpointOf(const SockEntry& e, const std::unordered_map<uint32_t, std::string>* comms);

}  // namespace jackdaw::join
