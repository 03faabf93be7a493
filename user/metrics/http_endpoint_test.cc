#include "metrics/http_endpoint.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

namespace jackdaw::metrics {
namespace {

// Serves on a background thread (the session's main loop).
struct Serving {
  explicit Serving(HttpEndpoint* e) : e(e), t([this] {
    while (!stop) {
      this->e->Serve();
      usleep(1000);
    }
  }) {}
  ~Serving() {
    stop = true;
    t.join();
  }
  HttpEndpoint* e;
  std::atomic<bool> stop{false};
  std::thread t;
};

std::string Exchange(uint16_t port, const std::string& request) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return "connect failed";
  (void)!write(fd, request.data(), request.size());
  shutdown(fd, SHUT_WR);  // the whole request is sent
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

TEST(HttpEndpoint, ServesMetricsWithTheExpositionContentType) {
  // A body larger than a socket buffer: written over several Serve() calls.
  const std::string body(3'000'000, 'x');
  auto e = HttpEndpoint::Create("127.0.0.1:0", [&] { return body; });
  ASSERT_TRUE(e.ok()) << e.status().message();
  ASSERT_NE((*e)->port(), 0);
  EXPECT_EQ((*e)->bound(), "127.0.0.1:" + std::to_string((*e)->port()));
  Serving s(e->get());
  const std::string r = Exchange((*e)->port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r.substr(0, 100);
  EXPECT_NE(r.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"), std::string::npos);
  EXPECT_NE(r.find("Content-Length: 3000000\r\n"), std::string::npos);
  EXPECT_EQ(r.size() - r.find("\r\n\r\n") - 4, body.size());
}

TEST(HttpEndpoint, OtherRequestsGetErrorsAndTheEndpointGoesOn) {
  int renders = 0;
  auto e = HttpEndpoint::Create("127.0.0.1:0", [&] { return std::to_string(++renders); });
  ASSERT_TRUE(e.ok());
  Serving s(e->get());
  const uint16_t p = (*e)->port();
  EXPECT_EQ(Exchange(p, "GET /nope HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(Exchange(p, "POST /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405", 0), 0u);
  EXPECT_EQ(Exchange(p, std::string("\xff\x00garbage\r\n\r\n", 13)).rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(Exchange(p, std::string(9000, 'A')).rfind("HTTP/1.1 431", 0), 0u);
  EXPECT_EQ(Exchange(p, ""), "");  // connect and close: nothing rendered
  EXPECT_EQ(renders, 0);
  const std::string r = Exchange(p, "GET /metrics?x=1 HTTP/1.0\r\n\r\n");
  EXPECT_EQ(r.substr(r.find("\r\n\r\n") + 4), "1");
  EXPECT_EQ((*e)->scrapes(), 1u);
}

TEST(HttpEndpoint, AHeadOver8KbIsRefusedEvenWhenItArrivesWhole) {
  int renders = 0;
  auto e = HttpEndpoint::Create("127.0.0.1:0", [&] { return std::to_string(++renders); });
  ASSERT_TRUE(e.ok());
  Serving s(e->get());
  const std::string head = "GET /metrics HTTP/1.1\r\nX-Pad: " + std::string(8500, 'a') + "\r\n\r\n";
  EXPECT_EQ(Exchange((*e)->port(), head).rfind("HTTP/1.1 431", 0), 0u);
  EXPECT_EQ(renders, 0);
}

TEST(HttpEndpoint, AddressForms) {
  std::string h;
  uint16_t p;
  ASSERT_TRUE(ParseHostPort("127.0.0.1:9464", &h, &p).ok());
  EXPECT_EQ(h, "127.0.0.1");
  EXPECT_EQ(p, 9464);
  ASSERT_TRUE(ParseHostPort(":80", &h, &p).ok());
  EXPECT_EQ(h, "");
  ASSERT_TRUE(ParseHostPort("[::1]:1", &h, &p).ok());
  EXPECT_EQ(h, "::1");
  for (const char* bad : {"9464", "host:", "host:99999", "::1:80", "h:12a", "h:-1"})
    EXPECT_FALSE(ParseHostPort(bad, &h, &p).ok()) << bad;
  auto e = HttpEndpoint::Create("no.such.host.invalid:1", [] { return std::string(); });
  EXPECT_FALSE(e.ok());
  // A port in use is one clear error.
  auto a = HttpEndpoint::Create("127.0.0.1:0", [] { return std::string(); });
  ASSERT_TRUE(a.ok());
  auto b = HttpEndpoint::Create((*a)->bound(), [] { return std::string(); });
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("in use"), std::string::npos) << b.status().message();
}

}  // namespace
}  // namespace jackdaw::metrics
