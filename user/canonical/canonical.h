// Canonical form of a request (Magpie OSDI'04 §4, §4.2).
//
// A parsed request records how it was *serviced*: preempted, delayed on run
// queues, interleaved with other requests, on whichever pool threads happened
// to be free. For modelling we want what it *demanded*. Canonicalize() keeps
// only the causal structure and the resource demands. Real kernel traces
// vary in incidental ways (how many packets an exchange took, whether a read
// or a futex had to sleep, whether a packet arrived before or after the
// request's first event), so "scheduling artefact" is read broadly: whatever
// timing alone decides goes, and identical behaviour gives identical forms.
//
//  1. Scheduling artefacts are elided. Real (non-synthetic) events whose
//     symbol starts with one of CanonicalOptions::scheduling_symbol_prefixes
//     (scheduler records, every context switch of the join, blocked or
//     preempted, and futex calls, by default) and that are not endpoints of
//     a causal edge are dropped; their resources are carried to the next
//     kept event of the same thread ("each thread's resource demands
//     concatenated between sync points"). Blocking that matters is a causal
//     edge; blocking without one waited for something outside the request
//     and happens or not by timing (CanonicalOptions explains). Demand is
//     never lost: a thread whose tail is only dropped events gives it to its
//     last kept event, and a thread with no kept event keeps its last event.
//     The join puts a Resume at its target's instant and charges the CPU
//     before that instant to the target: it moves to the Resume.
//     Edges the join derived from kernel wake-ups (model::EdgeKind::kWakeup,
//     the only causality a black-box schema sees) exist only when their
//     target slept, so the same behaviour shows them or not by timing. A
//     wake-up hand-off to a thread entering the request loses its Signal
//     and Resume (the edge joins the kept events around them); a thread
//     that entered so and ended with no edge back while its waker went on is
//     given the join its waker would have shown had it waited; a thread that
//     entered so and did nothing of its own (a wake-up that found the work
//     taken) adds no structure (CanonicalOptions explains each).
//  2. Repeats merge (CanonicalOptions::merge_repeats): consecutive kept
//     events with the same symbol on one thread become their first event,
//     carrying the run's demand and edges (two ACKs, or a SYNC's Signal next
//     to the kernel wake-up's Signal for the same hand-off, are one thing
//     happening). Interrupt-context events (tid kInterruptTid) that are not
//     edge endpoints become one root event, kInterruptSymbol, with their
//     summed demand (aggregate_interrupt_events).
//  3. The kept events form a DAG: program order on each thread plus the
//     request's causal edges (Signal→Resume, waker→wakee). Edges must point
//     forward in time (from < to as indices into the timestamp-ordered
//     events); others cannot be causal, are ignored and counted in stats.
//     Duplicates and edges within one thread (implied by program order) are
//     dropped and counted too, as are edges made one by merged repeats.
//  4. The DAG is scheduled as on a machine with unlimited CPUs. The CPU
//     charged to an event is what its thread used since its previous event,
//     so on a thread already in the request it runs from that event's
//     completion, and the event happens once that work and every edge
//     source are done; a thread's first event has no work of the request
//     before it, so its work starts when its sources are done:
//        ready(e) = done(thread predecessor)        if e has one
//                 = max(done(edge sources))         otherwise (0 if none)
//        done(e)  = max(ready(e) + cpu_ns(e), max(done(edge sources)))
//     Disk and network demands are carried as amounts; they take no time in
//     this schedule because the request contract carries no per-event device
//     service times. The canonical latency is the critical path: max done(e).
//  5. Magpie's binary tree is overlaid on the DAG: an event that is the
//     target of a causal edge hangs under the edge's source (a fork: the
//     source thread continues, the destination runs in parallel), and the
//     thread's previous event becomes a leaf (the thread blocked there).
//     Every other event hangs under its thread predecessor. Where an event
//     has several incoming edges the one that released it last (latest
//     done()) is its tree parent.
//  6. The tree is flattened depth-first. Children of a node are visited
//     continuation first, then forks; forks among themselves are ordered by
//     the symbol sequence of their subtree, then size, then total demand —
//     by structure, never by thread id or timestamp. Roots in the order
//     they began (the request's own beginning first), then the interrupt
//     aggregate. Several roots mean causality that was not observed (a pool
//     thread picked up work without being woken); a cause precedes its
//     effect, so this is the order the missing edges would have given, and
//     such a request serializes like one whose hand-offs were seen.
//     Canonical thread numbers are assigned in order of first appearance in
//     this walk, so they are independent of tids.
//
// Invariants of the result: events are in serialization order; parent <
// child index; every kept event appears exactly once, merged repeats inside
// the event they joined; total demand equals the request's total event
// demand.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "request/request.h"

