// Canonical form of a request (Magpie OSDI'04 §4, §4.2).
//
// A parsed request records how it was *serviced*: preempted, delayed on run
// queues, interleaved with other requests, on whichever pool threads happened
// to be free. For modelling we want what it *demanded*. Canonicalize() keeps
// only the causal structure and the resource demands:
//
//  1. Scheduling artefacts are elided. Real (non-synthetic) events whose
//     symbol starts with one of CanonicalOptions::scheduling_symbol_prefixes
//     (scheduler records and the join's switch_in / switch_out:preempted by
//     default) and that are not
//     endpoints of a causal edge are dropped; their resources are carried to
//     the next kept event of the same thread ("each thread's resource demands
//     concatenated between sync points"). Demand is never lost: a thread
//     whose tail is only dropped events gives it to its last kept event, and
//     a thread with no kept event keeps its last event.
//  2. The kept events form a DAG: program order on each thread plus the
//     request's causal edges (Signal→Resume, waker→wakee). Edges must point
//     forward in time (from < to as indices into the timestamp-ordered
//     events); others cannot be causal, are ignored and counted in stats.
//     Duplicates and edges within one thread (implied by program order) are
//     dropped and counted too.
//  3. The DAG is scheduled as on a machine with unlimited CPUs: an event's
//     work (the CPU its thread consumed since its previous event) starts when
//     all its predecessors are done and runs without interruption:
//        ready(e) = max(done(thread predecessor), done(edge sources))
//        done(e)  = ready(e) + cpu_ns(e)
//     Threads with no incoming edge start at 0. Disk and network demands are
//     carried as amounts; they take no time in this schedule because the
//     request contract carries no per-event device service times. The
//     canonical latency is the critical path: max done(e).
//  4. Magpie's binary tree is overlaid on the DAG: an event that is the
//     target of a causal edge hangs under the edge's source (a fork: the
//     source thread continues, the destination runs in parallel), and the
//     thread's previous event becomes a leaf (the thread blocked there).
//     Every other event hangs under its thread predecessor. Where an event
//     has several incoming edges the one that released it last (latest
//     done()) is its tree parent.
//  5. The tree is flattened depth-first. Children of a node are visited
//     continuation first, then forks; forks among themselves, and several
//     roots, are ordered by the symbol sequence of their subtree, then size,
//     then total demand — by structure, never by thread id or timestamp.
//     Canonical thread numbers are assigned in order of first appearance in
//     this walk, so they too are independent of tids.
//
// Invariants of the result: events are in serialization order; parent <
// child index; every kept event appears exactly once; total demand equals
// the request's total event demand.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/request.h"

namespace jackdaw::canonical {

// Resources demanded, in the units of model::RequestEvent.
struct Demand {
  uint64_t cpu_ns = 0;
  uint64_t disk_bytes = 0;
  uint64_t net_bytes = 0;

  Demand& operator+=(const Demand& o) {
    cpu_ns += o.cpu_ns;
    disk_bytes += o.disk_bytes;
    net_bytes += o.net_bytes;
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
  uint32_t source_index = 0;  // into model::Request::events
  uint32_t thread = 0;        // canonical thread number, structural
  model::SyntheticKind synthetic = model::SyntheticKind::kNone;
  std::string symbol;
  Demand demand;  // after folding in dropped events
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
};

struct CanonicalRequest {
  uint64_t request_id = 0;
  std::vector<CanonicalEvent> events;  // serialization (depth-first) order
  uint32_t num_threads = 0;
  uint64_t latency_ns = 0;  // critical path of the schedule
  Demand total;
  CanonicalStats stats;
};

struct CanonicalOptions {
  // Real events with these symbol prefixes are scheduling artefacts unless
  // they are endpoints of a causal edge: raw scheduler records, and the
  // join's context-switch events except "switch_out:blocked" (a thread
  // blocking is structure: a leaf of the tree). Switch-ins are dropped
  // because the join marks wake-ups that matter with "resume".
  std::vector<std::string> scheduling_symbol_prefixes = {
      "sched_switch", "sched_wakeup", "sched_migrate", "switch_in", "switch_out:preempted"};
};

// Never fails: malformed structure (backward edges) is counted in stats.
CanonicalRequest Canonicalize(const model::Request& request, const CanonicalOptions& options = {});

}  // namespace jackdaw::canonical
