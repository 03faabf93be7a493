#include "join/futex_tracker.h"

#include <gtest/gtest.h>

namespace jackdaw::join {
namespace {

TEST(FutexTracker, WakeOperationsWithTheirFlags) {
  constexpr uint64_t kPrivate = 128, kClockRealtime = 256;
  for (uint64_t op : {1, 3, 4, 5, 10}) {  // WAKE, REQUEUE, CMP_REQUEUE, WAKE_OP, WAKE_BITSET
    EXPECT_TRUE(FutexTracker::IsWake(op)) << op;
    EXPECT_TRUE(FutexTracker::IsWake(op | kPrivate)) << op;
    EXPECT_TRUE(FutexTracker::IsWake(op | kPrivate | kClockRealtime)) << op;
  }
  for (uint64_t op : {0, 2, 6, 9, 11}) {  // WAIT, FD, LOCK_PI, WAIT_BITSET, WAIT_REQUEUE_PI
    EXPECT_FALSE(FutexTracker::IsWake(op)) << op;
    EXPECT_FALSE(FutexTracker::IsWake(op | kPrivate)) << op;
  }
}

TEST(FutexTracker, SoleSleeperOnlyWhileExactlyOneSleeps) {
  FutexTracker f;
  EXPECT_EQ(f.SoleSleeper(0x1000), 0u);
  f.Sleep(0x1000, 7);
  EXPECT_EQ(f.SoleSleeper(0x1000), 7u);
  EXPECT_EQ(f.SoleSleeper(0x2000), 0u);
  f.Sleep(0x1000, 8);
  EXPECT_EQ(f.SoleSleeper(0x1000), 0u);  // two: the kernel's record must say which
  f.Leave(0x1000);
  EXPECT_NE(f.SoleSleeper(0x1000), 0u);
  f.Leave(0x1000);
  EXPECT_EQ(f.SoleSleeper(0x1000), 0u);
  f.Leave(0x1000);  // nobody left: harmless
  EXPECT_EQ(f.SoleSleeper(0x1000), 0u);
  EXPECT_EQ(f.SoleSleeper(0), 0u);
}

TEST(FutexTracker, LastWakeIsReplacedAndExpires) {
  FutexTracker f;
  EXPECT_EQ(f.LastWake(0x1000), nullptr);
  f.NoteWake(0x1000, {100, 5, 50});
  f.NoteWake(0x1000, {200, 6, 60});
  f.NoteWake(0x2000, {300, 7, 70});
  ASSERT_NE(f.LastWake(0x1000), nullptr);
  EXPECT_EQ(f.LastWake(0x1000)->tid, 6u);
  EXPECT_EQ(f.LastWake(0x1000)->tgid, 60u);
  f.ExpireWakesBefore(250);
  EXPECT_EQ(f.LastWake(0x1000), nullptr);
  ASSERT_NE(f.LastWake(0x2000), nullptr);
  EXPECT_EQ(f.LastWake(0x2000)->ts, 300u);
}

}  // namespace
}  // namespace jackdaw::join
