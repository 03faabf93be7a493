// The temporal join (Magpie §3): bindings, valid-intervals, cascades,
// seed conflicts, reordering, memory bounds.
#include "join/extractor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "join/extractor_test_util.h"

namespace jackdaw::join {
namespace {

using testing::Extract;
using testing::MustParse;
using testing::Result;
using testing::RunRecords;
using testing::Stream;
using testing::Symbols;

// --- Magpie Figure 3/4: IIS-like schema with Tid, W3Id, IsapiId -----------

constexpr char kIisSchema[] = R"(
event unblock = switch_in where after_block == 1 { start Tid = tid }
event block = switch_out where blocked == 1 { stop Tid = tid }
event w3_start = usdt W3Server:Start { basic Tid = tid  basic W3Id = arg0 }
event w3_end = usdt W3Server:End { basic Tid = tid  stop W3Id = arg0 }
event asp_start = usdt AspNetReq:Start { basic Tid = tid  basic IsapiId = arg0 }
event asp_end = usdt AspNetReq:End { basic Tid = tid  stop IsapiId = arg0 }
seed w3_start
)";

// One request as in Figure 3: thread 42 starts it, thread 44 finishes it,
// linked only through IsapiId; both threads are reused by the next request.
void IisRequest(Stream& s, uint64_t t0, uint64_t w3id, uint64_t isapi) {
  s.Switch(t0 + 0, 0, 0, 42, 0);
  s.Usdt(t0 + 100, 0, 42, "W3Server:Start", w3id);
  s.Usdt(t0 + 200, 0, 42, "AspNetReq:Start", isapi);
  s.Switch(t0 + 300, 0, 42, 0, 1);
  s.Switch(t0 + 400, 1, 0, 44, 0);
  s.Usdt(t0 + 500, 1, 44, "AspNetReq:End", isapi);
  s.Usdt(t0 + 600, 1, 44, "W3Server:End", w3id);
  s.Switch(t0 + 700, 1, 44, 0, 1);
}

TEST(TemporalJoin, Figure3ReusedThreadsDoNotMergeRequests) {
  Stream s;
  IisRequest(s, 1000, 23, 87);
  IisRequest(s, 2000, 24, 88);
  Result r = Extract(kIisSchema, s);
  ASSERT_EQ(r.reqs.size(), 2u);
  for (size_t i = 0; i < 2; i++) {
    const model::Request& q = r.reqs[i];
    EXPECT_EQ(q.events.size(), 8u);
    EXPECT_EQ(q.threads, (std::vector<uint32_t>{42, 44}));
    EXPECT_EQ(q.start_ns, 1000 + 1000 * i);
    EXPECT_EQ(q.end_ns, 1700 + 1000 * i);
    EXPECT_FALSE(q.timed_out);
  }
  EXPECT_EQ(Symbols(r.reqs[0]),
            (std::vector<std::string>{"switch_in", "usdt:W3Server:Start", "usdt:AspNetReq:Start",
                                      "switch_out:blocked", "switch_in", "usdt:AspNetReq:End",
                                      "usdt:W3Server:End", "switch_out:blocked"}));
  EXPECT_EQ(r.stats.events_discarded, 0u);
}

TEST(TemporalJoin, Figure3WithoutValidIntervalsEverythingMerges) {
  // The same events with Tid bound BASIC only: the naive join the paper
  // warns about merges both requests through the reused threads.
  Stream s;
  IisRequest(s, 1000, 23, 87);
  IisRequest(s, 2000, 24, 88);
  Result r = Extract(R"(
event w3_start = usdt W3Server:Start { basic Tid = tid  basic W3Id = arg0 }
event w3_end = usdt W3Server:End { basic Tid = tid  stop W3Id = arg0 }
event asp_start = usdt AspNetReq:Start { basic Tid = tid  basic IsapiId = arg0 }
event asp_end = usdt AspNetReq:End { basic Tid = tid  stop IsapiId = arg0 }
seed w3_start
)",
                 s);
  ASSERT_EQ(r.reqs.size(), 1u);
  EXPECT_EQ(r.reqs[0].events.size(), 8u);
  EXPECT_TRUE(r.reqs[0].timed_out);  // the Tid intervals never close
}

