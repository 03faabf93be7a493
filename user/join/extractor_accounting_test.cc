// The join's resource accounting, causality and scheduling corner cases.
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

// The CPU ledger (ProcessAccount): every on-CPU nanosecond of the server's
// threads is charged exactly once — to the request, to the connection's
// life, or to nobody (unattributed while serving, or outside the serving
// window) — and interrupt time that ran on another process' time (the
// client's send running the server's receive, as on loopback) is reported
// apart, not counted as the server's. tcp-threadpool, one connection per
// request.
TEST(ResourceAccounting, LedgerChargesEveryNanosecondOnce) {
  constexpr uint64_t kSk = 0xffff888000ee0000;
  constexpr uint32_t W = 501, W2 = 502, W3 = 503, kClient = 601;
  Stream s;
  auto ours = [&] {  // the last packet is the server's (sent by it, or interrupted it)
    auto* h = const_cast<jdw_record_header*>(s.records().back());
    h->tgid = Stream::kTgid;
  };
  s.Switch(1000, 0, 0, W, 0);
  s.SockInfo(1005, 0, W, kSk, 8080, 5555);
  s.SysExit(1010, 0, W, "accept4", 7, JDW_OBJ_SOCKET, kSk);  // connection: 10
  s.SysEnter(1020, 0, W, "read", 7, JDW_OBJ_SOCKET, kSk, 4096);
  // The client's ACK and request, received on CPU 1 in the client's time.
  s.Packet(JDW_EVENT_NET_RECV, 1030, 1, JDW_CTX_SOFTIRQ, kClient, kSk, 5555, 8080, 52);
  s.Packet(JDW_EVENT_NET_RECV, 1040, 1, JDW_CTX_SOFTIRQ, kClient, kSk, 5555, 8080, 152);  // 10 ns, foreign
  s.SysExit(1050, 0, W, "read", 100);
  // Another server thread: runs, sleeps, is woken, sleeps again with
  // nothing joined to a request (unattributed: 10 + 15).
  s.Switch(1060, 1, 0, W2, 0);
  s.Switch(1070, 1, W2, 0, 1);
  s.Switch(1080, 1, 0, W2, 0);
  s.SysEnter(1085, 1, W2, "futex", -1, JDW_OBJ_FUTEX, 0x7000, 0);
  s.Switch(1095, 1, W2, 0, 1);
  s.SysEnter(1100, 0, W, "write", 7, JDW_OBJ_SOCKET, kSk, 100);
  s.Packet(JDW_EVENT_NET_XMIT, 1110, 0, JDW_CTX_TASK, W, kSk, 8080, 5555, 152);
  ours();
  // The client's ACKs, received on CPU 0 in W's time: 5 ns taken from W.
  s.Packet(JDW_EVENT_NET_RECV, 1120, 0, JDW_CTX_SOFTIRQ, W, kSk, 5555, 8080, 52);
  ours();
  s.Packet(JDW_EVENT_NET_RECV, 1125, 0, JDW_CTX_SOFTIRQ, W, kSk, 5555, 8080, 52);
  ours();
  s.SysExit(1130, 0, W, "write", 100);
  s.SysEnter(1140, 0, W, "close", 7, JDW_OBJ_SOCKET, kSk);
  s.SysExit(1150, 0, W, "close", 0);
  s.Switch(1160, 0, W, 0, 1);  // after the last request: outside (10)
  // A thread that runs after the last request until the end of the trace.
  s.Switch(3000, 1, 0, W3, 0);
  s.SysEnter(3100, 1, W3, "futex", -1, JDW_OBJ_FUTEX, 0x7000, 0);

  auto sch = schema::LoadSchema("tcp-threadpool", schema::DefaultSchemaDirs(""));
  ASSERT_TRUE(sch.ok()) << sch.status().message();
  Result r = RunRecords(*sch, s, s.records());
  ASSERT_EQ(r.reqs.size(), 1u);
  ASSERT_EQ(r.conns.size(), 1u);
  const Stats& st = r.stats;
  // W 1000..1160, W2 10 + 15, W3 3000..3100.
  EXPECT_EQ(st.cpu_observed_total_ns, 160u + 25u + 100u);
  EXPECT_EQ(st.cpu_irq_unapplied_ns, 0u);
  const uint64_t buckets = st.cpu_charged_ns + st.softirq_charged_ns + st.cpu_conn_ns + st.softirq_conn_ns +
                           st.cpu_unattributed_ns + st.cpu_outside_ns;
  EXPECT_EQ(buckets, st.cpu_observed_total_ns + st.cpu_irq_unapplied_ns)
      << "request " << st.cpu_charged_ns << "+" << st.softirq_charged_ns << " connection " << st.cpu_conn_ns << "+"
      << st.softirq_conn_ns << " unattributed " << st.cpu_unattributed_ns << " outside " << st.cpu_outside_ns;
  EXPECT_EQ(st.softirq_charged_ns, 5u);   // the ACKs in W's time
  EXPECT_EQ(st.softirq_foreign_ns, 10u);  // the request packet in the client's time
  EXPECT_EQ(r.reqs[0].totals.softirq_cpu_ns, 15u);  // the request still shows both
  EXPECT_EQ(st.cpu_conn_ns, r.conns[0].cpu_ns);
  // The accept; the read's entry, before it returned the message (a thread
  // interval of its own, on the connection's socket); the close's entry
  // and exit.
  EXPECT_EQ(st.cpu_conn_ns, 10u + 10u + 10u + 10u);
  EXPECT_EQ(st.cpu_charged_ns, r.reqs[0].totals.cpu_ns);
  EXPECT_EQ(st.cpu_outside_ns, 10u + 100u);    // W after its last request, W3
  // The serving window's CPU is everything but what lies outside it.
  EXPECT_EQ(st.cpu_observed_ns, st.cpu_observed_total_ns - st.cpu_outside_ns);
  EXPECT_LE(st.cpu_charged_ns + st.softirq_charged_ns + st.cpu_conn_ns + st.softirq_conn_ns, st.cpu_observed_ns);
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
  // 10's 1100..1300 and 6100..6200; 77 ran 1300..6100; 10's run before the
  // request began (1000..1100) is not the request's.
  EXPECT_EQ(q.totals.cpu_ns, 300u);
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
  EXPECT_EQ(r.reqs[0].totals.cpu_ns, 150u);       // 1050..1100 (it began at 1050), then from the syscall on
  // At most lost: 1400..1500 for thread 10 (after the last switch on CPU 0),
  // 1900..2000 for thread 12 (after CPU 0 went idle; it was runnable).
  EXPECT_EQ(r.stats.cpu_lost_bound_ns, 100u + 100u);
  EXPECT_EQ(r.stats.cpu_inferred_ns, 0u);

  Options infer;
  infer.infer_lost_switch_in = true;
  r = Extract(kSchema, s, infer);
  ASSERT_EQ(r.reqs.size(), 1u);
  EXPECT_EQ(r.reqs[0].totals.cpu_ns, 250u);  // + 1400..1500
  EXPECT_EQ(r.stats.cpu_inferred_ns, 200u);
}

