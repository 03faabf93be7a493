// `jackdaw diff` end to end: the test server recorded with eBPF under
// jackdaw-load three times — mix A:1,C:1 twice and A:1,C:3 once, 80 and 120
// requests from one client (about 2 s each) — and diffed through the CLI.
// A (longspin, 30 ms of CPU) and C (a 12 KB file) are the Table 1 kinds
// farthest apart in CPU, so the shifted mix moves the CPU demand by A's
// falling rate.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/test_support.h"
#include "validate/experiment.h"

namespace jackdaw {
namespace {

class DiffRecordings : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::IsRoot()) return;
    opts_.bin_dir = testing::BinDir();
    opts_.work_dir = testing::TempPath("diff-recordings");
    std::filesystem::create_directories(opts_.work_dir);
    const validate::Workload workloads[] = {{"x", "same1", "A:1,C:1", 1, 80},
                                            {"x", "same2", "A:1,C:1", 1, 80},
                                            {"x", "shifted", "A:1,C:3", 1, 120}};
    for (const validate::Workload& w : workloads) {
      auto run = validate::RecordWorkload(opts_, w);
      ASSERT_TRUE(run.ok()) << run.status().message();
      traces_.push_back(run->trace);
    }
  }
  static void TearDownTestSuite() {
    if (opts_.work_dir.empty()) return;
    if (getenv("JDW_KEEP_TRACES")) fprintf(stderr, "traces kept in %s\n", opts_.work_dir.c_str());
    else std::filesystem::remove_all(opts_.work_dir);
  }
  void SetUp() override {
    JDW_REQUIRE_ROOT();
    ASSERT_EQ(traces_.size(), 3u);
  }

  // Runs jackdaw diff with --json and returns the document.
  static nlohmann::json Diff(const std::string& before, const std::string& after) {
    const std::string out = opts_.work_dir + "/diff.json";
    std::filesystem::remove(out);
    const testing::CommandResult r =
        testing::RunCommand({testing::BinDir() + "/jackdaw", "diff", before, after, "--schema", "testserver",
                             "--json", out});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::ifstream in(out);
    if (!in) return nlohmann::json::object();
    fprintf(stderr, "%s", r.out.c_str());
    return nlohmann::json::parse(in);
  }

  static validate::RunOptions opts_;
  static std::vector<std::string> traces_;
};

validate::RunOptions DiffRecordings::opts_;
std::vector<std::string> DiffRecordings::traces_;

int SignificantChanges(const nlohmann::json& d) {
  int n = 0;
  for (const auto& c : d["changes"]) n += c["significant"].get<bool>();
  return n;
}

// The matched kind whose requests spin (median CPU above 20 ms): A.
std::string SpinningKind(const nlohmann::json& d) {
  for (const auto& c : d["changes"])
    if (c["metric"] == "cpu" && c["before"].get<double>() > 20) return c["kind"];
  return "";
}

TEST_F(DiffRecordings, SameMixTwiceHasNoSignificantChange) {
  const nlohmann::json d = Diff(traces_[0], traces_[1]);
  ASSERT_TRUE(d.contains("changes"));
  EXPECT_GE(d["matched"].size(), 2u);
  EXPECT_FALSE(d["changes"].empty());
  EXPECT_EQ(SignificantChanges(d), 0) << d["changes"].dump(1);
}

// One client drives both recordings closed-loop, so the spinning kind's
// rate in requests per second hardly moves when its share halves: whether
// its frequency or the light kind's ranks first by CPU-demand share is a
// toss-up between runs. What must hold is that the mix change leads.
TEST_F(DiffRecordings, ShiftedMixLeadsWithBothKindsFrequencyChanges) {
  const nlohmann::json d = Diff(traces_[0], traces_[2]);
  ASSERT_TRUE(d.contains("changes"));
  ASSERT_FALSE(d["changes"].empty());
  const std::string a = SpinningKind(d);
  ASSERT_FALSE(a.empty()) << d["changes"].dump(1);
  EXPECT_EQ(d["changes"][0]["metric"], "frequency") << d["changes"].dump(1);
  const nlohmann::json* a_share = nullptr;
  const nlohmann::json* c_share = nullptr;
  for (const auto& c : d["changes"]) {
    if (c["metric"] != "frequency") continue;
    (c["kind"] == a ? a_share : c_share) = &c;
  }
  ASSERT_NE(a_share, nullptr) << d["changes"].dump(1);
  ASSERT_NE(c_share, nullptr) << d["changes"].dump(1);
  EXPECT_TRUE((*a_share)["significant"].get<bool>());
  // jackdaw-load draws each request's type by the weights: 80 requests of
  // A:1,C:1 held 44 A in one recording.
  EXPECT_NEAR((*a_share)["before"].get<double>(), 0.5, 0.1);
  EXPECT_NEAR((*a_share)["after"].get<double>(), 0.25, 0.1);
  // C's share went up from a half to three quarters, significant too.
  EXPECT_TRUE((*c_share)["significant"].get<bool>());
  EXPECT_GT((*c_share)["effect"].get<double>(), 0.3);
}

TEST_F(DiffRecordings, UnreadableSideIsOneLineNamingIt) {
  const std::string missing = opts_.work_dir + "/no-such.jdw";
  const testing::CommandResult r =
      testing::RunCommand({testing::BinDir() + "/jackdaw", "diff", missing, traces_[0], "--schema", "testserver"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("BEFORE"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;
  const testing::CommandResult model =
      testing::RunCommand({testing::BinDir() + "/jackdaw", "diff", opts_.work_dir + "/m.json", traces_[0], "--schema",
                           "testserver"});
  EXPECT_NE(model.exit_code, 0);
  EXPECT_EQ(std::count(model.err.begin(), model.err.end(), '\n'), 1) << model.err;
  EXPECT_NE(model.err.find("saved model"), std::string::npos) << model.err;
}

}  // namespace
}  // namespace jackdaw