TEST(TemporalJoin, TransitiveJoinThroughThirdAttribute) {
  // Thread 44 never sees W3Id=23; it is joined through IsapiId=87, which
  // thread 42 bound in the same Tid interval as W3Id=23.
  Stream s;
  IisRequest(s, 1000, 23, 87);
  Result r = Extract(kIisSchema, s);
  ASSERT_EQ(r.reqs.size(), 1u);
  EXPECT_NE(std::find(r.reqs[0].threads.begin(), r.reqs[0].threads.end(), 44u), r.reqs[0].threads.end());
  EXPECT_EQ(r.stats.sets_merged, 1u);
}

// --- Figure 5: packet work in softirq joins via the connection -------------

constexpr char kFig5Schema[] = R"(
event unblock = switch_in where after_block == 1 { start Tid = tid }
event block = switch_out where blocked == 1 { stop Tid = tid }
event req = usdt app:request { basic Tid = tid  start Req = arg0 }
event done = usdt app:done { basic Tid = tid  stop Req = arg0 }
event send = sys_enter sendto where obj_kind == socket { basic Tid = tid  basic Sock = sock }
event close = sys_enter close where obj_kind == socket { basic Tid = tid  stop Sock = sock }
event pkt_out = net_xmit { basic Sock = sock }
event pkt_in = net_recv { basic Sock = sock }
seed req
)";

TEST(TemporalJoin, Figure5SoftirqPacketsJoinViaConnection) {
  constexpr uint64_t kSk = 0xffff888012345678;
  Stream s;
  s.Switch(100, 0, 0, 44, 0);
  s.SockInfo(150, 0, 44, kSk, 8080, 5555);
  s.Usdt(200, 0, 44, "app:request", 7);
  s.SysEnter(1200, 0, 44, "sendto", 5, JDW_OBJ_SOCKET, kSk, 1448);
  s.Switch(2000, 0, 44, 99, 1, Stream::kTgid, 2000);  // 44 blocks, 99 (another process) runs
  // The stack transmits in softirq while 99 is nominally running.
  s.Packet(JDW_EVENT_NET_XMIT, 3000, 0, JDW_CTX_SOFTIRQ, 99, kSk, 8080, 5555, 1500);
  s.Packet(JDW_EVENT_NET_XMIT, 7000, 0, JDW_CTX_SOFTIRQ, 99, kSk, 8080, 5555, 100);
  // The ACK comes back without a socket pointer: matched by its 5-tuple.
  s.Packet(JDW_EVENT_NET_RECV, 8000, 0, JDW_CTX_SOFTIRQ, 99, 0, 5555, 8080, 60);
  s.Switch(9000, 1, 0, 44, 0);
  s.SysEnter(9500, 1, 44, "close", 5, JDW_OBJ_SOCKET, kSk);
  s.Usdt(9600, 1, 44, "app:done", 7);
  s.Switch(9800, 1, 44, 0, 1);
  Result r = Extract(kFig5Schema, s);
  ASSERT_EQ(r.reqs.size(), 1u);
  const model::Request& q = r.reqs[0];
  EXPECT_EQ(q.threads, std::vector<uint32_t>{44});  // not the interrupted 99
  EXPECT_EQ(q.totals.net_bytes_out, 1600u);
  EXPECT_EQ(q.totals.net_bytes_in, 60u);
  EXPECT_EQ(q.totals.softirq_cpu_ns, 4000u + 1000u);  // the burst at 3000..7000..8000
  EXPECT_EQ(q.totals.cpu_ns, 1900u + 800u);            // 44 ran 100..2000 and 9000..9800
  ASSERT_EQ(q.connections.size(), 1u);
  EXPECT_EQ(q.connections[0].local, "127.0.0.1:8080");
  EXPECT_EQ(q.connections[0].remote, "127.0.0.1:5555");
  for (const auto& e : q.events) {
    if (e.symbol == "net_xmit" || e.symbol == "net_recv") {
      EXPECT_EQ(e.tid, 0u);
    }
  }
  // Per-event CPU: each event takes its thread's run time since the previous one.
  std::vector<uint64_t> cpu;
  for (const auto& e : q.events)
    if (e.tid == 44) cpu.push_back(e.cpu_ns);
  EXPECT_EQ(cpu, (std::vector<uint64_t>{0, 100, 1000, 800, 0, 500, 100, 200}));
}

