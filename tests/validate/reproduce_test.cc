// Issue 6's quick mode, in the test suite: the paper's validation on a mixed
// A/B/E/F workload with real kernel events, scored against the load
// driver's ground truth with both shipped schemas.
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "schema/schema.h"
#include "support/test_support.h"
#include "validate/experiment.h"

namespace jackdaw {
namespace {

class QuickReproduction : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::IsRoot()) return;
    opts_.bin_dir = testing::BinDir();
    opts_.work_dir = testing::TempPath("reproduce");
    std::filesystem::create_directories(opts_.work_dir);
    auto w = validate::PaperWorkloads(/*quick=*/true, /*requests=*/120);
    ASSERT_EQ(w.size(), 1u);
    auto r = validate::RecordWorkload(opts_, w[0]);
    ASSERT_TRUE(r.ok()) << r.status().message();
    run_ = new validate::RecordedRun(*r);
  }
  static void TearDownTestSuite() {
    delete run_;
    run_ = nullptr;
    std::filesystem::remove_all(opts_.work_dir);
  }
  void SetUp() override {
    JDW_REQUIRE_ROOT();
    ASSERT_NE(run_, nullptr);
  }
  static validate::SchemaResult Analyze(const std::string& schema) {
    auto r = validate::AnalyzeRun(*run_, schema, schema::DefaultSchemaDirs(testing::BinDir() + "/jackdaw"));
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : validate::SchemaResult{};
  }
  static void Check(const validate::SchemaResult& r) {
    EXPECT_EQ(r.sent, 120u);
    EXPECT_EQ(r.matched, r.sent) << r.summary;
    EXPECT_EQ(r.merged, 0u);
    EXPECT_EQ(r.split, 0u);
    EXPECT_GE(r.purity, 0.95);
    EXPECT_GE(r.accounted_cpu, 0.90);
    EXPECT_TRUE(r.bef_separate);
  }

  static inline validate::RunOptions opts_;
  static inline validate::RecordedRun* run_ = nullptr;
};

TEST_F(QuickReproduction, UsdtSchemaExtractsEveryRequestAndClustersByType) { Check(Analyze("testserver")); }

TEST_F(QuickReproduction, BlackBoxSchemaExtractsEveryRequestAndClustersByType) { Check(Analyze("tcp-threadpool")); }

}  // namespace
}  // namespace jackdaw
