// An HTTP receiver for tests (an OTLP/HTTP receiver, a ClickHouse that
// takes every insert): a thread on 127.0.0.1 (a free port)
// that reads each POST (head and Content-Length body), answers with the
// next scripted status (then 200 once the script is used up) and keeps the
// bodies it answered 2xx to. One request per connection, as the client
// sends them.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace jackdaw::http {

class TestReceiver {
 public:
  explicit TestReceiver(std::deque<int> script = {});
  ~TestReceiver();

  uint16_t port() const { return port_; }
  std::string url(const std::string& path = "/v1/traces") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  int posts() const { return posts_.load(); }         // every POST read, whatever answered
  std::vector<std::string> accepted() const;          // bodies answered 2xx
  std::vector<std::string> heads() const;             // request heads, in order

 private:
  void Run();
  void Serve(int fd);

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> posts_{0};
  mutable std::mutex mu_;
  std::deque<int> script_;
  std::vector<std::string> accepted_, heads_;
  std::thread thread_;
};

// A loopback TCP port nothing listened on a moment ago: a receiver (or a
// server a test starts) that is not there yet.
uint16_t UnusedLoopbackPort();

}  // namespace jackdaw::http
