#include "predict/script.h"

#include <algorithm>
#include <deque>
#include <string_view>
#include <unordered_map>

namespace jackdaw::predict {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool IsIoStart(const model::RequestEvent& e) {
  return e.synthetic == model::SyntheticKind::kIoStart || StartsWith(e.symbol.view(), "io_start:");
}
bool IsIoComplete(const model::RequestEvent& e) { return StartsWith(e.symbol.view(), "block_complete:"); }
bool IsBlockedSwitch(const model::RequestEvent& e) { return e.symbol.view() == "switch_out:blocked"; }
bool IsPreemptedSwitch(const model::RequestEvent& e) { return e.symbol.view() == "switch_out:preempted"; }

void Push(ThreadScript& t, StepKind kind, uint32_t arg, uint64_t ns) {
  if (kind == StepKind::kCpu || kind == StepKind::kDelay) {
    if (ns == 0) return;
    // Consecutive bursts are one burst: fewer simulation events, same demand.
    if (!t.steps.empty() && t.steps.back().kind == kind && t.steps.back().arg == arg) {
      t.steps.back().ns += ns;
      return;
    }
  }
  t.steps.push_back({kind, arg, ns});
}

struct Io {
  uint32_t start_event = 0;
  uint64_t complete_ns = 0;
  uint64_t service_ns = 0;
  uint32_t id = 0;
};

}  // namespace

