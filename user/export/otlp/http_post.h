// A minimal HTTP/1.1 client for OTLP/HTTP: one POST per connection
// (Connection: close), plain http:// only, every step bounded by a
// deadline so a receiver that accepts and never answers cannot hang the
// exporter. TLS is left to a Collector on the same host (docs/otlp.md).
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace jackdaw::otlp {

struct HttpUrl {
  std::string host;  // "127.0.0.1", "collector", "::1"
  uint16_t port = 80;
  std::string path = "/";  // "/v1/traces"
};

// http://HOST[:PORT][/PATH]; [v6] hosts. https:// and other schemes are
// refused with one line saying what to do instead.
StatusOr<HttpUrl> ParseHttpUrl(const std::string& url);

struct HttpResult {
  // The response's status code; 0 when none came (see `error`).
  int status = 0;
  // Why there was no response: "connection refused", "timed out", ...
  std::string error;
  // The receiver was not there at all (refused, unreachable, no address):
  // retried like a 503.
  bool unreachable = false;
};

// POSTs `body` as application/json to `url`, within `timeout_ms` in all.
HttpResult PostJson(const HttpUrl& url, const std::string& body, int timeout_ms);

}  // namespace jackdaw::otlp
