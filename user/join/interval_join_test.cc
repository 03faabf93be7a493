#include "join/interval_join.h"

#include <gtest/gtest.h>

#include <vector>

namespace jackdaw::join {
namespace {

using schema::Binding;

constexpr uint32_t kConn = 0, kThread = 1, kReq = 2;

// Drives the join as the extractor does: bind, append the event, finish.
class IntervalJoinTest : public ::testing::Test {
 protected:
  explicit IntervalJoinTest(std::vector<std::vector<uint16_t>> cascade = {})
      : join_(std::move(cascade), stats_, /*emit_timed_out=*/true,
              [this](Set& s, bool timed_out) { emitted_.push_back({s.events.size(), timed_out}); }) {}

  // One event with the given bindings; seed marks the set. Returns its set.
  uint32_t Event(std::vector<IntervalJoin::Bound> bs, uint64_t ts, bool seed = false) {
    IntervalJoin::Closed closed;
    const uint32_t target = join_.Bind(bs.data(), bs.size(), ts, &closed);
    Set& s = join_.set(target);
    s.seed |= seed;
    s.last_ts = std::max(s.last_ts, ts);
    s.events.push_back(Ev{});
    join_.FinishClosed(closed, target, max_events_, max_unseeded_events_);
    return target;
  }
  static IntervalJoin::Bound B(uint32_t attr, uint64_t v, Binding t = Binding::kBasic) {
    return {IKey{v, attr, 0}, t};
  }