// A thread whose switch-out the capture lost (or that tracing stopped
// before) is not left running to the end of the trace: another task's
// record on its CPU shows it had left, and its run ends at its last record.
TEST(SchedAnomalies, LostSwitchOutEndsTheRunAtTheLastRecord) {
  Stream s;
  s.Switch(1000, 0, 0, 10, 0);
  s.Usdt(1100, 0, 10, "app:begin", 1);
  s.Usdt(1200, 0, 10, "app:end", 1);
  s.SysEnter(1300, 0, 10, "getpid");  // its last record; its switch-out is lost
  s.SysEnter(5000, 0, 11, "getpid");  // 11 runs on CPU 0 (first seen: running from here)
  s.Switch(5100, 0, 11, 0, 1);
  s.Switch(100000, 1, 0, 12, 0);  // the trace goes on on CPU 1
  s.Switch(100100, 1, 12, 0, 1);
  constexpr char kSchema[] = R"(
event begin = usdt app:begin { basic T = tid }
event end = usdt app:end { stop T = tid }
seed begin
)";
  Result r = Extract(kSchema, s);
  ASSERT_EQ(r.reqs.size(), 1u);
  EXPECT_EQ(r.reqs[0].totals.cpu_ns, 100u);  // its span, 1100..1200
  EXPECT_EQ(r.stats.sched_switch_outs_lost, 1u);
  // 10: 1000..1300, 11: 5000..5100, 12: 100000..100100; not 10 to the end.
  EXPECT_EQ(r.stats.cpu_observed_total_ns, 300u + 100u + 100u);
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

