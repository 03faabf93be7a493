#include "join/extractor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "join/test_stream.h"

namespace jackdaw::join {
namespace {

using testing::Stream;

struct Result {
  std::vector<model::Request> reqs;
  Stats stats;
};

schema::Schema MustParse(const std::string& text) {
  auto s = schema::ParseSchema(text, "test.schema");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : schema::Schema{};
}

Result RunRecords(const schema::Schema& sch, Stream& s, const std::vector<const jdw_record_header*>& recs,
                  Options opts = {}) {
  Result r;
  auto ex = Extractor::Create(sch, s.meta(), opts, [&](model::Request&& q) { r.reqs.push_back(std::move(q)); });
  EXPECT_TRUE(ex.ok()) << ex.status().message();
  for (const jdw_record_header* rec : recs) (*ex)->Push(rec);
  (*ex)->Finish();
  r.stats = (*ex)->stats();
  return r;
}

Result Extract(const std::string& text, Stream& s, Options opts = {}) {
  return RunRecords(MustParse(text), s, s.records(), opts);
}

std::vector<std::string> Symbols(const model::Request& r) {
  std::vector<std::string> out;
  for (const auto& e : r.events) out.push_back(e.symbol);
  return out;
}

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

// --- resource accounting, exact to the nanosecond --------------------------

constexpr char kAcctSchema[] = R"(
event woken = switch_in where after_block == 1 { start Tid = tid }
event blocked = switch_out where blocked == 1 { stop Tid = tid }
event preempted = switch_out { basic Tid = tid }
event begin = usdt app:begin { basic Tid = tid  start Req = arg0 }
event work = usdt app:work { basic Tid = tid  basic Req = arg0 }
event end = usdt app:end { basic Tid = tid  stop Req = arg0 }
event fread = sys_enter read where obj_kind == file { basic Tid = tid }
event fread_done = sys_exit read { basic Tid = tid }
event io_start = io_start { basic Tid = tid  start Disk = rq }
event io_done = block_complete { stop Disk = rq }
event wakeup = sched_wakeup where ctx == task { basic Tid = tid }
seed begin
)";

constexpr uint64_t kAcctB = 100000;
constexpr uint32_t kAcctW = 20, kAcctA = 10, kAcctT = 30;

// One request over two threads with every kind of resource: CPU, run-queue
// waits, futex and disk blocking, a disk read.
void AcctStream(Stream& s) {
  constexpr uint64_t B = kAcctB;
  constexpr uint32_t W = kAcctW, A = kAcctA, T = kAcctT;
  // A runs briefly and blocks on a futex before the request exists.
  s.Switch(B - 200, 1, 0, A, 0);
  s.SysEnter(B - 150, 1, A, "futex", -1, JDW_OBJ_FUTEX, 0x7000, 0);
  s.Switch(B - 140, 1, A, 0, 1);
  // W starts the request and wakes A.
  s.Switch(B + 0, 0, 0, W, 0);
  s.Usdt(B + 100, 0, W, "app:begin", 1);
  s.Wakeup(B + 300, 0, W, A);
  s.Switch(B + 350, 0, W, 0, 1);
  // A runs, reads a file, is preempted by T, issues a disk read, blocks.
  s.Switch(B + 500, 1, 0, A, 0);
  s.Usdt(B + 600, 1, A, "app:work", 1);
  s.SysEnter(B + 700, 1, A, "read", 3, JDW_OBJ_FILE, 0xf11e, 4096);
  s.Switch(B + 800, 1, A, T, 0);
  s.Switch(B + 1000, 1, T, A, 0);
  s.Switch(B + 1300, 1, A, 0, 1);
  // The disk completes in hardirq on CPU 0 (idle); the irq wakes A.
  s.BlockComplete(B + 5000, 0, JDW_CTX_HARDIRQ, 0xabc, 4096, B + 1200, A);
  s.Wakeup(B + 5100, 0, 0, A, JDW_CTX_HARDIRQ);
  s.Switch(B + 5400, 1, 0, A, 0);
  s.SysExit(B + 5500, 1, A, "read", 4096);
  s.Usdt(B + 5600, 1, A, "app:end", 1);
  s.Switch(B + 5700, 1, A, 0, 1);
}

TEST(ResourceAccounting, ExactOnSyntheticStream) {
  constexpr uint64_t B = kAcctB;
  constexpr uint32_t W = kAcctW, A = kAcctA;
  Stream s;
  AcctStream(s);
  Result r = Extract(kAcctSchema, s);
  ASSERT_EQ(r.reqs.size(), 1u);
  const model::Request& q = r.reqs[0];
  EXPECT_EQ(q.start_ns, B);
  EXPECT_EQ(q.end_ns, B + 5700);
  EXPECT_EQ(q.threads, (std::vector<uint32_t>{W, A}));
  // CPU: W 0..350 (350), A 500..800 + 1000..1300 + 5400..5700 (900).
  EXPECT_EQ(q.totals.cpu_ns, 1250u);
  // Run queue: A woken at 300 runs at 500 (200); preempted 800..1000 (200);
  // woken at 5100 runs at 5400 (300).
  EXPECT_EQ(q.totals.runq_wait_ns, 700u);
  // Blocked: futex from B-140, clipped to the request's start B, to B+300;
  // disk (blocked inside read of a file) 1300..5100.
  EXPECT_EQ(q.totals.blocked_futex_ns, 300u);
  EXPECT_EQ(q.totals.blocked_disk_ns, 3800u);
  EXPECT_EQ(q.totals.blocked_ns, 4100u);
  EXPECT_EQ(q.totals.blocked_other_ns, 0u);
  EXPECT_EQ(q.totals.disk_bytes, 4096u);
  EXPECT_EQ(q.totals.disk_ios, 1u);
  EXPECT_EQ(q.totals.softirq_cpu_ns, 0u);

  // Event-level view, and the synthetic io_start placed at the issue time.
  std::vector<std::pair<std::string, uint64_t>> got;
  for (const auto& e : q.events) got.emplace_back(e.symbol, e.cpu_ns);
  const std::vector<std::pair<std::string, uint64_t>> want = {
      {"switch_in", 0},           {"usdt:app:begin", 100},      {"sched_wakeup", 200},
      {"signal", 0},              {"switch_out:blocked", 50},   {"resume", 0},
      {"switch_in", 0},           {"usdt:app:work", 100},       {"sys_enter:read", 100},
      {"switch_out:preempted", 100}, {"io_start:read", 200},    {"switch_out:blocked", 100},
      {"block_complete:read", 0}, {"switch_in", 0},             {"sys_exit:read", 100},
      {"usdt:app:end", 100},      {"switch_out:blocked", 100}};
  EXPECT_EQ(got, want);
  ASSERT_EQ(q.edges.size(), 1u);
  EXPECT_EQ(q.events[q.edges[0].from].synthetic, model::SyntheticKind::kSignal);
  EXPECT_EQ(q.events[q.edges[0].from].tid, W);
  EXPECT_EQ(q.events[q.edges[0].to].synthetic, model::SyntheticKind::kResume);
  EXPECT_EQ(q.events[q.edges[0].to].tid, A);
  EXPECT_EQ(q.edges[0].kind, model::EdgeKind::kWakeup);  // from the kernel's wake-up
  EXPECT_EQ(q.events[10].synthetic, model::SyntheticKind::kIoStart);
  EXPECT_EQ(q.events[10].ts_ns, B + 1200);

  // Totals for the whole trace: tgid 1000 ran A 60 + 900, W 350, T 200.
  EXPECT_EQ(r.stats.cpu_observed_total_ns, 1510u);
  // While serving requests: from the seed (app:begin, B+100) to the end of
  // the request, A's 60 ns before it left out; W's 100 ns before the seed
  // are inside the request, so they count too.
  EXPECT_EQ(r.stats.cpu_observed_ns, 1450u);
  EXPECT_EQ(r.stats.cpu_charged_ns, 1250u);
  EXPECT_EQ(r.stats.io_starts, 1u);
}

// Records that name no process (tgid 0 everywhere: a crafted or damaged
// trace) still make a request; it has no process whose CPU it could be
// compared with, so it charges none to the accounting ratio.
TEST(ResourceAccounting, RequestWithoutProcessIsEmittedNotCompared) {
  Stream s;
  AcctStream(s);
  s.ZeroTgids();
  Result r = Extract(kAcctSchema, s);
  ASSERT_EQ(r.reqs.size(), 1u);
  EXPECT_EQ(r.reqs[0].tgid, 0u);
  EXPECT_EQ(r.reqs[0].totals.cpu_ns, 1250u);
  EXPECT_EQ(r.stats.cpu_charged_ns, 0u);
  EXPECT_EQ(r.stats.cpu_observed_ns, 0u);
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

// --- causality ---------------------------------------------------------------

TEST(Causality, SyncAndWaitInsertSyntheticEvents) {
  Stream s;
  s.Usdt(100, 0, 1, "app:start", 9);
  s.Usdt(200, 0, 1, "app:signal", 9);
  s.Usdt(300, 0, 1, "app:wait", 9);
  s.Usdt(400, 1, 2, "app:begin", 9);
  s.Usdt(500, 1, 2, "app:finish", 9);
  s.Usdt(600, 0, 1, "app:t1done", 0);
  Result r = Extract(R"(
event st = usdt app:start { start Tid = tid  start Req = arg0 }
event sig = usdt app:signal { basic Tid = tid  basic Req = arg0 }
event wt = usdt app:wait { basic Tid = tid  basic Req = arg0 }
event beg = usdt app:begin { start Tid = tid  basic Req = arg0 }
event fin = usdt app:finish { stop Tid = tid  stop Req = arg0 }
event t1done = usdt app:t1done { stop Tid = tid }
seed st
sync(sig, Req, beg)
wait(wt)
)",
                 s);
  ASSERT_EQ(r.reqs.size(), 1u);
  const model::Request& q = r.reqs[0];
  EXPECT_EQ(Symbols(q), (std::vector<std::string>{"usdt:app:start", "usdt:app:signal", "signal", "usdt:app:wait",
                                                  "wait", "resume", "usdt:app:begin", "usdt:app:finish",
                                                  "usdt:app:t1done"}));
  ASSERT_EQ(q.edges.size(), 1u);
  EXPECT_EQ(q.edges[0].from, 2u);
  EXPECT_EQ(q.edges[0].to, 5u);
  EXPECT_EQ(q.edges[0].kind, model::EdgeKind::kSync);
  EXPECT_EQ(q.events[2].tid, 1u);
  EXPECT_EQ(q.events[5].tid, 2u);
  EXPECT_EQ(r.stats.edges_sync, 1u);
}

TEST(Causality, WakeupAcrossRequestsIsNotAnEdge) {
  // Thread 1 (request A) wakes thread 2, which then works on request B:
  // the candidate edge has its ends in different requests and is dropped.
  Stream s;
  s.Switch(50, 0, 0, 1, 0);
  s.Usdt(100, 0, 1, "app:seed", 1);
  s.Wakeup(150, 0, 1, 2);
  s.Usdt(160, 0, 1, "app:end", 1);
  s.Switch(200, 1, 0, 2, 0);
  s.Usdt(300, 1, 2, "app:seed", 2);
  s.Usdt(400, 1, 2, "app:end", 2);
  Result r = Extract(R"(
event sd = usdt app:seed { start Tid = tid  start Req = arg0 }
event end = usdt app:end { stop Tid = tid  stop Req = arg0 }
seed sd
)",
                 s);
  ASSERT_EQ(r.reqs.size(), 2u);
  EXPECT_TRUE(r.reqs[0].edges.empty());
  EXPECT_TRUE(r.reqs[1].edges.empty());
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

// --- the shipped schemas on synthetic traces of their servers ---------------

// A client's handshake and request bytes arrive (softirq) before accept()
// returns the socket that names the connection: they are the request's
// packets all the same. A connection never accepted keeps its packets out
// of every request.
TEST(ShippedSchemas, PacketsBeforeAcceptJoinTheConnectionsRequest) {
  constexpr uint64_t kSk = 0xffff888000bb0000;
  constexpr uint32_t kAcc = 101;
  Stream s;
  s.Packet(JDW_EVENT_NET_RECV, 500, 0, JDW_CTX_SOFTIRQ, 0, 0, 5555, 8080, 60);   // SYN
  s.Packet(JDW_EVENT_NET_RECV, 510, 0, JDW_CTX_SOFTIRQ, 0, 0, 5555, 8080, 52);   // ACK
  s.Packet(JDW_EVENT_NET_RECV, 520, 0, JDW_CTX_SOFTIRQ, 0, 0, 5555, 8080, 152);  // GET
  s.Packet(JDW_EVENT_NET_RECV, 800, 1, JDW_CTX_SOFTIRQ, 0, 0, 6666, 8080, 60);   // never accepted
  s.Switch(1000, 0, 0, kAcc, 0);
  s.SockInfo(1090, 0, kAcc, kSk, 8080, 5555);  // as captured: just before accept returns
  s.SysExit(1100, 0, kAcc, "accept4", 7, JDW_OBJ_SOCKET, kSk);
  s.SysEnter(1200, 0, kAcc, "read", 7, JDW_OBJ_SOCKET, kSk, 4096);
  s.SysExit(1300, 0, kAcc, "read", 100);
  s.SysEnter(1400, 0, kAcc, "write", 7, JDW_OBJ_SOCKET, kSk, 148);
  s.Packet(JDW_EVENT_NET_XMIT, 1450, 0, JDW_CTX_TASK, kAcc, kSk, 8080, 5555, 200);
  s.SysExit(1500, 0, kAcc, "write", 148);
  s.SysEnter(1600, 0, kAcc, "close", 7, JDW_OBJ_SOCKET, kSk);
  s.SysExit(1650, 0, kAcc, "close", 0);
  s.Switch(1700, 0, kAcc, 0, 1);

  auto sch = schema::LoadSchema("tcp-threadpool", schema::DefaultSchemaDirs(""));
  ASSERT_TRUE(sch.ok()) << sch.status().message();
  Result r = RunRecords(*sch, s, s.records());
  ASSERT_EQ(r.reqs.size(), 1u);
  const model::Request& q = r.reqs[0];
  EXPECT_EQ(q.totals.net_bytes_in, 60u + 52u + 152u);
  EXPECT_EQ(q.totals.net_bytes_out, 200u);
  EXPECT_EQ(q.totals.softirq_cpu_ns, 20u);  // 500..510..520: one burst
  ASSERT_GE(q.events.size(), 3u);
  EXPECT_EQ(q.events[0].ts_ns, 500u);
  EXPECT_EQ(q.start_ns, 500u);
  for (size_t i = 1; i < q.events.size(); i++) EXPECT_LE(q.events[i - 1].ts_ns, q.events[i].ts_ns) << i;
  EXPECT_EQ(r.stats.early_packets_joined, 3u);
  EXPECT_EQ(r.stats.early_packets_dropped, 1u);
}

TEST(ShippedSchemas, TestserverRpcSpinIsOneRequestAcrossThreePoolThreads) {
  constexpr uint64_t kSk = 0xffff888000aa0000;
  constexpr uint32_t kAcc = 101, kWrk = 102, kHlp = 103;
  Stream s;
  s.Switch(1000, 0, 0, kAcc, 0);
  s.SysExit(1100, 0, kAcc, "accept4", 7, JDW_OBJ_SOCKET, kSk);
  s.SockInfo(1150, 0, kAcc, kSk, 8080, 5555);
  s.Usdt(1200, 0, kAcc, "jackdaw_ts:dispatch", 0, 7);
  s.Wakeup(1300, 0, kAcc, kWrk);
  s.SysEnter(1350, 0, kAcc, "poll");  // back to waiting for connections
  s.Switch(1400, 0, kAcc, 0, 1);
  s.Switch(1500, 1, 0, kWrk, 0);
  s.Usdt(1600, 1, kWrk, "jackdaw_ts:worker_pickup", 0, 7);
  s.SysEnter(1700, 1, kWrk, "recvfrom", 7, JDW_OBJ_SOCKET, kSk, 4096);
  s.SysExit(1800, 1, kWrk, "recvfrom", 100);
  s.Usdt(1900, 1, kWrk, "jackdaw_ts:request_start", 55, 'F', 7);
  s.Usdt(2000, 1, kWrk, "jackdaw_ts:rpc_signal", 55);
  s.Wakeup(2050, 1, kWrk, kHlp);
  s.Usdt(2100, 1, kWrk, "jackdaw_ts:rpc_wait", 55);
  s.SysEnter(2150, 1, kWrk, "futex", -1, JDW_OBJ_FUTEX, 0x9000, 128 | 9);
  s.Switch(2200, 1, kWrk, 0, 1);
  s.Switch(2300, 0, 0, kHlp, 0);
  s.Usdt(2400, 0, kHlp, "jackdaw_ts:rpc_begin", 55);
  s.Usdt(17400, 0, kHlp, "jackdaw_ts:rpc_reply", 55);
  s.Wakeup(17450, 0, kHlp, kWrk);
  s.Switch(17500, 0, kHlp, 0, 1);
  s.Switch(17600, 1, 0, kWrk, 0);
  s.SysExit(17650, 1, kWrk, "futex", 0);
  s.Usdt(17700, 1, kWrk, "jackdaw_ts:rpc_resume", 55);
  s.SysEnter(17800, 1, kWrk, "sendto", 7, JDW_OBJ_SOCKET, kSk, 148);
  s.Packet(JDW_EVENT_NET_XMIT, 17850, 1, JDW_CTX_TASK, kWrk, kSk, 8080, 5555, 200);
  s.SysExit(17900, 1, kWrk, "sendto", 148);
  s.Usdt(18000, 1, kWrk, "jackdaw_ts:request_end", 55, 200, 148);
  s.SysEnter(18100, 1, kWrk, "close", 7, JDW_OBJ_SOCKET, kSk);
  s.SysExit(18150, 1, kWrk, "close", 0);
  s.Switch(18200, 1, kWrk, 0, 1);

  auto sch = schema::LoadSchema("testserver", schema::DefaultSchemaDirs(""));
  ASSERT_TRUE(sch.ok()) << sch.status().message();
  Result r = RunRecords(*sch, s, s.records());
  ASSERT_EQ(r.reqs.size(), 1u);
  const model::Request& q = r.reqs[0];
  EXPECT_FALSE(q.timed_out);
  EXPECT_EQ(q.threads, (std::vector<uint32_t>{kAcc, kWrk, kHlp}));
  ASSERT_EQ(q.connections.size(), 1u);
  EXPECT_EQ(q.connections[0].local, "127.0.0.1:8080");
  EXPECT_EQ(q.totals.net_bytes_out, 200u);
  EXPECT_EQ(r.stats.edges_sync, 3u);    // dispatch->pickup, signal->begin, reply->resume
  // worker->helper and helper->worker. The acceptor's wakeup of the worker
  // targets the worker's switch-in, which worker_pickup's START deliberately
  // cuts off (a pool thread's wait for work is not the request's); the SYNC
  // dispatch->pickup edge carries that causality instead.
  EXPECT_EQ(r.stats.edges_wakeup, 2u);
  EXPECT_EQ(q.edges.size(), 5u);
  uint64_t helper_cpu = 0;
  for (const auto& e : q.events)
    if (e.tid == kHlp) helper_cpu += e.cpu_ns;
  EXPECT_EQ(helper_cpu, 15100u);  // 2300..17400; its last 100 ns after the reply are not the request's
  const auto syms = Symbols(q);
  EXPECT_NE(std::find(syms.begin(), syms.end(), "wait"), syms.end());
}

TEST(ShippedSchemas, TcpThreadpoolSeparatesConnectionsOnReusedWorker) {
  constexpr uint32_t kAcc = 201, kWrk = 202;
  Stream s;
  uint64_t t = 1000;
  s.Switch(t, 0, 0, kAcc, 0);
  s.Switch(t, 1, 0, kWrk, 0);
  for (uint64_t i = 0; i < 3; i++) {
    const uint64_t sk = 0xffff888000bb0000 + i * 0x1000;
    const uint16_t port = static_cast<uint16_t>(6000 + i);
    s.SysExit(t += 100, 0, kAcc, "accept4", 7, JDW_OBJ_SOCKET, sk);
    s.SockInfo(t += 10, 0, kAcc, sk, 8080, port);
    // The worker serves the connection without ever blocking in between.
    s.SysEnter(t += 100, 1, kWrk, "read", 7, JDW_OBJ_SOCKET, sk, 4096);
    s.Packet(JDW_EVENT_NET_RECV, t += 10, 1, JDW_CTX_SOFTIRQ, kWrk, 0, port, 8080, 300);
    s.SysExit(t += 100, 1, kWrk, "read", 248);
    s.SysEnter(t += 100, 1, kWrk, "write", 7, JDW_OBJ_SOCKET, sk, 148);
    s.Packet(JDW_EVENT_NET_XMIT, t += 10, 1, JDW_CTX_TASK, kWrk, sk, 8080, port, 200);
    s.SysExit(t += 100, 1, kWrk, "write", 148);
    s.SysEnter(t += 100, 1, kWrk, "close", 7, JDW_OBJ_SOCKET, sk);
    s.SysExit(t += 10, 1, kWrk, "close", 0);
  }
  s.Switch(t += 100, 0, kAcc, 0, 1);
  s.Switch(t += 100, 1, kWrk, 0, 1);
  auto sch = schema::LoadSchema("tcp-threadpool", schema::DefaultSchemaDirs(""));
  ASSERT_TRUE(sch.ok()) << sch.status().message();
  Result r = RunRecords(*sch, s, s.records());
  ASSERT_EQ(r.reqs.size(), 3u);
  for (size_t i = 0; i < 3; i++) {
    const model::Request& q = r.reqs[i];
    EXPECT_EQ(q.totals.net_bytes_in, 300u) << i;
    EXPECT_EQ(q.totals.net_bytes_out, 200u) << i;
    ASSERT_EQ(q.connections.size(), 1u);
    EXPECT_EQ(q.connections[0].remote, "127.0.0.1:" + std::to_string(6000 + i));
    EXPECT_EQ(q.threads, (std::vector<uint32_t>{kAcc, kWrk}));
  }
}

TEST(ShippedSchemas, TcpThreadpoolDropsAWakeupStillInFlightWhenItsConnectionCloses) {
  // Worker 502 serves a connection and wakes helper 503 (asleep in a
  // condition variable), but closes the connection before the helper gets a
  // CPU: another thread did the work. What the helper does once it runs (the
  // next queued task) is not this request's.
  constexpr uint32_t kWrk = 502, kHlp = 503;
  constexpr uint64_t kSk = 0xffff888000dd0000;
  Stream s;
  uint64_t t = 1000;
  s.Switch(t, 1, 0, kHlp, 0);
  s.SysEnter(t += 10, 1, kHlp, "futex", -1, JDW_OBJ_FUTEX, 0xf00, 128 | 9);  // cond wait
  s.Switch(t += 10, 1, kHlp, 0, 1);
  s.Switch(t += 10, 0, 0, kWrk, 0);
  s.SysExit(t += 100, 0, kWrk, "accept4", 7, JDW_OBJ_SOCKET, kSk);
  s.SockInfo(t += 10, 0, kWrk, kSk, 8080, 7000);
  s.SysEnter(t += 100, 0, kWrk, "read", 7, JDW_OBJ_SOCKET, kSk, 4096);
  s.SysExit(t += 100, 0, kWrk, "read", 100);
  s.SysEnter(t += 100, 0, kWrk, "futex", -1, JDW_OBJ_FUTEX, 0xf00, 128 | 1);  // cond signal
  s.Wakeup(t += 10, 0, kWrk, kHlp);
  s.SysExit(t += 10, 0, kWrk, "futex", 1);
  s.SysEnter(t += 100, 0, kWrk, "write", 7, JDW_OBJ_SOCKET, kSk, 148);
  s.SysExit(t += 100, 0, kWrk, "write", 148);
  s.SysEnter(t += 100, 0, kWrk, "close", 7, JDW_OBJ_SOCKET, kSk);
  s.SysExit(t += 10, 0, kWrk, "close", 0);
  s.Switch(t += 100, 0, kWrk, 0, 1);
  // Only now does the helper run: 2 ms of someone else's work, then sleep.
  s.Switch(t += 1000, 1, 0, kHlp, 0);
  s.SysExit(t += 10, 1, kHlp, "futex", 0);
  s.Switch(t += 2'000'000, 1, kHlp, 0, 0);  // preempted
  s.Switch(t += 10, 1, 0, kHlp, 0);
  s.SysEnter(t += 10, 1, kHlp, "futex", -1, JDW_OBJ_FUTEX, 0xf00, 128 | 9);
  s.Switch(t += 10, 1, kHlp, 0, 1);
  auto sch = schema::LoadSchema("tcp-threadpool", schema::DefaultSchemaDirs(""));
  ASSERT_TRUE(sch.ok()) << sch.status().message();
  Result r = RunRecords(*sch, s, s.records());
  ASSERT_EQ(r.reqs.size(), 1u);
  const model::Request& q = r.reqs[0];
  EXPECT_FALSE(q.timed_out);
  EXPECT_EQ(q.threads, (std::vector<uint32_t>{kWrk}));
  EXPECT_LT(q.totals.cpu_ns, 1'000'000u);
}

TEST(ShippedSchemas, TcpThreadpoolSplitsKeepAliveRequests) {
  constexpr uint32_t kWrk = 302;
  constexpr uint64_t kSk = 0xffff888000cc0000;
  Stream s;
  uint64_t t = 1000;
  s.Switch(t, 1, 0, kWrk, 0);
  s.SysExit(t += 100, 1, kWrk, "accept4", 7, JDW_OBJ_SOCKET, kSk);
  for (int i = 0; i < 3; i++) {
    s.SysEnter(t += 100, 1, kWrk, "recvfrom", 7, JDW_OBJ_SOCKET, kSk, 4096);
    s.SysExit(t += 100, 1, kWrk, "recvfrom", 100);
    s.SysEnter(t += 100, 1, kWrk, "sendto", 7, JDW_OBJ_SOCKET, kSk, 148);
    s.SysExit(t += 100, 1, kWrk, "sendto", 148);
  }
  s.SysEnter(t += 100, 1, kWrk, "close", 7, JDW_OBJ_SOCKET, kSk);
  s.SysExit(t += 100, 1, kWrk, "close", 0);
  auto sch = schema::LoadSchema("tcp-threadpool", schema::DefaultSchemaDirs(""));
  ASSERT_TRUE(sch.ok()) << sch.status().message();
  Result r = RunRecords(*sch, s, s.records());
  ASSERT_EQ(r.reqs.size(), 3u);
  EXPECT_EQ(r.reqs[0].events.size(), 5u);  // switch_in is before the accept's START: not in it
  EXPECT_EQ(r.reqs[1].events.size(), 4u);
  EXPECT_EQ(r.reqs[2].events.size(), 5u);  // + close (at its exit)
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

// --- sockets: the kernel reuses struct sock memory at once ------------------

TEST(Sockets, ReusedSockAddressIsAnotherConnection) {
  constexpr uint64_t kSk = 0xffff888000dd0000;
  Stream s;
  // Connection 1 on kSk; its request stays open (thread 10's interval) past
  // the accept that gives kSk to connection 2.
  s.SockInfo(1000, 0, 10, kSk, 8080, 6000);  // as captured: just before accept returns
  s.SysExit(1010, 0, 10, "accept4", 5, JDW_OBJ_SOCKET, kSk);
  s.SysEnter(1100, 0, 10, "read", 5, JDW_OBJ_SOCKET, kSk, 4096);
  s.SysEnter(1200, 0, 10, "close", 5, JDW_OBJ_SOCKET, kSk);
  s.SockInfo(2000, 1, 11, kSk, 8080, 6001);
  s.SysExit(2010, 1, 11, "accept4", 6, JDW_OBJ_SOCKET, kSk);
  s.Usdt(2050, 1, 11, "app:done", 0);
  s.Usdt(2100, 0, 10, "app:done", 0);
  // Thread 10 reads kSk again: the same address, another connection.
  s.SysEnter(2200, 0, 10, "read", 7, JDW_OBJ_SOCKET, kSk, 4096);
  s.SysEnter(2300, 0, 10, "close", 7, JDW_OBJ_SOCKET, kSk);
  s.Usdt(2400, 0, 10, "app:done", 0);
  Result r = Extract(R"(
event accepted = sys_exit accept4 { start Sock = obj  basic Thread = tid }
event other_conn = sys_enter read where obj_kind == socket and new_sock == 1 { start Thread = tid  basic Sock = sock }
event io = sys_enter read where obj_kind == socket { basic Thread = tid  basic Sock = sock }
event closed = sys_enter close where obj_kind == socket { stop Sock = sock }
event done = usdt app:done { stop Thread = tid }
seed accepted
)",
                     s);
  ASSERT_EQ(r.reqs.size(), 2u);
  for (const auto& q : r.reqs) EXPECT_FALSE(q.timed_out);
  // Emitted after kSk became connection 2, request 1 still reports connection 1.
  ASSERT_EQ(r.reqs[0].connections.size(), 1u);
  EXPECT_EQ(r.reqs[0].connections[0].remote, "127.0.0.1:6000");
  ASSERT_EQ(r.reqs[1].connections.size(), 1u);
  EXPECT_EQ(r.reqs[1].connections[0].remote, "127.0.0.1:6001");
  // new_sock saw the reuse: thread 10's second read started a new interval.
  EXPECT_EQ(Symbols(r.reqs[1]), (std::vector<std::string>{"sys_exit:accept4", "usdt:app:done", "sys_enter:read",
                                                          "sys_enter:close", "usdt:app:done"}));
  // and thread 10's first read, right after its accept, was not "new".
  EXPECT_EQ(Symbols(r.reqs[0]), (std::vector<std::string>{"sys_exit:accept4", "sys_enter:read",
                                                          "sys_enter:close", "usdt:app:done"}));
}

TEST(Sockets, CloseReturningAfterTheAddressWasReusedLeavesTheNewConnectionAlone) {
  // Thread 20 closes connection 1; the socket is freed inside close(), and
  // the acceptor's next accept gets the same address before close returns.
  constexpr uint64_t kSk = 0xffff888000ee0000;
  Stream s;
  s.SockInfo(1000, 0, 10, kSk, 8080, 6000);
  s.SysExit(1010, 0, 10, "accept4", 5, JDW_OBJ_SOCKET, kSk);
  s.SysEnter(1100, 1, 20, "read", 5, JDW_OBJ_SOCKET, kSk, 4096);
  s.SysEnter(1200, 1, 20, "close", 5, JDW_OBJ_SOCKET, kSk);
  s.SockInfo(1250, 0, 10, kSk, 8080, 6001);
  s.SysExit(1260, 0, 10, "accept4", 6, JDW_OBJ_SOCKET, kSk);
  s.SysExit(1300, 1, 20, "close", 0);  // connection 1's close returns
  s.SysEnter(1400, 1, 21, "read", 6, JDW_OBJ_SOCKET, kSk, 4096);
  s.SysEnter(1500, 1, 21, "close", 6, JDW_OBJ_SOCKET, kSk);
  s.SysExit(1600, 1, 21, "close", 0);
  Result r = Extract(R"(
event accepted = sys_exit accept4 { start Sock = obj }
event io = sys_enter read where obj_kind == socket { basic Sock = sock }
event closed = sys_exit close where obj_kind == socket { stop Sock = sock }
seed accepted
)",
                     s);
  ASSERT_EQ(r.reqs.size(), 2u);
  for (const auto& q : r.reqs) EXPECT_FALSE(q.timed_out);
  // Connection 2 keeps its read: the first close did not end it.
  EXPECT_EQ(r.reqs[1].connections[0].remote, "127.0.0.1:6001");
  EXPECT_EQ(Symbols(r.reqs[1]),
            (std::vector<std::string>{"sys_exit:accept4", "sys_enter:read", "sys_exit:close"}));
}

