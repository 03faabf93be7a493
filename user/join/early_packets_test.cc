#include "join/early_packets.h"

#include <gtest/gtest.h>

namespace jackdaw::join {
namespace {

class EarlyPacketsTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kTimeout = 1000;
  Stats st_;
  EarlyPackets early_{st_};
  uint64_t seq_ = 0;
  void Hold(uint64_t key, uint64_t ts) {
    early_.Hold(key, ts, kTimeout, [&] {
      Ev e{};
      e.seq = ++seq_;
      e.ts = ts;
      return e;
    });
  }
};

TEST_F(EarlyPacketsTest, HeldUntilNamedThenJoinedOnce) {
  Hold(/*key=*/11, 100);
  Hold(11, 150);
  Hold(22, 160);  // another connection
  EXPECT_EQ(early_.held(), 3u);
  EXPECT_FALSE(early_.AnyNamed());
  early_.Named(11, /*sk=*/0x5c);
  EXPECT_TRUE(early_.AnyNamed());
  Set s;
  s.first_ts = 500;
  early_.JoinInto(s, 0x77);  // another socket: nothing
  EXPECT_TRUE(s.events.empty());
  early_.JoinInto(s, 0x5c);
  ASSERT_EQ(s.events.size(), 2u);
  EXPECT_EQ(s.events[0].seq, 1u);
  EXPECT_EQ(s.events[1].seq, 2u);
  EXPECT_EQ(s.first_ts, 100u);
  EXPECT_EQ(st_.early_packets_joined, 2u);
  EXPECT_EQ(st_.events_joined, 2u);
  EXPECT_EQ(early_.held(), 1u);
  early_.JoinInto(s, 0x5c);  // taken already
  EXPECT_EQ(s.events.size(), 2u);
  early_.DropAll();
  EXPECT_EQ(st_.early_packets_dropped, 1u);
  EXPECT_EQ(early_.held(), 0u);
}

TEST_F(EarlyPacketsTest, PerConnectionCapDropsAndCounts) {
  for (size_t i = 0; i < EarlyPackets::kPerConn + 3; i++) Hold(11, 100 + i);
  EXPECT_EQ(early_.held(), EarlyPackets::kPerConn);
  EXPECT_EQ(st_.early_packets_dropped, 3u);
  EXPECT_EQ(seq_, EarlyPackets::kPerConn);  // dropped packets were never numbered
}

TEST_F(EarlyPacketsTest, StaleAttemptAtTheSameAddressPairIsReplaced) {
  Hold(11, 100);
  Hold(11, 200);
  Hold(11, 100 + kTimeout + 1);  // the first is older than the timeout
  EXPECT_EQ(early_.held(), 1u);
  EXPECT_EQ(st_.early_packets_dropped, 2u);
}

TEST_F(EarlyPacketsTest, ExpiryDropsConnectionsIdleBeforeTheHorizon) {
  Hold(11, 100);
  Hold(22, 100);
  Hold(22, 900);  // its last packet is recent: kept whole
  early_.Named(11, 0x5c);
  early_.ExpireBefore(500);
  EXPECT_EQ(early_.held(), 2u);
  EXPECT_EQ(st_.early_packets_dropped, 1u);
  EXPECT_FALSE(early_.AnyNamed());
}

TEST_F(EarlyPacketsTest, NamingASocketAgainDropsItsOlderConnectionsPackets) {
  Hold(11, 100);
  early_.Named(11, 0x5c);
  Hold(33, 200);
  early_.Named(33, 0x5c);  // the socket's memory reused for the next connection
  EXPECT_EQ(st_.early_packets_dropped, 1u);
  Set s;
  early_.JoinInto(s, 0x5c);
  ASSERT_EQ(s.events.size(), 1u);
  EXPECT_EQ(s.events[0].ts, 200u);
}

}  // namespace
}  // namespace jackdaw::join
