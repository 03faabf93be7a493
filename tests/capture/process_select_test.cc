// Process selection as deployments need it (issue 10): --pid covers the
// descendants that already exist, --comm and --cgroup admit processes that
// start later (in BPF, at fork/exec) and leave everything else out. Each
// test counts the getppid calls of jackdaw-workload processes in the trace:
// the selected one's exactly, the unselected one's never.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "capture/process_select.h"
#include "support/recording.h"
#include "support/test_support.h"

namespace jackdaw {
namespace {

std::string Jackdaw() { return testing::BinDir() + "/jackdaw"; }
std::string Workload() { return testing::BinDir() + "/jackdaw-workload"; }

using Recording = testing::BackgroundRecording;

// A process that waits for RunToEnd(), then execs jackdaw-workload
// --getppid N (so it exists, with its pid, before recording starts);
// fork_first: the workload runs in a child of that process.
class GatedWorkload : public testing::GatedChild {
 public:
  explicit GatedWorkload(int calls, bool fork_first = false)
      : GatedChild([calls, fork_first] {
          if (fork_first) {
            const pid_t k = fork();
            if (k != 0) {
              int st;
              waitpid(k, &st, 0);
              _exit(0);
            }
          }
          testing::ExecGetppidWorkload(calls);
        }) {}
};

// A parent whose child already exists when recording starts: before issue
// 10 only the parent was traced (an HTTP server's workers were missed).
TEST(ProcessSelection, PidCoversDescendantsThatAlreadyExist) {
  JDW_REQUIRE_ROOT();
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  const pid_t parent = fork();
  if (parent == 0) {
    close(go[1]);
    const pid_t child = fork();
    if (child == 0) {
      char c;
      if (read(go[0], &c, 1) != 1) _exit(1);
      int null = open("/dev/null", O_WRONLY);
      dup2(null, STDOUT_FILENO);
      execl(Workload().c_str(), "jackdaw-workload", "--getppid", "321", nullptr);
      _exit(127);
    }
    int st = 0;
    waitpid(child, &st, 0);
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
  }
  close(go[0]);
  for (int i = 0; i < 100 && capture::DescendantsOf(uint32_t(parent)).size() < 2; ++i) usleep(20000);
  ASSERT_EQ(capture::DescendantsOf(uint32_t(parent)).size(), 2u) << "the parent and its waiting child";
  GatedWorkload other(654);  // not a descendant: stays out
  Recording rec({"--pid", std::to_string(parent)}, "pidtree");
  ASSERT_TRUE(rec.started()) << rec.log();
  ASSERT_EQ(write(go[1], "g", 1), 1);
  close(go[1]);
  other.RunToEnd();
  int st = 0;
  waitpid(parent, &st, 0);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  EXPECT_EQ(rec.StopAndCountGetppid(), 321);
}

// Following a traced parent's forks lives in the sched group's fork hook;
// with only other groups recorded (the syscall group here, syscall and net
// below) the session attaches that hook alone, so a worker forked after
// the start is traced as with every group.
TEST(ProcessSelection, PidFollowsForksWithoutTheSchedGroup) {
  JDW_REQUIRE_ROOT();
  for (const char* probes : {"syscall", "syscall,net"}) {
    SCOPED_TRACE(probes);
    GatedWorkload w(432, /*fork_first=*/true);  // forks only once recording runs
    GatedWorkload other(543);                   // not a descendant: stays out
    Recording rec({"--pid", std::to_string(w.pid()), "--probes", probes}, "forkfollow");
    ASSERT_TRUE(rec.started()) << rec.log();
    w.RunToEnd();
    other.RunToEnd();
    EXPECT_EQ(rec.StopAndCountGetppid(), 432) << rec.log();
  }
}

// --comm admits at exec, also a sched group hook.
TEST(ProcessSelection, CommAdmitsAtExecWithoutTheSchedGroup) {
  JDW_REQUIRE_ROOT();
  Recording rec({"--comm", "jackdaw-workloa", "--probes", "syscall"}, "commsys");
  ASSERT_TRUE(rec.started()) << rec.log();
  GatedWorkload w(234);
  w.RunToEnd();
  EXPECT_EQ(rec.StopAndCountGetppid(), 234);
}

void OwnGetppidCalls(int n) {
  for (int i = 0; i < n; ++i) (void)getppid();
}

TEST(ProcessSelection, CommAdmitsProcessesThatExecLater) {
  JDW_REQUIRE_ROOT();
  // The kernel keeps 15 characters: jackdaw-workload is "jackdaw-workloa".
  Recording rec({"--comm", "jackdaw-workloa"}, "comm");
  ASSERT_TRUE(rec.started()) << rec.log();
  GatedWorkload w(222);  // forked under this test's name, then execs
  w.RunToEnd();
  OwnGetppidCalls(100);  // this process has another name: stays out
  EXPECT_EQ(rec.StopAndCountGetppid(), 222);
}

TEST(ProcessSelection, CommLongerThanTheKernelKeepsIsOneClearError) {
  JDW_REQUIRE_ROOT();
  auto r = testing::RunCommand({Jackdaw(), "record", "--comm", "a-name-of-twenty-chars", "--duration", "1"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("/proc/PID/comm"), std::string::npos) << r.err;
}

// A process moved into the cgroup before it execs (what systemd and
// container runtimes do) is admitted in BPF at exec; its children at fork.
TEST(ProcessSelection, CgroupAdmitsProcessesMovedInAndTheirChildren) {
  JDW_REQUIRE_ROOT();
  const std::string mount = capture::CgroupV2Mount();
  ASSERT_FALSE(mount.empty()) << "no cgroup v2 hierarchy mounted";
  const std::string cg = mount + "/jdwtest" + std::to_string(getpid());
  ASSERT_EQ(mkdir(cg.c_str(), 0755), 0) << cg << ": " << strerror(errno);
  {
    Recording rec({"--cgroup", cg}, "cgroup");
    ASSERT_TRUE(rec.started()) << rec.log();
    GatedWorkload moved(111);
    GatedWorkload forked(77, /*fork_first=*/true);
    GatedWorkload outside(500);
    for (pid_t p : {moved.pid(), forked.pid()}) {
      std::ofstream procs(cg + "/cgroup.procs");
      procs << p << "\n";
      procs.flush();
      ASSERT_TRUE(procs.good()) << "cannot move " << p << " into " << cg;
    }
    moved.RunToEnd();
    forked.RunToEnd();
    outside.RunToEnd();
    OwnGetppidCalls(100);
    EXPECT_EQ(rec.StopAndCountGetppid(), 111 + 77);
  }
  EXPECT_EQ(rmdir(cg.c_str()), 0) << strerror(errno);
}

TEST(ProcessSelection, UnknownCgroupIsOneClearError) {
  JDW_REQUIRE_ROOT();
  auto r = testing::RunCommand({Jackdaw(), "record", "--cgroup", "no-such.slice/x.service", "--duration", "1"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--cgroup"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace jackdaw
