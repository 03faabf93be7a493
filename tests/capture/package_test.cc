// The Debian package (make deb): built from the test build's binaries by
// scripts/make-deb.sh, its dependencies resolvable by apt on this machine,
// and, unpacked, a jackdaw that runs its demo and finds its schemas under
// its own prefix (share/jackdaw/schemas), with its man pages and bash
// completion in place. Installing it for real is left to the user (it
// would replace a jackdaw the machine may have).
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace jackdaw {
namespace {

TEST(Package, DebResolvesAndItsJackdawRunsTheDemo) {
  JDW_REQUIRE_ROOT();
  const std::string out = testing::TempPath("deb");
  std::filesystem::remove_all(out);
  auto built = testing::RunCommand({std::string(JDW_SOURCE_DIR) + "/scripts/make-deb.sh", testing::BinDir(),
                                    std::string(JDW_SOURCE_DIR) + "/user/schemas", out});
  ASSERT_EQ(built.exit_code, 0) << built.err;
  std::string deb = built.out;
  while (!deb.empty() && deb.back() == '\n') deb.pop_back();
  ASSERT_TRUE(std::filesystem::exists(deb)) << deb;

  auto info = testing::RunCommand({"dpkg-deb", "--field", deb, "Package", "Depends"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("Package: jackdaw"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("libbpf1"), std::string::npos) << info.out;
  auto simulate = testing::RunCommand({"apt-get", "install", "--simulate", deb});
  EXPECT_EQ(simulate.exit_code, 0) << simulate.out << simulate.err;

  const std::string root = out + "/root";
  auto unpacked = testing::RunCommand({"dpkg-deb", "-x", deb, root});
  ASSERT_EQ(unpacked.exit_code, 0) << unpacked.err;
  for (const char* f : {"/usr/share/man/man1/jackdaw.1.gz", "/usr/share/man/man1/jackdaw-record.1.gz",
                        "/usr/share/bash-completion/completions/jackdaw", "/usr/share/jackdaw/schemas/tcp-threadpool.schema"})
    EXPECT_TRUE(std::filesystem::exists(root + f)) << f;
  const std::string jackdaw = root + "/usr/bin/jackdaw";
  auto demo = testing::RunCommand({jackdaw, "demo", "-n", "40", "-o", out + "/demo"});
  ASSERT_EQ(demo.exit_code, 0) << demo.out << demo.err;
  EXPECT_TRUE(std::filesystem::exists(out + "/demo/report.html"));
  // Its schemas come from the package's prefix, not from this build.
  std::string trace;
  for (const auto& e : std::filesystem::directory_iterator(out + "/demo"))
    if (e.path().extension() == ".jdw") trace = e.path();
  ASSERT_FALSE(trace.empty()) << "the demo left no trace";
  auto analyze = testing::RunCommand({jackdaw, "analyze", trace, "--schema", "tcp-threadpool"});
  EXPECT_EQ(analyze.exit_code, 0) << analyze.err;
  EXPECT_NE(analyze.out.find("jackdaw workload model"), std::string::npos) << analyze.out.substr(0, 300);
  std::filesystem::remove_all(out);
}

}  // namespace
}  // namespace jackdaw