// --- binding-type corner cases --------------------------------------------

TEST(TemporalJoin, StopThenBasicOpensNewInterval) {
  Stream s;
  s.Usdt(100, 0, 1, "t:a", 5);
  s.Usdt(200, 0, 1, "t:a", 5);
  s.Usdt(300, 0, 1, "t:b", 5);  // joins, then closes X=5
  s.Usdt(400, 0, 1, "t:a", 5);  // BASIC with nothing open: a new interval
  s.Usdt(500, 0, 1, "t:b", 5);
  s.Usdt(600, 0, 1, "t:b", 5);  // STOP with nothing open: joins nothing
  Result r = Extract(R"(
event a = usdt t:a { basic X = arg0 }
event b = usdt t:b { stop X = arg0 }
seed a
)",
                 s);
  ASSERT_EQ(r.reqs.size(), 2u);
  EXPECT_EQ(r.reqs[0].events.size(), 3u);
  EXPECT_EQ(r.reqs[1].events.size(), 2u);
  EXPECT_EQ(r.reqs[1].start_ns, 400u);
  EXPECT_EQ(r.stats.sets_discarded, 1u);  // the lone STOP at 600
  EXPECT_EQ(r.stats.events_discarded, 1u);
}

TEST(TemporalJoin, BasicOnThreadAlreadyRunningJoinsUntilStop) {
  // Thread 7 was running before the trace began: no switch-in, no START.
  // Its first BASIC opens the interval, so its events still join.
  Stream s;
  s.Usdt(100, 0, 7, "t:work", 0);
  s.Usdt(200, 0, 7, "t:seed", 1);
  s.Usdt(300, 0, 7, "t:work", 0);
  s.Switch(400, 0, 7, 0, 1);
  s.Usdt(500, 0, 7, "t:work", 0);  // after the STOP: not this request
  s.Switch(600, 0, 7, 0, 1);
  Result r = Extract(R"(
event work = usdt t:work { basic Tid = tid }
event sd = usdt t:seed { basic Tid = tid }
event block = switch_out where blocked == 1 { stop Tid = tid }
seed sd
)",
                 s);
  ASSERT_EQ(r.reqs.size(), 1u);
  EXPECT_EQ(r.reqs[0].events.size(), 4u);
  EXPECT_EQ(r.reqs[0].end_ns, 400u);
  EXPECT_EQ(r.stats.sets_discarded, 1u);
}

TEST(TemporalJoin, StartClosesPreviousIntervalWithoutJoiningIt) {
  Stream s;
  s.Usdt(100, 0, 1, "t:begin", 1);
  s.Usdt(200, 0, 1, "t:begin", 1);  // START again: the first set finishes alone
  s.Usdt(300, 0, 1, "t:end", 1);
  Result r = Extract(R"(
event begin = usdt t:begin { start X = arg0 }
event end = usdt t:end { stop X = arg0 }
seed begin
)",
                 s);
  ASSERT_EQ(r.reqs.size(), 2u);
  EXPECT_EQ(r.reqs[0].events.size(), 1u);
  EXPECT_EQ(r.reqs[1].events.size(), 2u);
}

TEST(TemporalJoin, SetsWithoutSeedAreDiscarded) {
  Stream s;
  s.Usdt(100, 0, 1, "t:noise", 3);
  s.Usdt(200, 0, 2, "t:noise", 3);
  s.Usdt(300, 0, 2, "t:end", 3);
  Result r = Extract(R"(
event noise = usdt t:noise { basic X = arg0 }
event end = usdt t:end { stop X = arg0 }
event sd = usdt t:seed { basic X = arg0 }
seed sd
)",
                 s);
  EXPECT_TRUE(r.reqs.empty());
  EXPECT_EQ(r.stats.sets_discarded, 1u);
  EXPECT_EQ(r.stats.events_discarded, 3u);
  EXPECT_EQ(r.stats.events_joined, 3u);
}