// --- what a record is about -------------------------------------------------

TEST(ResourceAccounting, BlockCompletionInTaskContextIsNotThatTasksEvent) {
  // The disk completes while thread 77 (another process) runs: neither its
  // CPU nor its tid belong to the request that issued the read.
  Stream s;
  s.Switch(1000, 0, 0, 10, 0);
  s.Usdt(1100, 0, 10, "app:begin", 1);
  s.SysEnter(1200, 0, 10, "read", 3, JDW_OBJ_FILE, 0xf11e, 4096);
  s.Switch(1300, 0, 10, 77, 1, Stream::kTgid, 5000);
  s.BlockComplete(6000, 0, JDW_CTX_TASK, 0xabc, 4096, 1250, 10, 77, 5000);
  s.Switch(6100, 0, 77, 10, 0, 5000, Stream::kTgid);
  s.Usdt(6200, 0, 10, "app:end", 1);
  Result r = Extract(R"(
event begin = usdt app:begin { basic T = tid  basic R = arg0 }
event file = sys_enter read { basic T = tid }
event io_start = io_start { basic T = tid  start Disk = rq }
event io_done = block_complete { stop Disk = rq  basic T = tid }
event out = switch_out where blocked == 1 { basic T = tid }
event end = usdt app:end { stop T = tid  stop R = arg0 }
seed begin
)",
                     s);
  ASSERT_EQ(r.reqs.size(), 1u);
  const model::Request& q = r.reqs[0];
  EXPECT_EQ(q.totals.disk_bytes, 4096u);
  EXPECT_EQ(q.totals.cpu_ns, 400u);  // 10's 1000..1300 and 6100..6200; 77 ran 1300..6100
  EXPECT_EQ(q.threads, (std::vector<uint32_t>{10}));
  for (const auto& e : q.events) {
    if (e.symbol == "block_complete:read") {
      EXPECT_EQ(e.tid, 0u);
    }
  }
}

