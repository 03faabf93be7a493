// jackdaw live's likelihood watchdog (docs/likelihood.md, "Online in
// live") on the test server: every request scored as it arrives, against a
// model learned from the stream or a --baseline file, the unlikely ones in
// the JSON lines and `ctl status`; a baseline that cannot be used is one
// error line before anything is attached.
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "live/live_session.h"
#include "support/test_support.h"
#include "testserver/test_support.h"

namespace jackdaw {
namespace {

using live_testing::LiveSession;
using live_testing::SleepMs;
using testserver::testing::Child;

// The smallest valid model: one state that ends every string, one symbol
// no real request has.
std::string TinyModel(const std::string& schema) {
  return nlohmann::json{{"format", "jackdaw.likelihood"},
                        {"version", 1},
                        {"schema", schema},
                        {"alpha", 0.05},
                        {"symbols", {"never"}},
                        {"states", {{{"visits", 10}, {"ends", 10}, {"transitions", nlohmann::json::array()}}}}}
      .dump();
}

// A kind of request the model never saw, sent once it has learned the
// steady one, is reported unlikely.
TEST(LiveLikelihood, ARareKindAfterTheWarmUpIsReportedUnlikely) {
  JDW_REQUIRE_ROOT();
  LiveSession s;
  LiveSession::Options o;
  o.mix = "D:1";
  o.live_extra = {"--likelihood-warmup", "100"};
  ASSERT_NO_FATAL_FAILURE(s.Start(3000, 40, o));
  nlohmann::json st;
  for (int i = 0; i < 200; ++i) {
    st = s.Ctl("status");
    if (st.contains("likelihood") && st["likelihood"].value("scored", 0ull) >= 200) break;
    SleepMs(100);
  }
  ASSERT_TRUE(st.contains("likelihood")) << st.dump();
  const nlohmann::json before = st["likelihood"];
  EXPECT_EQ(before["source"], "stream");
  EXPECT_FALSE(before["warming_up"].get<bool>());
  ASSERT_GE(before["scored"].get<uint64_t>(), 200u) << st.dump();
  // The steady kind is usual: few of its requests fall below the threshold.
  EXPECT_LT(before["unlikely"].get<double>(), 0.1 * before["scored"].get<double>()) << before.dump();
  Child odd;
  ASSERT_TRUE(odd.Spawn({JDW_LOAD_BIN, "--url", s.server_.url(), "-n", "20", "--mix", "A:1", "-c", "1", "--rate", "10"})
                  .ok());
  ASSERT_EQ(odd.Wait(30000), 0);
  SleepMs(3000);  // through the pipeline
  const nlohmann::json after = s.Ctl("status")["likelihood"];
  EXPECT_GE(after["unlikely"].get<uint64_t>() - before["unlikely"].get<uint64_t>(), 15u)
      << before.dump() << " -> " << after.dump();
  // The JSON lines name them.
  size_t listed = 0;
  for (const std::string& l : s.Lines()) {
    const auto j = nlohmann::json::parse(l, nullptr, false);
    if (j.is_discarded() || !j.contains("new_unlikely")) continue;
    EXPECT_TRUE(j.contains("likelihood"));
    for (const auto& u : j["new_unlikely"]) {
      EXPECT_LT(u["log_likelihood"].get<double>(), after["threshold"].get<double>());
      ++listed;
    }
  }
  EXPECT_GE(listed, 15u);
}

// With --flight-unlikely an unlikely request writes the flight recorder,
// named after it. The streaming model stays in its warm-up, so no new
// cluster (an anomaly) writes one first.
TEST(LiveLikelihood, AnUnlikelyRequestWritesTheFlightRecorder) {
  JDW_REQUIRE_ROOT();
  char tmpl[] = "/tmp/jdw-flight-unlikely-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  LiveSession s;
  LiveSession::Options o;
  o.mix = "D:1";
  o.live_extra = {"--likelihood-warmup", "100", "--flight-dir", dir, "--flight-unlikely", "--warmup", "1000000",
                  "--warmup-time", "3600"};
  ASSERT_NO_FATAL_FAILURE(s.Start(3000, 40, o));
  for (int i = 0; i < 200 && s.Ctl("status")["likelihood"].value("scored", 0ull) < 200; ++i) SleepMs(100);
  // A flight file the steady kind wrote (a rare D) is allowed; the odd kind
  // must write one after it was sent.
  SleepMs(11000);  // at most one file per 10 s: let an early one's interval pass
  auto unlikely_files = [&] {
    std::vector<std::string> out;
    auto ls = testserver::testing::Run({"/bin/ls", dir});
    std::stringstream in(ls.out);
    for (std::string l; std::getline(in, l);)
      if (l.rfind("unlikely-", 0) == 0) out.push_back(l);
    return out;
  };
  const size_t before = unlikely_files().size();
  Child odd;
  ASSERT_TRUE(odd.Spawn({JDW_LOAD_BIN, "--url", s.server_.url(), "-n", "20", "--mix", "A:1", "-c", "1", "--rate", "10"})
                  .ok());
  std::vector<std::string> files;
  for (int i = 0; i < 150 && (files = unlikely_files()).size() <= before; ++i) SleepMs(100);
  ASSERT_GT(files.size(), before) << s.live_->Stderr();
  EXPECT_NE(s.live_->Stderr().find("flight recorder written to " + dir + "/unlikely-"), std::string::npos);
  odd.Wait(30000);
  testserver::testing::Run({"/bin/rm", "-rf", dir});
}

// Against a --baseline: nothing is learned, and a request with events the
// model never saw is unlikely.
TEST(LiveLikelihood, ScoresAgainstABaseline) {
  JDW_REQUIRE_ROOT();
  const std::string model = testing::TempPath("baseline.json");
  std::ofstream(model) << TinyModel("tcp-threadpool");
  LiveSession s;
  LiveSession::Options o;
  o.mix = "D:1";
  o.live_extra = {"--baseline", model};
  ASSERT_NO_FATAL_FAILURE(s.Start(300, 20, o));
  nlohmann::json l;
  for (int i = 0; i < 200; ++i) {
    l = s.Ctl("status")["likelihood"];
    if (l.value("scored", 0ull) >= 50) break;
    SleepMs(100);
  }
  unlink(model.c_str());
  EXPECT_EQ(l["source"], "baseline");
  EXPECT_EQ(l["prefix_tree_states"], 0);
  EXPECT_EQ(l["model_states"], 1);
  ASSERT_GE(l["scored"].get<uint64_t>(), 50u) << l.dump();
  EXPECT_EQ(l["unlikely"], l["scored"]);
}

// A baseline that is not a usable model ends live before it attaches: one
// `jackdaw:` line naming the cause and the fix, exit 1.
TEST(LiveLikelihood, AnUnusableBaselineIsOneErrorLine) {
  JDW_REQUIRE_ROOT();
  const std::string bad = testing::TempPath("bad-baseline.json");
  const std::string other = testing::TempPath("other-baseline.json");
  std::ofstream(bad) << "{\"format\": \"jackdaw.model\", \"ver";
  std::ofstream(other) << TinyModel("testserver");
  struct Case {
    std::string file, expect;
  };
  for (const Case& c : {Case{bad, "not JSON"}, Case{other, "learned under schema 'testserver'"},
                        Case{"/nonexistent/m.json", "cannot read"}}) {
    const auto r = testing::RunCommand({testing::BinDir() + "/jackdaw", "live", "--schema", "tcp-threadpool",
                                        "--baseline", c.file, "--pid", std::to_string(getpid()), "--duration", "1"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.err.rfind("jackdaw: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // one line
  }
  unlink(bad.c_str());
  unlink(other.c_str());
}

}  // namespace
}  // namespace jackdaw