TEST(TemporalJoin, ZeroValuesDoNotBind) {
  // arg0 = 0 means "no request id yet": it must not join unrelated events.
  Stream s;
  s.Usdt(100, 0, 1, "t:seed", 0);
  s.Usdt(200, 0, 2, "t:seed", 0);
  Result r = Extract("event sd = usdt t:seed { basic Req = arg0 }\nseed sd\n", s);
  EXPECT_TRUE(r.reqs.empty());
  EXPECT_EQ(r.stats.events_unbound, 2u);
  EXPECT_EQ(r.stats.bindings_skipped, 2u);
}

TEST(TemporalJoin, TimeoutClosesSetsThatNeverFinish) {
  const char* kSchema = R"(
timeout 1ms
event sd = usdt t:seed { basic X = arg0 }
event other = usdt t:other { basic Y = arg0 }
seed sd
)";
  for (bool emit : {true, false}) {
    Stream s;
    s.Usdt(1000, 0, 1, "t:seed", 9);     // X=9 never closes
    s.Usdt(5'000'000, 0, 2, "t:other", 1);
    s.Usdt(10'000'000, 0, 2, "t:other", 2);  // GC runs at trace time >= 1 ms later
    Options o;
    o.reorder_window = 1000;
    o.emit_timed_out = emit;
    Result r = Extract(kSchema, s, o);
    ASSERT_EQ(r.reqs.size(), emit ? 1u : 0u);
    if (emit) {
      EXPECT_TRUE(r.reqs[0].timed_out);
    }
    EXPECT_GE(r.stats.sets_timed_out, 1u);
    EXPECT_EQ(r.stats.requests_timed_out, emit ? 1u : 0u);
    // GC freed it long before the end of the trace: only one set is live at a time.
    EXPECT_LE(r.stats.peak_live_sets, 2u);
  }
}

TEST(TemporalJoin, SetsThatNeverGoIdleAreBoundedToo) {
  // A CPU hog outside any request: preempted again and again, its Thread
  // interval never closes and never goes idle. Age and size caps close it.
  Stream s;
  for (uint64_t i = 0; i < 2000; i++) {
    s.Switch(1000 + i * 1'000'000, 0, 77, 0, 0);
    s.Switch(1000 + i * 1'000'000 + 500, 0, 0, 77, 0);
  }
  Options o;
  o.reorder_window = 1000;
  o.timeout_ns = 100'000'000;      // 100 ms idle timeout: never reached
  o.max_set_age_ns = 300'000'000;  // but 300 ms of age is
  Result r = Extract("event p = switch_out { basic Tid = tid }\nevent sd = usdt a:b { basic X = arg0 }\nseed sd\n", s, o);
  EXPECT_GE(r.stats.sets_timed_out, 5u);
  EXPECT_LE(r.stats.peak_live_sets, 1u);
  Options o2;
  o2.max_set_events = 100;
  Result r2 = Extract("event p = switch_out { basic Tid = tid }\nevent sd = usdt a:b { basic X = arg0 }\nseed sd\n", s, o2);
  EXPECT_EQ(r2.stats.sets_timed_out, 20u);  // 2000 events, closed every 101
}


// --- reordering ------------------------------------------------------------

TEST(Reorder, OutOfOrderWithinWindowGivesSameResult) {
  Stream s;
  IisRequest(s, 1000, 23, 87);
  IisRequest(s, 2000, 24, 88);
  // Per-CPU streams delivered one CPU after the other: each CPU is in order,
  // the global order is not.
  std::vector<const jdw_record_header*> by_cpu = s.records();
  std::stable_sort(by_cpu.begin(), by_cpu.end(),
                   [](const jdw_record_header* a, const jdw_record_header* b) { return a->cpu < b->cpu; });
  Options o;
  o.reorder_window = 10'000;
  Result r = RunRecords(MustParse(kIisSchema), s, by_cpu, o);
  ASSERT_EQ(r.reqs.size(), 2u);
  EXPECT_EQ(r.reqs[0].events.size(), 8u);
  EXPECT_EQ(r.reqs[1].events.size(), 8u);
  EXPECT_EQ(r.stats.late_records, 0u);
}

