// `jackdaw reproduce` (Table 1) and `jackdaw reproduce --real` share
// --work-dir. Table 1's run creates it 0700 root; the real servers' own
// users (www-data, nobody, postgres, mysql) must still reach their files in
// it, in either order, and the directory must stay one nobody else can
// plant links in.
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "common/safe_file.h"
#include "support/test_support.h"
#include "validate/real_servers.h"
#include "validate/real_suite.h"

namespace jackdaw {
namespace {

namespace fs = std::filesystem;
using testing::RunCommand;

// A server's files as RealServer lays them out: its directory and a page.
std::string ServerFile(const std::string& work_dir) {
  const std::string server = work_dir + "/nginx-close_r0.server";
  fs::create_directories(server + "/www");
  fs::permissions(server, fs::perms(0755));
  fs::permissions(server + "/www", fs::perms(0755));
  const std::string page = server + "/www/5k.html";
  std::ofstream(page) << "page\n";
  fs::permissions(page, fs::perms(0644));
  return page;
}

// Whether `user` (with its own group only) can read `path`.
bool Reads(const std::string& user, const std::string& path) {
  const passwd* pw = getpwnam(user.c_str());
  if (!pw) return false;
  auto r = RunCommand({"setpriv", "--reuid=" + std::to_string(pw->pw_uid), "--regid=" + std::to_string(pw->pw_gid),
                       "--clear-groups", "cat", path});
  return r.exit_code == 0;
}

constexpr const char* kServerUsers[] = {"www-data", "nobody", "postgres", "mysql"};

TEST(RealWorkDir, AfterTableOnesPrivateDirectoryEveryServerUserReachesItsFiles) {
  JDW_REQUIRE_ROOT();
  const std::string dir = testing::TempPath("wd_table_first");
  fs::remove_all(dir);
  ASSERT_TRUE(CheckPrivateDir(dir).ok());  // what `jackdaw reproduce` leaves: 0700 root
  ASSERT_TRUE(validate::PrepareRealWorkDir(dir).ok());
  const std::string page = ServerFile(dir);
  for (const char* user : kServerUsers) {
    if (!getpwnam(user)) continue;  // that server's package is not installed
    EXPECT_TRUE(Reads(user, page)) << user << " cannot read " << page;
  }
  struct stat st;
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0711u);  // passed through, never listed or written
  fs::remove_all(dir);
}

TEST(RealWorkDir, TableOneAcceptsTheDirectoryARealRunPrepared) {
  JDW_REQUIRE_ROOT();
  const std::string dir = testing::TempPath("wd_real_first");
  fs::remove_all(dir);
  ASSERT_TRUE(validate::PrepareRealWorkDir(dir).ok());
  const std::string page = ServerFile(dir);
  EXPECT_TRUE(CheckPrivateDir(dir).ok());
  ASSERT_TRUE(validate::PrepareRealWorkDir(dir).ok());
  EXPECT_TRUE(Reads("www-data", page));
  fs::remove_all(dir);
}

TEST(RealWorkDir, AnotherUsersDirectoryOrAClosedOneAboveIsRefused) {
  JDW_REQUIRE_ROOT();
  const passwd* nobody = getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  const std::string planted = testing::TempPath("wd_planted");
  fs::remove_all(planted);
  ASSERT_EQ(mkdir(planted.c_str(), 0755), 0);
  ASSERT_EQ(chown(planted.c_str(), nobody->pw_uid, nobody->pw_gid), 0);
  Status st = validate::PrepareRealWorkDir(planted);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("belongs to uid"), std::string::npos) << st.message();

  const std::string closed = testing::TempPath("wd_closed");
  fs::remove_all(closed);
  ASSERT_EQ(mkdir(closed.c_str(), 0700), 0);
  st = validate::PrepareRealWorkDir(closed + "/work");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find(closed + " is closed to other users"), std::string::npos) << st.message();
  fs::remove_all(planted);
  fs::remove_all(closed);
}

// Both subcommands for real, in the order the demo's "Next:" lines give and
// the other: the servers whose users failed before (nginx answered 403,
// initdb "Permission denied").
class ReproduceOrder : public ::testing::Test {
 protected:
  void SetUp() override {
    JDW_REQUIRE_ROOT();
    for (const auto kind : {validate::ServerKind::kNginx, validate::ServerKind::kPostgres})
      if (access(validate::ServerBinary(kind).c_str(), X_OK) != 0)
        GTEST_SKIP() << validate::ServerPackage(kind) << " is not installed";
  }
  static testing::CommandResult Table1(const std::string& dir) {
    return RunCommand({testing::BinDir() + "/jackdaw", "reproduce", "--only", "A:1", "-n", "20", "--work-dir", dir});
  }
  static testing::CommandResult Real(const std::string& dir) {
    return RunCommand({testing::BinDir() + "/jackdaw", "reproduce", "--real", "--only", "nginx-close,postgres", "-n",
                       "20", "--work-dir", dir});
  }
  using Subcommand = testing::CommandResult (*)(const std::string&);
  static void RunInOrder(const std::string& stem, Subcommand first, Subcommand second) {
    const std::string dir = testing::TempPath(stem);
    fs::remove_all(dir);
    auto a = first(dir);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    auto b = second(dir);
    EXPECT_EQ(b.exit_code, 0) << b.err;
    fs::remove_all(dir);
  }
};

TEST_F(ReproduceOrder, RealAfterTableOne) { RunInOrder("order_table_real", Table1, Real); }

TEST_F(ReproduceOrder, TableOneAfterReal) { RunInOrder("order_real_table", Real, Table1); }

}  // namespace
}  // namespace jackdaw
