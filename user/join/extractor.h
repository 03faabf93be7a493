// Request extraction: reorder + temporal join + resource accounting +
// causality (Magpie §3), driven by a schema (user/schemas/LANGUAGE.md).
//
// Streaming use (online or offline):
//
//   ASSIGN_OR_RETURN(auto ex, join::Extractor::Create(schema, meta, opts,
//       [&](model::Request&& r) { ... }));
//   for (each record, per-CPU order, CPUs interleaved roughly in time)
//     ex->Push(rec);          // pointer must stay valid for `reorder_window`
//   ex->Finish();             // end of trace: drains and closes what is left
//   ex->stats();              // counters, see Stats
//
// Convenience over a whole trace file: ExtractRequests() below.
//
// Semantics in one paragraph (details in extractor.cc's class comment): each
// record, in global timestamp order, is matched against the schema's event
// definitions (first match wins); the matching definition's bindings give
// (attribute, value) pairs that BASIC/START/STOP the valid-intervals of those
// pairs; events sharing an open interval are joined (union-find over sets);
// a set with no open interval left is finished and is emitted as a
// model::Request iff it holds a seed event, otherwise discarded. Sets idle
// for longer than the schema timeout are closed by a GC and treated the same
// (flagged timed_out). On-CPU time, off-CPU time, disk and packet bytes are
// charged to the set the consuming event joins; what cannot be attributed
// stays unaccounted and is counted.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "jackdaw/abi.h"
#include "request/request.h"
#include "schema/schema.h"
#include "trace/trace_reader.h"  // TraceMeta (header-only use; no link dependency)

namespace jackdaw::join {

struct Options {
  // Reorder window in record timebase units (ns for BPF traces).
  uint64_t reorder_window = 1'000'000'000;
  // GC timeout; 0 = the schema's `timeout`.
  uint64_t timeout_ns = 0;
  // Hard bounds for sets that keep receiving events but never finish (a
  // CPU-bound thread outside any request keeps its Thread interval open
  // forever): closed like a timeout once older than this (0 = 6 x timeout)
  // or larger than max_set_events.
  uint64_t max_set_age_ns = 0;
  uint64_t max_set_events = 1u << 20;
  // Emit seed-holding sets closed by the timeout or the end of the trace
  // (flagged Request::timed_out). Otherwise they are discarded and counted.
  bool emit_timed_out = true;
  // Consecutive interrupt-context records on one CPU, with no task-context
  // record between them and at most this far apart, are taken to be one
  // softirq/hardirq run; the time between them is charged as softirq CPU to
  // the later record's set (and not to the interrupted task). 0 disables.
  uint64_t irq_burst_gap_ns = 20'000;
  // A thread that shows up running (a task-context record, or a switch-out)
  // while the sched records have it off CPU lost its switch-in in the
  // capture. false: it runs from that record on; the run time before is
  // unaccounted (and bounded in Stats::cpu_lost_bound_ns). true: it is taken
  // to have run since the last record of another task on that CPU and since
  // it became runnable — exact when only the switch-in was lost, but on the
  // traces of this project's VM as often an over-count (an untraced task
  // that ran meanwhile, a vCPU slow to wake) as a fix: a guess, so off by
  // default.
  bool infer_lost_switch_in = false;
};

struct Stats {
  // input
  uint64_t records_in = 0;
  uint64_t records_processed = 0;  // in order, after the reorder window
  uint64_t bad_records = 0;        // shorter than their type's payload: skipped
  uint64_t late_records = 0;       // beyond the reorder window: dropped, not joined
  uint64_t late_io_starts = 0;
  uint64_t io_starts = 0;          // synthetic block-request starts inserted
  // block_issue records whose block_complete never came (lost by the
  // capture): their bytes and start are missing from every request.
  uint64_t block_completions_missing = 0;
  // block_issue records still without a completion when the trace ends less
  // than a second after them: in flight when recording stopped, or their
  // completion was lost (on some hosts no probe fires while a particular
  // task is current, see README "Known limits"); the trace cannot tell.
  uint64_t block_completions_unseen_at_end = 0;
  // join
  uint64_t events_matched = 0;     // matched an event definition
  uint64_t events_joined = 0;      // entered a set
  uint64_t events_unbound = 0;     // matched, but every binding value was absent
  // Interrupt-context TCP packets of a connection not yet accepted (its
  // socket unknown): held, then joined to the first request that uses the
  // socket, or dropped (never accepted within the timeout, or over the
  // per-connection cap of 16).
  uint64_t early_packets_joined = 0;
  uint64_t early_packets_dropped = 0;
  uint64_t bindings_skipped = 0;   // value 0 / unresolved socket / tid in irq context
  uint64_t events_in_requests = 0;
  uint64_t events_discarded = 0;   // in sets without a seed
  uint64_t sets_created = 0;
  uint64_t sets_merged = 0;
  uint64_t intervals_cascaded = 0;  // closed by a schema `cascade`
  // An event whose bindings reach two different requests (sets that both
  // hold a seed): it joins the first binding's, the other is left alone.
  uint64_t seed_conflicts = 0;
  uint64_t sets_discarded = 0;
  uint64_t sets_timed_out = 0;     // closed by the GC timeout or end of trace
  uint64_t requests_emitted = 0;
  uint64_t requests_timed_out = 0;
  uint64_t edges_wakeup = 0;
  // sched_wakeups the kernel ran in interrupt context on the wakee's CPU
  // (remote wakeups of an idle CPU), attributed to the thread whose futex
  // wake caused them: to the schema they are that thread's events.
  uint64_t wakeups_attributed = 0;
  uint64_t edges_sync = 0;
  uint64_t usdt_unknown_probe = 0;  // probe_id absent from the trace's probe table
  // Scheduling records of the processes that served requests (the request
  // tgids), filled in by Finish(). A chain break is a sched_switch out of a
  // thread that was off CPU by every earlier record (no switch-in, no
  // task-context record since it last left): its switch-in is missing from
  // the capture, and the run time since stays unaccounted.
  uint64_t sched_switches = 0;
  uint64_t sched_chain_breaks = 0;
  // A task-context record of a thread the sched records left off CPU: it
  // runs, so its switch-in was lost (or predates the trace); it is taken as
  // running from that record on, and its run time from there is charged.
  uint64_t sched_running_inferred = 0;
  // Run time the capture may have lost before those records (an upper
  // bound, request processes only), and the part of it charged
  // (Options::infer_lost_switch_in; any process).
  uint64_t cpu_lost_bound_ns = 0;
  uint64_t cpu_inferred_ns = 0;
  // accounting (ns); the observed figures are filled in by Finish().
  // cpu_observed_ns: on-CPU time (sched_switch) of the threads of request
  // tgids while they served requests: from each process' first seed event
  // to the end of its last request that finished (Magpie's "during the
  // course of the experiment"; a server's start-up and shutdown are not
  // request work, and dilute the ratio by the length of the run).
  uint64_t cpu_observed_ns = 0;
  uint64_t cpu_observed_total_ns = 0;  // the same over the whole trace
  uint64_t cpu_charged_ns = 0;   // charged to emitted requests
  uint64_t cpu_dropped_ns = 0;   // run time of threads that blocked before a joined event
  uint64_t softirq_charged_ns = 0;
  // memory high-water marks
  uint64_t peak_live_sets = 0;
  uint64_t peak_live_intervals = 0;
  uint64_t peak_threads = 0;
  uint64_t peak_reorder_queued = 0;
  // schema / trace mismatches worth telling the user about
  std::vector<std::string> warnings;