TEST(Reorder, RecordsBeyondWindowAreCountedNotJoined) {
  Stream s;
  IisRequest(s, 1000, 23, 87);
  IisRequest(s, 2000, 24, 88);
  std::vector<const jdw_record_header*> by_cpu = s.records();
  std::stable_sort(by_cpu.begin(), by_cpu.end(),
                   [](const jdw_record_header* a, const jdw_record_header* b) { return a->cpu < b->cpu; });
  Options o;
  o.reorder_window = 100;  // CPU 1's records arrive ~1 us too late
  Result r = RunRecords(MustParse(kIisSchema), s, by_cpu, o);
  EXPECT_GT(r.stats.late_records, 0u);
  EXPECT_EQ(r.stats.late_records + r.stats.records_processed, s.records().size());
  // Late records were dropped, not joined: requests stay in timestamp order
  // and the first request lost thread 44's part (its records came too late).
  for (const auto& q : r.reqs) {
    EXPECT_TRUE(std::is_sorted(q.events.begin(), q.events.end(),
                               [](const auto& a, const auto& b) { return a.ts_ns < b.ts_ns; }));
  }
  // The second request was complete in time; the first one is cut off (its
  // intervals on CPU 1 never arrived) and is closed at the end of the trace.
  ASSERT_EQ(r.reqs.size(), 2u);
  EXPECT_FALSE(r.reqs[0].timed_out);
  EXPECT_EQ(r.reqs[0].threads, (std::vector<uint32_t>{42, 44}));
  EXPECT_TRUE(r.reqs[1].timed_out);
  EXPECT_EQ(r.reqs[1].threads, std::vector<uint32_t>{42});
}


// --- memory ------------------------------------------------------------------

TEST(Memory, LiveStateDoesNotGrowWithTraceLength) {
  Stream s;
  for (uint64_t i = 0; i < 20000; i++) IisRequest(s, 1000 + i * 1000, 100 + i, 500000 + i);
  Result r = Extract(kIisSchema, s);
  EXPECT_EQ(r.reqs.size(), 20000u);
  EXPECT_LE(r.stats.peak_live_sets, 4u);
  EXPECT_LE(r.stats.peak_live_intervals, 6u);
  EXPECT_LE(r.stats.peak_threads, 3u);
}

TEST(Extractor, StressRandomInterleavingKeepsRequestsApart) {
  // Many concurrent IIS-style requests on a reused pool, interleaved in time.
  std::mt19937_64 rng(42);
  Stream s;
  struct Pending {
    uint64_t t;
    int step;
    uint32_t front, back;
    uint64_t id;
  };
  std::vector<Pending> live;
  uint64_t now = 1000, next_id = 1;
  std::vector<uint32_t> free_fronts = {1, 2, 3, 4}, free_backs = {11, 12, 13, 14};
  size_t emitted_ids = 0;
  while (emitted_ids < 3000) {
    if (!free_fronts.empty() && !free_backs.empty() && rng() % 2) {
      Pending p{now, 0, free_fronts.back(), free_backs.back(), next_id++};
      free_fronts.pop_back();
      free_backs.pop_back();
      live.push_back(p);
    }
    if (live.empty()) continue;
    Pending& p = live[rng() % live.size()];
    now += 10;
    const uint16_t cf = static_cast<uint16_t>(p.front % 2), cb = static_cast<uint16_t>(2 + p.back % 2);
    switch (p.step++) {
      case 0: s.Usdt(now, cf, p.front, "W3Server:Start", p.id); break;
      case 1: s.Usdt(now, cf, p.front, "AspNetReq:Start", 1000000 + p.id); break;
      case 2: s.Switch(now, cf, p.front, 0, 1); free_fronts.push_back(p.front); break;
      case 3: s.Switch(now, cb, 0, p.back, 0); break;
      case 4: s.Usdt(now, cb, p.back, "AspNetReq:End", 1000000 + p.id); break;
      case 5: s.Usdt(now, cb, p.back, "W3Server:End", p.id); break;
      case 6:
        s.Switch(now, cb, p.back, 0, 1);
        free_backs.push_back(p.back);
        emitted_ids++;
        p = live.back();
        live.pop_back();
        break;
    }
  }
  // Front threads need an unblock before their first event of each request.
  // They were given none, so their first BASIC opens the interval (by rule).
  Result r = Extract(kIisSchema, s);
  size_t complete = 0;
  for (const auto& q : r.reqs) {
    if (q.timed_out) continue;  // still in flight when the trace ends
    complete++;
    EXPECT_EQ(q.events.size(), 7u) << ::testing::PrintToString(Symbols(q)) << " start " << q.start_ns;
    uint64_t w3 = 0;
    size_t n_w3 = 0;
    for (const auto& e : q.events) {
      if (e.symbol == "usdt:W3Server:Start") {
        n_w3++;
        w3 = e.ts_ns;
      }
    }
    EXPECT_EQ(n_w3, 1u) << "request merged at " << w3;
  }
  EXPECT_EQ(complete, 3000u);
  EXPECT_EQ(r.stats.requests_timed_out, r.reqs.size() - 3000u);
}

