#include "metrics/http_endpoint.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "metrics/exposition.h"

namespace jackdaw::metrics {
namespace {

// A scrape takes milliseconds; a budget this small still fits several
// scrapers at once and bounds what silent clients cost.
constexpr size_t kMaxClients = 16;
constexpr size_t kMaxHead = 8192;
constexpr uint64_t kHeadTimeoutMs = 5000;
constexpr uint64_t kConnectionTimeoutMs = 10000;

uint64_t NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1'000'000;
}

std::string Response(int code, const char* reason, const char* type, const std::string& body) {
  return fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}", code,
                     reason, type, body.size(), body);
}

}  // namespace

Status ParseHostPort(const std::string& address, std::string* host, uint16_t* port) {
  const auto bad = [&] {
    return ErrStatus("bad --metrics '%s': expected HOST:PORT, e.g. 127.0.0.1:9464, [::1]:9464 or :9464 (every "
                     "interface)",
                     address.c_str());
  };
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return bad();
  std::string h = address.substr(0, colon);
  const std::string p = address.substr(colon + 1);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  else if (h.find(':') != std::string::npos) return bad();  // a bare v6 address needs brackets
  if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos) return bad();
  const unsigned long v = std::stoul(p);
  if (v > 65535) return bad();
  *host = h;
  *port = static_cast<uint16_t>(v);
  return Status::Ok();
}

StatusOr<std::unique_ptr<HttpEndpoint>> HttpEndpoint::Create(const std::string& address, Render render) {
  std::string host;
  uint16_t port = 0;
  RETURN_IF_ERROR(ParseHostPort(address, &host, &port));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0) return ErrStatus("--metrics %s: cannot resolve '%s': %s", address.c_str(), host.c_str(), gai_strerror(rc));
  std::unique_ptr<HttpEndpoint> e(new HttpEndpoint());
  e->render_ = std::move(render);
  std::string why = "no address";
  // AI_PASSIVE with no host lists the v4 wildcard first; take the first
  // address that binds.
  for (addrinfo* ai = res; ai && e->listen_fd_ < 0; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 64) != 0) {
      why = strerror(errno);
      close(fd);
      continue;
    }
    e->listen_fd_ = fd;
  }
  freeaddrinfo(res);
  if (e->listen_fd_ < 0)
    return ErrStatus("--metrics %s: cannot listen: %s (is the port in use? pick another)", address.c_str(),
                     why.c_str());
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  getsockname(e->listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len);
  char name[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, name, sizeof(name));
    e->port_ = ntohs(a->sin6_port);
    e->loopback_ = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr) ||
                   (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) && a->sin6_addr.s6_addr[12] == 127);
    e->bound_ = fmt::format("[{}]:{}", name, e->port_);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, name, sizeof(name));
    e->port_ = ntohs(a->sin_port);
    e->loopback_ = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    e->bound_ = fmt::format("{}:{}", name, e->port_);
  }
  return e;
}

std::string HttpEndpoint::ExposureWarning() const {
  if (loopback_) return "";
  return fmt::format("--metrics {} is reachable from other hosts (the metrics name this host's processes and "
                     "load): use 127.0.0.1:{} unless a remote Prometheus must scrape it",
                     bound_, port_);
}

HttpEndpoint::~HttpEndpoint() {
  for (Client& c : clients_) close(c.fd);
  if (listen_fd_ >= 0) close(listen_fd_);
}

void HttpEndpoint::Respond(Client* c) {
  c->answered = true;
  const size_t eol = c->in.find("\r\n");
  const std::string line = c->in.substr(0, eol == std::string::npos ? c->in.find('\n') : eol);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string::npos ? std::string::npos : line.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos || line.compare(sp2 + 1, 5, "HTTP/") != 0) {
    c->out = Response(400, "Bad Request", "text/plain", "not an HTTP request: GET /metrics\n");
    return;
  }
  const std::string method = line.substr(0, sp1);
  std::string path = line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (const size_t q = path.find('?'); q != std::string::npos) path.resize(q);
  if (method != "GET" && method != "HEAD") {
    c->out = Response(405, "Method Not Allowed", "text/plain", "only GET /metrics is served\n");
  } else if (path == "/metrics") {
    ++scrapes_;
    c->out = Response(200, "OK", kContentType, render_());
  } else if (path == "/") {
    c->out = Response(200, "OK", "text/plain", "jackdaw live: Prometheus metrics at /metrics\n");
  } else {
    c->out = Response(404, "Not Found", "text/plain", "no such page: metrics are at /metrics\n");
  }
  if (method == "HEAD") c->out.resize(c->out.find("\r\n\r\n") + 4);
}

void HttpEndpoint::AppendPollFds(std::vector<pollfd>* fds) const {
  fds->push_back({listen_fd_, POLLIN, 0});
  for (const Client& c : clients_) fds->push_back({c.fd, static_cast<short>(c.answered ? POLLOUT : POLLIN), 0});
}

void HttpEndpoint::EvictOldest() {
  // Clients are kept in connect order: the front one has had the most time.
  Client& c = clients_.front();
  if (!c.answered) {
    const std::string r = Response(503, "Service Unavailable", "text/plain", "too many connections\n");
    (void)!send(c.fd, r.data(), r.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  close(c.fd);
  clients_.erase(clients_.begin());
}

void HttpEndpoint::AcceptPending(uint64_t now) {
  for (size_t taken = 0; taken < kMaxClients / 2; ++taken) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) break;
    if (clients_.size() >= kMaxClients) EvictOldest();
    Client c;
    c.fd = fd;
    c.since_ms = now;
    clients_.push_back(std::move(c));
  }
}

void HttpEndpoint::Serve() {
  const uint64_t now = NowMs();
  AcceptPending(now);
  for (size_t i = clients_.size(); i-- > 0;) {
    Client& c = clients_[i];
    bool done = false;
    if (!c.answered) {
      char buf[2048];
      bool eof = false;
      for (;;) {
        ssize_t n = recv(c.fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n > 0) {
          c.in.append(buf, static_cast<size_t>(n));
          if (c.in.size() > kMaxHead) break;
          continue;
        }
        if (n == 0) eof = true;
        break;
      }
      // Measured to the head's end: one read can bring a whole over-long head.
      const size_t head_end = std::min(c.in.find("\r\n\r\n"), c.in.find("\n\n"));
      const bool head = head_end != std::string::npos && head_end <= kMaxHead;
      if (head) {
        Respond(&c);
      } else if (c.in.size() > kMaxHead) {
        c.answered = true;
        c.out = Response(431, "Request Header Fields Too Large", "text/plain", "request head over 8 KB\n");
      } else if (eof) {
        done = true;
      } else if (now - c.since_ms > kHeadTimeoutMs) {
        c.answered = true;
        c.out = Response(408, "Request Timeout", "text/plain", "no complete request head within 5 s\n");
      }
    }
    if (c.answered && !done) {
      while (c.sent < c.out.size()) {
        ssize_t n = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n <= 0) {
          if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) done = true;
          break;
        }
        c.sent += static_cast<size_t>(n);
      }
      if (c.sent >= c.out.size() || now - c.since_ms > kConnectionTimeoutMs) done = true;
    }
    if (done) {
      close(c.fd);
      clients_.erase(clients_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
}

}  // namespace jackdaw::metrics
