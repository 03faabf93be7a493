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
//
// Which wake-ups join requests (schemas with `messages`): a wakeup is a
// transfer of control (Magpie §3.4: the wakee goes on with the waker's
// work) unless waker and wakee each already serve a request of their own,
// different ones. A thread serves a request while the exchange its last
// socket read or write belonged to is still its connection's current one
// (LANGUAGE.md, "Messages and interactions"): a process- or thread-per-
// connection server's worker between the read of a query and the next
// query. Such a wakeup is contention on a shared resource (a lock released,
// a log flushed by one waiter for all) and hands nothing over: the wakee
// goes on with its own connection's request. It is then not given to the
// schema (no join, no causal edge); the wakee's wait stays its own blocked
// time. A wakeup where either side serves no request (an acceptor handing
// a connection over, a helper taking or returning a task), or both serve
// the same one, is left to the schema.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "join/compiled_schema.h"
#include "join/event_set.h"
#include "join/flat_map.h"
#include "join/message_tracker.h"
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
  void NoteBindings(Thread* t, std::span<const IKey> keys) const {
    if (!cs_.schema().syncs.empty()) NoteSyncBindings(t, keys);  // inline: most schemas have none
  }
  // Definition `def`'s SYNC statements for the event `self` that bound
  // `keys` on thread `t` (may be null): edge candidates into `edges`.
  void Sync(uint16_t def, std::span<const IKey> keys, const Thread* t, const Source& self,
            std::vector<EdgeCand>* edges) {
    if (cs_.InSync(def)) SyncStatements(def, keys, t, self, edges);  // inline: most events are in none
  }
  // The exchange key `t` serves now (see above), 0 if none.
  static uint64_t Serving(const Thread& t, const MessageTracker& msgs) {
    if (!t.serving_msg) return 0;
    return msgs.Current(t.serving_conn).key == t.serving_msg ? t.serving_msg : 0;
  }
  // A wakeup from `waker` to `wakee` is contention, not a handoff.
  static bool IsContention(const Thread& waker, const Thread& wakee, const MessageTracker& msgs) {
    const uint64_t a = Serving(waker, msgs);
    const uint64_t b = a ? Serving(wakee, msgs) : 0;
    return a && b && a != b;
  }
  // The message rule put the thread's socket event in `exchange` of `conn`
  // (0: the connection's own event, e.g. its close): what it serves now.
  static void NoteExchange(Thread* t, uint64_t conn, uint64_t exchange) {
    if (exchange) {
      t->serving_conn = conn;
      t->serving_msg = exchange;
    } else if (t->serving_conn == conn) {
      t->serving_conn = t->serving_msg = 0;
    }
  }

  void ExpireBefore(uint64_t horizon) {
    pending_.EraseIf([&](const IKey&, Source& p) { return p.ts < horizon; });
  }
  size_t pending() const { return pending_.size(); }

 private:
  void NoteSyncBindings(Thread* t, std::span<const IKey> keys) const;
  void SyncStatements(uint16_t def, std::span<const IKey> keys, const Thread* t, const Source& self,
                      std::vector<EdgeCand>* edges);

  const CompiledSchema& cs_;
  FlatMap<IKey, Source, IKeyHash> pending_;  // (value, statement index) -> source
};

}  // namespace jackdaw::join
