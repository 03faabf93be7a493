#include "join/causality_tracker.h"

#include <gtest/gtest.h>

#include "join/test_stream.h"

namespace jackdaw::join {
namespace {

class CausalityTrackerTest : public ::testing::Test {
 protected:
  CausalityTrackerTest() {
    auto sch = schema::ParseSchema(R"(
event give = usdt app:give { basic Tid = tid  basic Req = arg0 }
event take = usdt app:take { basic Tid = tid  basic Req = arg0 }
event relay = usdt app:relay { basic Tid = tid }
event other = usdt app:other { basic Tid = tid }
sync(give, Req, take)
sync(relay, Req, relay)
seed give
)",
                                   "c.schema");
    EXPECT_TRUE(sch.ok()) << sch.status().message();
    auto cs = CompiledSchema::Compile(*sch, stream_.meta());
    EXPECT_TRUE(cs.ok());
    cs_ = std::make_unique<CompiledSchema>(std::move(*cs));
    tracker_ = std::make_unique<CausalityTracker>(*cs_);
    const auto& attrs = cs_->schema().attributes;
    req_ = static_cast<uint32_t>(std::find(attrs.begin(), attrs.end(), "Req") - attrs.begin());
    tid_ = static_cast<uint32_t>(std::find(attrs.begin(), attrs.end(), "Tid") - attrs.begin());
  }
  uint16_t Def(const char* name) const {
    for (size_t i = 0; i < cs_->schema().events.size(); i++)
      if (cs_->schema().events[i].name == name) return static_cast<uint16_t>(i);
    return 0;
  }

