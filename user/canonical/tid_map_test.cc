#include "canonical/tid_map.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace jackdaw::canonical {
namespace {

TEST(TidIndex, KeepFirstKeepsTheFirstIndexAndSetOverwrites) {
  TidIndex first;
  first.KeepFirst(7, 0);
  first.KeepFirst(9, 1);
  first.KeepFirst(7, 5);  // a later event of tid 7 does not move its first
  ASSERT_NE(first.Get(7), nullptr);
  EXPECT_EQ(*first.Get(7), 0u);
  EXPECT_EQ(*first.Get(9), 1u);
  EXPECT_EQ(first.Get(8), nullptr);

  first.Set(7, 11);
  first.Set(3, 12);
  EXPECT_EQ(*first.Get(7), 11u);
  EXPECT_EQ(*first.Get(3), 12u);
  // The hint left by the last hit must not answer for another tid.
  EXPECT_EQ(*first.Get(9), 1u);
  EXPECT_EQ(first.Get(4), nullptr);
}

TEST(SmallTidMap, LookupsStayRightPastTheLinearScanLimit) {
  SmallTidMap<uint32_t> map;
  // Past 32 entries the map switches to a hash index; values set before
  // and after the switch, and overwrites of both, must all be found.
  for (uint32_t tid = 1000; tid < 1100; ++tid) EXPECT_EQ(map.Set(tid, tid * 2), tid * 2);
  EXPECT_EQ(map.size(), 100u);
  for (uint32_t tid = 1000; tid < 1100; ++tid) {
    ASSERT_NE(map.Find(tid), nullptr) << tid;
    EXPECT_EQ(*map.Find(tid), tid * 2);
  }
  map.Set(1005, 1);   // set before the switch
  map.Set(1090, 2);   // set after it
  EXPECT_EQ(*map.Find(1005), 1u);
  EXPECT_EQ(*map.Find(1090), 2u);
  EXPECT_EQ(map.size(), 100u);
  EXPECT_EQ(map.Find(999), nullptr);

  map.Clear();
  EXPECT_EQ(map.size(), 0u);
  EXPECT_EQ(map.Find(1005), nullptr);
  map.Set(5, 50);
  EXPECT_EQ(*map.Find(5), 50u);
}

}  // namespace
}  // namespace jackdaw::canonical
