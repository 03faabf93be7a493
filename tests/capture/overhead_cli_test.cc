// `jackdaw overhead` as a user meets it: the harness measures a workload
// whose cost under tracing is known, its JSON holds together, and a failing
// command is reported as a failure, not as a timing.
#include <gtest/gtest.h>

#include "support/test_support.h"

namespace jackdaw {
namespace {

using testing::RunCommand;

std::string Jackdaw() { return testing::BinDir() + "/jackdaw"; }

// Checks the fields every measured tracer row carries.
void ExpectTracerRow(const nlohmann::json& t) {
  for (const char* k : {"time_per_op_s", "wall_s", "cpu_s"}) {
    ASSERT_TRUE(t.contains(k)) << k;
    EXPECT_LE(t[k]["min"].get<double>(), t[k]["median"].get<double>()) << k;
    EXPECT_LE(t[k]["median"].get<double>(), t[k]["max"].get<double>()) << k;
  }
  if (t["tracer"] == "untraced") return;
  for (const char* k : {"events", "lost_max", "events_per_s", "added_ns_per_event", "bytes_per_event"})
    EXPECT_TRUE(t.contains(k) && t[k].is_number()) << k;
  EXPECT_LE(t["ratio"]["ci_low"].get<double>(), t["ratio"]["value"].get<double>());
  EXPECT_GE(t["ratio"]["ci_high"].get<double>(), t["ratio"]["value"].get<double>());
}

// The command sleeps 0.15 s longer only when jackdaw traces it: the
// reported ratio's interval must hold (untraced + 0.15) / untraced.
TEST(OverheadCli, InjectedDelayWhenTracedIsReportedWithinTheInterval) {
  JDW_REQUIRE_ROOT();
  auto r = RunCommand({Jackdaw(), "overhead", "--json", "--no-tools", "--probes", "block", "--runs", "7", "--",
                       "sh", "-c",
                       "if [ \"$JACKDAW_OVERHEAD_MODE\" = jackdaw ]; then sleep 0.25; else sleep 0.1; fi"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["schema"], "jackdaw-overhead/1");
  EXPECT_EQ(j["runs"], 7);
  ASSERT_EQ(j["configs"].size(), 1u);
  const auto& tracers = j["configs"][0]["tracers"];
  ASSERT_EQ(tracers.size(), 2u);
  EXPECT_EQ(tracers[0]["tracer"], "untraced");
  EXPECT_EQ(tracers[1]["tracer"], "jackdaw");
  ExpectTracerRow(tracers[0]);
  ExpectTracerRow(tracers[1]);
  const double u = tracers[0]["time_per_op_s"]["median"];
  const double expected = (u + 0.15) / u;
  // The interval covers the runs' noise, not the small bias a loaded machine
  // adds to the longer sleep (timer slack, a later wake-up): half a percent
  // of slack, far below what a wrong ratio would miss by.
  const double slack = 0.005 * expected;
  const auto& ratio = tracers[1]["ratio"];
  EXPECT_LE(ratio["ci_low"].get<double>(), expected + slack) << ratio.dump();
  EXPECT_GE(ratio["ci_high"].get<double>(), expected - slack) << ratio.dump();
  EXPECT_FALSE(tracers[1].contains("warning"));
}

TEST(OverheadCli, BuiltinFdLoopCountsItsEventsAndLosesNone) {
  JDW_REQUIRE_ROOT();
  auto r = RunCommand({Jackdaw(), "overhead", "--json", "--no-tools", "--workload", "socketpair", "--probes",
                       "syscall", "--runs", "2", "--warmup", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  const auto& t = j["configs"][0]["tracers"][1];
  ExpectTracerRow(t);
  // 200000 rounds of write + read: at least 4 events each.
  EXPECT_GE(t["events"].get<double>(), 800000.0);
  EXPECT_EQ(t["lost_max"].get<uint64_t>(), 0u);
}

// bpftrace's row accounts for every event: printed, or counted lost. Its
// output once went through a pipe read only after the run, which blocked
// bpftrace at 64 KiB (about 1,500 lines) with nothing counted lost.
TEST(OverheadCli, BpftraceRowAccountsForEveryEvent) {
  JDW_REQUIRE_ROOT();
  auto r = RunCommand({Jackdaw(), "overhead", "--json", "--probes", "syscall", "--runs", "2", "--warmup", "0", "--",
                       testing::BinDir() + "/jackdaw-workload", "--getppid", "20000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  const auto& tracers = j["configs"][0]["tracers"];
  const nlohmann::json* bt = nullptr;
  for (const auto& t : tracers)
    if (t["tracer"] == "bpftrace") bt = &t;
  ASSERT_NE(bt, nullptr) << r.out;
  ASSERT_FALSE(bt->contains("unavailable")) << bt->dump() << " (bpftrace is in scripts/install-deps.sh)";
  ExpectTracerRow(*bt);
  // 20000 getppid calls, an enter and an exit each, per run (the median
  // of the runs' counts; the losses are the worst run's).
  EXPECT_GE((*bt)["events"].get<double>() + (*bt)["lost_max"].get<double>(), 40000.0) << bt->dump();
}

TEST(OverheadCli, FailingCommandIsReportedWithItsExitStatus) {
  JDW_REQUIRE_ROOT();
  auto r = RunCommand({Jackdaw(), "overhead", "--no-tools", "--probes", "sched", "--runs", "2", "--", "sh", "-c",
                       "echo broken >&2; exit 3"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("exit status 3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("broken"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("ratio"), std::string::npos) << "no timing for a failed command: " << r.out;
}

TEST(OverheadCli, UnknownWorkloadOrProbeIsOneClearLine) {
  JDW_REQUIRE_ROOT();
  auto w = RunCommand({Jackdaw(), "overhead", "--workload", "nope"});
  EXPECT_EQ(w.exit_code, 1);
  EXPECT_NE(w.err.find("built-in workloads: getppid"), std::string::npos) << w.err;
  auto p = RunCommand({Jackdaw(), "overhead", "--probes", "bogus"});
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_NE(p.err.find("sched,syscall,block,net"), std::string::npos) << p.err;
}

}  // namespace
}  // namespace jackdaw
