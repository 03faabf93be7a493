#include "validate/real_lemp.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace jackdaw::validate {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class LempFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/jdw-lemp-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

// Every kind the client sends is a script that answers with a length the
// kind expects (so nginx does not chunk it) and reaches its backend by the
// socket it was given.
TEST_F(LempFiles, EachKindIsAScriptWithALengthAndItsBackendsSocket) {
  ASSERT_TRUE(WriteLempFiles(dir_, dir_ + "/fpm.sock", "/db/mysqld.sock", "/cache/redis.sock").ok());
  int db = 0, cache = 0;
  for (const RequestKind& k : LempRequestKinds()) {
    const std::string script = Slurp(dir_ + "/www" + k.target);
    ASSERT_FALSE(script.empty()) << k.target;
    EXPECT_NE(script.find("Content-Length"), std::string::npos) << k.target;
    db += script.find("/db/mysqld.sock") != std::string::npos;
    cache += script.find("/cache/redis.sock") != std::string::npos;
  }
  EXPECT_EQ(db, 2);     // point and update
  EXPECT_EQ(cache, 1);  // cached
  const std::string pool = Slurp(dir_ + "/php-fpm.conf");
  EXPECT_NE(pool.find("listen = " + dir_ + "/fpm.sock"), std::string::npos);
  EXPECT_NE(pool.find("pm = static"), std::string::npos);
}

// php-fpm itself accepts the pool and the php.ini (its -t check), without
// reading /etc/php: the stack starts from what WriteLempFiles wrote alone.
TEST_F(LempFiles, PhpFpmAcceptsTheConfiguration) {
  if (access(kPhpFpmBinary, X_OK) != 0) {
    if (getenv("CI")) FAIL() << kPhpFpmBinary << " missing: install php8.2-fpm (scripts/install-deps.sh)";
    GTEST_SKIP() << kPhpFpmBinary << " missing: install php8.2-fpm (scripts/install-deps.sh)";
  }
  ASSERT_TRUE(WriteLempFiles(dir_, dir_ + "/fpm.sock", "/db/mysqld.sock", "/cache/redis.sock").ok());
  std::string cmd;
  for (const std::string& a : PhpFpmArgv(dir_)) cmd += "'" + a + "' ";
  cmd += "-t >" + dir_ + "/t.out 2>&1";
  EXPECT_EQ(system(cmd.c_str()), 0) << Slurp(dir_ + "/t.out");
  EXPECT_NE(Slurp(dir_ + "/t.out").find("test is successful"), std::string::npos) << Slurp(dir_ + "/t.out");
}

}  // namespace
}  // namespace jackdaw::validate
