#include "testserver/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace jackdaw::testserver {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

template <typename T>
bool ParseUint(std::string_view s, T* out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// Splits a head into its first line and lower-cased header map.
Status SplitHead(std::string_view head, std::string_view* first,
                 std::map<std::string, std::string>* headers) {
  size_t eol = head.find("\r\n");
  *first = head.substr(0, eol);
  if (eol == std::string_view::npos) return Status::Ok();
  std::string_view rest = head.substr(eol + 2);
  while (!rest.empty()) {
    eol = rest.find("\r\n");
    std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 2);
    if (line.empty()) continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0)
      return ErrStatus("malformed header line '%.*s'", static_cast<int>(line.size()), line.data());
    (*headers)[Lower(Trim(line.substr(0, colon)))] = std::string(Trim(line.substr(colon + 1)));
  }
  return Status::Ok();
}

bool HasToken(const std::string& value, std::string_view token) {
  return Lower(value).find(token) != std::string::npos;
}

}  // namespace

std::string HttpResponse::Header(std::string_view name) const {
  auto it = headers.find(Lower(name));
  return it == headers.end() ? std::string() : it->second;
}

StatusOr<HttpRequest> ParseRequestHead(std::string_view head) {
  std::string_view line;
  std::map<std::string, std::string> headers;
  RETURN_IF_ERROR(SplitHead(head, &line, &headers));
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return ErrStatus("malformed request line");
  HttpRequest req;
  req.method = std::string(line.substr(0, sp1));
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (version == "HTTP/1.1") {
    req.minor_version = 1;
  } else if (version == "HTTP/1.0") {
    req.minor_version = 0;
  } else {
    return ErrStatus("unsupported HTTP version");
  }
  if (target.empty() || target.front() != '/') return ErrStatus("request target must start with /");
  req.path = std::string(target.substr(0, target.find('?')));
  auto conn = headers.find("connection");
  if (req.minor_version == 1)
    req.want_keepalive = conn == headers.end() || !HasToken(conn->second, "close");
  else
    req.want_keepalive = conn != headers.end() && HasToken(conn->second, "keep-alive");
  auto len = headers.find("content-length");
  if (len != headers.end() && !ParseUint(std::string_view(len->second), &req.content_length))
    return ErrStatus("bad Content-Length");
  return req;
}

StatusOr<HttpResponse> ParseResponseHead(std::string_view head) {
  std::string_view line;
  HttpResponse resp;
  RETURN_IF_ERROR(SplitHead(head, &line, &resp.headers));
  // "HTTP/1.1 200 OK"
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || line[8] != ' ' ||
      !ParseUint(line.substr(9, 3), &resp.status))
    return ErrStatus("malformed status line '%.*s'", static_cast<int>(line.size()), line.data());
  bool http11 = line[7] == '1';
  std::string conn = resp.Header("connection");
  resp.keepalive = http11 ? !HasToken(conn, "close") : HasToken(conn, "keep-alive");
  return resp;
}

const char* StatusText(int status) {
  switch (status) {
    case 200: return "200 OK";
    case 400: return "400 Bad Request";
    case 404: return "404 Not Found";
    case 405: return "405 Method Not Allowed";
    case 431: return "431 Request Header Fields Too Large";
    case 500: return "500 Internal Server Error";
    default: return "500 Internal Server Error";
  }
}

std::string FormatSpinTrace(const std::vector<SpinRecord>& spins) {
  std::string out;
  for (const SpinRecord& s : spins) {
    if (!out.empty()) out += ',';
    out += s.label + ':' + std::to_string(s.tid) + ':' + std::to_string(s.nominal_ns) + ':' +
           std::to_string(s.cpu_ns) + ':' + std::to_string(s.start_mono_ns) + ':' +
           std::to_string(s.end_mono_ns);
  }
  return out;
}