// --- head sampling ----------------------------------------------------------

// A worker serves request 1, then a connection left out of the sample (its
// calls are a sample_gap), then request 2: request 2's first event is
// charged only its run since the gap, and the thread's time in the gap and
// after it until it blocks goes to the left-out connection.
TEST(SampleGap, TheRunItStandsForGoesToNoRecordedRequest) {
  constexpr uint64_t B = 1'000'000;
  constexpr uint32_t W = 7;
  Stream s;
  s.Switch(B, 0, 0, W, 0);
  s.Usdt(B + 100, 0, W, "app:begin", 1);
  s.Usdt(B + 200, 0, W, "app:end", 1);
  s.Switch(B + 250, 0, W, 0, 1);
  s.Switch(B + 280, 0, 0, W, 0);
  // left-out work from B+300 to B+5000
  s.SampleGap(B + 5000, 0, W, B + 300, 12);
  s.Usdt(B + 5100, 0, W, "app:begin", 2);
  s.Usdt(B + 5300, 0, W, "app:end", 2);
  s.SampleGap(B + 9000, 0, W, B + 5400, 3);
  s.Switch(B + 9500, 0, W, 0, 1);  // blocks: its tail since the gap is that work's too
  Result r = Extract(kAcctSchema, s);
  ASSERT_EQ(r.reqs.size(), 2u);
  EXPECT_EQ(r.reqs[0].totals.cpu_ns, 250u);
  EXPECT_EQ(r.reqs[1].totals.cpu_ns, 300u) << "only B+5000..B+5300, not the left-out run";
  EXPECT_EQ(r.stats.sample_gaps, 2u);
  EXPECT_EQ(r.stats.events_unsampled, 15u);
  EXPECT_EQ(r.stats.cpu_unsampled_ns, 4720u + 3700u + 500u);
  EXPECT_EQ(r.stats.cpu_unattributed_ns, 0u);
}

// A timer interrupt that comes while a worker spins in user mode runs its
// softirq on the worker's stack, so the capture records a delayed ACK it
// sends for another request's connection in the worker's task context. The
// worker is inside no syscall: the packet is interrupt work, and the
// worker's spin stays with its own request instead of riding the ACK into
// the other one.
TEST(ResourceAccounting, APacketInterruptingUserModeTakesNoneOfTheThreadsRun) {
  constexpr uint64_t kSkA = 0xffff888000ea0000, kSkB = 0xffff888000eb0000;
  constexpr uint32_t W1 = 511, W2 = 512, kClient = 611;
  Stream s;
  auto ours = [&] {
    auto* h = const_cast<jdw_record_header*>(s.records().back());
    h->tgid = Stream::kTgid;
  };
  s.Switch(1000, 0, 0, W1, 0);
  s.SockInfo(1005, 0, W1, kSkA, 8080, 5555);
  s.SysExit(1010, 0, W1, "accept4", 7, JDW_OBJ_SOCKET, kSkA);
  s.SysEnter(1020, 0, W1, "read", 7, JDW_OBJ_SOCKET, kSkA, 4096);
  s.Packet(JDW_EVENT_NET_RECV, 1030, 1, JDW_CTX_SOFTIRQ, kClient, kSkA, 5555, 8080, 152);
  s.SysExit(1050, 0, W1, "read", 100);
  s.SysEnter(1060, 0, W1, "futex", -1, JDW_OBJ_FUTEX, 0x7000, 0);
  s.Switch(1070, 0, W1, 0, 1);
  s.Switch(1100, 1, 0, W2, 0);
  s.SockInfo(1105, 1, W2, kSkB, 8080, 5556);
  s.SysExit(1110, 1, W2, "accept4", 8, JDW_OBJ_SOCKET, kSkB);
  s.SysEnter(1120, 1, W2, "read", 8, JDW_OBJ_SOCKET, kSkB, 4096);
  s.Packet(JDW_EVENT_NET_RECV, 1125, 0, JDW_CTX_SOFTIRQ, kClient, kSkB, 5556, 8080, 152);
  s.SysExit(1130, 1, W2, "read", 100);
  // W2 spins in user mode for 4000 ns; the ACK for A goes out 3000 ns in.
  s.Packet(JDW_EVENT_NET_XMIT, 4130, 1, JDW_CTX_TASK, W2, kSkA, 8080, 5555, 52);
  ours();
  s.SysEnter(5130, 1, W2, "write", 8, JDW_OBJ_SOCKET, kSkB, 100);
  s.SysExit(5140, 1, W2, "write", 100);
  s.SysEnter(5150, 1, W2, "close", 8, JDW_OBJ_SOCKET, kSkB);
  s.SysExit(5160, 1, W2, "close", 0);
  s.Switch(5170, 1, W2, 0, 1);
  s.Switch(6000, 0, 0, W1, 0);
  s.SysExit(6010, 0, W1, "futex", 0);
  s.SysEnter(6020, 0, W1, "write", 7, JDW_OBJ_SOCKET, kSkA, 100);
  s.SysExit(6030, 0, W1, "write", 100);
  s.SysEnter(6040, 0, W1, "close", 7, JDW_OBJ_SOCKET, kSkA);
  s.SysExit(6050, 0, W1, "close", 0);
  s.Switch(6060, 0, W1, 0, 1);

  auto sch = schema::LoadSchema("tcp-threadpool", schema::DefaultSchemaDirs(""));
  ASSERT_TRUE(sch.ok()) << sch.status().message();
  Result r = RunRecords(*sch, s, s.records());
  ASSERT_EQ(r.reqs.size(), 2u);
  const model::Request& a = r.reqs[0].tgid && r.reqs[0].start_ns < 1100 ? r.reqs[0] : r.reqs[1];
  const model::Request& b = &a == &r.reqs[0] ? r.reqs[1] : r.reqs[0];
  EXPECT_LT(a.totals.cpu_ns, 1000u) << "A took W2's spin through the ACK";
  EXPECT_GE(b.totals.cpu_ns, 4000u) << "B lost its worker's spin";
}

