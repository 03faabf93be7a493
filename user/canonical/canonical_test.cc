#include "canonical/canonical.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "canonical/serialize.h"
#include "request/synthetic.h"

namespace jackdaw::canonical {
namespace {

using model::Request;
using model::SyntheticKind;
using model::synthetic::Jitter;
using model::synthetic::RequestBuilder;
using model::synthetic::RequestFactory;

Jitter NoJitter() {
  Jitter j;
  j.spin = 0;
  j.small = 0;
  return j;
}

std::string Text(const Request& r) {
  SymbolTable symbols;
  return ToText(Serialize(Canonicalize(r), &symbols), symbols);
}

std::vector<std::string> SymbolsInTimestampOrder(const Request& r) {
  std::vector<std::string> out;
  for (const auto& e : r.events)
    if (e.symbol != "sched_switch") out.push_back(e.symbol);
  return out;
}

TEST(CanonicalTest, SingleThreadLatencyIsDemandNotWallTime) {
  Jitter j = NoJitter();
  j.preempt = true;
  j.max_runq_ns = 5'000'000;
  RequestFactory f(1, j);
  Request r = f.Make('A', 1, 1'000'000, 10, 11);
  CanonicalRequest c = Canonicalize(r);
  EXPECT_GT(c.stats.dropped_scheduling_events, 0u);
  EXPECT_EQ(c.total.cpu_ns, r.totals.cpu_ns);
  EXPECT_EQ(c.latency_ns, r.totals.cpu_ns);
  EXPECT_GT(r.latency_ns(), c.latency_ns);  // run-queue waits are gone
  EXPECT_EQ(c.num_threads, 1u);
  for (const CanonicalEvent& e : c.events) EXPECT_NE(e.symbol, "sched_switch");
  // A chain: every event but the first continues its predecessor.
  for (size_t i = 1; i < c.events.size(); ++i) {
    EXPECT_EQ(c.events[i].parent, static_cast<int32_t>(i - 1));
    EXPECT_EQ(c.events[i].role, TreeRole::kContinue);
  }
  EXPECT_TRUE(c.events.back().leaf);
}

TEST(CanonicalTest, ParallelForkLatencyIsLongestBranch) {
  RequestFactory f(1, NoJitter());
  CanonicalRequest c = Canonicalize(f.Make('E', 1, 0, 10, 11));
  // recv 15us, signal 10us, helper: resume 3us + 15 ms spin, sendto 30us,
  // end 5us; the worker's own 15 ms runs in parallel, and so does the 3us
  // charged to its resume: CPU charged to an event on a thread already in
  // the request was used since that thread's previous event, so it need
  // not wait for the edge's source.
  EXPECT_EQ(c.latency_ns, 15'063'000u);
  EXPECT_EQ(c.total.cpu_ns, 30'068'000u);
  EXPECT_EQ(c.num_threads, 2u);
}

TEST(CanonicalTest, RpcLatencyIsSerialChain) {
  RequestFactory f(1, NoJitter());
  CanonicalRequest c = Canonicalize(f.Make('F', 1, 0, 10, 11));
  // 15us + 7.5 ms, helper resume 3us + 15 ms, 7.25 ms, end 5us (the
  // worker's resume, 3us, overlaps the helper: see above).
  EXPECT_EQ(c.latency_ns, 29'773'000u);
  // The worker's wait is a leaf; its resume hangs under the helper's signal.
  int forks = 0, leaves = 0;
  for (const CanonicalEvent& e : c.events) {
    forks += e.role == TreeRole::kFork;
    leaves += e.leaf;
  }
  EXPECT_EQ(forks, 2);
  EXPECT_EQ(leaves, 3);  // worker wait, helper wait, request end
}

// Type F built by hand so the interleaving can be chosen: `worker_lag`
// delays the worker between its signal and its wait (it was preempted), so
// with a short wake-up the helper resumes before the worker waits; `preempt`
// cuts the helper's 15 ms spin with two context switches.
Request Rpc(uint32_t w, uint32_t h, uint64_t t0, uint64_t wake, uint64_t worker_lag, bool preempt) {
  RequestBuilder b(1);
  uint64_t t = t0;
  b.Add(w, t, "usdt:jackdaw:request_start");
  b.Add(w, t += 15'000, "sys_enter:recvfrom", SyntheticKind::kNone, 15'000, 0, 160);
  uint32_t sig = b.Add(w, t += 7'500'000, "signal", SyntheticKind::kSignal, 7'500'000);
  uint64_t wait_ts = t + 2'000 + worker_lag;
  if (worker_lag) b.Add(w, t + 1'000, "sched_switch", SyntheticKind::kNone, 1'000);
  b.Add(w, wait_ts, "wait", SyntheticKind::kWait, worker_lag ? 1'000 : 2'000);
  uint64_t ht = t + wake;
  uint32_t res = b.Add(h, ht += 3'000, "resume", SyntheticKind::kResume, 3'000);
  b.Edge(sig, res);
  if (preempt) {
    b.Add(h, ht += 4'000'000, "sched_switch", SyntheticKind::kNone, 4'000'000);
    ht += 2'000'000;  // run-queue wait
    b.Add(h, ht += 6'000'000, "sched_switch", SyntheticKind::kNone, 6'000'000);
    ht += 500'000;
    ht += 5'000'000;
  } else {
    ht += 15'000'000;
  }
  uint32_t hsig = b.Add(h, ht, "signal", SyntheticKind::kSignal, preempt ? 5'000'000 : 15'000'000);
  b.Add(h, ht + 2'000, "wait", SyntheticKind::kWait, 2'000);
  uint64_t wt = std::max(ht, wait_ts) + wake;
  uint32_t wres = b.Add(w, wt += 3'000, "resume", SyntheticKind::kResume, 3'000);
  b.Edge(hsig, wres);
  b.Add(w, wt += 7'250'000, "sys_enter:sendto", SyntheticKind::kNone, 7'250'000, 0, 240);
  b.Add(w, wt + 5'000, "usdt:jackdaw:request_end", SyntheticKind::kNone, 5'000);
  return std::move(b).Build();
}

TEST(CanonicalTest, IdenticalBehaviourSerializesIdenticallyAcrossTidsAndInterleavings) {
  Request calm = Rpc(4711, 8123, 1'000'000, 20'000, 0, false);
  Request busy = Rpc(7, 3, 5'000'000, 20'000, 1'000'000, true);  // helper tid < worker tid
  Request slow_wake = Rpc(31, 30, 0, 900'000, 0, false);
  // The interleavings really differ.
  EXPECT_NE(SymbolsInTimestampOrder(calm), SymbolsInTimestampOrder(busy));
  EXPECT_NE(calm.events.size(), busy.events.size());
  std::string t = Text(calm);
  EXPECT_EQ(t, Text(busy));
  EXPECT_EQ(t, Text(slow_wake));
  EXPECT_EQ(t.find("4711"), std::string::npos);  // no thread ids
  EXPECT_EQ(t.find("8123"), std::string::npos);
  EXPECT_EQ(Canonicalize(calm).latency_ns, Canonicalize(busy).latency_ns);
  EXPECT_EQ(Canonicalize(calm).latency_ns, 29'773'000u);
  EXPECT_GT(busy.latency_ns(), calm.latency_ns());

  // The same through the factory for every shape: tids, wake-up latency,
  // preemption and run-queue waits differ, the serialization does not.
  for (char type : {'A', 'B', 'C', 'D', 'E', 'F'}) {
    Jitter quiet = NoJitter();
    quiet.min_wake_ns = quiet.max_wake_ns = 20'000;
    Jitter loaded = NoJitter();
    loaded.min_wake_ns = loaded.max_wake_ns = 900'000;
    loaded.preempt = true;
    loaded.max_runq_ns = 3'000'000;
    RequestFactory f1(1, quiet), f2(2, loaded);
    Request r1 = f1.Make(type, 1, 1'000'000, 100, 200);
    Request r2 = f2.Make(type, 2, 9'000'000, 7, 3);
    EXPECT_EQ(Text(r1), Text(r2)) << "type " << type;
    EXPECT_EQ(Canonicalize(r1).latency_ns, Canonicalize(r2).latency_ns) << "type " << type;
  }
}

// One signal wakes two threads doing different work; which tid gets which
// branch, and in which order their events land, must not matter.
Request TwoForks(uint32_t reader_tid, uint32_t writer_tid, bool reader_first) {
  RequestBuilder b(1);
  uint32_t start = b.Add(1, 0, "usdt:start");
  uint32_t sig = b.Add(1, 10, "signal", SyntheticKind::kSignal, 10);
  b.Edge(start, sig);  // redundant: program order already says so
  uint64_t r0 = reader_first ? 20 : 40, w0 = reader_first ? 40 : 20;
  uint32_t rr = b.Add(reader_tid, r0, "resume", SyntheticKind::kResume, 1);
  b.Add(reader_tid, r0 + 100, "sys_enter:read", SyntheticKind::kNone, 100, 4096);
  uint32_t wr = b.Add(writer_tid, w0, "resume", SyntheticKind::kResume, 1);
  b.Add(writer_tid, w0 + 300, "sys_enter:write", SyntheticKind::kNone, 300, 0, 512);
  b.Edge(sig, rr);
  b.Edge(sig, wr);
  b.Add(1, 50, "wait", SyntheticKind::kWait, 40);
  return std::move(b).Build();
}

TEST(CanonicalTest, ForkChildrenOrderedByStructureNotTid) {
  std::string a = Text(TwoForks(5, 6, true));
  EXPECT_EQ(a, Text(TwoForks(6, 5, true)));
  EXPECT_EQ(a, Text(TwoForks(5, 6, false)));
  EXPECT_EQ(a, Text(TwoForks(60, 5, false)));
  // Continuation first, then forks by subtree symbols ("resume read" <
  // "resume write").
  EXPECT_EQ(a,
            "usdt:start signal{cpu=0.000010ms} wait{cpu=0.000040ms} resume{cpu=0.000001ms} "
            "sys_enter:read{cpu=0.000100ms,disk=4096B} resume{cpu=0.000001ms} "
            "sys_enter:write{cpu=0.000300ms,net=512B}");
}

TEST(CanonicalTest, BackwardAndDuplicateEdgesAreIgnoredAndCounted) {
  RequestBuilder b(1);
  uint32_t x = b.Add(1, 0, "a");
  uint32_t y = b.Add(2, 10, "b", SyntheticKind::kNone, 5);
  uint32_t z = b.Add(2, 20, "c");
  b.Edge(y, x);  // backward in time
  b.Edge(x, y);
  b.Edge(x, y);   // duplicate
  b.Edge(y, z);   // within one thread
  b.Edge(x, 99);  // out of range
  CanonicalRequest c = Canonicalize(std::move(b).Build());
  EXPECT_EQ(c.stats.ignored_backward_edges, 2u);
  EXPECT_EQ(c.stats.duplicate_edges, 2u);
  ASSERT_EQ(c.events.size(), 3u);
  EXPECT_EQ(c.events[2].role, TreeRole::kContinue);
  EXPECT_EQ(c.events[1].role, TreeRole::kFork);
  EXPECT_EQ(c.latency_ns, 5u);
}

TEST(CanonicalTest, SchedulingDemandIsNeverLost) {
  RequestBuilder b(1);
  b.Add(1, 0, "usdt:start");
  b.Add(1, 10, "sched_switch", SyntheticKind::kNone, 7);
  b.Add(1, 20, "sys_enter:read", SyntheticKind::kNone, 3);
  b.Add(1, 30, "sched_switch", SyntheticKind::kNone, 11);  // trailing
  b.Add(2, 40, "sched_switch", SyntheticKind::kNone, 13);  // thread with nothing else
  CanonicalRequest c = Canonicalize(std::move(b).Build());
  EXPECT_EQ(c.total.cpu_ns, 34u);
  EXPECT_EQ(c.stats.dropped_scheduling_events, 2u);
  ASSERT_EQ(c.events.size(), 3u);
  // Thread 2 survives as one event carrying its demand; it is a separate
  // root with no causal link, so it starts at 0.
  uint64_t read_cpu = 0, lone_cpu = 0;
  for (const CanonicalEvent& e : c.events) {
    if (e.symbol == "sys_enter:read") read_cpu = e.demand.cpu_ns;
    if (e.symbol == "sched_switch") lone_cpu = e.demand.cpu_ns;
  }
  EXPECT_EQ(read_cpu, 21u);
  EXPECT_EQ(lone_cpu, 13u);
  EXPECT_EQ(c.latency_ns, 21u);
}

TEST(CanonicalTest, EmptyRequest) {
  Request r;
  r.id = 9;
  CanonicalRequest c = Canonicalize(r);
  EXPECT_EQ(c.request_id, 9u);
  EXPECT_TRUE(c.events.empty());
  EXPECT_EQ(c.latency_ns, 0u);
  SymbolTable symbols;
  EXPECT_EQ(ToText(Serialize(c, &symbols), symbols), "");
}

TEST(CanonicalTest, MixConservesDemandAndParentsPrecedeChildren) {
  RequestFactory f(7);
  f.jitter().preempt = true;
  f.jitter().max_runq_ns = 1'000'000;
  std::string truth;
  for (const Request& r : f.MakeMix("ABCDEF", 10, &truth)) {
    CanonicalRequest c = Canonicalize(r);
    EXPECT_EQ(c.total.cpu_ns, r.totals.cpu_ns);
    EXPECT_EQ(c.total.disk_bytes, r.totals.disk_bytes);
    for (size_t i = 0; i < c.events.size(); ++i) {
      EXPECT_LT(c.events[i].parent, static_cast<int32_t>(i));
      EXPECT_LE(c.events[i].done_ns, c.latency_ns);
    }
    EXPECT_LE(c.latency_ns, r.latency_ns());
  }
}

// Seeded random requests, malformed edges included: the invariants hold and
// renaming threads changes nothing.
TEST(CanonicalTest, RandomRequestsKeepInvariantsAndIgnoreTids) {
  std::mt19937_64 rng(1234);
  const char* symbols[] = {"sys_enter:read", "sys_enter:write", "signal",       "resume",
                           "wait",           "sched_switch",    "sched_wakeup", "usdt:x"};
  for (int iter = 0; iter < 300; ++iter) {
    std::uniform_int_distribution<int> nev(0, 40), tid(1, 4), sym(0, 7), cpu(0, 1000);
    const int n = nev(rng);
    Request r;
    r.id = static_cast<uint64_t>(iter);
    uint64_t demand = 0;
    for (int i = 0; i < n; ++i) {
      model::RequestEvent e;
      e.ts_ns = static_cast<uint64_t>(i) * 10;
      e.tid = static_cast<uint32_t>(tid(rng));
      e.symbol = symbols[sym(rng)];
      e.synthetic = e.symbol == "signal"   ? SyntheticKind::kSignal
                    : e.symbol == "resume" ? SyntheticKind::kResume
                    : e.symbol == "wait"   ? SyntheticKind::kWait
                                           : SyntheticKind::kNone;
      e.cpu_ns = static_cast<uint64_t>(cpu(rng));
      demand += e.cpu_ns;
      r.events.push_back(e);
    }
    std::uniform_int_distribution<int> idx(0, n + 2);
    for (int k = 0; k < n / 3; ++k)
      r.edges.push_back({static_cast<uint32_t>(idx(rng)), static_cast<uint32_t>(idx(rng))});
    CanonicalRequest c = Canonicalize(r);
    EXPECT_EQ(c.total.cpu_ns, demand);
    std::vector<int> seen(static_cast<size_t>(n), 0);
    for (size_t i = 0; i < c.events.size(); ++i) {
      EXPECT_LT(c.events[i].parent, static_cast<int32_t>(i));
      EXPECT_LT(c.events[i].thread, c.num_threads);
      EXPECT_GE(c.events[i].done_ns, c.events[i].ready_ns);
      seen[c.events[i].source_index]++;
    }
    for (int v : seen) EXPECT_LE(v, 1);
    Request renamed = r;
    for (model::RequestEvent& e : renamed.events) e.tid = 100 - e.tid;
    EXPECT_EQ(Text(r), Text(renamed));
  }
}

// Blocking with no causal edge, futex calls and every context switch are
// timing: dropped, their CPU carried to the thread's next kept event.
TEST(CanonicalTest, IncidentalBlockingAndFutexCallsAreScheduling) {
  auto make = [](bool read_blocked, bool futex) {
    RequestBuilder b(1);
    b.Add(1, 0, "usdt:start", SyntheticKind::kNone, 1'000);
    b.Add(1, 10'000, "sys_enter:read", SyntheticKind::kNone, 2'000);
    uint64_t t = 20'000;
    if (read_blocked) {
      b.Add(1, t, "switch_out:blocked", SyntheticKind::kNone, 500);
      b.Add(1, t += 40'000, "switch_in");
    }
    b.Add(1, t += 1'000, "sys_exit:read", SyntheticKind::kNone, read_blocked ? 500 : 1'000);
    if (futex) b.Add(1, t += 1'000, "sys_enter:futex", SyntheticKind::kNone, 3'000);
    b.Add(1, t += 5'000'000, "sys_enter:sendto", SyntheticKind::kNone,
          futex ? 4'997'000 : 5'000'000, 0, 300);
    return std::move(b).Build();
  };
  const std::string plain = Text(make(false, false));
  EXPECT_EQ(plain, Text(make(true, false)));
  EXPECT_EQ(plain, Text(make(false, true)));
  EXPECT_EQ(plain, Text(make(true, true)));
  EXPECT_EQ(plain.find("switch_out"), std::string::npos);
  EXPECT_EQ(plain.find("futex"), std::string::npos);
  EXPECT_EQ(Canonicalize(make(true, true)).total.cpu_ns, 5'004'000u);
}

// A Canonicalizer binds the per-thread symbol memo to its own id; between
// calls of another one, or of plain Canonicalize() on other lists, it must
// still classify by its own lists.
TEST(CanonicalTest, CanonicalizersInterleavedGiveCanonicalizesResults) {
  RequestBuilder b(1);
  b.Add(1, 0, "usdt:start", SyntheticKind::kNone, 1'000);
  b.Add(1, 10'000, "sys_enter:futex", SyntheticKind::kNone, 3'000);
  b.Add(1, 20'000, "sys_enter:sendto", SyntheticKind::kNone, 2'000, 0, 300);
  const Request r = std::move(b).Build();
  CanonicalOptions keep_futex;
  keep_futex.scheduling_symbol_prefixes = {"sched_switch"};
  CanonicalOptions drop_sendto;
  drop_sendto.scheduling_symbol_prefixes = {"sys_enter:sendto"};
  auto text = [](const CanonicalRequest& c) {
    SymbolTable symbols;
    return ToText(Serialize(c, &symbols), symbols);
  };
  const std::string want_default = text(Canonicalize(r));
  const std::string want_keep = text(Canonicalize(r, keep_futex));
  const std::string want_drop = text(Canonicalize(r, drop_sendto));
  // The lists decide this request's form.
  ASSERT_NE(want_default, want_keep);
  ASSERT_NE(want_default, want_drop);
  ASSERT_NE(want_keep, want_drop);
  Canonicalizer a(CanonicalOptions{}), k(keep_futex);
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(text(a(r)), want_default);
    EXPECT_EQ(text(a(r)), want_default);
    EXPECT_EQ(text(k(r)), want_keep);
    EXPECT_EQ(text(Canonicalize(r, drop_sendto)), want_drop);
    EXPECT_EQ(text(k(r)), want_keep);
    EXPECT_EQ(text(Canonicalize(r)), want_default);
    EXPECT_EQ(text(a(r)), want_default);
    EXPECT_EQ(text(Canonicalize(r, keep_futex)), want_keep);
    EXPECT_EQ(text(a(r)), want_default);
  }
}

// Group commit: whether a request's thread flushes the log, and how much of
// other requests' log that write carries, is decided by who came first. A
// request that synced (its block write's issue and completion with it) and
// one whose log another thread flushed give the same form; the written
// bytes stay the request's demand, marked as written. A block read is the
// request's own and keeps its events.
TEST(CanonicalTest, DurabilityWorkIsTimingItsWritesAreMarked) {
  auto make = [](bool flushes, uint64_t written) {
    RequestBuilder b(1);
    b.Add(kInterruptTid, 0, "net_recv", SyntheticKind::kNone, 0, 0, 105);
    b.Add(1, 10, "sys_exit:recvfrom", SyntheticKind::kNone, 1'000);
    uint64_t t = 10'000;
    if (flushes) {
      b.Add(1, t += 1'000, "sys_enter:fdatasync", SyntheticKind::kNone, 20'000);
      b.Add(1, t += 1'000, "io_start:write", SyntheticKind::kIoStart, 2'000);
      b.Add(kInterruptTid, t += 100'000, "block_complete:write", SyntheticKind::kNone, 0, written);
      b.Add(1, t += 1'000, "sys_exit:fdatasync", SyntheticKind::kNone, 1'000);
    }
    b.Add(1, t += 50'000, "sys_enter:sendto", SyntheticKind::kNone, flushes ? 28'000 : 51'000, 0, 22);
    return std::move(b).Build();
  };
  auto symbols = [](const CanonicalRequest& c) {
    std::vector<std::string> out;
    for (const CanonicalEvent& e : c.events) out.push_back(e.symbol);
    return out;
  };
  CanonicalRequest own = Canonicalize(make(false, 0));
  CanonicalRequest small = Canonicalize(make(true, 8192)), large = Canonicalize(make(true, 184 * 1024));
  EXPECT_EQ(symbols(small), symbols(own)) << Text(make(true, 8192));
  EXPECT_EQ(symbols(large), symbols(own));
  EXPECT_EQ(small.total.cpu_ns, 52'000u);
  EXPECT_EQ(own.total.cpu_ns, 52'000u);
  EXPECT_EQ(small.total.disk_bytes, 8192u);
  EXPECT_EQ(small.total.disk_write_bytes, 8192u);
  EXPECT_EQ(large.total.disk_write_bytes, 184u * 1024);
  EXPECT_EQ(own.total.disk_write_bytes, 0u);

  // A block read is the request's own: its issue stays, its bytes are not
  // marked written.
  RequestBuilder r(2);
  r.Add(1, 0, "sys_exit:recvfrom", SyntheticKind::kNone, 1'000);
  r.Add(1, 1'000, "sys_enter:pread64", SyntheticKind::kNone, 2'000);
  r.Add(1, 2'000, "io_start:read", SyntheticKind::kIoStart, 1'000);
  r.Add(kInterruptTid, 90'000, "block_complete:read", SyntheticKind::kNone, 0, 12'288);
  r.Add(1, 95'000, "sys_enter:sendto", SyntheticKind::kNone, 3'000, 0, 12'288);
  CanonicalRequest read = Canonicalize(std::move(r).Build());
  EXPECT_EQ(read.total.disk_bytes, 12'288u);
  EXPECT_EQ(read.total.disk_write_bytes, 0u);
  EXPECT_TRUE(std::any_of(read.events.begin(), read.events.end(),
                          [](const CanonicalEvent& e) { return e.symbol == "io_start:read"; }));
}

// The message exchange's payload travels with the canonical form.
TEST(CanonicalTest, MessageBytesAreCarried) {
  RequestBuilder b(1);
  b.Add(1, 0, "sys_exit:recvfrom", SyntheticKind::kNone, 1'000);
  b.Add(1, 1'000, "sys_enter:sendto", SyntheticKind::kNone, 1'000, 0, 22);
  Request r = std::move(b).Build();
  EXPECT_EQ(Canonicalize(r).msg_in_bytes, 0u) << "no message: the schema has no `messages`";
  r.has_message = true;
  r.msg_in_bytes = 53;
  r.msg_out_bytes = 22;
  SymbolTable symbols;
  SerializedRequest s = Serialize(Canonicalize(r), &symbols);
  EXPECT_EQ(s.msg_in_bytes, 53u);
  EXPECT_EQ(s.msg_out_bytes, 22u);
}

// Back-to-back repeats on one thread are one event: two ACKs, or the
// schema's SYNC Signal/Resume next to the kernel wake-up's for the same
// hand-off (two parallel edges that become one).
TEST(CanonicalTest, RepeatsMergeAndParallelEdgesBecomeOne) {
  auto make = [](bool doubled) {
    RequestBuilder b(1);
    b.Add(1, 0, "usdt:dispatch", SyntheticKind::kNone, 5'000);
    uint32_t s1 = b.Add(1, 10, "signal", SyntheticKind::kSignal);
    uint32_t s2 = doubled ? b.Add(1, 20, "signal", SyntheticKind::kSignal) : 0;
    b.Add(1, 30, "net_xmit", SyntheticKind::kNone, 1'000, 0, 100);
    if (doubled) b.Add(1, 40, "net_xmit", SyntheticKind::kNone, 1'000, 0, 100);
    uint64_t t = 100;
    uint32_t r1 = b.Add(2, t, "resume", SyntheticKind::kResume);
    uint32_t r2 = 0;
    if (doubled) {
      b.Add(2, t += 5, "switch_in");
      r2 = b.Add(2, t += 5, "resume", SyntheticKind::kResume);
    }
    b.Add(2, t + 7'000'000, "usdt:work", SyntheticKind::kNone, 7'000'000);
    b.Edge(s1, doubled ? r2 : r1);
    if (doubled) b.Edge(s2, r1);
    return std::move(b).Build();
  };
  Request single = make(false);
  // The doubled exchange moves twice the bytes: compare structure only.
  Request doubled = make(true);
  CanonicalRequest c = Canonicalize(doubled);
  EXPECT_EQ(c.stats.merged_repeats, 3u);  // signal, net_xmit, resume
  EXPECT_EQ(c.stats.merged_edges, 1u);
  ASSERT_EQ(c.events.size(), Canonicalize(single).events.size());
  for (size_t i = 0; i < c.events.size(); ++i)
    EXPECT_EQ(c.events[i].symbol, Canonicalize(single).events[i].symbol);
  int forks = 0;
  for (const CanonicalEvent& e : c.events) forks += e.role == TreeRole::kFork;
  EXPECT_EQ(forks, 1);
  for (const CanonicalEvent& e : c.events)
    if (e.symbol == "net_xmit") {
      EXPECT_EQ(e.demand.net_bytes, 200u);
      EXPECT_EQ(e.repeats, 2u);
    }
  EXPECT_EQ(c.total.cpu_ns, doubled.totals.cpu_ns);
}

// Interrupt-context events (tid 0) are the kernel's work on the request's
// packets and I/O: one aggregate root, last, whatever their number, order
// and kinds.
TEST(CanonicalTest, InterruptContextEventsAggregateIntoOneRoot) {
  auto make = [](bool early_packet) {
    RequestBuilder b(1);
    if (early_packet) {
      b.Add(kInterruptTid, 0, "net_recv", SyntheticKind::kNone, 0, 0, 150);
      b.Add(kInterruptTid, 5, "net_xmit", SyntheticKind::kNone, 1'000, 0, 50);
    }
    b.Add(7, 10, "sys_exit:accept4", SyntheticKind::kNone, 10'000);
    b.Add(kInterruptTid, 20, "net_recv", SyntheticKind::kNone, 0, 0, 50);
    b.Add(7, 30, "sys_enter:read", SyntheticKind::kNone, 2'000, 4096);
    b.Add(kInterruptTid, 40, "block_complete:read", SyntheticKind::kNone, 0, 4096);
    b.Add(kInterruptTid, 50, "net_recv", SyntheticKind::kNone, 0, 0, 50);
    if (!early_packet) b.Add(kInterruptTid, 55, "net_recv", SyntheticKind::kNone, 1'000, 0, 150);
    b.Add(7, 60, "sys_enter:sendto", SyntheticKind::kNone, 3'000, 0, 500);
    return std::move(b).Build();
  };
  CanonicalRequest a = Canonicalize(make(false));
  ASSERT_EQ(a.events.size(), 4u);
  EXPECT_EQ(a.events.front().symbol, "sys_exit:accept4");
  EXPECT_EQ(a.events.back().symbol, kInterruptSymbol);
  EXPECT_EQ(a.events.back().role, TreeRole::kRoot);
  EXPECT_EQ(a.events.back().demand, (Demand{1'000, 4096, 250}));
  EXPECT_EQ(a.events.back().repeats, 4u);
  // A packet before the request's first task event, and an ACK sent from
  // the interrupt: the same form, with the bytes counted.
  CanonicalRequest b = Canonicalize(make(true));
  ASSERT_EQ(b.events.size(), a.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) EXPECT_EQ(b.events[i].symbol, a.events[i].symbol);
  EXPECT_EQ(b.events.back().demand, (Demand{1'000, 4096, 300}));
}

// The join puts a Resume at its target's instant and charges the CPU before
// that instant to the target. Whether the thread was still running when the
// signal came (its CPU lands on the target) or had blocked (it lands on the
// Resume) is timing: both give the same form and latency.
TEST(CanonicalTest, CpuAtTheResumeInstantBelongsToTheResume) {
  auto make = [](bool still_running) {
    RequestBuilder b(1);
    b.Add(1, 0, "usdt:start", SyntheticKind::kNone, 1'000);
    uint32_t sig = b.Add(1, 10'000, "signal", SyntheticKind::kSignal, 9'000);
    uint64_t hend = 15'010'000;
    uint32_t hres = b.Add(2, 20'000, "resume", SyntheticKind::kResume);
    uint32_t hsig = b.Add(2, hend, "signal", SyntheticKind::kSignal, 14'990'000);
    b.Edge(sig, hres);
    uint64_t wend = 15'020'000;
    if (!still_running)
      b.Add(1, 15'000'000, "switch_out:blocked", SyntheticKind::kNone, 14'990'000);
    uint32_t wres = b.Add(1, wend, "resume", SyntheticKind::kResume,
                          still_running ? 0 : 10'000);
    b.Add(1, wend, "usdt:join", SyntheticKind::kNone, still_running ? 15'000'000 : 0);
    b.Edge(hsig, wres);
    b.Add(1, wend + 30'000, "sys_enter:sendto", SyntheticKind::kNone, 30'000, 0, 300);
    return std::move(b).Build();
  };
  EXPECT_EQ(Text(make(true)), Text(make(false)));
  CanonicalRequest c = Canonicalize(make(true));
  // Two threads of 15 ms in parallel, then the send.
  EXPECT_EQ(c.latency_ns, 10'000u + 15'000'000u + 30'000u);
}

// Several roots (a hand-off the join did not see) start with the root where
// the request began, whatever its symbols, so the request stays aligned with
// those whose hand-off was seen.
TEST(CanonicalTest, TheRootWhereTheRequestBeganComesFirst) {
  auto make = [](bool handoff_seen) {
    RequestBuilder b(1);
    b.Add(5, 0, "sys_exit:accept4", SyntheticKind::kNone, 10'000);
    uint32_t sig = handoff_seen ? b.Add(5, 10, "signal", SyntheticKind::kSignal) : 0;
    uint32_t res = handoff_seen ? b.Add(6, 20, "resume", SyntheticKind::kResume) : 0;
    if (handoff_seen) b.Edge(sig, res);
    b.Add(6, 30, "sys_enter:read", SyntheticKind::kNone, 3'000);
    b.Add(6, 40, "sys_enter:sendto", SyntheticKind::kNone, 15'000'000, 0, 300);
    return std::move(b).Build();
  };
  CanonicalRequest unseen = Canonicalize(make(false));
  ASSERT_EQ(unseen.events.size(), 3u);
  // "sys_enter:read" sorts before "sys_exit:accept4", but the accept began it.
  EXPECT_EQ(unseen.events[0].symbol, "sys_exit:accept4");
  EXPECT_EQ(unseen.events[1].symbol, "sys_enter:read");
  CanonicalRequest seen = Canonicalize(make(true));
  EXPECT_EQ(seen.events[0].symbol, "sys_exit:accept4");
  EXPECT_EQ(seen.events[3].symbol, "sys_enter:read");
}

// --- Black box: hand-offs and joins seen only when a thread slept -------

using model::EdgeKind;
using model::synthetic::BlackBoxView;

std::vector<std::string> Symbols(const CanonicalRequest& c) {
  std::vector<std::string> out;
  for (const CanonicalEvent& e : c.events) out.push_back(e.symbol);
  return out;
}

// Same events in the same order, each with the same demand up to `slack_ns`
// of CPU (the few microseconds a futex call or a wake-up record costs go to
// one event or the next).
void ExpectSameForm(const CanonicalRequest& a, const CanonicalRequest& b, uint64_t slack_ns = 60'000) {
  ASSERT_EQ(Symbols(a), Symbols(b));
  for (size_t i = 0; i < a.events.size(); ++i) {
    EXPECT_NEAR(double(a.events[i].demand.cpu_ns), double(b.events[i].demand.cpu_ns), double(slack_ns))
        << "event " << i << " " << a.events[i].symbol;
    EXPECT_EQ(a.events[i].demand.net_bytes, b.events[i].demand.net_bytes) << "event " << i;
  }
}

BlackBoxView View(bool acceptor_woke_worker, bool worker_woke_helper, bool worker_waited,
                  bool idle_wakee = false) {
  BlackBoxView v;
  v.acceptor_woke_worker = acceptor_woke_worker;
  v.worker_woke_helper = worker_woke_helper;
  v.worker_waited = worker_waited;
  v.idle_wakee = idle_wakee;
  return v;
}

Request BlackBox(char type, const BlackBoxView& v, uint64_t seed = 1) {
  RequestFactory f(seed, NoJitter());
  return f.MakeBlackBox(type, 1, 1'000'000, v);
}

// A hand-off to a pool thread is a wake-up edge only if the thread slept; a
// busy one takes the work later with no edge, and starts a root of its own.
// Both give the same form: the hand-off's Signal and Resume go, the edge
// joins the kept events around them, and roots follow when they began.
TEST(CanonicalTest, WakeupHandOffSeenOrNotGivesTheSameForm) {
  for (char type : {'B', 'E', 'F'}) {
    SCOPED_TRACE(std::string(1, type));
    const CanonicalRequest seen = Canonicalize(BlackBox(type, View(true, true, true)));
    ExpectSameForm(seen, Canonicalize(BlackBox(type, View(false, true, true))));
    ExpectSameForm(seen, Canonicalize(BlackBox(type, View(true, false, true))));
    ExpectSameForm(seen, Canonicalize(BlackBox(type, View(false, false, true))));
    EXPECT_EQ(seen.stats.elided_wakeup_forks, type == 'B' ? 1u : 2u);
    EXPECT_EQ(seen.events.front().symbol, "sys_exit:accept4");
    EXPECT_EQ(seen.events.back().symbol, kInterruptSymbol);
  }
  // Without the rule a seen hand-off is two more events, and an unseen one
  // a root that sorted by its symbols, not when it began.
  CanonicalOptions off;
  off.elide_wakeup_forks = false;
  EXPECT_NE(Symbols(Canonicalize(BlackBox('E', View(true, true, true)), off)),
            Symbols(Canonicalize(BlackBox('E', View(false, false, true)), off)));
}

// A join is a wake-up edge only if the worker had to wait: when the helper
// finished first, the worker found its result ready and the kernel shows no
// wake-up. The join is inferred where the worker next did something of its
// own, so both orders give the form of the one where the worker waited.
TEST(CanonicalTest, UnobservedJoinIsInferred) {
  const CanonicalRequest waited = Canonicalize(BlackBox('E', View(true, true, true)));
  EXPECT_EQ(waited.stats.inferred_joins, 0u);
  const CanonicalRequest ready = Canonicalize(BlackBox('E', View(true, true, false)));
  EXPECT_EQ(ready.stats.inferred_joins, 1u);
  ExpectSameForm(waited, ready);
  // (With neither the hand-off nor the join seen, no kernel event ties the
  // helper to the request: the join cannot include it, nor can the form.)
  // The canonical schedule: two threads of 15 ms in parallel.
  EXPECT_LT(ready.latency_ns, 16'000'000u);
  // The worker's 15 ms sits before the join in both.
  const std::vector<std::string> want = {"sys_exit:accept4", "sys_enter:read",  "sys_exit:read",
                                         "signal",           "resume",          "sys_enter:sendto",
                                         "net_xmit",         "sys_exit:sendto", "net_xmit",
                                         "sys_exit:close",   kInterruptSymbol};
  EXPECT_EQ(Symbols(ready), want);
  EXPECT_GT(ready.events[4].demand.cpu_ns, 14'000'000u);
  EXPECT_LT(ready.events[5].demand.cpu_ns, 100'000u);
  // Off, the helper's CPU trails the request and the worker's sits on the send.
  CanonicalOptions off;
  off.infer_unobserved_joins = false;
  EXPECT_NE(Symbols(Canonicalize(BlackBox('E', View(true, true, false)), off)), want);
}

// No join is inferred where the trace cannot show one: from a thread that
// is not a wake-up hand-off's target (a schema's SYNC is always emitted),
// or when the thread that handed the work on did nothing after.
TEST(CanonicalTest, JoinsAreInferredOnlyForWakeupHandOffs) {
  auto make = [](EdgeKind kind, bool worker_goes_on) {
    RequestBuilder b(1);
    b.Add(1, 0, "sys_enter:read", SyntheticKind::kNone, 10'000);
    uint32_t sig = b.Add(1, 10'000, "signal", SyntheticKind::kSignal);
    uint32_t res = b.Add(2, 20'000, "resume", SyntheticKind::kResume);
    b.Edge(sig, res, kind);
    b.Add(2, 1'020'000, "usdt:helper_done", SyntheticKind::kNone, 1'000'000);
    if (worker_goes_on) b.Add(1, 3'000'000, "sys_enter:sendto", SyntheticKind::kNone, 2'990'000);
    return std::move(b).Build();
  };
  EXPECT_EQ(Canonicalize(make(EdgeKind::kWakeup, true)).stats.inferred_joins, 1u);
  EXPECT_EQ(Canonicalize(make(EdgeKind::kSync, true)).stats.inferred_joins, 0u);
  EXPECT_EQ(Canonicalize(make(EdgeKind::kWakeup, false)).stats.inferred_joins, 0u);
  // A SYNC hand-off keeps its Signal and Resume.
  const CanonicalRequest sync = Canonicalize(make(EdgeKind::kSync, true));
  EXPECT_EQ(sync.stats.elided_wakeup_forks, 0u);
  EXPECT_EQ(Symbols(sync), (std::vector<std::string>{"sys_enter:read", "signal", "sys_enter:sendto",
                                                     "resume", "usdt:helper_done"}));
}

// The worker's wake-up went to a pool thread that found the task taken (the
// helper was awake and took it) and went back to sleep: that thread adds no
// structure, and its few microseconds go to the hand-off's source.
TEST(CanonicalTest, AWakeupThatFoundNothingToDoAddsNoStructure) {
  const Request idle = BlackBox('E', View(true, false, true, /*idle_wakee=*/true));
  const CanonicalRequest c = Canonicalize(idle);
  EXPECT_EQ(c.stats.idle_wakeups, 1u);
  ExpectSameForm(Canonicalize(BlackBox('E', View(true, true, true))), c);
  EXPECT_EQ(c.total.cpu_ns, idle.totals.cpu_ns);
  // Off, the idle thread is an event of its own.
  CanonicalOptions off;
  off.idle_wakeup_cpu_ns = 0;
  EXPECT_EQ(Canonicalize(idle, off).events.size(), c.events.size() + 1);
}

// What black-box forms keep: a helper working in parallel (E), one the
// worker waits for between two halves of its own work (F) and no helper
// (B) stay different, whichever hand-offs and joins were seen.
TEST(CanonicalTest, ParallelSequentialAndNoHandOffStayApart) {
  for (const BlackBoxView& v : {View(true, true, true), View(false, false, true)}) {
    const CanonicalRequest b = Canonicalize(BlackBox('B', v));
    const CanonicalRequest e = Canonicalize(BlackBox('E', v));
    const CanonicalRequest f = Canonicalize(BlackBox('F', v));
    EXPECT_NE(Symbols(b), Symbols(e));
    EXPECT_EQ(Symbols(e), Symbols(f));  // same events: told apart by where the CPU sits
    // E: the worker's 15 ms before the join, nothing after; F: 7.25 ms after.
    auto after_join = [](const CanonicalRequest& c) {
      for (size_t i = 0; i + 1 < c.events.size(); ++i)
        if (c.events[i].symbol == "resume") return c.events[i + 1].demand.cpu_ns;
      return uint64_t{0};
    };
    EXPECT_LT(after_join(e), 100'000u);
    EXPECT_GT(after_join(f), 7'000'000u);
  }
}

TEST(SerializeTest, SymbolsAreInternedOnce) {
  SymbolTable t;
  EXPECT_EQ(t.Intern("a"), 0u);
  EXPECT_EQ(t.Intern("b"), 1u);
  EXPECT_EQ(t.Intern("a"), 0u);
  EXPECT_EQ(t.Name(1), "b");
  EXPECT_EQ(t.size(), 2u);
}

}  // namespace
}  // namespace jackdaw::canonical