TEST(SchemaFields, BlockReasonAndConnOpen) {
  // Thread 10 sleeps on a file read (disk), then in a futex while its
  // connection is open, then in a futex after closing it.
  Stream s;
  s.Switch(1000, 0, 0, 10, 0);
  s.SysEnter(1100, 0, 10, "read", 3, JDW_OBJ_FILE, 0xf11e, 4096);
  s.Switch(1200, 0, 10, 0, 2);
  s.Switch(1300, 0, 0, 10, 0);
  s.SysExit(1310, 0, 10, "read", 4096);
  s.SysEnter(1400, 0, 10, "write", 5, JDW_OBJ_SOCKET, 0x50c, 100);
  s.SysExit(1410, 0, 10, "write", 100);
  s.SysEnter(1500, 0, 10, "futex", -1, JDW_OBJ_FUTEX, 0x9000, 128 | 9);
  s.Switch(1600, 0, 10, 0, 1);
  s.Switch(1700, 0, 0, 10, 0);
  s.SysExit(1710, 0, 10, "futex", 0);
  s.SysEnter(1800, 0, 10, "close", 5, JDW_OBJ_SOCKET, 0x50c);
  s.SysExit(1810, 0, 10, "close", 0);
  s.SysEnter(1900, 0, 10, "futex", -1, JDW_OBJ_FUTEX, 0x9000, 128 | 9);
  s.Switch(2000, 0, 10, 0, 1);
  s.Switch(2100, 0, 0, 10, 0);
  Result r = Extract(R"(
event disk_out = switch_out where blocked == 1 and block_reason == disk { basic X = tid }
event disk_in  = switch_in where after_block == 1 and block_reason == disk { basic X = tid }
event mid_out  = switch_out where blocked == 1 and block_reason == futex and conn_open == 1 { basic Y = tid }
event mid_in   = switch_in where after_block == 1 and block_reason == futex and conn_open == 1 { basic Y = tid }
event idle_out = switch_out where blocked == 1 and block_reason == futex { basic Z = tid }
event idle_in  = switch_in where after_block == 1 and block_reason == futex { basic Z = tid }
seed disk_out, mid_out, idle_out
)",
                     s);
  ASSERT_EQ(r.reqs.size(), 3u);
  EXPECT_EQ(Symbols(r.reqs[0]), (std::vector<std::string>{"switch_out:blocked", "switch_in"}));
  for (const auto& q : r.reqs) EXPECT_EQ(q.events.size(), 2u) << ::testing::PrintToString(Symbols(q));
  EXPECT_EQ(r.stats.events_matched, 6u);
}

