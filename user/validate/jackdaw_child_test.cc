#include "validate/jackdaw_child.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

namespace jackdaw::validate {
namespace {

std::string LogPath(const char* name) { return "/tmp/jdw_child_test_" + std::to_string(getpid()) + name; }

TEST(JackdawChild, ReturnsOnceTheReadyLineIsLogged) {
  const std::string log = LogPath("ready.log");
  auto pid = StartJackdawChild({"/bin/sh", "-c", "sleep 0.2; echo 'jackdaw: recording' >&2; sleep 30"}, log,
                               "jackdaw: recording");
  ASSERT_TRUE(pid.ok()) << pid.status().message();
  EXPECT_EQ(kill(*pid, 0), 0);  // still running: handed back, not waited for
  kill(*pid, SIGKILL);
  waitpid(*pid, nullptr, 0);
  remove(log.c_str());
}

TEST(JackdawChild, ExitBeforeReadyIsAnErrorWithTheLog) {
  const std::string log = LogPath("early.log");
  auto pid = StartJackdawChild({"/bin/sh", "-c", "echo 'no probes: not root' >&2; exit 1"}, log, "jackdaw: recording");
  ASSERT_FALSE(pid.ok());
  EXPECT_NE(pid.status().message().find("exited before it was ready"), std::string::npos);
  EXPECT_NE(pid.status().message().find("no probes: not root"), std::string::npos);
  remove(log.c_str());
}

TEST(JackdawChild, UnwritableLogIsOneClearError) {
  auto pid = StartJackdawChild({"/bin/true"}, "/nonexistent-dir/x.log", "ready");
  ASSERT_FALSE(pid.ok());
  EXPECT_NE(pid.status().message().find("cannot create /nonexistent-dir/x.log"), std::string::npos);
}

}  // namespace
}  // namespace jackdaw::validate