StatusOr<std::vector<SpinRecord>> ParseSpinTrace(std::string_view value) {
  std::vector<SpinRecord> out;
  while (!value.empty()) {
    size_t comma = value.find(',');
    std::string_view rec = value.substr(0, comma);
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
    std::string_view f[6];
    for (int i = 0; i < 6; ++i) {
      size_t colon = rec.find(':');
      if ((colon == std::string_view::npos) != (i == 5))
        return ErrStatus("bad spin trace record '%.*s'", static_cast<int>(rec.size()), rec.data());
      f[i] = rec.substr(0, colon);
      rec = colon == std::string_view::npos ? std::string_view() : rec.substr(colon + 1);
    }
    SpinRecord s;
    s.label = std::string(f[0]);
    if (!ParseUint(f[1], &s.tid) || !ParseUint(f[2], &s.nominal_ns) ||
        !ParseUint(f[3], &s.cpu_ns) || !ParseUint(f[4], &s.start_mono_ns) ||
        !ParseUint(f[5], &s.end_mono_ns))
      return ErrStatus("bad number in spin trace record for '%s'", s.label.c_str());
    out.push_back(std::move(s));
  }
  return out;
}

Status WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrStatus("write: %s", strerror(errno));
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

namespace {

// Waits until `fd` is readable. Error "stopped" if `stop_fd` fired first,
// "timed out" on timeout.
Status WaitReadable(int fd, int timeout_ms, int stop_fd) {
  pollfd pfd[2] = {{fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
  for (;;) {
    int n = poll(pfd, stop_fd >= 0 ? 2 : 1, timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrStatus("poll: %s", strerror(errno));
    if (n == 0) return ErrStatus("timed out");
    if (stop_fd >= 0 && pfd[1].revents) return ErrStatus("stopped");
    return Status::Ok();
  }
}

// One read() into `buf`; returns bytes read (0 = EOF).
StatusOr<size_t> ReadSome(int fd, std::string& buf, int timeout_ms, int stop_fd) {
  RETURN_IF_ERROR(WaitReadable(fd, timeout_ms, stop_fd));
  char tmp[16384];
  for (;;) {
    ssize_t n = read(fd, tmp, sizeof(tmp));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrStatus("read: %s", strerror(errno));
    buf.append(tmp, static_cast<size_t>(n));
    return static_cast<size_t>(n);
  }
}

}  // namespace

StatusOr<std::string> ReadHead(int fd, std::string& buf, int timeout_ms, int stop_fd) {
  for (;;) {
    size_t end = buf.find("\r\n\r\n");
    if (end != std::string::npos) {
      std::string head = buf.substr(0, end);
      buf.erase(0, end + 4);
      return head;
    }
    if (buf.size() > kMaxHeadBytes) return ErrStatus("head too large");
    ASSIGN_OR_RETURN(size_t n, ReadSome(fd, buf, timeout_ms, stop_fd));
    if (n == 0) {
      if (buf.empty()) return std::string();
      return ErrStatus("connection closed in the middle of a message head");
    }
  }
}

Status ReadBody(int fd, std::string& buf, size_t n, std::string* out, int timeout_ms) {
  while (buf.size() < n) {
    ASSIGN_OR_RETURN(size_t got, ReadSome(fd, buf, timeout_ms, -1));
    if (got == 0)
      return ErrStatus("connection closed after %zu of %zu body bytes", buf.size(), n);
  }
  if (out) out->assign(buf, 0, n);
  buf.erase(0, n);
  return Status::Ok();
}

StatusOr<HttpResponse> ReadResponse(int fd, std::string& buf, int timeout_ms) {
  ASSIGN_OR_RETURN(std::string head, ReadHead(fd, buf, timeout_ms));
  if (head.empty()) return ErrStatus("connection closed before a response");
  ASSIGN_OR_RETURN(HttpResponse resp, ParseResponseHead(head));
  std::string len = resp.Header("content-length");
  if (!len.empty()) {
    size_t n = 0;
    if (!ParseUint(std::string_view(len), &n)) return ErrStatus("bad Content-Length '%s'", len.c_str());
    RETURN_IF_ERROR(ReadBody(fd, buf, n, &resp.body, timeout_ms));
  } else {
    for (;;) {
      ASSIGN_OR_RETURN(size_t got, ReadSome(fd, buf, timeout_ms, -1));
      if (got == 0) break;
    }
    resp.body = std::move(buf);
    buf.clear();
    resp.keepalive = false;
  }
  resp.wire_bytes = head.size() + 4 + resp.body.size();
  return resp;
}

StatusOr<sockaddr_in> ResolveIpv4(const std::string& host, uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) == 1) return addr;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || !res) return ErrStatus("cannot resolve host '%s': %s", host.c_str(), gai_strerror(rc));
  addr.sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
  freeaddrinfo(res);
  return addr;
}

}  // namespace jackdaw::testserver