RequestScript BuildScript(const model::Request& r) {
  RequestScript s;
  s.recorded_latency_ns = r.latency_ns();
  s.recorded_runq_ns = r.totals.runq_wait_ns;
  const auto& ev = r.events;
  const size_t n = ev.size();

  // Threads in order of first task event.
  std::unordered_map<uint32_t, uint32_t> thread_of;
  for (const auto& e : ev)
    if (e.tid != 0 && !thread_of.count(e.tid)) thread_of.emplace(e.tid, static_cast<uint32_t>(thread_of.size()));
  s.threads.resize(thread_of.size());
  if (s.threads.empty()) return s;

  // Block I/Os: starts matched to completions first in, first out.
  std::vector<Io> ios;
  std::vector<int32_t> io_at_event(n, -1);
  {
    std::deque<uint32_t> open;
    for (uint32_t i = 0; i < n; ++i) {
      if (ev[i].tid != 0 && IsIoStart(ev[i])) {
        open.push_back(static_cast<uint32_t>(ios.size()));
        ios.push_back({i, 0, 0, 0});
      } else if (IsIoComplete(ev[i]) && !open.empty()) {
        Io& io = ios[open.front()];
        open.pop_front();
        io.complete_ns = ev[i].ts_ns;
        io.service_ns = ev[i].ts_ns - ev[io.start_event].ts_ns;
      }
    }
    // An I/O whose completion is outside the request has no service time
    // to replay: left out.
    uint32_t next = 0;
    for (size_t k = 0; k < ios.size(); ++k)
      if (ios[k].complete_ns) {
        ios[k].id = next++;
        io_at_event[ios[k].start_event] = static_cast<int32_t>(k);
      }
    s.ios = next;
  }

  // Edges between two task threads, forward in event order.
  std::vector<std::vector<uint32_t>> out_edges(n), in_edges(n);
  for (const model::CausalEdge& e : r.edges) {
    if (e.from >= n || e.to >= n || e.from >= e.to) continue;
    if (ev[e.from].tid == 0 || ev[e.to].tid == 0 || ev[e.from].tid == ev[e.to].tid) continue;
    out_edges[e.from].push_back(s.edges);
    in_edges[e.to].push_back(s.edges);
    ++s.edges;
  }

  // Run-queue wait after wake-ups: the recorded total less what followed
  // preemptions, shared equally among the wake-ups.
  std::vector<int64_t> prev_on_thread(n, -1);
  uint64_t preempted_off = 0, wakeups = 0;
  {
    std::unordered_map<uint32_t, uint32_t> last;
    for (uint32_t i = 0; i < n; ++i) {
      if (ev[i].tid == 0) continue;
      auto it = last.find(ev[i].tid);
      if (it != last.end()) {
        const auto& p = ev[it->second];
        prev_on_thread[i] = it->second;
        const uint64_t gap = ev[i].ts_ns - p.ts_ns;
        const uint64_t off = gap > ev[i].cpu_ns ? gap - ev[i].cpu_ns : 0;
        if (IsPreemptedSwitch(p)) preempted_off += off;
        if (IsBlockedSwitch(p)) ++wakeups;
      }
      last[ev[i].tid] = i;
    }
  }
  // Wake-ups the simulation replays with a wake-up latency: every end of a
  // blocked wait, and every thread woken into the request by another.
  s.recorded_wakeups = static_cast<uint32_t>(wakeups);
  for (const model::CausalEdge& e : r.edges) {
    if (e.from >= n || e.to >= n || e.from >= e.to || ev[e.from].tid == 0 || ev[e.to].tid == 0 ||
        ev[e.from].tid == ev[e.to].tid)
      continue;
    const int64_t p = prev_on_thread[e.to];
    if (p >= 0 && !IsBlockedSwitch(ev[p])) continue;  // the wakee was running: no wake-up
    if (p < 0) ++s.recorded_wakeups;
    const uint64_t gap = ev[e.to].ts_ns - ev[e.from].ts_ns;
    s.wake_gaps_ns.push_back(static_cast<uint32_t>(std::min<uint64_t>(gap, UINT32_MAX)));
  }
  const uint64_t runq_after_wakeup =
      wakeups && r.totals.runq_wait_ns > preempted_off ? (r.totals.runq_wait_ns - preempted_off) / wakeups : 0;

  uint64_t irq_cpu = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const auto& e = ev[i];
    if (e.tid == 0) {
      irq_cpu += e.cpu_ns;
      continue;
    }
    ThreadScript& t = s.threads[thread_of.at(e.tid)];
    if (prev_on_thread[i] < 0 && in_edges[i].empty() && e.ts_ns > r.start_ns) {
      // The thread's start, as late after the request's first event as
      // recorded (including the wake-up that started it).
      const uint64_t offset = e.ts_ns - r.start_ns;
      t.steps.push_back({StepKind::kDelay, 1, offset});
      s.delay_ns += offset;
    }
    // What the thread waited for before this event.
    for (uint32_t edge : in_edges[i]) Push(t, StepKind::kWait, edge, 0);
    if (prev_on_thread[i] >= 0 && in_edges[i].empty()) {
      const auto& p = ev[prev_on_thread[i]];
      if (IsBlockedSwitch(p)) {
        bool disk = false;
        for (const Io& io : ios)
          if (io.complete_ns && io.complete_ns > p.ts_ns && io.complete_ns <= e.ts_ns &&
              ev[io.start_event].tid == e.tid) {
            Push(t, StepKind::kDiskWait, io.id, 0);
            disk = true;
          }
        if (!disk) {
          const uint64_t gap = e.ts_ns - p.ts_ns;
          const uint64_t off = gap > e.cpu_ns ? gap - e.cpu_ns : 0;
          const uint64_t delay = off > runq_after_wakeup ? off - runq_after_wakeup : 0;
          Push(t, StepKind::kDelay, 0, delay);
          s.delay_ns += delay;
        }
      }
    }
    const uint64_t cpu = e.cpu_ns + irq_cpu;
    irq_cpu = 0;
    Push(t, StepKind::kCpu, 0, cpu);
    s.cpu_ns += cpu;
    if (io_at_event[i] >= 0) {
      const Io& io = ios[io_at_event[i]];
      Push(t, StepKind::kDiskSubmit, io.id, io.service_ns);
      s.disk_ns += io.service_ns;
    }
    for (uint32_t edge : out_edges[i]) Push(t, StepKind::kSignal, edge, 0);
  }
  if (irq_cpu) {
    Push(s.threads[0], StepKind::kCpu, 0, irq_cpu);
    s.cpu_ns += irq_cpu;
  }
  return s;
}

}  // namespace jackdaw::predict
