#include "metrics/http_endpoint.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

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

int ConnectLoopback(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string Exchange(uint16_t port, const std::string& request) {
  int fd = ConnectLoopback(port);
  if (fd < 0) return "connect failed";
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
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

// The hostile probe of issue 30: 64 connections that send half a request
// head and hold it for 5 s took every slot, and 35 of 36 scrapes failed.
TEST(HttpEndpoint, HalfOpenConnectionsDoNotKeepScrapesOut) {
  auto e = HttpEndpoint::Create("127.0.0.1:0", [] { return std::string("up 1\n"); });
  ASSERT_TRUE(e.ok());
  Serving s(e->get());
  const uint16_t p = (*e)->port();
  std::vector<int> held;
  for (int i = 0; i < 64; ++i) {
    int fd = ConnectLoopback(p);
    ASSERT_GE(fd, 0);
    (void)!write(fd, "GET /metr", 9);
    held.push_back(fd);
  }
  int answered = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (int i = 0; i < 36; ++i) {
    if (Exchange(p, "GET /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 200 OK", 0) == 0) ++answered;
    std::this_thread::sleep_for(std::chrono::milliseconds(130));
  }
  std::this_thread::sleep_until(until);
  for (int fd : held) close(fd);
  EXPECT_EQ(answered, 36);
}

// The deadline counts from the connect: a client that sends a byte now and
// then gets its 408 on time all the same.
TEST(HttpEndpoint, TricklingClientCannotExtendItsDeadline) {
  auto e = HttpEndpoint::Create("127.0.0.1:0", [] { return std::string(); });
  ASSERT_TRUE(e.ok());
  Serving s(e->get());
  int fd = ConnectLoopback((*e)->port());
  ASSERT_GE(fd, 0);
  const auto start = std::chrono::steady_clock::now();
  std::string reply;
  char buf[512];
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(8)) {
    (void)!send(fd, "G", 1, MSG_NOSIGNAL);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      reply.assign(buf, static_cast<size_t>(n));
      break;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  close(fd);
  EXPECT_EQ(reply.rfind("HTTP/1.1 408", 0), 0u) << reply;
  EXPECT_LT(secs, 6.0);
}

TEST(HttpEndpoint, WarnsWhenReachableFromOtherHosts) {
  auto any = HttpEndpoint::Create(":0", [] { return std::string(); });
  ASSERT_TRUE(any.ok());
  EXPECT_NE((*any)->ExposureWarning().find("127.0.0.1:"), std::string::npos) << (*any)->ExposureWarning();
  auto local = HttpEndpoint::Create("127.0.0.1:0", [] { return std::string(); });
  ASSERT_TRUE(local.ok());
  EXPECT_EQ((*local)->ExposureWarning(), "");
  auto local6 = HttpEndpoint::Create("[::1]:0", [] { return std::string(); });
  if (local6.ok()) {
    EXPECT_EQ((*local6)->ExposureWarning(), "");
  }
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
