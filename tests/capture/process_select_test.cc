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
#include "support/test_support.h"

namespace jackdaw {
namespace {

std::string Jackdaw() { return testing::BinDir() + "/jackdaw"; }
std::string Workload() { return testing::BinDir() + "/jackdaw-workload"; }

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// `jackdaw record ARGS -o path` in the background, returned once it says
// it is recording.
class Recording {
 public:
  Recording(std::vector<std::string> args, const std::string& stem) {
    path_ = testing::TempPath(stem + ".jdw");
    log_ = testing::TempPath(stem + ".log");
    args.insert(args.begin(), {Jackdaw(), "record", "-o", path_});
    pid_ = fork();
    if (pid_ == 0) {
      int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, STDERR_FILENO);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    for (int i = 0; i < 600 && ReadAll(log_).find("jackdaw: recording") == std::string::npos; ++i) usleep(50000);
  }
  ~Recording() {
    std::filesystem::remove(path_);
    std::filesystem::remove(log_);
  }
  bool started() const { return ReadAll(log_).find("jackdaw: recording") != std::string::npos; }
  std::string log() const { return ReadAll(log_); }
  // Stops with SIGINT; returns the number of getppid entries in the trace.
  int StopAndCountGetppid() {
    kill(pid_, SIGINT);
    int status = 0;
    waitpid(pid_, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << log();
    auto d = testing::RunCommand({Jackdaw(), "dump", path_});
    EXPECT_EQ(d.exit_code, 0) << d.err;
    int n = 0;
    for (size_t p = d.out.find("sys_enter        getppid"); p != std::string::npos;
         p = d.out.find("sys_enter        getppid", p + 1))
      ++n;
    return n;
  }

 private:
  std::string path_, log_;
  pid_t pid_ = -1;
};

// A process that waits for a byte on a pipe, then execs jackdaw-workload
// --getppid N (so it exists, with its pid, before recording starts).
class GatedWorkload {
 public:
  explicit GatedWorkload(int calls, bool fork_first = false) {
    int p[2];
    EXPECT_EQ(pipe(p), 0);
    pid_ = fork();
    if (pid_ == 0) {
      close(p[1]);
      char c;
      if (read(p[0], &c, 1) != 1) _exit(1);
      if (fork_first) {  // the workload runs in a child of this process
        pid_t k = fork();
        if (k != 0) {
          int st;
          waitpid(k, &st, 0);
          _exit(0);
        }
      }
      const std::string n = std::to_string(calls);
      int null = open("/dev/null", O_WRONLY);
      dup2(null, STDOUT_FILENO);
      execl(Workload().c_str(), "jackdaw-workload", "--getppid", n.c_str(), nullptr);
      _exit(127);
    }
    close(p[0]);
    go_ = p[1];
  }
  ~GatedWorkload() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  void RunToEnd() {
    EXPECT_EQ(write(go_, "g", 1), 1);
    close(go_);
    int st = 0;
    waitpid(pid_, &st, 0);
    pid_ = -1;
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }

 private:
  pid_t pid_ = -1;
  int go_ = -1;
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
