// `jackdaw live --otlp URL` under load from the test server's driver:
// - to an in-test OTLP/HTTP receiver that refuses its first POST (503):
//   every request live modelled reaches the receiver as one trace, every
//   span's parent is in its trace, and the JSON lines count what was sent;
// - to a receiver that is not there: the capture does not notice (every
//   request the driver sent is modelled) and the batches it could not send
//   are counted, in the JSON lines and the closing line.
#include <signal.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "export/http/test_receiver.h"
#include "live/live_session.h"
#include "otlp_decode.h"

namespace jackdaw {
namespace {

using live_testing::LiveSession;
using live_testing::SleepMs;
using nlohmann::json;

// Runs `requests` at 200/s through a live session with `extra` options
// and waits for the session to end; returns its last JSON line.
json RunLive(LiveSession* s, int requests, const std::vector<std::string>& extra) {
  LiveSession::Options o;
  o.mix = "D:1";
  o.rate = "200";
  o.load_when_ready = true;
  o.live_extra = extra;
  o.live_extra.insert(o.live_extra.end(), {"--refresh", "0.5"});
  s->Start(requests, requests / 200.0 + 5, o);
  if (::testing::Test::HasFatalFailure()) return {};
  EXPECT_EQ(s->load_->Wait(60000), 0) << s->load_->Stderr();
  EXPECT_EQ(s->live_->Wait(60000), 0) << s->live_->Stderr();
  if (s->reader_.joinable()) s->reader_.join();
  const std::vector<std::string> lines = s->Lines();
  if (lines.empty()) {
    ADD_FAILURE() << "no JSON line: " << s->live_->Stderr();
    return {};
  }
  return json::parse(lines.back());
}

TEST(OtlpLive, EveryModelledRequestReachesTheReceiverAsATrace) {
  JDW_REQUIRE_ROOT();
  http::TestReceiver rx({503});
  LiveSession s;
  const json last = RunLive(&s, 600, {"--otlp", rx.url()});
  ASSERT_FALSE(last.is_null());
  const uint64_t requests = last.at("requests").get<uint64_t>();
  EXPECT_GE(requests, 590u) << last.dump();
  const otlp_testing::Exported e = otlp_testing::Read(rx.accepted());
  // Requests emitted after the last JSON line (the session's end) are sent
  // too: at least every request the last line counted.
  EXPECT_GE(e.request_ids.size(), requests) << s.live_->Stderr();
  EXPECT_EQ(e.traces.size(), e.request_ids.size());
  EXPECT_EQ(e.orphans, 0u);
  EXPECT_GT(e.spans, e.request_ids.size());  // process and thread spans below each request
  // The refused first POST was retried, not lost.
  EXPECT_GT(rx.posts(), static_cast<int>(rx.accepted().size()));
  ASSERT_TRUE(last.contains("otlp")) << last.dump();
  EXPECT_EQ(last["otlp"]["dropped"].get<uint64_t>(), 0u) << last.dump();
  EXPECT_NE(s.live_->Stderr().find("OTLP/HTTP"), std::string::npos) << s.live_->Stderr();
}

TEST(OtlpLive, AReceiverThatIsDownCostsBatchesNotTheCapture) {
  JDW_REQUIRE_ROOT();
  // A port nothing listens on: a receiver made and gone.
  std::string url;
  {
    http::TestReceiver gone;
    url = gone.url();
  }
  LiveSession s;
  const json last = RunLive(&s, 600, {"--otlp", url});
  ASSERT_FALSE(last.is_null());
  EXPECT_GE(last.at("requests").get<uint64_t>(), 590u) << last.dump();
  ASSERT_TRUE(last.contains("otlp")) << last.dump();
  EXPECT_EQ(last["otlp"]["sent"].get<uint64_t>(), 0u) << last.dump();
  EXPECT_GT(last["otlp"]["dropped"].get<uint64_t>() + last["otlp"]["failed"].get<uint64_t>(), 0u) << last.dump();
  EXPECT_FALSE(last["otlp"]["last_error"].get<std::string>().empty()) << last.dump();
}

TEST(OtlpLive, AnUnusableUrlIsOneLineBeforeTheProbes) {
  JDW_REQUIRE_ROOT();
  const testing::CommandResult r = testing::RunCommand(
      {testing::BinDir() + "/jackdaw", "live", "--schema", "tcp-threadpool", "--duration", "1", "--otlp",
       "https://collector:4318/v1/traces"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("jackdaw: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("http"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("live session"), std::string::npos) << "the session started: " << r.err;
}

}  // namespace
}  // namespace jackdaw