// --- the capture's missing switch-ins ---------------------------------------

TEST(SchedAnomalies, CountedForRequestProcessesOnly) {
  Stream s;
  // Another process' thread 900 is only ever seen leaving the CPU: its
  // switch-ins (from threads of other untraced processes) are not captured.
  s.Switch(1000, 1, 900, 10, 0, 4000, Stream::kTgid);
  s.Switch(1100, 1, 10, 900, 0, Stream::kTgid, 4000);
  s.Switch(1200, 1, 900, 11, 0, 4000, Stream::kTgid);
  // Thread 10 of the server: preempted at 1100; its switch back in on CPU 0,
  // after 900 got CPU 0 at 1400, is lost. Its syscall at 1500 shows it runs.
  s.Usdt(1050, 1, 10, "app:begin", 1);
  s.Switch(1400, 0, 0, 900, 0, Stream::kTgid, 4000);
  s.SysEnter(1500, 0, 10, "getpid");
  s.Usdt(1600, 0, 10, "app:end", 1);
  s.Switch(1700, 0, 10, 0, 1);
  // Thread 12: switched out twice, never seen running between.
  s.Switch(1800, 0, 0, 12, 0);
  s.Switch(1900, 0, 12, 0, 0);
  s.Switch(2000, 0, 12, 0, 0);
  constexpr char kSchema[] = R"(
event begin = usdt app:begin { basic T = tid }
event end = usdt app:end { stop T = tid }
seed begin
)";
  Result r = Extract(kSchema, s);
  ASSERT_EQ(r.reqs.size(), 1u);
  EXPECT_EQ(r.stats.sched_running_inferred, 1u);  // thread 10 at 1500
  EXPECT_EQ(r.stats.sched_chain_breaks, 1u);      // thread 12 at 2000; 900 is not counted
  EXPECT_EQ(r.stats.sched_switches, 4u);          // switch-outs of tgid 1000's threads
  EXPECT_EQ(r.reqs[0].totals.cpu_ns, 200u);       // 1000..1100, then from the syscall on
  // At most lost: 1400..1500 for thread 10 (after the last switch on CPU 0),
  // 1900..2000 for thread 12 (after CPU 0 went idle; it was runnable).
  EXPECT_EQ(r.stats.cpu_lost_bound_ns, 100u + 100u);
  EXPECT_EQ(r.stats.cpu_inferred_ns, 0u);

  Options infer;
  infer.infer_lost_switch_in = true;
  r = Extract(kSchema, s, infer);
  ASSERT_EQ(r.reqs.size(), 1u);
  EXPECT_EQ(r.reqs[0].totals.cpu_ns, 300u);  // + 1400..1500
  EXPECT_EQ(r.stats.cpu_inferred_ns, 200u);
}