  struct Emitted {
    size_t events;
    bool timed_out;
  };
  size_t max_events_ = 1000, max_unseeded_events_ = 1000;
  Stats stats_;
  std::vector<Emitted> emitted_;
  IntervalJoin join_;
};

TEST_F(IntervalJoinTest, BasicJoinsTheOpenInterval) {
  const uint32_t a = Event({B(kThread, 7)}, 10, /*seed=*/true);
  EXPECT_EQ(join_.SetOf(IKey{7, kThread, 0}), a);
  EXPECT_EQ(Event({B(kThread, 7)}, 20), a);
  EXPECT_EQ(join_.set(a).events.size(), 2u);
  EXPECT_EQ(join_.live_sets(), 1u);
  EXPECT_EQ(join_.open_intervals(), 1u);
  EXPECT_TRUE(emitted_.empty());
}

// An idle thread's wake-ups and sleeps chain through its open Thread
// interval and never meet a seed: the set is cut at the unseeded cap (its
// events discarded, not emitted), while a request of the same length is not.
TEST_F(IntervalJoinTest, ASetWithoutSeedIsCutAtTheUnseededCap) {
  max_unseeded_events_ = 10;
  uint32_t first = Event({B(kThread, 7)}, 1);
  for (uint64_t i = 2; i <= 10; i++) EXPECT_EQ(Event({B(kThread, 7)}, i), first);
  EXPECT_EQ(join_.live_sets(), 1u);
  Event({B(kThread, 7)}, 11);  // the eleventh event: over the cap
  EXPECT_EQ(join_.live_sets(), 0u);
  EXPECT_EQ(stats_.sets_discarded, 1u);
  EXPECT_EQ(stats_.events_discarded, 11u);
  EXPECT_TRUE(emitted_.empty());
  EXPECT_EQ(join_.open_intervals(), 0u);
  // The next event starts over in a fresh set.
  Event({B(kThread, 7)}, 12);
  EXPECT_EQ(join_.live_sets(), 1u);

  const uint32_t req = Event({B(kThread, 8)}, 20, /*seed=*/true);
  for (uint64_t i = 21; i <= 60; i++) EXPECT_EQ(Event({B(kThread, 8)}, i), req);
  EXPECT_EQ(join_.set(req).events.size(), 41u);
  EXPECT_TRUE(emitted_.empty());
}

// A finished set's slot is reused; the new set inherits none of the old
// one's request state (its front exchange, calls, connection share).
TEST_F(IntervalJoinTest, AReusedSlotStartsClean) {
  const uint32_t a = Event({B(kReq, 1, Binding::kStart)}, 10, /*seed=*/true);
  Set& old = join_.set(a);
  old.seed_msg = 42;
  old.connection_cpu_ns = 5000;
  old.calls.emplace_back();
  old.open_calls.push_back(Set::CallRef{1, 2});
  Event({B(kReq, 1, Binding::kStop)}, 20);
  ASSERT_EQ(emitted_.size(), 1u);
  const uint32_t b = Event({B(kReq, 2, Binding::kStart)}, 30, /*seed=*/true);
  ASSERT_EQ(b, a) << "the freed slot is taken first";
  const Set& s = join_.set(b);
  EXPECT_EQ(s.seed_msg, 0u);
  EXPECT_EQ(s.connection_cpu_ns, 0u);
  EXPECT_TRUE(s.calls.empty());
  EXPECT_TRUE(s.open_calls.empty());
}

TEST_F(IntervalJoinTest, StartClosesTheOpenIntervalAndOpensANewOne) {
  const uint32_t a = Event({B(kThread, 7, Binding::kStart), B(kReq, 1)}, 10, /*seed=*/true);
  const uint32_t b = Event({B(kThread, 7, Binding::kStart)}, 20);
  EXPECT_NE(a, b);  // a START does not join the interval it replaces
  EXPECT_EQ(join_.SetOf(IKey{7, kThread, 0}), b);
  EXPECT_EQ(join_.set(a).open, 1u);  // the request id still holds it
  // Closing a's last interval finishes it: emitted, it holds a seed.
  Event({B(kReq, 1, Binding::kStop)}, 30);
  ASSERT_EQ(emitted_.size(), 1u);
  EXPECT_EQ(emitted_[0].events, 2u);
  EXPECT_FALSE(emitted_[0].timed_out);
  EXPECT_EQ(join_.live_sets(), 1u);
}

TEST_F(IntervalJoinTest, StopJoinsThenCloses) {
  const uint32_t a = Event({B(kConn, 5), B(kThread, 7)}, 10, /*seed=*/true);
  EXPECT_EQ(Event({B(kConn, 5, Binding::kStop)}, 20), a);
  EXPECT_EQ(join_.SetOf(IKey{5, kConn, 0}), IntervalJoin::kNone);
  EXPECT_TRUE(emitted_.empty());  // the thread's interval is still open
  // A STOP with no open interval joins nothing: a new set, finished at once.
  const uint64_t discarded = stats_.sets_discarded;
  Event({B(kConn, 5, Binding::kStop)}, 30);
  EXPECT_EQ(stats_.sets_discarded, discarded + 1);
  Event({B(kThread, 7, Binding::kStop)}, 40);
  ASSERT_EQ(emitted_.size(), 1u);
  EXPECT_EQ(emitted_[0].events, 3u);
}

TEST_F(IntervalJoinTest, TransitivityThroughUnion) {
  const uint32_t a = Event({B(kConn, 5)}, 10, /*seed=*/true);
  const uint32_t b = Event({B(kThread, 7)}, 11);
  EXPECT_NE(a, b);
  const uint32_t u = Event({B(kConn, 5), B(kThread, 7)}, 12);  // joins both
  EXPECT_EQ(stats_.sets_merged, 1u);
  EXPECT_EQ(join_.SetOf(IKey{5, kConn, 0}), u);
  EXPECT_EQ(join_.SetOf(IKey{7, kThread, 0}), u);
  EXPECT_EQ(join_.set(u).events.size(), 3u);
  EXPECT_TRUE(join_.set(u).seed);
  EXPECT_EQ(join_.live_sets(), 1u);
  // An event of the thread now reaches the connection's request.
  EXPECT_EQ(Event({B(kThread, 7)}, 13), u);
}

TEST_F(IntervalJoinTest, TwoSeededSetsAreNeverUnioned) {
  const uint32_t a = Event({B(kConn, 5)}, 10, /*seed=*/true);
  const uint32_t b = Event({B(kConn, 6)}, 11, /*seed=*/true);
  EXPECT_EQ(Event({B(kConn, 5), B(kConn, 6)}, 12), a);
  EXPECT_EQ(stats_.seed_conflicts, 1u);
  EXPECT_EQ(stats_.sets_merged, 0u);
  // The BASIC moved conn 6 to a: b lost its only interval and finished.
  EXPECT_EQ(join_.SetOf(IKey{6, kConn, 0}), a);
  ASSERT_EQ(emitted_.size(), 1u);
  EXPECT_EQ(emitted_[0].events, 1u);
  EXPECT_FALSE(join_.set(b).live);
}

TEST_F(IntervalJoinTest, SetWithoutIntervalsIsFinishedAndEmittedOnlyWithASeed) {
  Event({B(kThread, 7, Binding::kStart)}, 10);
  Event({B(kThread, 7, Binding::kStop)}, 20);
  EXPECT_TRUE(emitted_.empty());
  EXPECT_EQ(stats_.sets_discarded, 1u);
  EXPECT_EQ(stats_.events_discarded, 2u);
  Event({B(kThread, 8, Binding::kStart)}, 30, /*seed=*/true);
  Event({B(kThread, 8, Binding::kStop)}, 40);
  ASSERT_EQ(emitted_.size(), 1u);
  EXPECT_EQ(emitted_[0].events, 2u);
  EXPECT_EQ(join_.live_sets(), 0u);
  EXPECT_EQ(join_.open_intervals(), 0u);
}

TEST_F(IntervalJoinTest, GcClosesIdleSets) {
  const uint32_t idle = Event({B(kThread, 7)}, 100, /*seed=*/true);
  const uint32_t busy = Event({B(kThread, 8)}, 100, /*seed=*/true);
  Event({B(kThread, 8)}, 900);
  join_.ExpireSets(/*idle_before=*/500, /*begun_before=*/0);
  ASSERT_EQ(emitted_.size(), 1u);
  EXPECT_TRUE(emitted_[0].timed_out);
  EXPECT_FALSE(join_.set(idle).live);
  EXPECT_TRUE(join_.set(busy).live);
  EXPECT_EQ(join_.SetOf(IKey{7, kThread, 0}), IntervalJoin::kNone);  // its interval closed with it
  EXPECT_EQ(stats_.sets_timed_out, 1u);
  // Too old, however busy.
  join_.ExpireSets(0, /*begun_before=*/200);
  EXPECT_EQ(emitted_.size(), 2u);
  EXPECT_EQ(join_.live_sets(), 0u);
}

class IntervalJoinCascadeTest : public IntervalJoinTest {
 protected:
  // conn closes the thread's interval (schema: cascade conn -> thread).
  IntervalJoinCascadeTest() : IntervalJoinTest({{kThread}}) {}
};

TEST_F(IntervalJoinCascadeTest, CascadeClosesTargetsAfterTheSetsLastTriggerInterval) {
  const uint32_t a = Event({B(kConn, 5), B(kThread, 7)}, 10, /*seed=*/true);
  Event({B(kConn, 6), B(kThread, 7)}, 11);  // a second connection of the same request
  EXPECT_EQ(join_.set(a).open, 3u);
  Event({B(kConn, 6, Binding::kStop)}, 12);  // not the last connection: nothing cascades
  EXPECT_EQ(join_.SetOf(IKey{7, kThread, 0}), a);
  EXPECT_EQ(stats_.intervals_cascaded, 0u);
  EXPECT_TRUE(emitted_.empty());
  Event({B(kConn, 5, Binding::kStop)}, 13);  // the last: the thread's interval closes too
  EXPECT_EQ(stats_.intervals_cascaded, 1u);
  EXPECT_EQ(join_.SetOf(IKey{7, kThread, 0}), IntervalJoin::kNone);
  ASSERT_EQ(emitted_.size(), 1u);
  EXPECT_EQ(emitted_[0].events, 4u);
}

TEST_F(IntervalJoinCascadeTest, WithoutCascadeTheThreadKeepsTheSetOpen) {
  IntervalJoin plain({}, stats_, true, [this](Set& s, bool t) { emitted_.push_back({s.events.size(), t}); });
  IntervalJoin::Closed closed;
  IntervalJoin::Bound open[] = {B(kConn, 5), B(kThread, 7)};
  uint32_t a = plain.Bind(open, 2, 10, &closed);
  plain.set(a).seed = true;
  plain.FinishClosed(closed, a, 1000, 1000);
  IntervalJoin::Bound stop[] = {B(kConn, 5, Binding::kStop)};
  a = plain.Bind(stop, 1, 11, &closed);
  plain.FinishClosed(closed, a, 1000, 1000);
  EXPECT_TRUE(emitted_.empty());
  EXPECT_EQ(plain.SetOf(IKey{7, kThread, 0}), a);
}

}  // namespace
}  // namespace jackdaw::join
