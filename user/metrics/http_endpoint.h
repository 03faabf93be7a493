// The HTTP endpoint Prometheus scrapes: GET /metrics on ADDR:PORT.
//
// Like the control socket, it never blocks its caller: the session's main
// loop calls Serve() between drains; it accepts whatever is pending, reads
// request heads from non-blocking sockets and writes responses as far as
// the peer takes them, keeping the rest for the next call. The body is
// rendered (the render callback) only when a complete GET /metrics head has
// arrived, so an idle endpoint costs one accept4() per call. One request
// per connection (Connection: close), which is how Prometheus' scraper and
// curl behave well. Limits: an 8 KB request head, 5 s from connect to send
// it and 10 s in all, both counted from the connect so a client trickling
// bytes cannot extend them; beyond them the connection gets an error status
// and is closed. Connections are budgeted (16): a new one beyond the budget
// evicts the oldest, so clients that connect and stay silent cannot keep a
// scrape out. At most half the budget is accepted per Serve(), so a
// connection is always read once before a burst of newer ones can evict it.
#pragma once

#include <poll.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace jackdaw::metrics {

class HttpEndpoint {
 public:
  using Render = std::function<std::string()>;

  // `address` is HOST:PORT: 127.0.0.1:9464, [::1]:9464, :9464 or
  // 0.0.0.0:9464 (every interface), localhost:9464; port 0 picks a free one.
  static StatusOr<std::unique_ptr<HttpEndpoint>> Create(const std::string& address, Render render);
  ~HttpEndpoint();

  void Serve();
  // As ControlServer's: what the loop waits on, and whether Serve() has
  // work left without a new event (a response still being written).
  void AppendPollFds(std::vector<pollfd>* fds) const;
  bool busy() const { return !clients_.empty(); }
  // A warning line when the endpoint listens beyond this host (not a
  // loopback address); empty otherwise.
  std::string ExposureWarning() const;
  // The address actually bound, as HOST:PORT (the port resolved).
  const std::string& bound() const { return bound_; }
  uint16_t port() const { return port_; }
  uint64_t scrapes() const { return scrapes_; }

 private:
  struct Client {
    int fd = -1;
    std::string in, out;
    size_t sent = 0;
    uint64_t since_ms = 0;
    bool answered = false;
  };
  HttpEndpoint() = default;
  void Respond(Client* c);
  void AcceptPending(uint64_t now);
  void EvictOldest();

  int listen_fd_ = -1;
  Render render_;
  std::vector<Client> clients_;
  std::string bound_;
  uint16_t port_ = 0;
  bool loopback_ = false;
  uint64_t scrapes_ = 0;
};

// Splits HOST:PORT (HOST may be empty or [v6]); fails with a line naming
// the expected form.
Status ParseHostPort(const std::string& address, std::string* host, uint16_t* port);

}  // namespace jackdaw::metrics
