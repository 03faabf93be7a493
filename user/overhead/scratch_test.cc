// Where `jackdaw overhead` writes as root: names another local user could
// have created first (the old /var/tmp/jackdaw-overhead-nginx-PID and
// jackdaw-overhead-PID.bpftrace.bt) are planted here with links to a victim
// file; the victim must come through untouched and nothing may be left
// behind.
#include <dirent.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "jackdaw/abi.h"
#include "overhead/harness.h"
#include "overhead/workloads.h"

namespace jackdaw::overhead {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::set<std::string> Entries(const std::string& dir, const std::string& prefix) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.insert(e.path().string());
  return out;
}

struct Planted {
  std::string dir = "/var/tmp/jdw_scratch_test_" + std::to_string(getpid());
  std::string victim = dir + "/victim";
  Planted() {
    fs::remove_all(dir);
    fs::create_directory(dir);
    std::ofstream(victim) << "secret\n";
  }
  ~Planted() { fs::remove_all(dir); }
};

TEST(OverheadScratch, NginxPrefixIsAFreshDirectoryNotOnePlantedAtThePidName) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (the nginx prefix is root's)";
  if (access("/usr/sbin/nginx", X_OK) != 0 || access("/usr/bin/wrk", X_OK) != 0)
    GTEST_SKIP() << "nginx or wrk not installed";
  Planted p;
  const passwd* nobody = getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  // The directory the old code would have used, made by another user, with
  // its config file a link to the victim.
  const std::string old_dir = "/var/tmp/jackdaw-overhead-nginx-" + std::to_string(getpid());
  fs::remove_all(old_dir);
  ASSERT_EQ(mkdir(old_dir.c_str(), 0777), 0);
  fs::create_symlink(p.victim, old_dir + "/nginx.conf");
  ASSERT_EQ(lchown(old_dir.c_str(), nobody->pw_uid, nobody->pw_gid), 0);
  ASSERT_EQ(lchown((old_dir + "/nginx.conf").c_str(), nobody->pw_uid, nobody->pw_gid), 0);

  const auto before = Entries("/var/tmp", "jackdaw-overhead-nginx.");
  {
    auto wl = BuiltinWorkload("nginx", "/nonexistent");
    ASSERT_TRUE(wl.ok()) << wl.status().message();
    EXPECT_EQ(Slurp(p.victim), "secret\n");
    auto made = Entries("/var/tmp", "jackdaw-overhead-nginx.");
    for (const auto& b : before) made.erase(b);
    ASSERT_EQ(made.size(), 1u);
    const std::string dir = *made.begin();
    struct stat st;
    ASSERT_EQ(lstat(dir.c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_uid, 0u);
    EXPECT_EQ(st.st_mode & 0777, 0711u);  // others pass through, never list or write
    ASSERT_EQ(lstat((dir + "/nginx.conf").c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_NE(Slurp(dir + "/nginx.conf").find("root " + dir + "/html;"), std::string::npos);
    // nginx's worker runs unprivileged: it must still read the page.
    const int read_as_nobody =
        system(("setpriv --reuid=nobody --regid=nogroup --clear-groups cat " + dir + "/html/5k.html >/dev/null")
                   .c_str());
    EXPECT_EQ(read_as_nobody, 0);
  }
  // The workload gone, its directory is gone; the planted one is as it was.
  auto left = Entries("/var/tmp", "jackdaw-overhead-nginx.");
  EXPECT_EQ(left, before);
  EXPECT_TRUE(fs::is_symlink(old_dir + "/nginx.conf"));
  EXPECT_EQ(Slurp(p.victim), "secret\n");
  fs::remove_all(old_dir);
}

TEST(OverheadScratch, TracerFilesNeverGoThroughLinksPlantedInTheWorkDir) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (eBPF)";
  if (access("/usr/bin/bpftrace", X_OK) != 0) GTEST_SKIP() << "bpftrace not installed";
  Planted p;
  // bpftrace's script and output under the names the old code used.
  const std::string old = p.dir + "/jackdaw-overhead-" + std::to_string(getpid()) + ".bpftrace";
  fs::create_symlink(p.victim, old + ".bt");
  fs::create_symlink(p.victim, old);
  const auto before = Entries(p.dir, "");

  HarnessOptions o;
  o.configs = {1u << JDW_GROUP_SYSCALL};
  o.runs = 2;
  o.warmup = 0;
  o.work_dir = p.dir;
  o.progress = false;
  auto wl = CommandWorkload({"/bin/true"});
  auto results = RunHarness(*wl, o);
  ASSERT_TRUE(results.ok()) << results.status().message();
  ASSERT_EQ(results->size(), 1u);
  for (const TracerRuns& t : results->front().tracers) {
    if (t.tracer == TracerKind::kBpftrace) {
      EXPECT_EQ(t.unavailable, "") << "bpftrace did not run";
    }
  }
  EXPECT_EQ(Slurp(p.victim), "secret\n");
  EXPECT_EQ(Entries(p.dir, ""), before);  // the scratch directory is removed
}

}  // namespace
}  // namespace jackdaw::overhead
