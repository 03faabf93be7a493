// A minimal HTTP/1.1 client for the exporters (OTLP/HTTP, ClickHouse's
// HTTP interface): one POST per connection (Connection: close), plain
// http:// only, every step bounded by a deadline so a receiver that accepts
// and never answers cannot hang the exporter. TLS is left to a proxy or
// Collector on the same host (docs/otlp.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace jackdaw::http {

struct HttpUrl {
  std::string host;  // "127.0.0.1", "collector", "::1"
  uint16_t port = 80;
  std::string path = "/";  // "/v1/traces", "/?user=jackdaw"
};

// How ParseHttpUrl names the URL in its errors: the option that gave it and
// an example of a good one.
struct UrlRole {
  const char* option = "--otlp";
  const char* example = "http://127.0.0.1:4318/v1/traces";
  // What to do about https: where TLS should be terminated instead.
  const char* https_hint = "send to a local OpenTelemetry Collector over http://127.0.0.1:4318/v1/traces and let it "
                           "forward with TLS";
};

// http://HOST[:PORT][/PATH]; [v6] hosts. https:// and other schemes are
// refused with one line saying what to do instead.
StatusOr<HttpUrl> ParseHttpUrl(const std::string& url, const UrlRole& role = {});

struct HttpResult {
  // The response's status code; 0 when none came (see `error`).
  int status = 0;
  // Why there was no response: "connection refused", "timed out", ...
  std::string error;
  // The receiver was not there at all (refused, unreachable, no address):
  // retried like a 503.
  bool unreachable = false;
  // The response's body, up to PostOptions::max_body bytes (ClickHouse
  // explains a refused insert there; a query's answer is there).
  std::string body;
};

struct PostOptions {
  std::string content_type = "application/json";
  int timeout_ms = 10000;  // in all: connect to the end of what is read
  size_t max_body = 0;     // 0: the status line only
};

HttpResult Post(const HttpUrl& url, const std::string& body, const PostOptions& options);

// POSTs `body` as application/json to `url`, within `timeout_ms` in all.
inline HttpResult PostJson(const HttpUrl& url, const std::string& body, int timeout_ms) {
  PostOptions o;
  o.timeout_ms = timeout_ms;
  return Post(url, body, o);
}

// The first line of a response body, at most `max` bytes: what an error
// message quotes.
std::string FirstLine(const std::string& body, size_t max = 300);

}  // namespace jackdaw::http
