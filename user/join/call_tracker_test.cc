#include "join/call_tracker.h"

#include <gtest/gtest.h>

namespace jackdaw::join {
namespace {

constexpr uint64_t kConn = 0xffff0001;

TEST(CallTrackerTest, OnlyOpenedConnectionsCarryCalls) {
  CallTracker t;
  bool starts = true;
  EXPECT_EQ(t.OnWriteEnter(kConn, 10, 1, 1, &starts), 0u);
  EXPECT_FALSE(starts);
  EXPECT_FALSE(t.IsClient(kConn));
  t.OnOpened(kConn, 5);
  EXPECT_TRUE(t.IsClient(kConn));
  EXPECT_NE(t.OnWriteEnter(kConn, 10, 1, 1, &starts), 0u);
  EXPECT_TRUE(starts);
}

TEST(CallTrackerTest, PooledConnectionCallsAreSeparateIntervals) {
  CallTracker t;
  t.OnOpened(kConn, 0);
  bool starts = false;
  // Request 1's thread: write (in two parts), read the answer.
  const uint64_t k1 = t.OnWriteEnter(kConn, 100, 7, 70, &starts);
  EXPECT_TRUE(starts);
  t.OnWriteExit(kConn, 40);
  EXPECT_EQ(t.OnWriteEnter(kConn, 110, 7, 70, &starts), k1);
  EXPECT_FALSE(starts);
  t.OnWriteExit(kConn, 10);
  EXPECT_EQ(t.Unanswered(kConn), k1);
  EXPECT_EQ(t.OnRead(kConn, 200, 300), k1);
  EXPECT_EQ(t.Unanswered(kConn), 0u);
  EXPECT_EQ(t.Current(kConn), k1);
  EXPECT_FALSE(t.HasFinished());
  // Request 2's thread reuses the connection: a new call, and the first ends.
  const uint64_t k2 = t.OnWriteEnter(kConn, 300, 8, 70, &starts);
  EXPECT_TRUE(starts);
  EXPECT_NE(k2, k1);
  ASSERT_TRUE(t.HasFinished());
  std::vector<FinishedCall> done;
  t.TakeFinished(&done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].key, k1);
  EXPECT_EQ(done[0].index, 0u);
  EXPECT_EQ(done[0].out_bytes, 50u);
  EXPECT_EQ(done[0].in_bytes, 300u);
  EXPECT_EQ(done[0].start_ns, 100u);
  EXPECT_EQ(done[0].end_ns, 200u);
  EXPECT_EQ(done[0].caller_tid, 7u);
  t.OnClose(kConn, 400);
  t.TakeFinished(&done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].key, k2);
  EXPECT_EQ(done[0].index, 1u);
  EXPECT_EQ(done[0].in_bytes, 0u);
  EXPECT_EQ(t.stats().calls, 2u);
  EXPECT_EQ(t.stats().answered, 1u);
  EXPECT_EQ(t.stats().unanswered, 1u);
  EXPECT_FALSE(t.IsClient(kConn));
}

TEST(CallTrackerTest, AConnectReservesTheFirstCallForItsRequest) {
  CallTracker t;
  t.OnOpened(kConn, 0);
  const uint64_t reserved = t.Reserve(kConn);
  ASSERT_NE(reserved, 0u);
  bool starts = false, from_connect = false;
  // Another thread's request is its thread's latest by the time the event
  // loop writes: the call is still the one the connect keyed.
  EXPECT_EQ(t.OnWriteEnter(kConn, 100, 7, 70, &starts, &from_connect), reserved);
  EXPECT_TRUE(starts);
  EXPECT_TRUE(from_connect);
  t.OnWriteExit(kConn, 10);
  t.OnRead(kConn, 200, 20);
  // The pooled connection's next call is an ordinary one.
  EXPECT_NE(t.OnWriteEnter(kConn, 300, 7, 70, &starts, &from_connect), reserved);
  EXPECT_TRUE(starts);
  EXPECT_FALSE(from_connect);
  // Nothing to reserve on a used connection or an unknown one.
  EXPECT_EQ(t.Reserve(kConn), 0u);
  EXPECT_EQ(t.Reserve(kConn + 1), 0u);
}

