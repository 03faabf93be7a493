#include "join/sock_endpoint.h"

#include <algorithm>
#include <cstring>

#include "join/endpoint_format.h"

namespace jackdaw::join {

std::string UnixName(const SockEntry& e) {
  const size_t kept = std::min<size_t>(e.path_len, sizeof(e.path));
  if (kept == 0) return "";
  std::string name;
  if (e.path[0] == '\0') {
    // Abstract: the leading NUL is what makes it one; the rest is bytes,
    // NULs included, shown as '@' the way ss(8) and /proc/net/unix do.
    name = "@";
    for (size_t i = 1; i < kept; i++) name += e.path[i] ? e.path[i] : '@';
  } else {
    name.assign(e.path, strnlen(e.path, kept));
  }
  // The kernel counts a path's terminating NUL in its length (an abstract
  // name has none): a path of exactly JDW_UNIX_PATH_LEN bytes is whole.
  const size_t full = e.path[0] == '\0' ? e.path_len : e.path_len - 1u;
  if (full > sizeof(e.path)) name += "...";
  return name;
}

model::Endpoint EndpointOf(const SockEntry& e, const std::unordered_map<uint32_t, std::string>* comms) {
  if (e.family != kAfUnix)
    return model::Endpoint{FormatAddr(e.family, e.saddr, e.sport), FormatAddr(e.family, e.daddr, e.dport)};
  model::Endpoint ep;
  const std::string name = UnixName(e);
  ep.local = "unix:" + ((e.unix_flags & JDW_UNIX_PATH_OWN) ? name : "");
  ep.remote = "unix:" + ((e.unix_flags & JDW_UNIX_PATH_PEER) ? name : "");
  ep.peer_tgid = e.peer_tgid;
  if (comms && e.peer_tgid)
    if (auto it = comms->find(e.peer_tgid); it != comms->end()) ep.peer_comm = it->second;
  return ep;
}

}  // namespace jackdaw::join
