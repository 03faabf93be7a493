// The join's last guard against impossible CPU values, applied to a set as
// it becomes a request. A thread's pending run time is charged to its next
// joined event; when a switch record was lost, or the thread's previous
// work belonged to nothing (a connection's syscalls, unmatched records),
// that charge can reach back before the request began, or exceed the time
// the thread had since its previous event in the request. The invariants
// every request keeps:
//  - an event's task CPU <= its thread's time since the later of its
//    previous event in the request and the request's first event, less the
//    off-CPU period the join recorded inside that window;
//  - hence a request's CPU <= the on-CPU time of its threads within its span.
// Interrupt-context events are left alone: their time is an interrupt burst
// bounded by Options::irq_burst_gap_ns, not a thread's run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "join/event_set.h"

namespace jackdaw::join {

struct CpuClamp {
  uint64_t dropped_ns = 0;
  uint32_t events = 0;
};

// Sorts `events` into processing order (as RequestBuilder does), then cuts
// each task event's cpu_ns to its bound; `on_drop(ev, ns)` is called for
// each cut with the amount taken away, so the caller's ledger stays whole.
template <typename OnDrop>
CpuClamp ClampCpuToThreadTime(std::vector<Ev>& events, const std::vector<OffCpu>& offs, OnDrop&& on_drop) {
  CpuClamp out;
  if (events.empty()) return out;
  auto by_seq = [](const Ev& a, const Ev& b) { return a.seq < b.seq; };
  if (!std::is_sorted(events.begin(), events.end(), by_seq)) std::sort(events.begin(), events.end(), by_seq);
  uint64_t start = events.front().ts;
  for (const Ev& e : events) start = std::min(start, e.ts);
  // A request has a handful of threads: a linear list beats a map.
  struct Last {
    uint32_t tid;
    uint64_t ts;
  };
  Last small[8];
  std::vector<Last> more;
  size_t n = 0;
  auto last_of = [&](uint32_t tid) -> uint64_t* {
    for (size_t i = 0; i < n; i++)
      if (small[i].tid == tid) return &small[i].ts;
    for (Last& l : more)
      if (l.tid == tid) return &l.ts;
    return nullptr;
  };
  for (Ev& e : events) {
    if ((e.flags & kEvIrq) || !e.tid) continue;
    uint64_t* last = last_of(e.tid);
    const uint64_t from = last ? std::max(*last, start) : start;
    if (last) {
      *last = std::max(*last, e.ts);
    } else if (n < 8) {
      small[n++] = Last{e.tid, e.ts};
    } else {
      more.push_back(Last{e.tid, e.ts});
    }
    if (!e.cpu_ns) continue;
    uint64_t bound = e.ts > from ? e.ts - from : 0;
    // Pending run time stops accruing at the switch-out and resumes at the
    // switch-in: the off-CPU period inside the window is not run time.
    if (e.off && e.off <= offs.size()) {
      const OffCpu& o = offs[e.off - 1];
      const uint64_t lo = std::max(o.off_from, from), hi = std::min(o.run, e.ts);
      if (hi > lo) bound -= std::min(bound, hi - lo);
    }
    if (e.cpu_ns <= bound) continue;
    const uint64_t excess = e.cpu_ns - bound;
    e.cpu_ns = bound;
    out.dropped_ns += excess;
    out.events++;
    on_drop(e, excess);
  }
  return out;
}

}  // namespace jackdaw::join