TEST(SchedAnomalies, LostBlockCompletionsAreCounted) {
  Stream s;
  auto issue = [&](uint64_t ts, uint64_t rq) {
    jdw_block_issue b{};
    b.dev = 8;
    b.bytes = 4096;
    b.submit_tid = 10;
    b.rq = rq;
    s.Add(JDW_EVENT_BLOCK_ISSUE, ts, 0, JDW_CTX_TASK, Stream::kTgid, 10, b);
  };
  issue(1000, 0xa);
  s.BlockComplete(2000, 0, JDW_CTX_HARDIRQ, 0xa, 4096, 1000, 10);  // completed
  issue(3000, 0xb);
  issue(4000, 0xb);  // reused without a completion: one lost
  s.BlockComplete(5000, 0, JDW_CTX_HARDIRQ, 0xb, 4096, 4000, 10);
  issue(6000, 0xc);  // never completes: lost, the trace goes on for 2 s
  issue(1'999'000'000, 0xd);  // still in flight when the trace ends
  s.Usdt(2'000'000'000, 0, 10, "app:x", 1);
  Result r = Extract("event x = usdt app:x { basic T = tid }\nseed x\n", s);
  EXPECT_EQ(r.stats.block_completions_missing, 2u);
  EXPECT_EQ(r.stats.block_completions_unseen_at_end, 1u);  // 0xd
}

// --- remote wakeups: delivered on the idle wakee's CPU, in interrupt context

constexpr char kCondSchema[] = R"(
event begin = usdt app:begin { basic T = tid }
event handoff = sched_wakeup where ctx == task and in_syscall == futex and wakee_syscall == futex {
  basic T = tid
  start Wake = wakee_tid
}
event sleep = switch_out where blocked == 1 { stop T = tid }
event woken = switch_in where after_block == 1 { start T = tid  stop Wake = tid }
event end = usdt app:end { stop T = tid }
seed begin
)";

// Worker 10 on CPU 0 hands work to helper 20, asleep on futex 0xf00 with
// CPU 1 idle; the kernel runs the wakeup on CPU 1 (idle task, softirq).
// Every sched_wakeup of the request is the given thread's, at the given time.
void ExpectWakeupsAre(const model::Request& q, uint32_t tid, uint64_t ts_ns) {
  for (const auto& e : q.events) {
    if (e.symbol != "sched_wakeup") continue;
    EXPECT_EQ(e.tid, tid);
    EXPECT_EQ(e.ts_ns, ts_ns);
  }
}

void RemoteHandoff(Stream& s, bool worker_sleeps_first) {
  s.Switch(900, 1, 0, 20, 0);
  s.SysEnter(950, 1, 20, "futex", -1, JDW_OBJ_FUTEX, 0xf00, 128 | 9);
  s.Switch(990, 1, 20, 0, 1);
  s.Switch(1000, 0, 0, 10, 0);
  s.Usdt(1100, 0, 10, "app:begin", 1);
  s.SysEnter(1200, 0, 10, "futex", -1, JDW_OBJ_FUTEX, 0xf00, 128 | 1);  // FUTEX_WAKE_PRIVATE
  s.SysExit(1210, 0, 10, "futex", 1);
  if (worker_sleeps_first) {
    s.SysEnter(1220, 0, 10, "futex", -1, JDW_OBJ_FUTEX, 0xbbb, 128 | 9);
    s.Switch(1230, 0, 10, 0, 1);
  }
  s.Wakeup(1250, 1, 0, 20, JDW_CTX_SOFTIRQ);  // the IPI on the helper's CPU
  s.Switch(1260, 1, 0, 20, 0);
  s.SysExit(1270, 1, 20, "futex", 0);
  s.Usdt(1400, 1, 20, "app:end", 1);
  s.Switch(1500, 1, 20, 0, 1);
  if (!worker_sleeps_first) s.Switch(1600, 0, 10, 0, 1);
}

TEST(RemoteWakeup, AttributedToTheFutexWaker) {
  for (bool sleeps_first : {false, true}) {
    SCOPED_TRACE(sleeps_first ? "waker asleep before the record" : "waker still running");
    Stream s;
    RemoteHandoff(s, sleeps_first);
    Result r = Extract(kCondSchema, s);
    ASSERT_EQ(r.reqs.size(), 1u);
    const model::Request& q = r.reqs[0];
    EXPECT_EQ(q.threads, (std::vector<uint32_t>{10, 20}));
    EXPECT_EQ(r.stats.wakeups_attributed, 1u);
    // The edge runs from the worker to the helper's first event.
    ASSERT_EQ(q.edges.size(), 1u);
    EXPECT_EQ(q.events[q.edges[0].from].tid, 10u);
    EXPECT_EQ(q.events[q.edges[0].to].tid, 20u);
    // The wakeup is the worker's event, made up when its futex call returned.
    ExpectWakeupsAre(q, 10, 1210);
  }
}

TEST(RemoteWakeup, SeveralSleepersWaitForTheKernelsRecord) {
  // Two helpers asleep on the same futex: the futex call cannot say which
  // one it woke; the interrupt-context record names it, and is then
  // attributed to the waker.
  Stream s;
  s.Switch(800, 1, 0, 21, 0);
  s.SysEnter(850, 1, 21, "futex", -1, JDW_OBJ_FUTEX, 0xf00, 128 | 9);
  s.Switch(890, 1, 21, 0, 1);
  RemoteHandoff(s, false);
  Result r = Extract(kCondSchema, s);
  ASSERT_EQ(r.reqs.size(), 1u);
  EXPECT_EQ(r.reqs[0].threads, (std::vector<uint32_t>{10, 20}));
  EXPECT_EQ(r.stats.wakeups_attributed, 1u);
  ExpectWakeupsAre(r.reqs[0], 10, 1250);
}

TEST(RemoteWakeup, NotAttributedWithoutAFutexWake) {
  // A timer or I/O wakeup: nobody called futex wake on that address.
  Stream s;
  s.Switch(900, 1, 0, 20, 0);
  s.SysEnter(950, 1, 20, "futex", -1, JDW_OBJ_FUTEX, 0xf00, 128 | 9);
  s.Switch(990, 1, 20, 0, 1);
  s.Switch(1000, 0, 0, 10, 0);
  s.Usdt(1100, 0, 10, "app:begin", 1);
  s.SysEnter(1200, 0, 10, "futex", -1, JDW_OBJ_FUTEX, 0xaaa, 128 | 1);  // another address
  s.SysExit(1210, 0, 10, "futex", 1);
  s.Wakeup(1250, 1, 0, 20, JDW_CTX_SOFTIRQ);
  s.Usdt(1300, 0, 10, "app:end", 1);
  Result r = Extract(kCondSchema, s);
  ASSERT_EQ(r.reqs.size(), 1u);
  EXPECT_EQ(r.reqs[0].threads, (std::vector<uint32_t>{10}));
  EXPECT_EQ(r.stats.wakeups_attributed, 0u);
}

}  // namespace
}  // namespace jackdaw::join
