// Just enough HTTP/1.1 for the validation workload, shared by the server, the
// load driver and the tests: request/response head parsing, blocking socket
// helpers, and the X-Spin-Trace header that reports how each spin ran.
//
// Messages are small and bodies always carry Content-Length, so a head is
// read whole (up to kMaxHeadBytes) and the body by its length; no chunked
// encoding, no pipelining (the load driver waits for each response).
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "testserver/spin.h"

namespace jackdaw::testserver {

inline constexpr size_t kMaxHeadBytes = 16 * 1024;

// Response headers the server adds.
inline constexpr char kHeaderRequestId[] = "X-Request-Id";   // the USDT req_id
inline constexpr char kHeaderSpinCpuNs[] = "X-Spin-Cpu-Ns";  // sum of spin cpu_ns
inline constexpr char kHeaderSpinTrace[] = "X-Spin-Trace";   // FormatSpinTrace

struct HttpRequest {
  std::string method;
  std::string path;     // target without the query string
  int minor_version = 1;  // HTTP/1.<minor>
  bool want_keepalive = false;  // by version default and Connection header
  size_t content_length = 0;
};

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // keys lower-cased
  std::string body;
  size_t wire_bytes = 0;  // head + body as received
  bool keepalive = false;  // the server will keep the connection open

  // Header value or "" (name matched case-insensitively).
  std::string Header(std::string_view name) const;
};

// Parses a request head (request line + headers, without the final blank
// line). Errors are for a 400 response.
StatusOr<HttpRequest> ParseRequestHead(std::string_view head);
// Parses a response head; fills status, headers and keepalive.
StatusOr<HttpResponse> ParseResponseHead(std::string_view head);

// "200 OK", "404 Not Found", ...
const char* StatusText(int status);

// ---- spin trace: "label:tid:nominal_ns:cpu_ns:start_mono_ns:end_mono_ns"
// records joined by ",", in the order the spins started.
std::string FormatSpinTrace(const std::vector<SpinRecord>& spins);
StatusOr<std::vector<SpinRecord>> ParseSpinTrace(std::string_view value);

// ---- sockets
// Writes all of `data` (retrying on EINTR/short writes, MSG_NOSIGNAL).
Status WriteAll(int fd, std::string_view data);

// Reads from `fd` into `buf` until it holds "\r\n\r\n". On success the head
// (without the blank line) is returned and removed from `buf`, which keeps
// any bytes after it. Returns "" with OK status on a clean EOF before any
// byte. If `stop_fd` >= 0, becoming readable aborts the wait (status error
// "stopped"); `timeout_ms` < 0 waits forever.
StatusOr<std::string> ReadHead(int fd, std::string& buf, int timeout_ms, int stop_fd = -1);

// Reads exactly `n` bytes, taking `buf`'s leftovers first.
Status ReadBody(int fd, std::string& buf, size_t n, std::string* out, int timeout_ms);

// Reads one complete response (head + Content-Length body, or until EOF if
// the server sent no length).
StatusOr<HttpResponse> ReadResponse(int fd, std::string& buf, int timeout_ms);

// Resolves "HOST" (name or dotted quad) + port to an IPv4 address.
StatusOr<sockaddr_in> ResolveIpv4(const std::string& host, uint16_t port);

}  // namespace jackdaw::testserver
