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

TEST(JackdawChild, StopsWithSigintWhenItsStarterDies) {
  const std::string log = LogPath("orphan.log");
  const std::string mark = LogPath("orphan.stopped");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t starter = fork();
  if (starter == 0) {
    auto pid = StartJackdawChild({"/bin/sh", "-c",
                                  "trap 'echo stopped > " + mark + "; exit 0' INT; echo 'jackdaw: recording' >&2; "
                                  "i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done"},
                                 log, "jackdaw: recording");
    const int32_t v = pid.ok() ? *pid : -1;
    (void)!write(fds[1], &v, sizeof(v));
    _exit(0);  // the child is left behind
  }
  close(fds[1]);
  int32_t child = -1;
  ASSERT_EQ(read(fds[0], &child, sizeof(child)), ssize_t(sizeof(child)));
  close(fds[0]);
  waitpid(starter, nullptr, 0);
  ASSERT_GT(child, 0);
  bool stopped = false;
  for (int i = 0; i < 100 && !stopped; ++i) {
    stopped = access(mark.c_str(), F_OK) == 0;
    if (!stopped) usleep(50 * 1000);
  }
  EXPECT_TRUE(stopped) << "the orphaned child got no SIGINT";
  if (!stopped) kill(child, SIGKILL);
  remove(log.c_str());
  remove(mark.c_str());
}

TEST(JackdawChild, UnwritableLogIsOneClearError) {
  auto pid = StartJackdawChild({"/bin/true"}, "/nonexistent-dir/x.log", "ready");
  ASSERT_FALSE(pid.ok());
  EXPECT_NE(pid.status().message().find("cannot create /nonexistent-dir/x.log"), std::string::npos);
}

}  // namespace
}  // namespace jackdaw::validate
