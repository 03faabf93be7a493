#include "join/interval_join.h"

#include <algorithm>
#include <utility>

namespace jackdaw::join {

IntervalJoin::IntervalJoin(std::vector<std::vector<uint16_t>> cascade, Stats& stats, bool emit_timed_out,
                           EmitFn emit)
    : cascade_(std::move(cascade)), stats_(stats), emit_timed_out_(emit_timed_out), emit_(std::move(emit)) {}

uint32_t IntervalJoin::Bind(const Bound* bs, size_t n, uint64_t ts, Closed* closed) {
  size_t at_step1[kMaxBindings];  // live_ index found in step 1, valid while live_ is unchanged
  closed->n = 0;

  // 1. Union the sets of every open interval this event joins. Two sets
  // that both hold a seed are two requests (a seed occurs once per
  // request): evidence that would join them is wrong somewhere (a pool
  // thread re-tasked without an event saying so), and merging would corrupt
  // both. The event joins the request its first such binding reaches; the
  // other request's interval is not joined (a STOP still closes it).
  uint32_t target = kNone;
  for (size_t i = 0; i < n; i++) {
    at_step1[i] = live_.FindIndex(bs[i].key);
    if (bs[i].type == schema::Binding::kStart || at_step1[i] == live_.kNpos) continue;
    const uint32_t* s = &live_.ValueAt(at_step1[i]);
    if (target == kNone) {
      target = *s;
    } else if (*s != target && sets_[target].seed && sets_[*s].seed) {
      stats_.seed_conflicts++;
    } else {
      target = Union(target, *s);
    }
  }
  if (target == kNone) target = NewSet(ts);
  const uint64_t live_version = live_.version();

  // 2. Update intervals in binding order. Closing an interval of a cascade
  // trigger attribute is noted and applied after all bindings.
  struct Closed1 {
    uint32_t set;
    uint32_t attr;
  };
  Closed1 cascades[kMaxBindings];
  size_t ncascades = 0;
  for (size_t i = 0; i < n; i++) {
    const IKey& k = bs[i].key;
    // Step 1's lookup, unless an earlier binding inserted or erased since.
    const size_t at = live_.version() == live_version ? at_step1[i] : live_.FindIndex(k);
    switch (bs[i].type) {
      case schema::Binding::kStart:
      case schema::Binding::kBasic:
        // An open interval held by another set moves to this one, in the
        // same slot. START: the old interval closes and the new one opens.
        // BASIC: it belongs to the other request of a seed conflict (step
        // 1); this event says the attribute has moved on to the request it
        // joined. (A BASIC binding of the target's own interval, and a
        // START it already holds, change nothing.)
        if (at == live_.kNpos) {
          OpenInterval(k, target);
        } else if (uint32_t& slot = live_.ValueAt(at); slot != target) {
          const uint32_t old = slot;
          sets_[old].open--;
          if (sets_[old].open == 0) closed->sets[closed->n++] = old;
          else if (!CascadeTargets(k.attr).empty()) cascades[ncascades++] = Closed1{old, k.attr};
          slot = target;
          sets_[target].open++;
          sets_[target].open_keys.push_back(k);
        }
        break;
      case schema::Binding::kStop:
        if (at != live_.kNpos) {
          // == target, unless a seed conflict kept it apart in step 1
          const uint32_t old = live_.ValueAt(at);
          live_.EraseAt(at);
          sets_[old].open--;
          if (old != target && sets_[old].open == 0) {
            closed->sets[closed->n++] = old;
          } else if (sets_[old].open && !CascadeTargets(k.attr).empty()) {
            cascades[ncascades++] = Closed1{old, k.attr};
          }
        }
        break;
    }
  }
  for (size_t i = 0; i < ncascades; i++) {
    const uint32_t set = cascades[i].set;
    if (Cascade(set, cascades[i].attr) && set != target) closed->sets[closed->n++] = set;
  }
  return target;
}

void IntervalJoin::FinishClosed(const Closed& closed, uint32_t target, size_t max_events,
                                size_t max_unseeded_events) {
  for (size_t i = 0; i < closed.n; i++)
    if (sets_[closed.sets[i]].live && sets_[closed.sets[i]].open == 0) FinishSet(closed.sets[i], false);
  const Set& t = sets_[target];
  if (t.open == 0) {
    FinishSet(target, false);
  } else if (t.events.size() > (t.seed ? max_events : std::min(max_events, max_unseeded_events))) {
    FinishSet(target, true);
  }
}

void IntervalJoin::ExpireSets(uint64_t idle_before, uint64_t begun_before) {
  for (uint32_t i = 0; i < sets_.size(); i++)
    if (sets_[i].live && (sets_[i].last_ts < idle_before || sets_[i].first_ts < begun_before)) FinishSet(i, true);
}

void IntervalJoin::FinishAll(const std::function<void(Set&)>& before) {
  for (uint32_t i = 0; i < sets_.size(); i++) {
    if (!sets_[i].live) continue;
    before(sets_[i]);
    FinishSet(i, true);
  }
}

uint32_t IntervalJoin::NewSet(uint64_t ts) {
  uint32_t slot;
  if (!free_sets_.empty()) {
    slot = free_sets_.back();
    free_sets_.pop_back();
  } else {
    slot = static_cast<uint32_t>(sets_.size());
    sets_.emplace_back();
  }
  Set& s = sets_[slot];
  s.live = true;
  s.open = 0;
  s.seed = false;
  s.seed_tgid = 0;
  s.first_ts = s.last_ts = ts;
  s.has_msg = s.pipelined = false;
  s.msg_index = 0;
  s.msg_conn = s.msg_in = s.msg_out = s.conn_sk = 0;
  s.settled = OffCpuSums{};
  s.settle_at = 0;
  s.life_sk = s.life_conn = 0;
  // A reused slot's earlier set must leave nothing: a stale seed_msg made
  // the next set's own exchange look like a peer's, and its connection
  // share started from the earlier set's.
  s.seed_msg = 0;
  s.connection_cpu_ns = 0;
  live_sets_++;
  stats_.sets_created++;
  stats_.peak_live_sets = std::max<uint64_t>(stats_.peak_live_sets, live_sets_);
  return slot;
}

uint32_t IntervalJoin::Union(uint32_t a, uint32_t b) {
  if (a == b) return a;
  stats_.sets_merged++;
  if (sets_[a].events.size() + sets_[a].open_keys.size() < sets_[b].events.size() + sets_[b].open_keys.size())
    std::swap(a, b);
  Set& big = sets_[a];
  Set& small = sets_[b];
  const auto off_base = static_cast<uint32_t>(big.offs.size());
  for (Ev e : small.events) {
    if (e.off) e.off += off_base;
    big.events.push_back(e);
  }
  big.offs.insert(big.offs.end(), small.offs.begin(), small.offs.end());
  big.settled.Add(small.settled);
  big.edges.insert(big.edges.end(), small.edges.begin(), small.edges.end());
  for (const SetSock& ss : small.socks) {
    bool dup = false;
    for (const SetSock& b : big.socks) dup |= b.sk == ss.sk && b.conn.gen == ss.conn.gen;
    if (!dup) big.socks.push_back(ss);
  }
  for (const IKey& k : small.open_keys) {
    uint32_t* slot = live_.Find(k);
    if (slot && *slot == b) {
      *slot = a;
      big.open_keys.push_back(k);
    }
  }
  big.open += small.open;
  if (small.seed && !big.seed) {
    big.seed_tgid = small.seed_tgid;
    big.seed_msg = small.seed_msg;
  }
  big.seed |= small.seed;
  if (small.has_msg && !big.has_msg) {
    big.has_msg = true;
    big.pipelined = small.pipelined;
    big.msg_index = small.msg_index;
    big.msg_conn = small.msg_conn;
    big.msg_in = small.msg_in;
    big.msg_out = small.msg_out;
  }
  if (!small.calls.empty()) {
    big.calls.insert(big.calls.end(), std::make_move_iterator(small.calls.begin()),
                     std::make_move_iterator(small.calls.end()));
  }
  big.open_calls.insert(big.open_calls.end(), small.open_calls.begin(), small.open_calls.end());
  big.connection_cpu_ns += small.connection_cpu_ns;
  if (!big.life_sk) {
    big.life_sk = small.life_sk;
    big.life_conn = small.life_conn;
  }
  big.first_ts = std::min(big.first_ts, small.first_ts);
  big.last_ts = std::max(big.last_ts, small.last_ts);
  small.open = 0;
  FreeSet(b);
  return a;
}

void IntervalJoin::OpenInterval(const IKey& k, uint32_t set) {
  live_.Set(k, set);
  Set& s = sets_[set];
  s.open++;
  s.open_keys.push_back(k);
  // Lazily drop keys of intervals that closed or moved, so a long-lived set
  // that opens and closes many intervals stays small.
  if (s.open_keys.size() > kPruneMinKeys && s.open_keys.size() > kPruneRatio * size_t{s.open}) {
    size_t w = 0;
    for (size_t r = 0; r < s.open_keys.size(); r++) {
      const uint32_t* slot = live_.Find(s.open_keys[r]);
      if (!slot || *slot != set) continue;
      bool dup = false;
      for (size_t i = 0; i < w && !dup; i++) dup = s.open_keys[i] == s.open_keys[r];
      if (!dup) s.open_keys[w++] = s.open_keys[r];
    }
    s.open_keys.resize(w);
  }
  stats_.peak_live_intervals = std::max<uint64_t>(stats_.peak_live_intervals, live_.size());
}

bool IntervalJoin::Cascade(uint32_t set, uint32_t attr) {
  Set& s = sets_[set];
  if (!s.live || s.open == 0) return false;
  // Only the set's last interval of the trigger closes the targets: a
  // request that also used a short-lived connection of its own (a backend
  // query) keeps its threads until its own connection ends.
  for (const IKey& k : s.open_keys) {
    if (k.attr != attr) continue;
    const uint32_t* cur = live_.Find(k);
    if (cur && *cur == set) return false;
  }
  const std::vector<uint16_t>& targets = CascadeTargets(attr);
  for (const IKey& k : s.open_keys) {
    if (std::find(targets.begin(), targets.end(), k.attr) == targets.end()) continue;
    const size_t at = live_.FindIndex(k);
    if (at == live_.kNpos || live_.ValueAt(at) != set) continue;
    live_.EraseAt(at);
    s.open--;
    stats_.intervals_cascaded++;
  }
  return s.open == 0;
}

void IntervalJoin::FreeSet(uint32_t slot) {
  Set& s = sets_[slot];
  auto reset = [](auto& v) {
    if (v.capacity() > kMaxKeptCapacity) {
      std::remove_reference_t<decltype(v)>().swap(v);
    } else {
      v.clear();
    }
  };
  reset(s.events);
  reset(s.open_keys);
  reset(s.offs);
  reset(s.edges);
  reset(s.socks);
  reset(s.calls);
  reset(s.open_calls);
  s.live = false;
  s.open = 0;
  free_sets_.push_back(slot);
  live_sets_--;
}

void IntervalJoin::FinishSet(uint32_t slot, bool timed_out) {
  Set& s = sets_[slot];
  if (s.open > 0) {
    for (const IKey& k : s.open_keys) {
      const uint32_t* cur = live_.Find(k);
      if (cur && *cur == slot) live_.Erase(k);
    }
    s.open = 0;
  }
  if (timed_out) stats_.sets_timed_out++;
  if (s.seed && (!timed_out || emit_timed_out_)) {
    emit_(s, timed_out);
  } else {
    stats_.sets_discarded++;
    stats_.events_discarded += s.events.size();
    if (on_discard_) on_discard_(s);
  }
  FreeSet(slot);
}

void IntervalJoin::CloseInterval(const IKey& k) {
  const size_t at = live_.FindIndex(k);
  if (at == live_.kNpos) return;
  const uint32_t set = live_.ValueAt(at);
  live_.EraseAt(at);
  Set& s = sets_[set];
  s.open--;
  if (s.open && !CascadeTargets(k.attr).empty()) Cascade(set, k.attr);
  if (s.live && s.open == 0) FinishSet(set, false);
}

}  // namespace jackdaw::join