TEST(Extractor, WarnsAboutProbesMissingFromTrace) {
  Stream s;
  s.Probe("other:probe");
  auto ex = Extractor::Create(MustParse("event a = usdt p:missing { basic X = arg0 }\nseed a\n"), s.meta(), {},
                              nullptr);
  ASSERT_TRUE(ex.ok());
  ASSERT_EQ((*ex)->stats().warnings.size(), 1u);
  EXPECT_NE((*ex)->stats().warnings[0].find("usdt p:missing"), std::string::npos);
}


// --- cascades, seed conflicts ---------------------------------------------

constexpr char kCascadeSchema[] = R"(
event begin = usdt app:begin { basic Sock = arg0  basic Thread = tid }
event help  = usdt app:help  { basic Sock = arg0  basic Thread = tid }
event tick  = usdt app:tick  { basic Thread = tid }
event end   = usdt app:end   { stop Sock = arg0  stop Thread = tid }
event done  = usdt app:done  { stop Sock = arg0 }
seed begin
cascade(Sock, Thread)
)";

TEST(Cascade, LastTriggerIntervalClosesTheSetsOtherThreads) {
  // Worker 10 serves connection 7; helper 20 joins it, keeps computing, and
  // goes on to the next task without an event of its own in between.
  Stream s;
  s.Usdt(1000, 0, 10, "app:begin", 7);
  s.Usdt(1100, 1, 20, "app:help", 7);
  s.Usdt(1200, 1, 20, "app:tick", 0);
  s.Usdt(1300, 0, 10, "app:end", 7);   // the connection ends: so does 20's part
  s.Usdt(1400, 1, 20, "app:tick", 0);  // the helper's next task
  s.Usdt(1500, 0, 10, "app:begin", 8);
  s.Usdt(1600, 1, 20, "app:help", 8);
  s.Usdt(1700, 0, 10, "app:end", 8);
  Result r = Extract(kCascadeSchema, s);
  ASSERT_EQ(r.reqs.size(), 2u);
  EXPECT_FALSE(r.reqs[0].timed_out);  // closed by the cascade, not by the GC
  EXPECT_EQ(Symbols(r.reqs[0]),
            (std::vector<std::string>{"usdt:app:begin", "usdt:app:help", "usdt:app:tick", "usdt:app:end"}));
  // The tick after the cascade opened a fresh interval that the next help joined.
  EXPECT_EQ(Symbols(r.reqs[1]), (std::vector<std::string>{"usdt:app:tick", "usdt:app:begin", "usdt:app:help",
                                                          "usdt:app:end"}));
  EXPECT_EQ(r.stats.intervals_cascaded, 2u);  // helper 20's Thread, twice
}

