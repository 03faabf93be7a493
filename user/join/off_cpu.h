// Bounding a long-lived set's off-CPU list (Set::offs) without changing
// what its request reports.
//
// An event's off-CPU period enters its request only as sums (blocked time
// by reason, run-queue wait), each part clipped to the request's start
// (RequestBuilder::Build). The start is the set's earliest event, and a set
// only gains events (unions included), so its start can only move earlier:
// a period that lies wholly at or after the set's earliest event now is
// charged in full whatever the set becomes. Settle() adds such periods to
// the set's running sums (Set::settled) and drops them from the list; what
// stays is what a later union could still clip differently (periods that
// began before the set's first event). The extractor settles a set when
// its list reaches Set::settle_at and then doubles the mark over what is
// left, so the work is amortised O(1) per event and a set that stays open
// for a long time (a thread whose sleeps never close its interval) holds a
// bounded list instead of one per joined event.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "join/event_set.h"

namespace jackdaw::join {

// Whether `o`, clipped to any request start at or before `ref`, charges the
// same as clipped to `ref` (so it can be summed now).
inline bool OffCpuSettled(const OffCpu& o, uint64_t ref) {
  return o.off_from >= ref && o.wake >= ref && (o.early_from == 0 || o.early_from >= ref) &&
         o.reason < kBlockReasons;
}

// Adds `o` clipped to `start` to `sums` exactly as RequestBuilder::Build
// charges it.
inline void AddClippedOffCpu(const OffCpu& o, uint64_t start, OffCpuSums* sums) {
  if (o.early_from && o.early_from >= start) {
    sums->runq += o.early_runq;
    for (int r = 0; r < kBlockReasons; r++) sums->blocked[r] += o.early_blocked[r];
  }
  const uint64_t bfrom = std::max(o.off_from, start);
  if (o.wake > bfrom) sums->blocked[o.reason] += o.wake - bfrom;  // reason < kBlockReasons
  const uint64_t rfrom = std::max(o.wake, start);
  if (o.run > rfrom) sums->runq += o.run - rfrom;
}

// Settles what can be settled in `s` (see above) and sets the next mark.
// Returns the number of periods summed.
inline size_t SettleOffCpu(Set& s, size_t min_mark) {
  uint64_t ref = UINT64_MAX;
  for (const Ev& e : s.events) ref = std::min(ref, e.ts);
  std::vector<OffCpu> kept;
  size_t settled = 0;
  for (Ev& e : s.events) {
    if (!e.off) continue;
    const OffCpu& o = s.offs[e.off - 1];
    if (OffCpuSettled(o, ref)) {
      AddClippedOffCpu(o, ref, &s.settled);
      e.off = 0;
      settled++;
    } else {
      kept.push_back(o);
      e.off = static_cast<uint32_t>(kept.size());
    }
  }
  s.offs.swap(kept);
  s.settle_at = std::max(min_mark, 2 * s.offs.size());
  return settled;
}

}  // namespace jackdaw::join