// Softirqs that ksoftirqd runs are recorded in its own task context: an ACK
// of the request's connection handled there is interrupt work, and
// ksoftirqd (a thread the trace has no other record of) is no process of
// the request.
TEST(ResourceAccounting, APacketInAnUntracedThreadsContextAddsNoProcess) {
  constexpr uint64_t kSk = 0xffff888000ec0000;
  constexpr uint32_t W = 521, kSoftirqd = 14, kClient = 621;
  Stream s;
  s.Switch(1000, 0, 0, W, 0);
  s.SockInfo(1005, 0, W, kSk, 8080, 5555);
  s.SysExit(1010, 0, W, "accept4", 7, JDW_OBJ_SOCKET, kSk);
  s.SysEnter(1020, 0, W, "read", 7, JDW_OBJ_SOCKET, kSk, 4096);
  s.Packet(JDW_EVENT_NET_RECV, 1030, 1, JDW_CTX_SOFTIRQ, kClient, kSk, 5555, 8080, 152);
  s.SysExit(1050, 0, W, "read", 100);
  s.SysEnter(1060, 0, W, "write", 7, JDW_OBJ_SOCKET, kSk, 100);
  s.SysExit(1070, 0, W, "write", 100);
  // The client's ACK of the response, handled by ksoftirqd on CPU 1.
  s.Packet(JDW_EVENT_NET_RECV, 1080, 1, JDW_CTX_TASK, kSoftirqd, kSk, 5555, 8080, 52);
  s.SysEnter(1090, 0, W, "close", 7, JDW_OBJ_SOCKET, kSk);
  s.SysExit(1100, 0, W, "close", 0);
  s.Switch(1110, 0, W, 0, 1);

  auto sch = schema::LoadSchema("tcp-threadpool", schema::DefaultSchemaDirs(""));
  ASSERT_TRUE(sch.ok()) << sch.status().message();
  Result r = RunRecords(*sch, s, s.records());
  ASSERT_EQ(r.reqs.size(), 1u);
  ASSERT_EQ(r.reqs[0].processes.size(), 1u) << "ksoftirqd became a process of the request";
  EXPECT_EQ(r.reqs[0].processes[0].tgid, Stream::kTgid);
}

}  // namespace
}  // namespace jackdaw::join
