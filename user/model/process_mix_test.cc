#include "model/process_mix.h"

#include <gtest/gtest.h>

namespace jackdaw::model {
namespace {

ProcessSegment Seg(const char* comm, uint32_t tier, uint64_t cpu_ns, uint64_t disk = 0) {
  ProcessSegment s;
  s.comm = comm;
  s.tier = tier;
  s.cpu_ns = cpu_ns;
  s.disk_bytes = disk;
  return s;
}

TEST(ProcessMix, MeansPerRequestOfTheClusterByNameAndTier) {
  ProcessMix mix;
  mix.Add({Seg("nginx", 0, 100'000), Seg("php-fpm", 1, 4'000'000), Seg("mariadbd", 2, 1'000'000, 8192)});
  mix.Add({Seg("nginx", 0, 300'000), Seg("php-fpm", 1, 6'000'000)});
  const auto means = mix.Means(2);
  ASSERT_EQ(means.size(), 3u);
  EXPECT_EQ(means[0].comm, "nginx");
  EXPECT_DOUBLE_EQ(means[0].cpu_ns, 200'000);
  EXPECT_EQ(means[1].comm, "php-fpm");
  EXPECT_DOUBLE_EQ(means[1].cpu_ns, 5'000'000);
  EXPECT_EQ(means[2].requests, 1u);
  EXPECT_DOUBLE_EQ(means[2].cpu_ns, 500'000);  // per request of the cluster
  EXPECT_DOUBLE_EQ(means[2].disk_bytes, 4096);
  EXPECT_EQ(FormatProcessMix(means), "nginx 0.20 ms CPU, php-fpm 5.00 ms CPU, mariadbd 0.50 ms CPU + 4.0 KB disk");
}

TEST(ProcessMix, NothingToBreakDownInOneProcess) {
  ProcessMix mix;
  mix.Add({Seg("nginx", 0, 100)});
  mix.Add({Seg("nginx", 0, 300)});
  EXPECT_TRUE(mix.Means(2).empty());
  EXPECT_TRUE(ProcessMix().Means(0).empty());
}

}  // namespace
}  // namespace jackdaw::model
