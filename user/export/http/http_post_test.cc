#include "export/http/http_post.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include <gtest/gtest.h>

#include "export/http/test_receiver.h"

namespace jackdaw::http {
namespace {

TEST(ParseHttpUrl, HostPortPath) {
  auto u = ParseHttpUrl("http://127.0.0.1:4318/v1/traces");
  ASSERT_TRUE(u.ok()) << u.status().message();
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 4318);
  EXPECT_EQ(u->path, "/v1/traces");
  auto v6 = ParseHttpUrl("http://[::1]:4318/v1/traces");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  auto bare = ParseHttpUrl("http://collector");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->port, 80);
  EXPECT_EQ(bare->path, "/");
}

TEST(ParseHttpUrl, RefusesHttpsWithOneLine) {
  auto u = ParseHttpUrl("https://collector:4318/v1/traces");
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.status().message().find("https is not supported"), std::string::npos);
  EXPECT_EQ(u.status().message().find('\n'), std::string::npos);
  EXPECT_FALSE(ParseHttpUrl("ftp://x").ok());
  EXPECT_FALSE(ParseHttpUrl("http://x:0/").ok());
  EXPECT_FALSE(ParseHttpUrl("http://x:99999/").ok());
  EXPECT_FALSE(ParseHttpUrl("http://:4318/").ok());
}

TEST(PostJson, SendsJsonAndReadsTheStatus) {
  TestReceiver rx({503});
  auto url = ParseHttpUrl(rx.url());
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(PostJson(*url, "{\"a\":1}", 5000).status, 503);
  const HttpResult ok = PostJson(*url, "{\"resourceSpans\":[]}", 5000);
  EXPECT_EQ(ok.status, 200) << ok.error;
  ASSERT_EQ(rx.accepted().size(), 1u);
  EXPECT_EQ(rx.accepted()[0], "{\"resourceSpans\":[]}");
  const std::string head = rx.heads()[1];
  EXPECT_EQ(head.rfind("POST /v1/traces HTTP/1.1\r\n", 0), 0u) << head;
  EXPECT_NE(head.find("Content-Type: application/json"), std::string::npos);
  EXPECT_NE(head.find("Host: 127.0.0.1:" + std::to_string(rx.port()) + "\r\n"), std::string::npos) << head;
}

TEST(Post, ReadsTheBodyWhenAsked) {
  TestReceiver rx({500});
  auto url = ParseHttpUrl(rx.url("/"));
  ASSERT_TRUE(url.ok());
  PostOptions o;
  o.content_type = "text/plain";
  o.max_body = 1024;
  const HttpResult r = Post(*url, "INSERT", o);
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, "{\"code\":14,\"message\":\"busy\"}");
  EXPECT_EQ(FirstLine("\n  Code: 60. Table missing\nstack"), "Code: 60. Table missing");
  EXPECT_EQ(rx.heads()[0].rfind("POST / HTTP/1.1\r\n", 0), 0u);
}

TEST(ParseHttpUrl, NamesTheOptionItCameFrom) {
  UrlRole role;
  role.option = "--clickhouse";
  role.example = "http://127.0.0.1:8123";
  auto u = ParseHttpUrl("tcp://x:9000", role);
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.status().message(), "--clickhouse tcp://x:9000: not an http:// URL; give one like http://127.0.0.1:8123");
}

// A port nobody listens on: bound, then closed.
TEST(PostJson, RefusedIsUnreachable) {
  HttpUrl url{"127.0.0.1", UnusedLoopbackPort(), "/v1/traces"};
  const HttpResult r = PostJson(url, "{}", 2000);
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(r.unreachable);
  EXPECT_EQ(r.error, "connection refused");
}

TEST(PostJson, SilentReceiverTimesOut) {
  // Listening, never accepting: the connect completes (backlog), the
  // answer never comes; the deadline ends it.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  HttpUrl url{"127.0.0.1", ntohs(a.sin_port), "/v1/traces"};
  const auto t0 = std::chrono::steady_clock::now();
  const HttpResult r = PostJson(url, "{}", 300);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  close(fd);
  EXPECT_EQ(r.status, 0);
  EXPECT_FALSE(r.unreachable);
  EXPECT_NE(r.error.find("timed out"), std::string::npos) << r.error;
  EXPECT_LT(ms, 2000);
}

}  // namespace
}  // namespace jackdaw::http