TEST(CallTrackerTest, KeysNeverCollideWithExchangeKeysOrZero) {
  EXPECT_NE(CallTracker::CallKey(0, 0), 0u);
  EXPECT_NE(CallTracker::CallKey(1, 0), CallTracker::CallKey(1, 1));
  EXPECT_NE(CallTracker::CallKey(1, 0), CallTracker::CallKey(2, 0));
  EXPECT_TRUE(CallTracker::CallKey(5, 3) >> 63);
}

TEST(CallTrackerTest, EphemeralPortRule) {
  EXPECT_TRUE(CallTracker::OpenedLocally(45000, 5432));
  EXPECT_FALSE(CallTracker::OpenedLocally(5432, 45000));
  EXPECT_FALSE(CallTracker::OpenedLocally(45000, 45001));  // ambiguous: not claimed
  EXPECT_FALSE(CallTracker::OpenedLocally(8080, 80));
}

TEST(CallTrackerTest, OutboundSequenceRangeAndReopen) {
  CallTracker t;
  t.OnOpened(kConn, 0);
  bool starts;
  t.OnWriteEnter(kConn, 10, 1, 1, &starts);
  t.OnOutboundPacket(kConn, 1000, 100);
  t.OnOutboundPacket(kConn, 1100, 50);
  t.OnOutboundPacket(kConn, 1150, 0);  // an ACK: no bytes
  // The socket's memory serves a new connection before its close was seen.
  t.OnOpened(kConn, 50);
  std::vector<FinishedCall> done;
  t.TakeFinished(&done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done[0].seq_known);
  EXPECT_EQ(done[0].seq_out_start, 1000u);
  EXPECT_EQ(done[0].seq_out_end, 1150u);
  t.OnWriteEnter(kConn, 60, 1, 1, &starts);
  t.OnWriteEnter(kConn, 61, 2, 1, &starts);  // another thread, call unanswered
  EXPECT_FALSE(starts);
  t.OnWriteEnter(kConn, 62, 3, 1, &starts);
  t.Finish();
  t.TakeFinished(&done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done[0].overlapped);
  EXPECT_EQ(done[0].index, 0u);  // a new connection numbers from 0
  EXPECT_EQ(t.stats().overlapped, 1u);
}

// A server that speaks first: the client reads its greeting before writing.
// On a connection reserved for a request at its connect, that read goes
// with the reserved call (the request that opened the connection), and its
// bytes are no answer; the first write then takes up that same call.
TEST(CallTrackerTest, AGreetingReadBeforeTheFirstCallGoesWithTheReservedCall) {
  CallTracker t;
  t.OnOpened(kConn, 0);
  EXPECT_EQ(t.ForRead(kConn), 0u) << "nothing reserved: the first write decides";
  const uint64_t k = t.Reserve(kConn);
  ASSERT_NE(k, 0u);
  EXPECT_EQ(t.ForRead(kConn), k);
  EXPECT_EQ(t.OnRead(kConn, 20, 104), k);  // the greeting
  EXPECT_EQ(t.Unanswered(kConn), 0u) << "no call has gone out yet";
  bool starts = false, reserved = false;
  EXPECT_EQ(t.OnWriteEnter(kConn, 30, 7, 70, &starts, &reserved), k);
  EXPECT_TRUE(starts);
  EXPECT_TRUE(reserved);
  t.OnWriteExit(kConn, 113);
  EXPECT_EQ(t.OnRead(kConn, 40, 11), k);
  t.OnClose(kConn, 50);
  std::vector<FinishedCall> done;
  t.TakeFinished(&done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].in_bytes, 11u) << "the greeting is not the call's answer";
  EXPECT_EQ(done[0].out_bytes, 113u);
}

// A connection nobody reserved (a pool filled at start-up): its greeting is
// read for no call.
TEST(CallTrackerTest, AGreetingOnAnUnreservedConnectionIsNoCalls) {
  CallTracker t;
  t.OnOpened(kConn, 0);
  EXPECT_EQ(t.OnRead(kConn, 20, 104), 0u);
  EXPECT_EQ(t.ForRead(kConn), 0u);
}

}  // namespace
}  // namespace jackdaw::join
