// eBPF sessions into a private clickhouse-server:
// - `jackdaw live --clickhouse` with the store killed mid-session: the
//   capture goes on (every request the load sends is still modelled, the
//   JSON lines keep coming), the rows that could not go are counted, and
//   every request is accounted for as stored, dropped or failed;
// - a trace of `jackdaw interactions -o` analyzed with --clickhouse: one
//   jackdaw.interactions row per summary analyze counts, with the server's
//   port and the response bytes the load received.
#include <signal.h>

#include <regex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "live/live_session.h"
#include "private_clickhouse.h"

namespace jackdaw {
namespace {

using live_testing::LiveSession;
using live_testing::SleepMs;

TEST(ClickHouseLive, StoreKilledMidSessionDoesNotStopTheCapture) {
  JDW_REQUIRE_ROOT();
  JDW_REQUIRE_CLICKHOUSE();
  testing::PrivateClickHouse ch;
  ASSERT_TRUE(ch.Start().ok());
  LiveSession s;
  LiveSession::Options o;
  o.mix = "D:1";
  o.rate = "200";
  o.load_when_ready = true;
  // A short warm-up: rows go out with their cluster within the first second.
  o.live_extra = {"--clickhouse", ch.url(), "--host-id", "live-test", "--warmup", "50", "--refresh", "0.5"};
  ASSERT_NO_FATAL_FAILURE(s.Start(3000, 16, o));  // 15 s of load at 200/s
  // Rows arrive while the store is up.
  uint64_t stored = 0;
  for (int i = 0; i < 100 && stored == 0; ++i) {
    SleepMs(100);
    stored = ch.Number("SELECT count() FROM jackdaw.requests WHERE host = 'live-test'");
    if (stored == ~uint64_t{0}) stored = 0;
  }
  ASSERT_GT(stored, 0u) << s.live_->Stderr();
  SleepMs(1000);
  ch.Kill();
  const size_t lines_at_kill = s.Lines().size();
  ASSERT_EQ(s.load_->Wait(60000), 0) << s.load_->Stderr();
  s.live_->Wait(30000);
  if (s.reader_.joinable()) s.reader_.join();
  const std::vector<std::string> lines = s.Lines();
  ASSERT_GT(lines.size(), lines_at_kill + 4) << "the session went on refreshing after the store died";
  const nlohmann::json last = nlohmann::json::parse(lines.back());
  // The capture did not notice: every request the driver sent is modelled.
  EXPECT_GE(last["requests"].get<uint64_t>(), 2950u) << lines.back();
  ASSERT_TRUE(last.contains("clickhouse")) << lines.back();
  EXPECT_GT(last["clickhouse"]["dropped"].get<uint64_t>() + last["clickhouse"]["failed"].get<uint64_t>(), 0u)
      << lines.back();
  EXPECT_NE(last["clickhouse"]["last_error"].get<std::string>(), "") << lines.back();
  // The closing line: stored + dropped + failed = every request the join
  // gave the sink (complete and incomplete).
  const std::string err = s.live_->Stderr();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(err, m,
                                std::regex(R"((\d+) requests, (\d+) incomplete, .*ClickHouse: (\d+) requests stored, )"
                                           R"((\d+) dropped, (\d+) failed)")))
      << err;
  const uint64_t requests = std::stoull(m[1]), incomplete = std::stoull(m[2]);
  const uint64_t sent = std::stoull(m[3]), dropped = std::stoull(m[4]), failed = std::stoull(m[5]);
  EXPECT_EQ(sent + dropped + failed, requests + incomplete) << err;
  EXPECT_GE(sent, stored);
  EXPECT_LT(sent, requests) << "the store was gone for most of the session";
  RecordProperty("stored_dropped_failed",
                 std::to_string(sent) + "/" + std::to_string(dropped) + "/" + std::to_string(failed));
}

TEST(ClickHouseInteractions, EverySummaryOfARecordingIsOneRow) {
  JDW_REQUIRE_ROOT();
  JDW_REQUIRE_CLICKHOUSE();
  testserver::testing::ServerProcess server;
  ASSERT_TRUE(server.Start().ok());
  const std::string trace = testing::TempPath("ch-interactions");
  testserver::testing::Child rec;
  ASSERT_TRUE(rec.Spawn({testing::BinDir() + "/jackdaw", "interactions", "--pid",
                         std::to_string(live_testing::ListeningPid(server.port())), "--by", "interaction", "-o",
                         trace, "--duration", "6"})
                  .ok());
  SleepMs(2000);  // attached
  testserver::testing::Child load;
  ASSERT_TRUE(load.Spawn({JDW_LOAD_BIN, "--url", server.url(), "-n", "300", "--mix", "C:1,D:1", "-c", "2", "--rate",
                          "150"})
                  .ok());
  ASSERT_EQ(load.Wait(60000), 0) << load.Stderr();
  ASSERT_EQ(rec.Wait(30000), 0) << rec.Stderr();

  testing::PrivateClickHouse ch;
  ASSERT_TRUE(ch.Start().ok());
  const testing::CommandResult r = testing::RunCommand(
      {testing::BinDir() + "/jackdaw", "analyze", trace, "--clickhouse", ch.url(), "--host-id", "ia-host"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"((\d+) interactions \(in-kernel summaries)"))) << r.out;
  const uint64_t summaries = std::stoull(m[1]);
  EXPECT_GE(summaries, 300u) << "every request the load sent";
  EXPECT_NE(r.err.find(std::to_string(summaries) + " of " + std::to_string(summaries) + " interactions stored"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(ch.Number("SELECT count() FROM jackdaw.interactions WHERE host = 'ia-host'"), summaries);
  EXPECT_GE(ch.Number("SELECT count() FROM jackdaw.interactions WHERE role = 'server' AND local = '127.0.0.1:" +
                      std::to_string(server.port()) + "'"),
            300u);
  // /small answers 12 KB, /tiny 5 KB: each response at least its file.
  EXPECT_EQ(ch.Number("SELECT countIf(response_bytes < 5120) FROM jackdaw.interactions WHERE role = 'server'"), 0u);
  EXPECT_EQ(ch.Number("SELECT countIf(latency_ns = 0) FROM jackdaw.interactions"), 0u);
  server.Stop();
}

}  // namespace
}  // namespace jackdaw