  testing::Stream stream_;
  std::unique_ptr<CompiledSchema> cs_;
  std::unique_ptr<CausalityTracker> tracker_;
  uint32_t req_ = 0, tid_ = 0;
};

TEST_F(CausalityTrackerTest, DestinationConsumesTheSourceWithTheSameValue) {
  std::vector<EdgeCand> edges;
  const IKey give[] = {{1, tid_, 0}, {77, req_, 0}};
  tracker_->Sync(Def("give"), give, nullptr, {10, 100, 1, 0}, &edges);
  EXPECT_TRUE(edges.empty());
  EXPECT_EQ(tracker_->pending(), 1u);
  const IKey take_other[] = {{2, tid_, 0}, {78, req_, 0}};
  tracker_->Sync(Def("take"), take_other, nullptr, {11, 150, 2, 1}, &edges);
  EXPECT_TRUE(edges.empty());  // another request's value
  const IKey take[] = {{2, tid_, 0}, {77, req_, 0}};
  tracker_->Sync(Def("take"), take, nullptr, {12, 200, 2, 1}, &edges);
  ASSERT_EQ(edges.size(), 1u);
  EXPECT_EQ(edges[0].from_seq, 10u);
  EXPECT_EQ(edges[0].to_seq, 12u);
  EXPECT_EQ(edges[0].sig_ts, 100u);
  EXPECT_EQ(edges[0].from_tid, 1u);
  EXPECT_EQ(edges[0].is_sync, 1);
  tracker_->Sync(Def("take"), take, nullptr, {13, 250, 2, 1}, &edges);
  EXPECT_EQ(edges.size(), 1u);  // consumed
  EXPECT_EQ(tracker_->pending(), 0u);
}

TEST_F(CausalityTrackerTest, ValueFromTheThreadsLastBindingAndNoSelfPairing) {
  Stats st;
  ThreadTracker threads(st);
  Thread* t = threads.Get(5, 7, 0, true);
  const IKey bound[] = {{5, tid_, 0}, {42, req_, 0}};
  tracker_->NoteBindings(t, bound);
  ASSERT_EQ(t->sync_vals.size(), 1u);  // Tid is in no SYNC
  EXPECT_EQ(t->sync_vals[0].value, 42u);
  const IKey rebound[] = {{43, req_, 0}};
  tracker_->NoteBindings(t, rebound);
  ASSERT_EQ(t->sync_vals.size(), 1u);
  EXPECT_EQ(t->sync_vals[0].value, 43u);
  // `relay` binds no Req: the thread's value. It is source and destination
  // of one statement: the first leaves a source, the second consumes it.
  std::vector<EdgeCand> edges;
  const IKey none[] = {{5, tid_, 0}};
  tracker_->Sync(Def("relay"), none, t, {20, 300, 5, 0}, &edges);
  EXPECT_TRUE(edges.empty());
  tracker_->Sync(Def("relay"), none, t, {21, 400, 5, 0}, &edges);
  ASSERT_EQ(edges.size(), 1u);
  EXPECT_EQ(edges[0].from_seq, 20u);
  EXPECT_EQ(edges[0].to_seq, 21u);
  // Without a thread or a binding there is no value: nothing pairs.
  tracker_->Sync(Def("relay"), none, nullptr, {22, 500, 5, 0}, &edges);
  EXPECT_EQ(edges.size(), 1u);
  // A definition in no SYNC statement does nothing.
  tracker_->Sync(Def("other"), bound, t, {23, 600, 5, 0}, &edges);
  EXPECT_EQ(edges.size(), 1u);
}

TEST_F(CausalityTrackerTest, PendingSourcesExpire) {
  std::vector<EdgeCand> edges;
  const IKey give[] = {{77, req_, 0}};
  tracker_->Sync(Def("give"), give, nullptr, {10, 100, 1, 0}, &edges);
  tracker_->ExpireBefore(101);
  EXPECT_EQ(tracker_->pending(), 0u);
  tracker_->Sync(Def("take"), give, nullptr, {12, 200, 2, 1}, &edges);
  EXPECT_TRUE(edges.empty());
}

// Which wake-ups join requests: two threads each serving an exchange of its
// own (their connections' current ones) are contention; a thread whose
// exchange ended (the next message began, or it closed the connection), a
// thread that never served one, or both serving the same one, are not.
TEST(WakeupRule, ContentionOnlyBetweenThreadsServingRequestsOfTheirOwn) {
  constexpr uint64_t kA = 0xa000, kB = 0xb000;
  MessageTracker msgs;
  msgs.OnAccept(kA, 10);
  msgs.OnAccept(kB, 10);
  Thread b1, b2, helper;
  b1.tid = 1, b2.tid = 2, helper.tid = 3;
  const uint64_t xa = msgs.OnRead(kA, 20, 30, 50).key;
  const uint64_t xb = msgs.OnRead(kB, 20, 31, 50).key;
  ASSERT_NE(xa, 0u);
  ASSERT_NE(xb, 0u);
  CausalityTracker::NoteExchange(&b1, kA, xa);
  CausalityTracker::NoteExchange(&b2, kB, xb);
  EXPECT_EQ(CausalityTracker::Serving(b1, msgs), xa);
  EXPECT_TRUE(CausalityTracker::IsContention(b1, b2, msgs));
  EXPECT_TRUE(CausalityTracker::IsContention(b2, b1, msgs));
  // A helper serves nothing: a handoff either way, the schema decides.
  EXPECT_FALSE(CausalityTracker::IsContention(b1, helper, msgs));
  EXPECT_FALSE(CausalityTracker::IsContention(helper, b1, msgs));
  // Two threads on one exchange: one request, a handoff inside it.
  helper.serving_conn = kA, helper.serving_msg = xa;
  EXPECT_FALSE(CausalityTracker::IsContention(b1, helper, msgs));
  // B1 answers; its exchange goes on until the next message begins, then
  // B1 no longer serves it (until it reads that message).
  CausalityTracker::NoteExchange(&b1, kA, msgs.OnWrite(kA, 40, 20).key);
  EXPECT_TRUE(CausalityTracker::IsContention(b1, b2, msgs));
  msgs.OnInboundPacket(kA, 50, 50, true, 7);
  msgs.OnRead(kA, 60, 61, 50);
  EXPECT_EQ(CausalityTracker::Serving(b1, msgs), 0u);
  EXPECT_FALSE(CausalityTracker::IsContention(b2, b1, msgs));
  // A connection event (its close) ends what the thread served there.
  CausalityTracker::NoteExchange(&b2, kB, 0);
  EXPECT_EQ(b2.serving_msg, 0u);
  EXPECT_FALSE(CausalityTracker::IsContention(b1, b2, msgs));
}

}  // namespace
}  // namespace jackdaw::join
