// Property tests: the join fed generated traces — worker threads serving
// requests on two CPUs, helpers they wake, another process preempting them
// and transmitting on their connections from its own context, idle gaps of
// up to half a second — with switch-ins, switch-outs, wake-ups, packets and
// syscall exits dropped at random, as an overloaded capture drops them. On
// every emitted request the invariants of the design hold ("Loss, sampling
// and invariants"): no impossible CPU value, whatever was lost.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "join/extractor_test_util.h"
#include "join/loss_trace_generator.h"

namespace jackdaw::join {
namespace {

using testing::GeneratedTrace;
using testing::GenerateLossyTrace;
using testing::LossyTraceOptions;
using testing::MustParse;
using testing::Result;
using testing::RunRecords;

constexpr char kSchema[] = R"(
timeout 10s
event woken = switch_in where after_block == 1 { start Tid = tid }
event blocked = switch_out where blocked == 1 { stop Tid = tid }
event preempted = switch_out { basic Tid = tid }
event begin = usdt app:begin { start Tid = tid  start Req = arg0 }
event work = usdt app:work { basic Tid = tid  basic Req = arg0 }
event end = usdt app:end { basic Tid = tid  stop Req = arg0 }
event recv = sys_enter recvfrom where obj_kind == socket { basic Tid = tid  basic Sock = sock }
event recv_done = sys_exit recvfrom { basic Tid = tid }
event send = sys_enter sendto where obj_kind == socket { basic Tid = tid  basic Sock = sock }
event send_done = sys_exit sendto { basic Tid = tid }
event close = sys_enter close where obj_kind == socket { basic Tid = tid  stop Sock = sock }
event pkt_out = net_xmit { basic Sock = sock }
event pkt_in = net_recv { basic Sock = sock }
event wakeup = sched_wakeup where ctx == task { basic Tid = tid }
seed begin
)";

Options JoinOptions() {
  Options o;
  o.emit_timed_out = true;
  return o;
}

// The thread's time since the later of its previous event in the request
// and the request's start, for each task event (interrupt events carry tid 0).
template <typename Fn>
void ForEachTaskEventWindow(const model::Request& r, Fn&& fn) {
  std::map<uint32_t, uint64_t> prev;
  for (const model::RequestEvent& e : r.events) {
    if (!e.tid || e.synthetic != model::SyntheticKind::kNone) continue;
    auto it = prev.find(e.tid);
    const uint64_t from = it == prev.end() ? r.start_ns : std::max(it->second, r.start_ns);
    fn(e, from);
    prev[e.tid] = e.ts_ns;
  }
}

// Invariants a request keeps whatever the trace lacked, judged from the
// request alone: an event's CPU fits in its thread's time since its
// previous event in the request (and since the request began), and the
// request's CPU in its threads' time within its span.
void ExpectPossible(const model::Request& r, const std::string& where) {
  uint64_t task_cpu = 0;
  std::map<uint32_t, uint64_t> per_thread;
  ForEachTaskEventWindow(r, [&](const model::RequestEvent& e, uint64_t from) {
    EXPECT_LE(e.cpu_ns, e.ts_ns - from) << where << " request " << r.id << " event " << std::string(e.symbol)
                                        << " tid " << e.tid << " at " << e.ts_ns;
    per_thread[e.tid] += e.cpu_ns;
    task_cpu += e.cpu_ns;
  });
  for (const auto& [tid, ns] : per_thread)
    EXPECT_LE(ns, r.latency_ns()) << where << " request " << r.id << " tid " << tid;
  EXPECT_EQ(task_cpu, r.totals.cpu_ns) << where << " request " << r.id;
}

TEST(LossProperty, NoImpossibleCpuWhateverIsDropped) {
  const schema::Schema sch = MustParse(kSchema);
  uint64_t requests = 0;
  for (uint32_t seed = 1; seed <= 40; seed++) {
    LossyTraceOptions o;
    o.seed = seed;
    o.drop = 0.05 * (seed % 8);  // 0 to 35 %
    GeneratedTrace g = GenerateLossyTrace(o);
    Result r = RunRecords(sch, g.stream, g.records, JoinOptions());
    const std::string where = "seed " + std::to_string(seed);
    for (const model::Request& q : r.reqs) ExpectPossible(q, where);
    requests += r.reqs.size();
  }
  EXPECT_GT(requests, 400u);  // the generator makes requests the join finds
}

// The generator's ground truth: with nothing dropped every request is
// found, complete, and charged exactly the on-CPU time of its threads
// within its span (the property below is not vacuous).
TEST(LossProperty, NothingDroppedEveryRequestExact) {
  const schema::Schema sch = MustParse(kSchema);
  LossyTraceOptions o;
  o.seed = 7;
  o.drop = 0;
  GeneratedTrace g = GenerateLossyTrace(o);
  Result r = RunRecords(sch, g.stream, g.records, JoinOptions());
  ASSERT_EQ(r.reqs.size(), g.requests);
  for (const model::Request& q : r.reqs) {
    EXPECT_FALSE(q.timed_out) << q.id;
    std::map<uint32_t, uint64_t> charged;
    for (const model::RequestEvent& e : q.events) charged[e.tid] += e.cpu_ns;
    for (uint32_t tid : q.threads) {
      const uint64_t truth = g.OnCpu(tid, q.start_ns, q.end_ns);
      // The server's threads are the request's from their first event to
      // their last; the other process' thread only up to its packet.
      if (g.IsServerThread(tid)) {
        EXPECT_EQ(charged[tid], truth) << "request " << q.id << " tid " << tid;
      } else {
        EXPECT_LE(charged[tid], truth) << "request " << q.id << " tid " << tid;
      }
    }
  }
  // A worker's run from its switch-in to `begin` (which starts a new
  // thread interval) is before its request: cut, and only that.
  EXPECT_GT(r.stats.cpu_beyond_span_ns, 0u);
  EXPECT_EQ(r.stats.cpu_unproven_ns, 0u);
}

// A generated trace whose losses the capture located, through the join.
Result RunLocated(const schema::Schema& sch, uint32_t seed, double drop, GeneratedTrace* g) {
  LossyTraceOptions o;
  o.seed = seed;
  o.drop = drop;
  o.locate_losses = true;
  *g = GenerateLossyTrace(o);
  g->stream.meta().loss_intervals = g->losses;
  g->stream.meta().losses_located = true;
  return RunRecords(sch, g->stream, g->records, JoinOptions());
}

// With the losses located (the generator writes the interval around every
// record it dropped, as the recorder does), CPU is never charged for time
// its thread did not run: every event's CPU is at most its thread's true
// on-CPU time since its previous event in the request.
TEST(LossProperty, LocatedLossesNeverChargeTimeOffCpu) {
  const schema::Schema sch = MustParse(kSchema);
  for (uint32_t seed = 1; seed <= 40; seed++) {
    GeneratedTrace g;
    Result r = RunLocated(sch, seed, 0.05 * (1 + seed % 7), &g);
    for (const model::Request& q : r.reqs) {
      ForEachTaskEventWindow(q, [&](const model::RequestEvent& e, uint64_t from) {
        EXPECT_LE(e.cpu_ns, g.OnCpu(e.tid, from, e.ts_ns))
            << "seed " << seed << " request " << q.id << " event " << std::string(e.symbol) << " tid " << e.tid
            << " at " << e.ts_ns;
      });
    }
  }
}

// A request is incomplete exactly when a located loss touched a CPU it ran
// on within its span; the others are whole, and with the trace's own
// records of their threads intact they are charged exactly.
TEST(LossProperty, RequestsTouchedByALossAreIncomplete) {
  const schema::Schema sch = MustParse(kSchema);
  uint64_t complete = 0, incomplete = 0;
  for (uint32_t seed = 1; seed <= 20; seed++) {
    GeneratedTrace g;
    Result r = RunLocated(sch, seed, 0.02, &g);
    for (const model::Request& q : r.reqs) {
      bool touched = false;
      for (const model::RequestEvent& e : q.events)
        for (const trace::LossInterval& l : g.losses)
          touched = touched || (l.cpu == e.cpu && l.from_ns <= q.end_ns && l.to_ns >= q.start_ns);
      EXPECT_EQ(q.incomplete, touched) << "seed " << seed << " request " << q.id;
      EXPECT_EQ(q.incomplete, !q.incomplete_reason.empty());
      (q.incomplete ? incomplete : complete)++;
    }
    EXPECT_EQ(r.stats.requests_incomplete, static_cast<uint64_t>(std::count_if(
                                               r.reqs.begin(), r.reqs.end(),
                                               [](const model::Request& q) { return q.incomplete; })));
  }
  EXPECT_GT(complete, 100u);
  EXPECT_GT(incomplete, 10u);
}

// A trace that counted losses but did not locate them (recorded before
// loss intervals) says so: no request can be marked.
TEST(LossProperty, UnlocatedLossesAreAWarning) {
  LossyTraceOptions o;
  o.drop = 0.1;
  GeneratedTrace g = GenerateLossyTrace(o);
  g.stream.meta().losses.lost = {{g.dropped}};
  Result r = RunRecords(MustParse(kSchema), g.stream, g.records, JoinOptions());
  ASSERT_FALSE(r.reqs.empty());
  for (const model::Request& q : r.reqs) EXPECT_FALSE(q.incomplete);
  ASSERT_FALSE(r.stats.warnings.empty());
  EXPECT_NE(r.stats.warnings.back().find("not when they were lost"), std::string::npos) << r.stats.warnings.back();
}

}  // namespace
}  // namespace jackdaw::join