  uint64_t cpu_unaccounted_ns() const {
    return cpu_observed_ns > cpu_charged_ns ? cpu_observed_ns - cpu_charged_ns : 0;
  }
};

class Extractor {
 public:
  using RequestSink = std::function<void(model::Request&&)>;

  // Binds the schema to the trace's tables (syscall numbers, USDT probe ids).
  // Fails only for schemas the join cannot run (too many bindings per event).
  static StatusOr<std::unique_ptr<Extractor>> Create(const schema::Schema& schema,
                                                     const trace::TraceMeta& meta, Options opts,
                                                     RequestSink sink);
  ~Extractor();

  void Push(const jdw_record_header* rec);
  // End of input: drains the reorder window and closes every live set.
  void Finish();
  const Stats& stats() const;

  class Impl;

 private:
  explicit Extractor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct ExtractionResult {
  std::vector<model::Request> requests;
  Stats stats;
};

// Runs reorder + join over every chunk of an open trace (per-CPU chunks are
// merged by timestamp first, so the reorder window only has to absorb
// irregularities, not chunk boundaries).
StatusOr<ExtractionResult> ExtractRequests(const trace::TraceReader& reader, const schema::Schema& schema,
                                           Options opts);
// Streaming variant: requests go to `sink` as they finish.
Status ExtractRequests(const trace::TraceReader& reader, const schema::Schema& schema, Options opts,
                       const Extractor::RequestSink& sink, Stats* stats);

// JSON lines, one request per line (format in request_writer.cc).
Status WriteRequestsJsonl(const std::string& path, const std::vector<model::Request>& requests);
void WriteRequestJson(std::string* out, const model::Request& request);  // appends one line
// "requests 500, events joined 18000 (in requests 17500, discarded 500),
//  late records 0, unaccounted cpu 1.2% (3.4 ms of 280 ms)"
std::string FormatSummary(const Stats& stats);

}  // namespace jackdaw::join
