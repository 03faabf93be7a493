// Flight-recorder snapshots of a live session under load: dated like a
// recording (export --pcap places their packets in wall-clock time), written
// where the caller means (relative paths, spaces), and a recorder kept
// within its byte cap, saying when the cap shortens its window.
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "live/live_session.h"
#include "support/test_support.h"
#include "testserver/test_support.h"
#include "trace/trace_reader.h"

namespace jackdaw {
namespace {

using live_testing::LiveSession;
using live_testing::SleepMs;
using testing::RunCommand;

int64_t WallMinusMonoNs() {
  timespec w{}, m{};
  clock_gettime(CLOCK_REALTIME, &w);
  clock_gettime(CLOCK_MONOTONIC, &m);
  return (int64_t{w.tv_sec} - m.tv_sec) * 1'000'000'000 + (w.tv_nsec - m.tv_nsec);
}

// Issue 30: a snapshot had no clock mapping, so export --pcap dated its
// packets 1970 and analyze --pcap-input attributed nothing.
TEST(LiveSnapshot, CarriesTheWallClockLikeARecording) {
  JDW_REQUIRE_ROOT();
  LiveSession s;
  LiveSession::Options o;
  o.mix = "C:1,D:1";
  ASSERT_NO_FATAL_FAILURE(s.Start(400, 30, o));
  SleepMs(3000);
  const std::string snap = testing::TempPath("clock.jdw");
  const std::string out = snap + ".pcapng";
  nlohmann::json r = s.Ctl("snapshot " + snap);
  ASSERT_TRUE(r.value("ok", false)) << r.dump();
  auto reader = trace::TraceReader::Open(snap);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  const trace::ClockMapping& clock = (*reader)->meta().time.clock;
  EXPECT_NE(clock.method, "none");
  EXPECT_LT(std::llabs(clock.wall_minus_mono_ns - WallMinusMonoNs()), 1'000'000'000LL);

  auto ex = RunCommand({testing::BinDir() + "/jackdaw", "export", snap, "--pcap", out});
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  if (access("/usr/bin/tshark", X_OK) != 0) {
    if (testing::InCi()) FAIL() << "tshark missing: scripts/install-deps.sh installs it";
    GTEST_SKIP() << "tshark missing (run scripts/install-deps.sh)";
  }
  auto ts = RunCommand({"/usr/bin/tshark", "-r", out, "-n", "-c", "1", "-T", "fields", "-e", "frame.time_epoch"});
  ASSERT_EQ(ts.exit_code, 0) << ts.err;
  const double first = std::strtod(ts.out.c_str(), nullptr);
  EXPECT_NEAR(first, double(time(nullptr)), 120.0) << "first packet dated " << ts.out;
  std::filesystem::remove(snap);
  std::filesystem::remove(out);
}

// Issue 30: `ctl snapshot rel.jdw` landed in the session's directory and a
// path with spaces could not be given.
TEST(LiveSnapshot, RelativePathsWithSpacesLandInTheCallersDirectory) {
  JDW_REQUIRE_ROOT();
  LiveSession s;
  ASSERT_NO_FATAL_FAILURE(s.Start(400, 30));
  SleepMs(1000);
  const std::string dir = testing::TempPath("caller dir");
  std::filesystem::create_directories(dir);
  const std::string session = std::to_string(s.live_->pid());
  auto ctl = RunCommand({"/bin/sh", "-c",
                  "cd \"$0\" && exec \"$1\" ctl --session \"$2\" snapshot 'my snap.jdw'", dir,
                  testing::BinDir() + "/jackdaw", session});
  EXPECT_EQ(ctl.exit_code, 0) << ctl.err;
  const std::string want = dir + "/my snap.jdw";
  struct stat st {};
  EXPECT_EQ(stat(want.c_str(), &st), 0) << ctl.out << ctl.err;
  EXPECT_GT(st.st_size, 0);
  EXPECT_NE(ctl.out.find(want), std::string::npos) << "the reply names the file written: " << ctl.out;
  // A relative path sent by hand (not through jackdaw ctl) is refused, not
  // written in the session's directory.
  nlohmann::json r = s.Ctl("snapshot stray.jdw");
  EXPECT_FALSE(r.value("ok", true)) << r.dump();
  EXPECT_NE(r.value("error", "").find("absolute"), std::string::npos) << r.dump();
  std::filesystem::remove_all(dir);
}

// Issue 30: the flight recorder had no size cap (470 MB at 2 M events/s).
// Capped at 1 MB with a 30 s window asked, the recorder stays at the cap,
// keeps the newest records, and status and the snapshot reply say the cap
// cut the window.
TEST(LiveSnapshot, FlightSizeCapsTheRecorderAndSaysSo) {
  JDW_REQUIRE_ROOT();
  LiveSession s;
  LiveSession::Options o;
  o.rate = "300";
  o.live_extra = {"--flight", "30", "--flight-size", "1M"};
  ASSERT_NO_FATAL_FAILURE(s.Start(6000, 30, o));
  nlohmann::json flight;
  for (int i = 0; i < 150; ++i) {
    SleepMs(100);
    flight = s.Ctl("status")["flight"];
    if (flight.value("capped", false)) break;
  }
  ASSERT_TRUE(flight.value("capped", false)) << flight.dump();
  EXPECT_EQ(flight["cap_bytes"].get<uint64_t>(), 1u << 20);
  EXPECT_LE(flight["bytes"].get<uint64_t>(), 1u << 20);
  EXPECT_LT(flight["held_s"].get<double>(), 30.0);
  EXPECT_NE(flight.value("note", "").find("--flight-size"), std::string::npos) << flight.dump();

  const std::string snap = testing::TempPath("capped.jdw");
  nlohmann::json r = s.Ctl("snapshot " + snap);
  ASSERT_TRUE(r.value("ok", false)) << r.dump();
  EXPECT_TRUE(r["flight"].value("capped", false)) << r.dump();
  // The newest records are the ones kept.
  auto reader = trace::TraceReader::Open(snap);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  uint64_t newest = 0;
  (*reader)->ForEachRecord([&](const jdw_record_header& h) { newest = std::max<uint64_t>(newest, h.ts); });
  EXPECT_GT(newest + 2'000'000'000ull, r["received_ns"].get<uint64_t>());
  std::filesystem::remove(snap);
  EXPECT_NE(s.live_->Stderr().find("--flight-size cap"), std::string::npos) << s.live_->Stderr();
}

TEST(LiveSnapshot, BadFlightSizeIsOneClearLine) {
  JDW_REQUIRE_ROOT();
  for (const char* bad : {"10K", "lots", "-5M", "2048G"}) {
    auto r = RunCommand({testing::BinDir() + "/jackdaw", "live", "--schema", "tcp-threadpool", "--flight-size", bad,
                  "--duration", "1"});
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_NE(r.err.find("bad --flight-size"), std::string::npos) << bad << ": " << r.err;
  }
}

}  // namespace
}  // namespace jackdaw
