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

}  // namespace
}  // namespace jackdaw
