// Child::Stop on real processes: a tracer that ends on its stop signal, one
// that misses the first and ends on the repeat, one deaf to it that ends on
// SIGTERM, and one that ends on nothing and must be killed so the harness
// goes on.
#include "overhead/process.h"

#include <signal.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

namespace jackdaw::overhead {
namespace {

Child StartedShell(const std::string& script) {
  auto c = Child::Spawn({"sh", "-c", script}, {}, true);
  EXPECT_TRUE(c.ok()) << c.status().message();
  Child child = std::move(*c);
  child.Go();
  // The shell has set its traps once it says so.
  EXPECT_TRUE(child.WaitForLine("ready", 10000).ok());
  return child;
}

TEST(ChildStop, AChildThatEndsOnTheSignalIsNotForced) {
  Child c = StartedShell("trap 'echo got-int; exit 3' INT; echo ready; while :; do sleep 0.05; done");
  ExitInfo e = c.Stop(SIGINT, 10000);
  EXPECT_FALSE(e.forced);
  ASSERT_TRUE(WIFEXITED(e.status)) << e.Describe();
  EXPECT_EQ(WEXITSTATUS(e.status), 3);
  EXPECT_NE(e.out.find("got-int"), std::string::npos);
}

TEST(ChildStop, AMissedSignalIsSentAgain) {
  // The first SIGINT is only counted; the second ends it.
  Child c = StartedShell(
      "n=0; trap 'n=$((n+1)); [ $n -ge 2 ] && exit 4' INT; echo ready; while :; do sleep 0.05; done");
  ExitInfo e = c.Stop(SIGINT, 10000);
  EXPECT_FALSE(e.forced);
  ASSERT_TRUE(WIFEXITED(e.status)) << e.Describe();
  EXPECT_EQ(WEXITSTATUS(e.status), 4);
}

TEST(ChildStop, AChildDeafToTheSignalEndsOnSigterm) {
  Child c = StartedShell("trap '' INT; trap 'exit 6' TERM; echo ready; while :; do sleep 0.05; done");
  ExitInfo e = c.Stop(SIGINT, 8000);
  EXPECT_FALSE(e.forced);
  ASSERT_TRUE(WIFEXITED(e.status)) << e.Describe();
  EXPECT_EQ(WEXITSTATUS(e.status), 6);
}

TEST(ChildStop, AChildThatIgnoresEveryStopIsKilledAfterTheGrace) {
  Child c = StartedShell("trap '' INT TERM; echo ready; while :; do sleep 0.05; done");
  ExitInfo e = c.Stop(SIGINT, 2500);
  EXPECT_TRUE(e.forced);
  ASSERT_TRUE(WIFSIGNALED(e.status)) << e.Describe();
  EXPECT_EQ(WTERMSIG(e.status), SIGKILL);
}

TEST(ChildStop, WaitStillReapsAChildThatEndsByItself) {
  auto c = Child::Spawn({"sh", "-c", "echo out; echo err >&2; exit 5"}, {}, true);
  ASSERT_TRUE(c.ok());
  ExitInfo e = c->Wait();
  EXPECT_FALSE(e.forced);
  EXPECT_EQ(WEXITSTATUS(e.status), 5);
  EXPECT_EQ(e.out, "out\n");
  EXPECT_EQ(e.err, "err\n");
}

}  // namespace
}  // namespace jackdaw::overhead
