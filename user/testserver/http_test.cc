#include "testserver/http.h"

#include <gtest/gtest.h>

namespace jackdaw::testserver {
namespace {

TEST(HttpTest, ParsesRequestHead) {
  StatusOr<HttpRequest> r =
      ParseRequestHead("GET /longspin?a=b HTTP/1.1\r\nHost: x\r\nconnection: Close");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->method, "GET");
  EXPECT_EQ(r->path, "/longspin");
  EXPECT_EQ(r->minor_version, 1);
  EXPECT_FALSE(r->want_keepalive);

  r = ParseRequestHead("GET /tiny HTTP/1.1\r\nHost: x");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->want_keepalive);  // HTTP/1.1 default
  r = ParseRequestHead("GET /tiny HTTP/1.0");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->want_keepalive);  // HTTP/1.0 default
  r = ParseRequestHead("GET /tiny HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 3");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->want_keepalive);
  EXPECT_EQ(r->content_length, 3u);
}

TEST(HttpTest, RejectsMalformedRequests) {
  EXPECT_FALSE(ParseRequestHead("GET").ok());
  EXPECT_FALSE(ParseRequestHead("GET / HTTP/2").ok());
  EXPECT_FALSE(ParseRequestHead("GET nopath HTTP/1.1").ok());
  EXPECT_FALSE(ParseRequestHead("GET / HTTP/1.1\r\nno colon").ok());
  EXPECT_FALSE(ParseRequestHead("GET / HTTP/1.1\r\nContent-Length: x").ok());
}

TEST(HttpTest, ParsesResponseHead) {
  StatusOr<HttpResponse> r =
      ParseResponseHead("HTTP/1.1 404 Not Found\r\nX-Request-Id: 7\r\nConnection: close");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->Header("x-request-id"), "7");
  EXPECT_EQ(r->Header("X-REQUEST-ID"), "7");
  EXPECT_FALSE(r->keepalive);
  r = ParseResponseHead("HTTP/1.1 200 OK\r\nContent-Length: 0");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->keepalive);
  EXPECT_FALSE(ParseResponseHead("HTTP/1.1 2x0 OK").ok());
}

TEST(HttpTest, SpinTraceRoundTrips) {
  auto rec = [](const char* label, pid_t tid, uint64_t nominal, uint64_t cpu, uint64_t start,
                uint64_t end) {
    SpinRecord s;
    s.label = label;
    s.tid = tid;
    s.nominal_ns = nominal;
    s.cpu_ns = cpu;
    s.start_mono_ns = start;
    s.end_mono_ns = end;
    return s;
  };
  std::vector<SpinRecord> in = {rec("spin1", 12, 7500000, 7512345, 100, 200),
                                rec("helper", 13, 15000000, 15000001, 201, 300)};
  std::string text = FormatSpinTrace(in);
  EXPECT_EQ(text, "spin1:12:7500000:7512345:100:200,helper:13:15000000:15000001:201:300");
  StatusOr<std::vector<SpinRecord>> out = ParseSpinTrace(text);
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[1].label, "helper");
  EXPECT_EQ((*out)[1].tid, 13);
  EXPECT_EQ((*out)[1].cpu_ns, 15000001u);
  EXPECT_EQ((*out)[0].end_mono_ns, 200u);
  EXPECT_FALSE(ParseSpinTrace("spin:1:2:3:4").ok());
  EXPECT_FALSE(ParseSpinTrace("spin:1:2:3:4:5:6").ok());
  EXPECT_FALSE(ParseSpinTrace("spin:x:2:3:4:5").ok());
  EXPECT_TRUE(ParseSpinTrace("")->empty());
}

}  // namespace
}  // namespace jackdaw::testserver
