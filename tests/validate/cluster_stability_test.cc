// Clustering stability on a real server (issue 10): the same workload
// recorded several times gives the same clusters, within one small
// cluster. Debian's apache2 (mpm_prefork, a connection per request: the
// workload whose recordings gave 6, 9 and 7 clusters before outlier
// clusters were attached to their kind) is recorded three times with
// `jackdaw record --pid`, each recording analysed with the black-box
// schema. What the assertion rests on is not the load of the machine: a
// request the machine slowed (a descheduled vCPU, a cold worker) lands in
// its own small cluster, and such clusters are attached to their nearest
// kind (cluster.h, kOutlierShare) however many there are.
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "schema/schema.h"
#include "support/test_support.h"
#include "validate/real_suite.h"

namespace jackdaw {
namespace {

constexpr int kRequests = 160;  // 4 kinds of 40: outlier clusters hold at most 3
constexpr int kRecordings = 3;

TEST(ClusterStability, RecordingsOfOneWorkloadGiveTheSameClusters) {
  JDW_REQUIRE_ROOT();
  validate::RealRunOptions opts;
  opts.bin_dir = testing::BinDir();
  opts.work_dir = testing::TempPath("clstab");
  std::filesystem::create_directories(opts.work_dir);
  auto sel = validate::SelectRealWorkloads(validate::RealWorkloads(kRequests), {"apache-close"});
  ASSERT_TRUE(sel.ok() && sel->size() == 1u);
  const std::string bin = validate::ServerBinary((*sel)[0].server);
  ASSERT_EQ(access(bin.c_str(), X_OK), 0) << bin << " missing: run scripts/install-deps.sh as root";
  std::vector<size_t> counts;
  for (int k = 0; k < kRecordings; ++k) {
    auto run = validate::RecordRealWorkload(opts, (*sel)[0], k);
    ASSERT_TRUE(run.ok()) << run.status().message();
    auto r = validate::AnalyzeRun(*run, "tcp-threadpool", schema::DefaultSchemaDirs(testing::BinDir() + "/jackdaw"));
    ASSERT_TRUE(r.ok()) << r.status().message();
    validate::PrintRealTable({{*run, {*r}}}, stdout);
    EXPECT_GE(r->purity, 0.98);
    counts.push_back(r->clusters.size());
  }
  std::filesystem::remove_all(opts.work_dir);
  const auto [lo, hi] = std::minmax_element(counts.begin(), counts.end());
  EXPECT_LE(*hi - *lo, 1u) << "cluster counts " << counts[0] << " " << counts[1] << " " << counts[2];
}

}  // namespace
}  // namespace jackdaw
