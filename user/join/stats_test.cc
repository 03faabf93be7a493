#include "join/stats.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace jackdaw::join {
namespace {

TEST(JoinStats, TableCoversEveryCounterOnceWithADescription) {
  Stats s;
  std::set<std::string> names;
  std::set<const uint64_t*> fields;
  uint64_t v = 1;
  for (const StatInfo& info : kStatsInfo) {
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_TRUE(fields.insert(&(s.*info.field)).second) << info.name;
    EXPECT_GT(std::string(info.description).size(), 10u) << info.name;
    s.*info.field = v++;  // every field distinct: a table entry pointing at the wrong one would show
  }
  // The counters are the struct's only uint64_t members.
  EXPECT_EQ(sizeof(Stats), names.size() * sizeof(uint64_t) + sizeof(std::vector<std::string>));
  EXPECT_EQ(s.records_in, 1u);
  EXPECT_EQ(s.peak_reorder_queued, names.size());
}

TEST(JoinStats, SeverityOfCountersTheUserMustSee) {
  auto severity = [](const std::string& name) {
    for (const StatInfo& info : kStatsInfo)
      if (name == info.name) return info.severity;
    ADD_FAILURE() << name;
    return Severity::kInfo;
  };
  for (const char* n : {"late_records", "block_completions_missing", "early_packets_dropped", "cpu_dropped_ns",
                        "sched_chain_breaks", "seed_conflicts"})
    EXPECT_EQ(severity(n), Severity::kDataLoss) << n;
  for (const char* n : {"bad_records", "usdt_unknown_probe"}) EXPECT_EQ(severity(n), Severity::kError) << n;
  for (const char* n : {"requests_emitted", "peak_threads", "events_discarded"})
    EXPECT_EQ(severity(n), Severity::kInfo) << n;
  EXPECT_STREQ(SeverityName(Severity::kDataLoss), "data loss");
}

}  // namespace
}  // namespace jackdaw::join