namespace jackdaw::canonical {

// Resources demanded, in the units of model::RequestEvent.
struct Demand {
  uint64_t cpu_ns = 0;
  uint64_t disk_bytes = 0;
  uint64_t net_bytes = 0;
  // Of disk_bytes, those block writes carried (CanonicalOptions::
  // block_write_symbol_prefixes): demand the model keeps, but batched by
  // timing, so the clustering distance leaves it out (cluster/distance.h).
  uint64_t disk_write_bytes = 0;

  Demand& operator+=(const Demand& o) {
    cpu_ns += o.cpu_ns;
    disk_bytes += o.disk_bytes;
    net_bytes += o.net_bytes;
    disk_write_bytes += o.disk_write_bytes;
    return *this;
  }
  bool IsZero() const { return cpu_ns == 0 && disk_bytes == 0 && net_bytes == 0; }
  bool operator==(const Demand&) const = default;
};

// How an event hangs in the overlaid binary tree.
enum class TreeRole : uint8_t {
  kRoot,      // no parent: a thread's first event with no incoming edge
  kContinue,  // next event of the parent's thread
  kFork,      // destination of a causal edge from the parent
};

struct CanonicalEvent {
  uint32_t source_index = 0;  // into model::Request::events (an inferred join event: the
                              // event it sits next to)
  uint32_t thread = 0;        // canonical thread number, structural
  model::SyntheticKind synthetic = model::SyntheticKind::kNone;
  std::string symbol;
  Demand demand;  // after folding in dropped events and merged repeats
  uint32_t repeats = 1;  // source events this one stands for (a merged run)
  // Canonical schedule: the work charged to this event runs in
  // [ready_ns, done_ns), relative to the request's canonical start.
  uint64_t ready_ns = 0;
  uint64_t done_ns = 0;
  int32_t parent = -1;  // index into CanonicalRequest::events
  TreeRole role = TreeRole::kRoot;
  bool leaf = false;      // no children (thread blocked or ended)
  bool critical = false;  // on the critical path
};

struct CanonicalStats {
  uint32_t dropped_scheduling_events = 0;
  uint32_t ignored_backward_edges = 0;  // from >= to, or out of range
  uint32_t duplicate_edges = 0;         // or within one thread
  uint32_t merged_repeats = 0;          // events folded into the previous one of a run
  uint32_t merged_edges = 0;            // edges made redundant by merged runs
  uint32_t elided_wakeup_forks = 0;     // CanonicalOptions::elide_wakeup_forks
  uint32_t inferred_joins = 0;          // CanonicalOptions::infer_unobserved_joins
  uint32_t idle_wakeups = 0;            // CanonicalOptions::idle_wakeup_cpu_ns
};

struct CanonicalRequest {
  uint64_t request_id = 0;
  std::vector<CanonicalEvent> events;  // serialization (depth-first) order
  uint32_t num_threads = 0;
  uint64_t latency_ns = 0;  // critical path of the schedule
  Demand total;
  // The request's message exchange (model::Request::has_message): payload
  // bytes of its inbound and outbound message as the server read and wrote
  // them, 0 when the schema has no `messages`. What the client asked and
  // was answered, measured at the interface: the clustering distance
  // compares them by ratio (cluster/distance.h).
  uint64_t msg_in_bytes = 0, msg_out_bytes = 0;
  CanonicalStats stats;
};

// The tid the join gives events in interrupt context (never a real thread
// of a request: 0 is the idle task).
inline constexpr uint32_t kInterruptTid = 0;
// Symbol of the event standing for a request's interrupt-context work.
inline constexpr const char* kInterruptSymbol = "interrupt";

struct CanonicalOptions {
  // Real events with these symbol prefixes are scheduling artefacts unless
  // they are endpoints of a causal edge: raw scheduler records and all of
  // the join's context-switch events. Preemption and run-queue waits are
  // scheduling; so is blocking: a wait that matters to the request's
  // structure is a causal edge (the thread resumes at the target of an edge
  // from the thread that released it, and its previous event becomes a leaf
  // of the tree), while a block with no such edge waited for something
  // outside the request (a device, the peer, a lock held by another
  // request) and happens or not depending on timing (was the data already
  // there?). The demand it stood for (disk or network bytes) is carried by
  // the I/O events themselves.
  // Futex calls are scheduling too: a futex is the kernel half of a
  // user-space lock or condition variable, entered only when the user-space
  // fast path fails (a thread must sleep, or wake a sleeper), so whether it
  // appears at all is timing. The synchronization it carries, when observed,
  // is the causal edge the join derived from the wake-up, and that stays.
  std::vector<std::string> scheduling_symbol_prefixes = {
      "sched_switch", "sched_wakeup",     "sched_migrate",   "switch_in",
      "switch_out",   "sys_enter:futex", "sys_exit:futex"};
  // Durability work is batched, so who does it and how much it writes is
  // timing too. A sync (fsync, fdatasync, sync_file_range, syncfs, msync)
  // writes back whatever the file holds dirty at that moment, and block
  // writes carry what the page cache or the application gathered: with
  // group commit (databases, journaling file systems, log-structured stores)
  // the first thread to flush writes the log of every request waiting for
  // it, and the others find theirs already durable and never sync (on a
  // database under 4 clients, a fifth of one-row INSERTs did no I/O and
  // others flushed up to 180 KB of other requests' log). Magpie saw the
  // same on TPC-C (§7.2): log writes and cache misses, not the transaction,
  // decided the clusters. With these, events with these symbol prefixes
  // (real or synthetic: io_start is the join's issue event of a block
  // request) are dropped like scheduling, their CPU moved on, and the bytes
  // of block writes (block_write_symbol_prefixes) are kept in disk_bytes
  // and also counted in Demand::disk_write_bytes, which the distance leaves
  // out. The data a request brings to be written is measured where it
  // arrives, in its inbound message; block reads (cache misses of its own)
  // still count.
  std::vector<std::string> durability_symbol_prefixes = {
      "sys_enter:fsync",  "sys_exit:fsync",  "sys_enter:fdatasync", "sys_exit:fdatasync",
      "sys_enter:sync_file_range", "sys_exit:sync_file_range", "sys_enter:syncfs", "sys_exit:syncfs",
      "sys_enter:msync",  "sys_exit:msync",  "io_start:write",      "io_start:flush"};
  std::vector<std::string> block_write_symbol_prefixes = {"block_complete:write", "block_complete:flush",
                                                          "io_start:write", "io_start:flush"};
  // Merge a run of consecutive kept events with the same symbol on one
  // thread into its first event, summing their demand and taking their
  // edges (so a doubled Signal/Resume pair, one from the schema's SYNC and
  // one from the kernel's wake-up, becomes one edge), where the order stays
  // topological (every edge into the later event comes from before the
  // first). How many packets an exchange took, or how many times one call
  // repeated back to back, is transport and timing, not behaviour; the
  // bytes and CPU are kept.
  bool merge_repeats = true;
  // Events in interrupt context (tid kInterruptTid: the join gives packet
  // and block-completion records that interrupted a task, or the idle task,
  // tid 0) are not a thread of the request: they are the kernel's work on
  // its packets and I/O, and their number, kinds and order follow packet
  // and completion timing (coalescing, delayed ACKs, whether a packet came
  // before or after the request's first event, which CPU took the
  // interrupt). With this set, those that are not causal-edge endpoints
  // become one root event, kInterruptSymbol, carrying their summed demand:
  // what the request cost in interrupt context, not how it was delivered.
  // Off, they form a pseudo-thread in timestamp order.
  bool aggregate_interrupt_events = true;
  // Edges the join derived from kernel wake-ups (model::EdgeKind::kWakeup)
  // exist only when the target thread was asleep, so in black-box mode the
  // same request shows them or not by timing. Two rules make the form the
  // same either way; edges from a schema's SYNC (always emitted by the
  // program) are left alone.
  //
  // A hand-off to a thread entering the request (a wake-up edge into the
  // first event its target has in the request) is seen only if that pool
  // thread was idle; a busy one takes the work from a queue later, with no
  // edge, and starts a root of its own. With this set the hand-off's Signal
  // and Resume are dropped like other scheduling events (their CPU carried
  // to the next kept event of their threads), and the edge, still needed for
  // the tree and the schedule, joins the kept events around them. Seen or
  // not, the request then has the same events; with roots ordered by when
  // they began it also has the same serialization. Where in the source's
  // work the hand-off came is lost: it is observable only when the target
  // slept (when it was busy, only when it took the work is).
  bool elide_wakeup_forks = true;
  // A join is seen only if the waiting thread had to sleep: a worker that
  // handed half its work to a helper and finished its own half after the
  // helper finds the result ready, and the kernel shows no wake-up. With
  // this set, a thread that entered the request through a wake-up from
  // thread P and ended its part with no edge back to P while P went on is
  // taken to have been waited for where P next did something of its own
  // (its first non-scheduling event after the thread's last event): a
  // Signal after the thread's last event, a Resume before that event of P,
  // and a wake-up edge between them — what the trace shows when P waited.
  // The CPU P used before the join then sits at the join as it does when P
  // waited. (A helper that is never waited for and happens to finish before
  // its requester's next event gets a join it did not have; one that
  // finishes after does not.)
  bool infer_unobserved_joins = true;
  // A pool thread woken by a hand-off can find the work already taken (by a
  // thread that was awake: a lost race, or one wake-up too many) and go
  // back to sleep. A thread that entered the request through an elided
  // wake-up hand-off, has no event of its own there (only scheduling
  // records) and used less CPU than this (and no disk or network) did
  // nothing of the request's: it adds no structure, no join is inferred for
  // it, and its demand goes to the event the hand-off came from. Below about
  // a scheduler time slice per thread, CPU is dominated by wake-up and cache
  // costs (the same floor as cluster::kMinCpuScaleNs). 0 turns it off.
  uint64_t idle_wakeup_cpu_ns = 1'000'000;
};

// Never fails: malformed structure (backward edges) is counted in stats.
CanonicalRequest Canonicalize(const model::Request& request, const CanonicalOptions& options = {});

// Canonicalize() with options fixed for its lifetime, for a stream of
// requests: the per-thread memo of which symbols the option lists name is
// bound to this instance's id (unique per instance, and its options never
// change), so a request skips comparing the lists' strings, which plain
// Canonicalize() does on every call. Same results as Canonicalize().
class Canonicalizer {
 public:
  explicit Canonicalizer(CanonicalOptions options);
  CanonicalRequest operator()(const model::Request& request) const;
  const CanonicalOptions& options() const { return options_; }

 private:
  CanonicalOptions options_;
  uint64_t id_;
};

}  // namespace jackdaw::canonical
