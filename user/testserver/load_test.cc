#include "testserver/load.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <thread>

namespace jackdaw::testserver {
namespace {

constexpr char kExpected[] =
    "expected TYPE:WEIGHT[,TYPE:WEIGHT...] with TYPE in A-H and WEIGHT > 0";

TEST(MixTest, ParsesAndNormalises) {
  StatusOr<std::vector<MixEntry>> mix = ParseMix("A:0.5,B:1.5");
  ASSERT_TRUE(mix.ok()) << mix.status().message();
  ASSERT_EQ(mix->size(), 2u);
  EXPECT_EQ((*mix)[0].type->letter, 'A');
  EXPECT_DOUBLE_EQ((*mix)[0].weight, 0.25);
  EXPECT_DOUBLE_EQ((*mix)[1].weight, 0.75);
  EXPECT_EQ(FormatMix(*mix), "A:0.250,B:0.750");

  mix = ParseMix("f");  // bare letter, lower case
  ASSERT_TRUE(mix.ok());
  EXPECT_EQ((*mix)[0].type->path, "/rpcspin");
  EXPECT_DOUBLE_EQ((*mix)[0].weight, 1.0);
  EXPECT_TRUE(ParseMix("A:1,B:1,C:1,D:1,E:1,F:1").ok());
}

TEST(MixTest, RejectionNamesTheBadPart) {
  const std::map<std::string, std::string> bad = {
      {"A:x", "bad --mix 'A:x': "},        {"A:1,Z:1", "bad --mix 'Z:1': "},
      {"A:0", "bad --mix 'A:0': "},        {"A:-1", "bad --mix 'A:-1': "},
      {"A:", "bad --mix 'A:': "},          {"AB:1", "bad --mix 'AB:1': "},
      {"A:nan", "bad --mix 'A:nan': "},    {"A:inf", "bad --mix 'A:inf': "},
      {"", "bad --mix '': "},              {"A:1x", "bad --mix 'A:1x': "},
  };
  for (const auto& [spec, prefix] : bad) {
    StatusOr<std::vector<MixEntry>> mix = ParseMix(spec);
    ASSERT_FALSE(mix.ok()) << spec;
    EXPECT_EQ(mix.status().message(), prefix + kExpected) << spec;
  }
  EXPECT_EQ(ParseMix("A:1,,B:1").status().message(),
            std::string("bad --mix 'A:1,,B:1': empty entry; ") + kExpected);
  EXPECT_EQ(ParseMix("A:1,A:2").status().message(),
            std::string("bad --mix 'A:2': type given twice; ") + kExpected);
}

TEST(SequenceTest, IsDeterministicPerSeedAndFollowsTheMix) {
  std::vector<MixEntry> mix = *ParseMix("A:3,B:1");
  auto s1 = GenerateSequence(mix, 4000, 42);
  auto s2 = GenerateSequence(mix, 4000, 42);
  auto s3 = GenerateSequence(mix, 4000, 43);
  EXPECT_EQ(s1, s2);
  EXPECT_NE(s1, s3);
  size_t a = 0;
  for (const RequestType* t : s1) a += t->letter == 'A';
  EXPECT_NEAR(static_cast<double>(a) / 4000.0, 0.75, 0.03);
  // A prefix of a longer run is the shorter run.
  auto shortrun = GenerateSequence(mix, 10, 42);
  EXPECT_TRUE(std::equal(shortrun.begin(), shortrun.end(), s1.begin()));
}

TEST(UrlTest, ParsesHostAndPort) {
  StatusOr<Target> t = ParseUrl("http://127.0.0.1:8080/");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->host, "127.0.0.1");
  EXPECT_EQ(t->port, 8080);
  EXPECT_EQ(t->base, "http://127.0.0.1:8080");
  EXPECT_EQ(ParseUrl("http://localhost")->port, 80);
  EXPECT_FALSE(ParseUrl("https://127.0.0.1:1").ok());
  EXPECT_FALSE(ParseUrl("http://127.0.0.1:99999").ok());
  EXPECT_FALSE(ParseUrl("http://127.0.0.1:80/longspin").ok());
  EXPECT_FALSE(ParseUrl("127.0.0.1:80").ok());
}

TEST(GroundTruthTest, FormatsJsonAndCsv) {
  RequestRecord r;
  r.seq = 3;
  r.type = 'C';
  r.url = "http://127.0.0.1:1/small";
  r.local_port = 4242;
  r.send_mono_ns = 10;
  r.recv_mono_ns = 25;
  r.latency_ns = 15;
  r.status = 200;
  r.bytes = 12288;
  r.error = "say \"hi\"";
  std::string json = FormatRecord(r, TruthFormat::kJsonLines);
  EXPECT_EQ(json.back(), '\n');
  EXPECT_NE(json.find("\"seq\":3,\"type\":\"C\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"local_port\":4242"), std::string::npos);
  std::string csv = FormatRecord(r, TruthFormat::kCsv);
  EXPECT_EQ(csv.rfind("3,C,http://127.0.0.1:1/small,0,4242,0,10,25,", 0), 0u) << csv;
  EXPECT_NE(csv.find(",\"say \"\"hi\"\"\"\n"), std::string::npos) << csv;
  // Same number of columns as the header.
  auto commas = [](const std::string& s) { return std::count(s.begin(), s.end(), ','); };
  RequestRecord plain = r;
  plain.error = "";
  EXPECT_EQ(commas(FormatRecord(plain, TruthFormat::kCsv)), commas(CsvHeader()));
}

// A server that answers `answers` requests, one per connection, then closes
// its listening socket: the next connect is refused, as when a server dies
// mid-run.
TEST(LoadTest, ServerGoingAwayMidRunKeepsTheGroundTruthSoFar) {
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(lfd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ASSERT_EQ(listen(lfd, 16), 0);
  constexpr int kAnswers = 3;
  std::thread server([lfd] {
    bool listening = true;
    for (int i = 0; i < kAnswers; ++i) {
      int c = accept(lfd, nullptr, nullptr);
      if (c < 0) break;
      char buf[4096];
      ssize_t got = 0, n;
      while ((n = read(c, buf + got, sizeof(buf) - 1 - got)) > 0) {
        got += n;
        buf[got] = 0;
        if (strstr(buf, "\r\n\r\n")) break;
      }
      // The listener goes before the last answer: the client cannot connect
      // again until it has that answer, so its next connect is refused
      // rather than queued on a listener about to close (a reset).
      if (i == kAnswers - 1) {
        close(lfd);
        listening = false;
      }
      const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
      const bool sent = write(c, resp, sizeof(resp) - 1) >= 0;
      close(c);
      if (!sent) break;
    }
    if (listening) close(lfd);
  });
  auto target = ParseUrl("http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)));
  ASSERT_TRUE(target.ok()) << target.status().message();
  LoadOptions o;
  o.target = *target;
  o.requests = 20;
  o.mix = *ParseMix("D:1");
  o.timeout_ms = 5000;
  auto result = RunLoad(o);
  server.join();
  ASSERT_TRUE(result.ok()) << result.status().message();  // before: an error, and no ground truth
  EXPECT_NE(result->fatal.find("connection refused"), std::string::npos) << result->fatal;
  ASSERT_EQ(result->records.size(), size_t{kAnswers + 1});
  for (int i = 0; i < kAnswers; ++i) EXPECT_EQ(result->records[i].status, 200);
  EXPECT_EQ(result->records.back().error, "connection refused");
}

}  // namespace
}  // namespace jackdaw::testserver
