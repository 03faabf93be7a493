#include "join/request_builder.h"

#include <gtest/gtest.h>

#include "jackdaw/abi.h"
#include "join/endpoint_format.h"

namespace jackdaw::join {
namespace {

class RequestBuilderTest : public ::testing::Test {
 protected:
  std::vector<std::string> syscalls_{"read"};
  std::vector<std::string> probes_{"app:a", "app:b", "app:c"};
  SymbolTable symbols_{syscalls_, probes_};
  trace::ClockMapping clock_{};
  RequestBuilder builder_{symbols_, clock_};
  uint64_t seq_ = 0;

  // A task-context USDT event of probe `probe` on thread `tid` of `tgid`.
  Ev Event(uint64_t ts, uint32_t probe, uint32_t tid, uint32_t tgid = 100, uint64_t cpu_ns = 0) {
    jdw_usdt u{};
    u.probe_id = probe;
    Ev e{};
    e.seq = ++seq_;
    e.ts = ts;
    e.tid = tid;
    e.tgid = tgid;
    e.cpu_ns = cpu_ns;
    e.record_type = JDW_EVENT_USDT;
    e.symbol = symbols_.Of(schema::EventKind::kUsdt, JDW_EVENT_USDT, reinterpret_cast<const uint8_t*>(&u), false);
    return e;
  }
  static Set SetOf(std::vector<Ev> events, uint32_t tgid = 100) {
    Set s;
    s.events = std::move(events);
    s.seed = true;
    s.seed_tgid = tgid;
    s.first_ts = s.events.front().ts;
    s.last_ts = s.events.back().ts;
    return s;
  }
  static std::vector<std::string> Symbols(const model::Request& r) {
    std::vector<std::string> out;
    for (const auto& e : r.events) out.push_back(e.symbol);
    return out;
  }
};

TEST_F(RequestBuilderTest, MergesSyntheticEventsAroundTheirRealOnes) {
  Set s = SetOf({Event(100, 0, 1), Event(200, 1, 1), Event(300, 2, 2)});
  s.events[1].flags |= kEvWait;
  // 1's event at 100 wakes 2's event at 300, signalled at 150.
  s.edges.push_back(EdgeCand{s.events[0].seq, s.events[2].seq, 150, 1, 0, 0});
  RequestBuilder::Charged ch;
  model::Request r = builder_.Build(s, false, 7, nullptr, &ch);
  EXPECT_EQ(r.id, 7u);
  EXPECT_EQ(r.tgid, 100u);
  EXPECT_EQ(Symbols(r), (std::vector<std::string>{"usdt:app:a", "signal", "usdt:app:b", "wait", "resume",
                                                  "usdt:app:c"}));
  EXPECT_EQ(r.events[1].ts_ns, 150u);  // the signal's own time, after its source
  EXPECT_EQ(r.events[4].ts_ns, 300u);  // the resume at its target's
  ASSERT_EQ(r.edges.size(), 1u);
  EXPECT_EQ(r.edges[0].from, 1u);
  EXPECT_EQ(r.edges[0].to, 4u);
  EXPECT_EQ(r.edges[0].kind, model::EdgeKind::kWakeup);
  EXPECT_EQ(ch.wakeup_edges, 1u);
  EXPECT_EQ(ch.sync_edges, 0u);
  EXPECT_EQ(r.start_ns, 100u);
  EXPECT_EQ(r.end_ns, 300u);
  EXPECT_EQ(r.threads, (std::vector<uint32_t>{1, 2}));
}

TEST_F(RequestBuilderTest, DropsEdgesOutsideTheSetBackwardsOrRepeated) {
  Set s = SetOf({Event(100, 0, 1), Event(200, 1, 2)});
  const uint64_t a = s.events[0].seq, b = s.events[1].seq;
  s.edges.push_back(EdgeCand{a, b, 100, 1, 0, 1});
  s.edges.push_back(EdgeCand{a, b, 100, 1, 0, 1});         // the same pair again
  s.edges.push_back(EdgeCand{b, a, 200, 2, 0, 1});         // would point backwards
  s.edges.push_back(EdgeCand{a, b + 100, 100, 1, 0, 1});   // target not in the set
  RequestBuilder::Charged ch;
  model::Request r = builder_.Build(s, false, 1, nullptr, &ch);
  ASSERT_EQ(r.edges.size(), 1u);
  EXPECT_EQ(r.edges[0].kind, model::EdgeKind::kSync);
  EXPECT_EQ(ch.sync_edges, 1u);
  EXPECT_EQ(r.events.size(), 4u);
}

TEST_F(RequestBuilderTest, OffCpuTimeIsClippedToTheRequestsStart) {
  Set s = SetOf({Event(1000, 0, 1), Event(5000, 1, 2)});
  // Thread 2 blocked on a futex from 400 (before the request), woken at
  // 3000, ran at 3500.
  OffCpu o{};
  o.off_from = 400;
  o.wake = 3000;
  o.run = 3500;
  o.reason = static_cast<uint8_t>(model::BlockReason::kFutex);
  s.offs.push_back(o);
  s.events[1].off = 1;
  RequestBuilder::Charged ch;
  model::Request r = builder_.Build(s, false, 1, nullptr, &ch);
  EXPECT_EQ(r.totals.blocked_futex_ns, 2000u);  // 1000..3000, not 400..3000
  EXPECT_EQ(r.totals.blocked_ns, 2000u);
  EXPECT_EQ(r.totals.runq_wait_ns, 500u);
}

TEST_F(RequestBuilderTest, ChargesTheProcessOnlyItsOwnTaskCpu) {
  Set s = SetOf({Event(100, 0, 1, 100, 30), Event(200, 1, 1, 100, 50), Event(300, 2, 9, 555, 70)});
  s.events[2].flags |= kEvIrq;  // interrupt work: softirq, not the task's
  s.events.push_back(Event(400, 0, 4, 777, 11));  // a helper process joined in
  RequestBuilder::Charged ch;
  const RequestBuilder::ProcessWindow window{150};
  model::Request r = builder_.Build(s, false, 1, &window, &ch);
  EXPECT_EQ(r.totals.cpu_ns, 30u + 50u + 11u);
  EXPECT_EQ(r.totals.softirq_cpu_ns, 70u);
  EXPECT_EQ(ch.process_cpu_ns, 80u);
  EXPECT_EQ(ch.pre_window_ns, 30u);  // the event at 100, before the window opened at 150
  EXPECT_EQ(ch.softirq_ns, 70u);
  // Without a process (tgid 0): the request is built, nothing compared.
  Set t = SetOf({Event(100, 0, 1, 0, 30)}, 0);
  model::Request q = builder_.Build(t, false, 2, nullptr, &ch);
  EXPECT_EQ(q.tgid, 0u);
  EXPECT_EQ(q.totals.cpu_ns, 30u);
  EXPECT_EQ(ch.process_cpu_ns, 0u);
}

TEST_F(RequestBuilderTest, ConnectionsAsTheSetNotedThem) {
  Set s = SetOf({Event(100, 0, 1)});
  SetSock ss{};
  ss.sk = 0x5c;
  ss.conn.family = kAfInet;
  ss.conn.sport = 80;
  ss.conn.dport = 40000;
  ss.conn.saddr[0] = 10, ss.conn.saddr[3] = 1;
  ss.conn.daddr[0] = 10, ss.conn.daddr[3] = 2;
  s.socks.push_back(ss);
  RequestBuilder::Charged ch;
  model::Request r = builder_.Build(s, true, 1, nullptr, &ch);
  EXPECT_TRUE(r.timed_out);
  ASSERT_EQ(r.connections.size(), 1u);
  EXPECT_EQ(r.connections[0].local, "10.0.0.1:80");
  EXPECT_EQ(r.connections[0].remote, "10.0.0.2:40000");
}

}  // namespace
}  // namespace jackdaw::join
