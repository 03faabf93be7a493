// The fixture the real-server integration tests share: a private work
// directory, and one workload of the suite recorded as `jackdaw reproduce
// --real` records it (RecordRealWorkload: the server started privately,
// `jackdaw record --pid` and `jackdaw interactions` beside it, our clients'
// ground truth). Each test then scores the run its own way.
//
// A server whose Debian package is missing fails the test in CI (env CI
// set: the setup is broken) and skips it elsewhere, naming the package.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "support/test_support.h"
#include "validate/real_suite.h"

namespace jackdaw::testing {

class RealServerTest : public ::testing::Test {
 protected:
  // Requests per workload: enough for every kind on every connection,
  // short enough for `make test`.
  static constexpr int kRequests = 80;

  explicit RealServerTest(std::string stem) : stem_(std::move(stem)) {}

  void SetUp() override {
    JDW_REQUIRE_ROOT();
    opts_.bin_dir = BinDir();
    opts_.work_dir = TempPath(stem_);
    std::filesystem::create_directories(opts_.work_dir);
  }
  void TearDown() override { std::filesystem::remove_all(opts_.work_dir); }

  // Records workload `name`; nullopt after a failure, or a skip (test with
  // IsSkipped()).
  std::optional<validate::RecordedRun> Record(const std::string& name) {
    auto sel = validate::SelectRealWorkloads(validate::RealWorkloads(kRequests), {name});
    EXPECT_TRUE(sel.ok() && sel->size() == 1u) << name;
    if (!sel.ok() || sel->empty()) return std::nullopt;
    const validate::RealWorkload& w = (*sel)[0];
    const std::string bin = validate::ServerBinary(w.server);
    if (access(bin.c_str(), X_OK) != 0) {
      MissingServer(bin, validate::ServerPackage(w.server));
      return std::nullopt;
    }
    auto run = validate::RecordRealWorkload(opts_, w);
    EXPECT_TRUE(run.ok()) << run.status().message();
    if (!run.ok()) return std::nullopt;
    return *run;
  }

  validate::RealRunOptions opts_;

 private:
  void MissingServer(const std::string& bin, const char* package) {
    if (InCi()) FAIL() << bin << " missing: CI must run this test; install " << package << " (scripts/install-deps.sh)";
    GTEST_SKIP() << bin << " missing: install the Debian package " << package << " (scripts/install-deps.sh)";
  }

  std::string stem_;
};

}  // namespace jackdaw::testing
