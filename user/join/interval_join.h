#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "join/event_set.h"
#include "join/flat_map.h"
#include "join/stats.h"
#include "schema/schema.h"

namespace jackdaw::join {

// The temporal join proper (Magpie §3, Figure 7, with union-find instead of
// lists): valid-intervals per (attribute, value) and the event sets they
// glue together.
//
//  - live_: (attribute, value) -> set slot, one entry per OPEN interval.
//    Closed intervals are simply erased: nothing can join through them
//    again, which is the whole point of temporal joins.
//  - sets_: slab of event sets, the union-find classes. Instead of parent
//    pointers a union moves the smaller set into the larger and re-points
//    the smaller one's open intervals (small-to-large, O(n log n) overall),
//    so every live_ entry always names a root and a finished set's slot can
//    be reused at once. A set's `open` counts the intervals naming it; its
//    open_keys may also hold keys of intervals that closed or moved (pruned
//    lazily).
//
// Per event, Bind() applies the bindings: the sets of every open interval a
// BASIC or STOP binding hits are unioned (a START does not join the interval
// it replaces; two seeded sets are never unioned); with none a new set is
// made. Then in binding order: START closes the open interval and opens one
// in this set; BASIC opens one if none is open; STOP closes the interval it
// joined. A cascade trigger's last interval in a set closes that set's
// intervals of the target attributes. The caller appends the event to the
// returned set, then calls FinishClosed(): a set with no open interval left
// is finished — handed to the emit callback iff it holds a seed, otherwise
// discarded — and its slot freed.
class IntervalJoin {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;
  static constexpr size_t kMaxBindings = 16;

  struct Bound {
    IKey key;
    schema::Binding type;
  };
  // Sets that lost their last open interval while binding one event.
  struct Closed {
    uint32_t sets[3 * kMaxBindings];
    size_t n = 0;
  };
  // Called for a finished set that holds a seed (timed out ones only with
  // emit_timed_out), before its slot is freed.
  using EmitFn = std::function<void(Set&, bool timed_out)>;

  // cascade[attr]: the attributes whose intervals close with the set's last
  // interval of attr (may be shorter than the attribute count).
  IntervalJoin(std::vector<std::vector<uint16_t>> cascade, Stats& stats, bool emit_timed_out, EmitFn emit);

  // Binds `n` (<= kMaxBindings) bindings of one event at `ts`; returns the
  // set the event joins.
  uint32_t Bind(const Bound* bs, size_t n, uint64_t ts, Closed* closed);
  // After the event is in `target`: finishes the closed sets, and `target`
  // if it has no open interval (or, timed out, holds over max_events, or
  // over max_unseeded_events without a seed).
  void FinishClosed(const Closed& closed, uint32_t target, size_t max_events, size_t max_unseeded_events);

  // GC: finishes (timed out) every set idle since before `idle_before` or
  // begun before `begun_before`.
  void ExpireSets(uint64_t idle_before, uint64_t begun_before);
  // End of input: calls before(set) then finishes it (timed out), for
  // every live set.
  void FinishAll(const std::function<void(Set&)>& before);
  // Releases memory of the interval table after many closed.
  void Compact() { live_.MaybeShrink(); }

  Set& set(uint32_t slot) { return sets_[slot]; }
  // The set holding the open interval `k`, or kNone.
  uint32_t SetOf(const IKey& k) const {
    const uint32_t* s = live_.Find(k);
    return s ? *s : kNone;
  }
  size_t live_sets() const { return live_sets_; }
  size_t open_intervals() const { return live_.size(); }

  void FinishSet(uint32_t slot, bool timed_out);
  // Closes the open interval `k` without an event (the message rule ends an
  // exchange when the next one begins): cascades, and finishes its set if
  // that was the set's last open interval. No-op if `k` is not open.
  void CloseInterval(const IKey& k);
  // Called for every finished set that is discarded (no seed), before its
  // slot is freed.
  void set_on_discard(std::function<void(Set&)> f) { on_discard_ = std::move(f); }

 private:
  // open_keys is pruned once it holds more than kPruneMinKeys and more than
  // kPruneRatio times the open count: below that a scan costs less than the
  // lookups pruning takes, and the ratio keeps pruning amortised O(1) per key.
  static constexpr size_t kPruneMinKeys = 32;
  static constexpr size_t kPruneRatio = 4;
  // A freed set keeps its vectors' capacity for reuse (no allocation per
  // request in steady state) unless it exceeds this many elements: a one-off
  // giant request must not pin its memory in a slot forever. Requests hold
  // tens of events; at 4096 a slot that once held a large unseeded set (an
  // idle thread's, open for a timeout) kept up to ~650 KB of event and
  // off-CPU vectors, and analyze's RSS crept up over a long trace as more
  // slots did.
  static constexpr size_t kMaxKeptCapacity = 256;

  const std::vector<uint16_t>& CascadeTargets(uint32_t attr) const {
    return attr < cascade_.size() ? cascade_[attr] : kNoTargets;
  }
  uint32_t NewSet(uint64_t ts);
  uint32_t Union(uint32_t a, uint32_t b);
  void OpenInterval(const IKey& k, uint32_t set);
  // Applies the cascades after `set` lost an interval of `attr`; true if
  // that closed its last open interval.
  bool Cascade(uint32_t set, uint32_t attr);
  void FreeSet(uint32_t slot);

  static inline const std::vector<uint16_t> kNoTargets;
  const std::vector<std::vector<uint16_t>> cascade_;
  Stats& stats_;
  const bool emit_timed_out_;
  EmitFn emit_;
  std::function<void(Set&)> on_discard_;
  FlatMap<IKey, uint32_t, IKeyHash> live_;
  std::vector<Set> sets_;
  std::vector<uint32_t> free_sets_;
  size_t live_sets_ = 0;
};

}  // namespace jackdaw::join
