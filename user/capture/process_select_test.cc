#include "capture/process_select.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace jackdaw::capture {
namespace {

namespace fs = std::filesystem;

// A fake /proc: pid -> (ppid, comm), with a comm that has spaces and a ')'.
class FakeProc : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("jdw_proc_" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "self");
  }
  void TearDown() override { fs::remove_all(root_); }
  void Add(uint32_t pid, uint32_t ppid, const std::string& comm) {
    const fs::path d = root_ / std::to_string(pid);
    fs::create_directories(d);
    std::ofstream(d / "stat") << pid << " (" << comm << ") S " << ppid << " " << pid << " 0 0\n";
    std::ofstream(d / "comm") << comm << "\n";
  }
  std::string proc() const { return root_.string(); }
  fs::path root_;
};

TEST_F(FakeProc, DescendantsIncludeGrandchildrenAndNotSiblings) {
  Add(1, 0, "init");
  Add(100, 1, "nginx");
  Add(101, 100, "nginx");
  Add(102, 100, "nginx");
  Add(200, 101, "sh");          // grandchild
  Add(300, 1, "other (a) b");   // sibling with an awkward comm
  Add(301, 300, "x");
  EXPECT_EQ(DescendantsOf(100, proc()), (std::vector<uint32_t>{100, 101, 102, 200}));
  EXPECT_EQ(DescendantsOf(300, proc()), (std::vector<uint32_t>{300, 301}));
  // A pid that does not exist (any more) still selects itself.
  EXPECT_EQ(DescendantsOf(999, proc()), (std::vector<uint32_t>{999}));
}

TEST_F(FakeProc, CommMatchesExactlyAndSkipsBrokenEntries) {
  Add(10, 1, "memcached");
  Add(11, 1, "memcached-x");
  Add(12, 1, "memcached");
  fs::create_directories(root_ / "13");  // exited while being read: no files
  fs::create_directories(root_ / "notapid");
  EXPECT_EQ(ProcessesWithComm("memcached", proc()), (std::vector<uint32_t>{10, 12}));
  EXPECT_TRUE(ProcessesWithComm("nginx", proc()).empty());
}

TEST_F(FakeProc, CgroupMountComesFromMountinfo) {
  std::ofstream(root_ / "self" / "mountinfo")
      << "22 1 0:20 / /sys rw - sysfs sysfs rw\n"
      << "30 22 0:26 / /sys/fs/cgroup/unified rw,nosuid shared:9 - cgroup2 cgroup2 rw\n";
  EXPECT_EQ(CgroupV2Mount(proc()), "/sys/fs/cgroup/unified");
  std::ofstream(root_ / "self" / "mountinfo") << "22 1 0:20 / /sys rw - sysfs sysfs rw\n";
  EXPECT_EQ(CgroupV2Mount(proc()), "");
  auto r = ResolveCgroup("system.slice/x.service", proc());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no cgroup v2 hierarchy"), std::string::npos);
}

TEST(ProcessSelect, RealDescendantsOfThisProcess) {
  // A child that forks a grandchild; both must be found under our pid.
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  if (child == 0) {
    if (fork() == 0) {
      pause();
      _exit(0);
    }
    (void)!write(ready[1], "r", 1);
    pause();
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  const auto d = DescendantsOf(uint32_t(getpid()));
  EXPECT_NE(std::find(d.begin(), d.end(), uint32_t(child)), d.end());
  EXPECT_GE(d.size(), 3u);  // us, the child, the grandchild
  // The grandchild (any descendant but the child), then the child.
  for (uint32_t p : d)
    if (p != uint32_t(getpid()) && p != uint32_t(child)) kill(pid_t(p), SIGKILL);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
}

TEST(ProcessSelect, UnknownCgroupIsOneClearError) {
  if (CgroupV2Mount().empty()) GTEST_SKIP() << "no cgroup v2 mounted here";
  auto r = ResolveCgroup("no-such.slice/none.service");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is not a cgroup directory"), std::string::npos) << r.status().message();
  auto root = ResolveCgroup("/");
  ASSERT_TRUE(root.ok()) << root.status().message();
  EXPECT_EQ(root->level, 0u);
  EXPECT_GT(root->id, 0u);
}

}  // namespace
}  // namespace jackdaw::capture
