// The PostgreSQL workload's throwaway cluster is really thrown away: a
// stop removes it, and so does the death of the process that started it
// (a SIGINT'ed or crashed `jackdaw reproduce`): no postmaster, no backend
// and no data directory are left behind.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include <gtest/gtest.h>

#include "support/test_support.h"
#include "validate/real_servers.h"

namespace jackdaw {
namespace {

namespace fs = std::filesystem;

bool Gone(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

// Up to 30 s for the keeper's fast shutdown and removal.
bool WaitGone(pid_t postmaster, const std::string& data) {
  for (int i = 0; i < 600; ++i) {
    if (Gone(postmaster) && !fs::exists(data)) return true;
    usleep(50 * 1000);
  }
  return false;
}

class RealPostgres : public ::testing::Test {
 protected:
  void SetUp() override {
    JDW_REQUIRE_ROOT();
    const std::string bin = validate::ServerBinary(validate::ServerKind::kPostgres);
    if (access(bin.c_str(), X_OK) != 0) {
      if (testing::InCi()) FAIL() << bin << " missing: install postgresql (scripts/install-deps.sh)";
      GTEST_SKIP() << bin << " missing: install the Debian package postgresql (scripts/install-deps.sh)";
    }
    dir_ = testing::TempPath("pgkeep");
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(RealPostgres, StopRemovesTheCluster) {
  auto s = validate::RealServer::Start(validate::ServerKind::kPostgres, dir_ + "/srv");
  ASSERT_TRUE(s.ok()) << s.status().message();
  const pid_t pm = (*s)->pid();
  EXPECT_TRUE(fs::exists(dir_ + "/srv/data/PG_VERSION"));
  Status st = (*s)->Stop();
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(WaitGone(pm, dir_ + "/srv/data")) << "postmaster or data directory left behind";
}

TEST_F(RealPostgres, TheStartersDeathRemovesTheCluster) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t starter = fork();
  if (starter == 0) {
    close(fds[0]);
    auto s = validate::RealServer::Start(validate::ServerKind::kPostgres, dir_ + "/srv");
    const int32_t pm = s.ok() ? (*s)->pid() : -1;
    (void)!write(fds[1], &pm, sizeof(pm));
    pause();  // killed below, never stopping its server
    _exit(0);
  }
  close(fds[1]);
  int32_t pm = -1;
  const ssize_t n = read(fds[0], &pm, sizeof(pm));
  close(fds[0]);
  kill(starter, SIGKILL);
  waitpid(starter, nullptr, 0);
  ASSERT_EQ(n, ssize_t(sizeof(pm)));
  ASSERT_GT(pm, 0) << "postgres did not start (see " << dir_ << "/srv/server.out)";
  EXPECT_TRUE(WaitGone(pm, dir_ + "/srv/data")) << "postmaster or data directory outlived its starter";
}

}  // namespace
}  // namespace jackdaw
