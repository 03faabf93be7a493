#include "stitch/stitcher.h"

#include <arpa/inet.h>

#include <gtest/gtest.h>

namespace jackdaw::stitch {
namespace {

using model::Request;
using model::RequestEvent;

Flow MakeFlow(const char* src, uint16_t sport, const char* dst, uint16_t dport) {
  Flow f;
  f.family = 2;
  f.sport = sport;
  f.dport = dport;
  inet_pton(AF_INET, src, f.saddr.data());
  inet_pton(AF_INET, dst, f.daddr.data());
  return f;
}

// A fragment: one event per segment, at the segment's time.
struct FragmentBuilder {
  Request req;
  std::vector<Segment> segs;
  FragmentBuilder(uint64_t id, uint32_t tid) {
    req.id = id;
    req.threads = {tid};
  }
  FragmentBuilder& Seg(const Flow& f, pcap::Direction dir, uint32_t seq, uint32_t len, uint64_t ts) {
    RequestEvent e;
    e.ts_ns = ts;
    e.tid = req.threads[0];
    e.record_type = dir == pcap::Direction::kOut ? JDW_EVENT_NET_XMIT : JDW_EVENT_NET_RECV;
    e.symbol = dir == pcap::Direction::kOut ? "net_xmit" : "net_recv";
    segs.push_back({f, seq, len, ts, dir, static_cast<uint32_t>(req.events.size())});
    req.events.push_back(e);
    if (req.start_ns == 0 || ts < req.start_ns) req.start_ns = ts;
    req.end_ns = std::max(req.end_ns, ts);
    return *this;
  }
  void AddTo(TraceFragments& t) {
    t.requests.push_back(req);
    t.segments.push_back(segs);
  }
};

constexpr auto kOut = pcap::Direction::kOut;
constexpr auto kIn = pcap::Direction::kIn;

// Web tier (trace 0) calls a database tier (trace 1) `calls[i]` times for
// request i, one connection per call. Trace 1's clock is `offset` ahead;
// a segment takes `fwd` ns to reach the database and `back` to return.
std::vector<TraceFragments> TwoTier(const std::vector<int>& calls, int64_t offset, uint64_t fwd, uint64_t back) {
  std::vector<TraceFragments> t(2);
  t[0].name = "web";
  t[1].name = "db";
  uint64_t now = 1'000'000'000;
  uint16_t port = 40000;
  uint64_t db_id = 1;
  for (size_t i = 0; i < calls.size(); ++i) {
    FragmentBuilder web(i + 1, 100);
    const Flow client = MakeFlow("10.0.0.9", static_cast<uint16_t>(30000 + i), "10.0.0.1", 80);
    web.Seg(client, kIn, 1, 100, now);
    for (int c = 0; c < calls[i]; ++c) {
      const Flow up = MakeFlow("10.0.0.1", port, "10.0.0.2", 5432);
      ++port;
      const uint32_t s0 = 1000u * static_cast<uint32_t>(c + 7), r0 = 0xfffffff0u;  // r0: wraps
      now += 10'000;
      web.Seg(up, kOut, s0, 50, now);
      FragmentBuilder db(db_id++, 200);
      db.Seg(up, kIn, s0, 50, now + fwd + offset);
      db.Seg(up.Reversed(), kOut, r0, 300, now + fwd + offset + 5'000);
      db.AddTo(t[1]);
      web.Seg(up.Reversed(), kIn, r0, 300, now + fwd + 5'000 + back);
      now += fwd + back + 5'000;
    }
    web.Seg(client.Reversed(), kOut, 1, 2000, now + 1000);
    web.AddTo(t[0]);
    now += 1'000'000;
  }
  return t;
}

TEST(Stitch, OneEndToEndRequestPerRootWithItsCalls) {
  auto r = Stitch(TwoTier({1, 3, 1, 3}, 0, 30'000, 30'000));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->requests.size(), 4u);
  const int want[] = {1, 3, 1, 3};
  for (size_t i = 0; i < 4; ++i) {
    const EndToEnd& e = r->requests[i];
    ASSERT_EQ(e.fragments.size(), 1u + want[i]);
    EXPECT_EQ(e.fragments[0].trace, 0u);
    EXPECT_EQ(e.fragments[0].caller, -1);
    for (size_t k = 1; k < e.fragments.size(); ++k) {
      EXPECT_EQ(e.fragments[k].trace, 1u);
      EXPECT_EQ(e.fragments[k].caller, 0);
    }
    // Every fragment's events, in time order, and one SYNC per matched segment.
    EXPECT_EQ(e.request.events.size(), 2u + 4u * want[i]);
    for (size_t k = 1; k < e.request.events.size(); ++k)
      EXPECT_LE(e.request.events[k - 1].ts_ns, e.request.events[k].ts_ns);
    EXPECT_EQ(e.request.edges.size(), 2u * want[i]);
    for (const model::CausalEdge& ed : e.request.edges) EXPECT_LT(ed.from, ed.to);
    EXPECT_EQ(e.request.threads.size(), 1u + want[i]);
    EXPECT_NE(e.request.threads[1], 200u) << "the database's tids are moved apart from the web tier's";
  }
  EXPECT_EQ(r->lone_fragments[0], 0u);
  EXPECT_EQ(r->lone_fragments[1], 0u);
  EXPECT_TRUE(r->unstitchable.empty());
  EXPECT_EQ(r->matched_segments, 2u * 8);
}

// A backend fragment that holds its response but not the call that came in
// before it (the join put that packet elsewhere, or the capture missed it):
// its first segment on the connection is a send. The web tier's fragment
// stays the root and the backend fragment its callee; the clock says which
// of the two flows came first. And the mirror case: a web fragment that
// lacks its call but holds the reply.
TEST(Stitch, FragmentWithoutTheConnectionsFirstSegmentIsStillTheCallee) {
  for (const int drop_from : {1, 0}) {
    auto t = TwoTier({1, 3, 1}, 2'000'000'000, 30'000, 30'000);
    // Request 1's second call: the backend's fragment 2 (0-based), or the
    // web tier's send of that call.
    if (drop_from == 1) {
      std::vector<Segment>& segs = t[1].segments[2];
      ASSERT_EQ(segs[0].dir, kIn);
      segs.erase(segs.begin());
    } else {
      std::vector<Segment>& segs = t[0].segments[1];
      ASSERT_EQ(segs[3].dir, kOut);  // client in, call 1 out, reply 1 in, call 2 out
      segs.erase(segs.begin() + 3);
    }
    auto r = Stitch(t);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->requests.size(), 3u) << "drop_from " << drop_from;
    const int want[] = {1, 3, 1};
    for (size_t i = 0; i < 3; ++i) {
      const EndToEnd& e = r->requests[i];
      EXPECT_EQ(e.fragments[0].trace, 0u) << "drop_from " << drop_from << ": the root is the web tier's";
      ASSERT_EQ(e.fragments.size(), 1u + want[i]) << "drop_from " << drop_from;
      for (size_t k = 1; k < e.fragments.size(); ++k) EXPECT_EQ(e.fragments[k].caller, 0);
    }
    EXPECT_EQ(r->roles_by_time, 1u);
    EXPECT_EQ(r->lone_fragments[0], 0u);
    EXPECT_EQ(r->lone_fragments[1], 0u);
  }
}

TEST(Stitch, ClockOffsetFromTheSmallestDelayEachWay) {
  // Trace 1 runs 3.2 s ahead; 40 us out, 20 us back: the estimate is off by
  // half the asymmetry (10 us) and says so (uncertainty half the round trip).
  const int64_t off = 3'200'000'000;
  auto r = Stitch(TwoTier({1, 3, 3}, off, 40'000, 20'000));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->offsets.size(), 2u);
  EXPECT_TRUE(r->offsets[1].known);
  EXPECT_TRUE(r->offsets[1].estimated);
  EXPECT_EQ(r->offsets[1].offset_ns, off + 10'000);
  EXPECT_EQ(r->offsets[1].uncertainty_ns, 30'000);
  EXPECT_EQ(r->offsets[1].matched_segments, 14u);
  // Merged on trace 0's clock: the database's events land between the web
  // tier's send and receive, not 3.2 s later.
  const Request& m = r->requests[0].request;
  EXPECT_LT(m.end_ns - m.start_ns, 1'000'000u);
  // A negative offset too.
  r = Stitch(TwoTier({3}, -off, 25'000, 25'000));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->offsets[1].offset_ns, -off);
}

TEST(Stitch, TracesThatShareNoConnectionAreUnstitchable) {
  auto a = TwoTier({1, 3}, 0, 30'000, 30'000);
  auto b = TwoTier({3}, 0, 30'000, 30'000);
  // Web tier of one run, database tier of another (other ports and sequence numbers).
  for (auto& frag : b[1].segments)
    for (Segment& s : frag) {
      s.seq += 77777;
      s.flow.sport ^= 1, s.flow.dport ^= 1;
    }
  std::vector<TraceFragments> t = {a[0], b[1]};
  auto r = Stitch(t);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->requests.empty());
  EXPECT_EQ(r->unstitchable, (std::vector<uint32_t>{0, 1}));
  EXPECT_FALSE(r->offsets[1].known);
  EXPECT_EQ(r->lone_fragments[0], 2u);
  EXPECT_EQ(r->lone_fragments[1], 3u);
}

TEST(Stitch, OverlappingRangesMatchAcrossSegmentationAndSameMachineDoesNot) {
  std::vector<TraceFragments> t(2);
  const Flow f = MakeFlow("10.0.0.1", 5000, "10.0.0.2", 80);
  FragmentBuilder a(1, 1), b(2, 2), c(3, 3);
  // Sender's one 3000-byte TSO segment arrives as two.
  a.Seg(f, kOut, 100, 3000, 10);
  b.Seg(f, kIn, 100, 1500, 20).Seg(f, kIn, 1600, 1500, 21);
  // A loopback sighting in the sender's own trace is no link.
  c.Seg(f, kIn, 100, 3000, 11);
  a.AddTo(t[0]);
  c.AddTo(t[0]);
  b.AddTo(t[1]);
  auto r = Stitch(t);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->matched_segments, 2u);
  ASSERT_EQ(r->requests.size(), 1u);
  EXPECT_EQ(r->requests[0].fragments.size(), 2u);
  EXPECT_EQ(r->lone_fragments[0], 1u);
  // One way only: a bound, labelled so.
  EXPECT_TRUE(r->offsets[1].known);
  EXPECT_FALSE(r->offsets[1].estimated);
  EXPECT_EQ(r->offsets[1].offset_ns, 10);
  EXPECT_NE(r->offsets[1].one_way.find("at most"), std::string::npos);
}

TEST(Stitch, NeedsTwoTraces) {
  auto r = Stitch({TraceFragments{}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("at least two traces"), std::string::npos);
}

TEST(AttributeSegments, KeepsDataAtTheFragmentsOwnEnd) {
  Request req;
  req.connections.push_back({"10.0.0.1:5000", "10.0.0.2:80"});
  std::vector<pcap::Packet> pk(4);
  auto fill = [](pcap::Packet& p, uint64_t ts, pcap::Direction dir, const char* s, uint16_t sp, const char* d,
                 uint16_t dp, uint32_t payload) {
    p.mono_ns = ts;
    p.cpu = 1;
    p.dir = dir;
    p.record_type = dir == kOut ? JDW_EVENT_NET_XMIT : JDW_EVENT_NET_RECV;
    p.net.family = 2;
    p.net.protocol = 6;
    p.net.sport = sp;
    p.net.dport = dp;
    p.net.seq = 42;
    p.net.payload_len = payload;
    inet_pton(AF_INET, s, p.net.saddr);
    inet_pton(AF_INET, d, p.net.daddr);
  };
  fill(pk[0], 10, kOut, "10.0.0.1", 5000, "10.0.0.2", 80, 100);  // sent by us
  fill(pk[1], 11, kIn, "10.0.0.1", 5000, "10.0.0.2", 80, 100);   // the far end receiving it
  fill(pk[2], 12, kIn, "10.0.0.2", 80, "10.0.0.1", 5000, 0);     // a bare ACK
  fill(pk[3], 13, kIn, "10.0.0.2", 80, "10.0.0.1", 5000, 700);   // the reply
  for (const pcap::Packet& p : pk) {
    RequestEvent e;
    e.ts_ns = p.mono_ns;
    e.cpu = 1;
    e.record_type = p.record_type;
    req.events.push_back(e);
  }
  RequestEvent orphan;  // a net event with no record at its instant
  orphan.ts_ns = 99;
  orphan.record_type = JDW_EVENT_NET_RECV;
  req.events.push_back(orphan);
  AttributionStats st;
  auto segs = AttributeSegments(std::span<const Request>(&req, 1), pk, &st);
  ASSERT_EQ(segs.size(), 1u);
  ASSERT_EQ(segs[0].size(), 2u);
  EXPECT_EQ(segs[0][0].dir, kOut);
  EXPECT_EQ(segs[0][0].event, 0u);
  EXPECT_EQ(segs[0][1].dir, kIn);
  EXPECT_EQ(segs[0][1].len, 700u);
  EXPECT_EQ(segs[0][1].event, 3u);
  EXPECT_EQ(st.other_end, 1u);
  EXPECT_EQ(st.unmatched_events, 1u);
  EXPECT_EQ(st.packet_events, 5u);
}

}  // namespace
}  // namespace jackdaw::stitch
