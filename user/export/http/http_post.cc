#include "export/http/http_post.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace jackdaw::http {

StatusOr<HttpUrl> ParseHttpUrl(const std::string& url, const UrlRole& role) {
  const char* opt = role.option;
  if (url.rfind("https://", 0) == 0)
    return ErrStatus("%s %s: https is not supported; %s", opt, url.c_str(), role.https_hint);
  if (url.rfind("http://", 0) != 0)
    return ErrStatus("%s %s: not an http:// URL; give one like %s", opt, url.c_str(), role.example);
  std::string rest = url.substr(7);
  HttpUrl out;
  const size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    out.path = rest.substr(slash);
    rest.resize(slash);
  }
  std::string port;
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    if (close == std::string::npos)
      return ErrStatus("%s %s: unclosed [ in the host; write an IPv6 host as [::1]:PORT", opt, url.c_str());
    out.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') return ErrStatus("%s %s: expected :PORT after ]", opt, url.c_str());
      port = rest.substr(close + 2);
    }
  } else {
    const size_t colon = rest.rfind(':');
    out.host = rest.substr(0, colon);
    if (colon != std::string::npos) port = rest.substr(colon + 1);
  }
  if (out.host.empty()) return ErrStatus("%s %s: no host; give one like %s", opt, url.c_str(), role.example);
  if (!port.empty()) {
    char* end = nullptr;
    const unsigned long p = strtoul(port.c_str(), &end, 10);
    if (*end != '\0' || p == 0 || p > 65535)
      return ErrStatus("%s %s: port '%s' is not a number from 1 to 65535", opt, url.c_str(), port.c_str());
    out.port = static_cast<uint16_t>(p);
  }
  return out;
}

namespace {

using Clock = std::chrono::steady_clock;

int MsLeft(Clock::time_point deadline) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return ms > 0 ? static_cast<int>(ms) : 0;
}

// Waits for `events` on fd until the deadline; false on timeout or error.
bool Wait(int fd, short events, Clock::time_point deadline) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int left = MsLeft(deadline);
    if (left == 0) return false;
    const int n = poll(&p, 1, left);
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

// A chunked body (what ClickHouse sends) as its plain bytes; a body cut
// short keeps the chunks that came whole.
std::string Unchunk(const std::string& in) {
  std::string out;
  size_t pos = 0;
  while (pos < in.size()) {
    const size_t eol = in.find("\r\n", pos);
    if (eol == std::string::npos) break;
    const size_t n = strtoul(in.c_str() + pos, nullptr, 16);
    if (n == 0 || eol + 2 + n > in.size()) break;
    out.append(in, eol + 2, n);
    pos = eol + 2 + n + 2;
  }
  return out;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

std::string FirstLine(const std::string& body, size_t max) {
  size_t start = body.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return "";
  size_t end = body.find_first_of("\r\n", start);
  if (end == std::string::npos) end = body.size();
  return body.substr(start, std::min(end - start, max));
}

HttpResult Post(const HttpUrl& url, const std::string& body, const PostOptions& options) {
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(options.timeout_ms);
  HttpResult res;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* ai = nullptr;
  const std::string port = std::to_string(url.port);
  if (int rc = getaddrinfo(url.host.c_str(), port.c_str(), &hints, &ai); rc != 0) {
    res.error = std::string("cannot resolve ") + url.host + ": " + gai_strerror(rc);
    res.unreachable = true;
    return res;
  }
  Fd sock;
  res.error = "no address";
  res.unreachable = true;
  for (addrinfo* a = ai; a; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int err = 0;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        if (!Wait(fd, POLLOUT, deadline)) {
          err = ETIMEDOUT;
        } else {
          socklen_t len = sizeof(err);
          getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        }
      }
    }
    if (err == 0) {
      sock.fd = fd;
      break;
    }
    close(fd);
    res.error = err == ECONNREFUSED ? "connection refused" : strerror(err);
  }
  freeaddrinfo(ai);
  if (sock.fd < 0) return res;
  res.unreachable = false;
  res.error.clear();

  // An IPv6 literal is bracketed in Host, as in the URL.
  const std::string host = url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host;
  std::string out = "POST " + url.path + " HTTP/1.1\r\nHost: " + host + ":" + port +
                    "\r\nContent-Type: " + options.content_type + "\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\nConnection: close\r\nUser-Agent: jackdaw\r\n\r\n";
  out += body;
  size_t sent = 0;
  while (sent < out.size()) {
    const ssize_t n = send(sock.fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!Wait(sock.fd, POLLOUT, deadline)) return res.error = "timed out sending", res;
    } else {
      return res.error = std::string("send failed: ") + strerror(errno), res;
    }
  }
  // The status line is all a sender needs; the body is read (bounded) where
  // the caller wants it: an error's explanation, a query's answer.
  std::string in;
  char buf[4096];
  // Done at the status line, or with the body: max_body of it, its
  // Content-Length, or its last chunk (a server may keep the connection
  // open despite Connection: close).
  auto have_enough = [&] {
    if (options.max_body == 0) return in.find("\r\n") != std::string::npos;
    const size_t head_end = in.find("\r\n\r\n");
    if (head_end == std::string::npos) return false;
    const size_t got = in.size() - (head_end + 4);
    if (got >= options.max_body) return true;
    const std::string head = in.substr(0, head_end);
    if (const size_t cl = head.find("Content-Length: "); cl != std::string::npos)
      return got >= strtoul(head.c_str() + cl + 16, nullptr, 10);
    if (head.find("Transfer-Encoding: chunked") != std::string::npos)
      return got >= 5 && in.compare(in.size() - 5, 5, "0\r\n\r\n") == 0;
    return false;
  };
  while (!have_enough() && in.size() < 8192 + options.max_body) {
    const ssize_t n = recv(sock.fd, buf, sizeof(buf), 0);
    if (n > 0) {
      in.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno == EAGAIN || errno == EINTR) {
      if (!Wait(sock.fd, POLLIN, deadline)) return res.error = "timed out waiting for the response", res;
    } else {
      return res.error = std::string("receive failed: ") + strerror(errno), res;
    }
  }
  // "HTTP/1.1 200 OK"
  if (in.rfind("HTTP/1.", 0) != 0 || in.size() < 12) return res.error = "not an HTTP response", res;
  res.status = atoi(in.c_str() + 9);
  if (res.status < 100 || res.status > 599) return res.status = 0, res.error = "bad HTTP status line", res;
  if (options.max_body) {
    const size_t head_end = in.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      res.body = in.substr(head_end + 4, options.max_body);
      if (in.substr(0, head_end).find("Transfer-Encoding: chunked") != std::string::npos) res.body = Unchunk(res.body);
    }
  }
  return res;
}

}  // namespace jackdaw::http
