#include "export/http/test_receiver.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace jackdaw::http {

TestReceiver::TestReceiver(std::deque<int> script) : script_(std::move(script)) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      listen(listen_fd_, 64) != 0 || getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error(std::string("test receiver: ") + strerror(errno));
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { Run(); });
}

TestReceiver::~TestReceiver() {
  stop_ = true;
  thread_.join();
  close(listen_fd_);
}

std::vector<std::string> TestReceiver::accepted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return accepted_;
}

std::vector<std::string> TestReceiver::heads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return heads_;
}

void TestReceiver::Run() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Serve(fd);
    close(fd);
  }
}

void TestReceiver::Serve(int fd) {
  std::string in;
  char buf[65536];
  size_t head_end = std::string::npos, body_len = 0;
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 5000) <= 0) return;
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return;
    in.append(buf, static_cast<size_t>(n));
    if (head_end == std::string::npos && (head_end = in.find("\r\n\r\n")) != std::string::npos) {
      const size_t cl = in.find("Content-Length: ");
      if (cl != std::string::npos && cl < head_end) body_len = strtoul(in.c_str() + cl + 16, nullptr, 10);
    }
    if (head_end != std::string::npos && in.size() >= head_end + 4 + body_len) break;
  }
  posts_++;
  int status = 200;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!script_.empty()) {
      status = script_.front();
      script_.pop_front();
    }
    heads_.push_back(in.substr(0, head_end));
    if (status >= 200 && status < 300) accepted_.push_back(in.substr(head_end + 4, body_len));
  }
  const std::string body = status == 200 ? "{}" : "{\"code\":14,\"message\":\"busy\"}";
  const std::string out = "HTTP/1.1 " + std::to_string(status) + (status == 200 ? " OK" : " Busy") +
                          "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                          "\r\nConnection: close\r\n\r\n" + body;
  (void)!send(fd, out.data(), out.size(), MSG_NOSIGNAL);
}

uint16_t UnusedLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

}  // namespace jackdaw::http