TEST(Cascade, OnlyTheLastTriggerIntervalOfASetCascades) {
  // The request also uses connection 9 and closes it first: its threads stay.
  Stream s;
  s.Usdt(1000, 0, 10, "app:begin", 7);
  s.Usdt(1100, 0, 10, "app:help", 9);
  s.Usdt(1200, 1, 20, "app:help", 7);
  s.Usdt(1300, 0, 10, "app:done", 9);
  s.Usdt(1400, 1, 20, "app:tick", 0);  // still in the request
  s.Usdt(1500, 0, 10, "app:end", 7);
  Result r = Extract(kCascadeSchema, s);
  ASSERT_EQ(r.reqs.size(), 1u);
  EXPECT_EQ(r.reqs[0].events.size(), 6u);
  EXPECT_FALSE(r.reqs[0].timed_out);
}

TEST(Cascade, StartReplacingTheTriggerCascadesToo) {
  // A keep-alive connection: the next request's START on Sock ends the
  // previous one, helper included.
  Stream s;
  s.Usdt(1000, 0, 10, "app:begin", 7);
  s.Usdt(1100, 1, 20, "app:help", 7);
  s.Usdt(1200, 0, 10, "app:next", 7);
  s.Usdt(1300, 1, 20, "app:tick", 0);
  s.Usdt(1400, 0, 10, "app:end", 7);
  Result r = Extract(R"(
event begin = usdt app:begin { basic Sock = arg0  basic Thread = tid }
event next  = usdt app:next  { start Sock = arg0  start Thread = tid }
event help  = usdt app:help  { basic Sock = arg0  basic Thread = tid }
event tick  = usdt app:tick  { basic Thread = tid }
event end   = usdt app:end   { stop Sock = arg0  stop Thread = tid }
seed begin, next
cascade(Sock, Thread)
)",
                     s);
  ASSERT_EQ(r.reqs.size(), 2u);
  EXPECT_FALSE(r.reqs[0].timed_out);
  EXPECT_EQ(r.reqs[0].events.size(), 2u);  // begin, help
  // the helper's tick after the START is not the first request's
  EXPECT_EQ(Symbols(r.reqs[1]), (std::vector<std::string>{"usdt:app:next", "usdt:app:end"}));
  EXPECT_EQ(r.stats.events_discarded, 1u);  // the orphan tick
}

TEST(TemporalJoin, TwoRequestsAreNeverMerged) {
  // Thread 30 is wrongly still in request 7's interval when it touches
  // request 8's connection: the event goes with its first binding's request
  // (Sock), and request 7 is left whole.
  Stream s;
  s.Usdt(1000, 0, 10, "app:begin", 7);
  s.Usdt(1100, 1, 30, "app:help", 7);
  s.Usdt(1200, 0, 11, "app:begin", 8);
  s.Usdt(1300, 1, 30, "app:help", 8);  // Sock 8 (request 8) and Thread 30 (request 7)
  s.Usdt(1400, 0, 10, "app:end", 7);
  s.Usdt(1500, 0, 11, "app:end", 8);
  s.Usdt(1600, 1, 30, "app:end", 0);   // stop Thread 30
  Result r = Extract(R"(
event begin = usdt app:begin { basic Sock = arg0  basic Thread = tid }
event help  = usdt app:help  { basic Sock = arg0  basic Thread = tid }
event end   = usdt app:end   { stop Sock = arg0  stop Thread = tid }
seed begin
)",
                     s);
  ASSERT_EQ(r.reqs.size(), 2u);
  EXPECT_EQ(r.stats.seed_conflicts, 1u);
  std::vector<std::vector<std::string>> got = {Symbols(r.reqs[0]), Symbols(r.reqs[1])};
  std::sort(got.begin(), got.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
  // Thread 30 moved on to request 8 with that event: its interval went along.
  EXPECT_EQ(got[0], (std::vector<std::string>{"usdt:app:begin", "usdt:app:help", "usdt:app:end"}));
  EXPECT_EQ(got[1], (std::vector<std::string>{"usdt:app:begin", "usdt:app:help", "usdt:app:end", "usdt:app:end"}));
  EXPECT_EQ(r.reqs[0].threads.size() + r.reqs[1].threads.size(), 4u);
  for (const auto& q : r.reqs) EXPECT_FALSE(q.timed_out);
}

}  // namespace
}  // namespace jackdaw::join
