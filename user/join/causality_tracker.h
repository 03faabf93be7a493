// Magpie's SYNC statements (§3.5): a source event leaves (statement,
// attribute value) pending; the next destination event with the same value
// consumes it, and a causal edge candidate from source to destination goes
// into the destination's set (materialised as Signal -> Resume only if both
// ends end up in the emitted request). A destination consumes before a
// source is left, so an event that is both never pairs with itself.
//
// The value comes from the event's own bindings, or else from the last
// value its thread bound for that attribute (an event that carries no
// request id of its own, on a thread that is serving one). Pending sources
// older than the join's timeout expire.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "join/compiled_schema.h"
#include "join/event_set.h"
#include "join/flat_map.h"
#include "join/thread_tracker.h"

namespace jackdaw::join {

class CausalityTracker {
 public:
  // The event a SYNC source leaves pending.
  struct Source {
    uint64_t seq, ts;
    uint32_t tid;
    uint16_t cpu;
  };

  explicit CausalityTracker(const CompiledSchema& cs) : cs_(cs) {}

  // A joined event of thread `t` bound `keys`: remembers the values of SYNC
  // attributes among them as the thread's latest.
  void NoteBindings(Thread* t, std::span<const IKey> keys) const;
  // Definition `def`'s SYNC statements for the event `self` that bound
  // `keys` on thread `t` (may be null): edge candidates into `edges`.
  void Sync(uint16_t def, std::span<const IKey> keys, const Thread* t, const Source& self,
            std::vector<EdgeCand>* edges) {
    if (cs_.InSync(def)) SyncStatements(def, keys, t, self, edges);  // inline: most events are in none
  }
  void ExpireBefore(uint64_t horizon) {
    pending_.EraseIf([&](const IKey&, Source& p) { return p.ts < horizon; });
  }
  size_t pending() const { return pending_.size(); }

 private:
  void SyncStatements(uint16_t def, std::span<const IKey> keys, const Thread* t, const Source& self,
                      std::vector<EdgeCand>* edges);

  const CompiledSchema& cs_;
  FlatMap<IKey, Source, IKeyHash> pending_;  // (value, statement index) -> source
};

}  // namespace jackdaw::join
