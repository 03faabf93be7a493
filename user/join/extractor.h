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
#include "join/stats.h"
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
  // A set no seed has joined is the work of a thread between requests (an
  // idle worker's wake-ups and sleeps, chained by its Thread interval for as
  // long as it never takes up a request): cut, and its events discarded,
  // at this many events rather than max_set_events, so that live's memory
  // does not grow with every idle thread's minute of wake-ups. A request's
  // events before its seed (its accept, the wake-up that leads to its
  // first read) are a handful.
  uint64_t max_unseeded_set_events = 4096;
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

class Extractor {
 public:
  using RequestSink = std::function<void(model::Request&&)>;
  // Connections whose life the message rule charged (schemas with
  // `messages`), each once, when it closed or at Finish().
  using ConnectionSink = std::function<void(model::Connection&&)>;

  // Binds the schema to the trace's tables (syscall numbers, USDT probe ids).
  // Fails only for schemas the join cannot run (too many bindings per event).
  static StatusOr<std::unique_ptr<Extractor>> Create(const schema::Schema& schema,
                                                     const trace::TraceMeta& meta, Options opts,
                                                     RequestSink sink);
  ~Extractor();

  void SetConnectionSink(ConnectionSink sink);
  void Push(const jdw_record_header* rec);
  // Push() of each of `n` records in turn (one call for a run of them).
  void Push(const jdw_record_header* const* recs, size_t n);
  // End of input: drains the reorder window and closes every live set.
  void Finish();
  // Live sources: nothing older than `ts` is still to come (see
  // reorder::Reorderer::AdvanceTo); what is a window older is joined now.
  void AdvanceTo(uint64_t ts);
  const Stats& stats() const;
  // Records dropped so far for reaching the reorder window after their
  // place had passed (Stats::late_records is filled in by Finish()): a
  // stream's running count.
  uint64_t late_records() const;
  // Where a live capture lost records, located after a drain (a recording
  // carries them in its TraceMeta): requests emitted from then on that ran
  // through them are incomplete, as analyze marks them. Call before the
  // drain's records are pushed: the losses are then newer than every
  // record the join has already processed.
  void AddLossIntervals(const std::vector<trace::LossInterval>& intervals);

  class Impl;

 private:
  explicit Extractor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct ExtractionResult {
  std::vector<model::Request> requests;
  std::vector<model::Connection> connections;  // schemas with `messages`
  Stats stats;
};

// Runs reorder + join over every chunk of an open trace (per-CPU chunks are
// merged by timestamp first, so the reorder window only has to absorb
// irregularities, not chunk boundaries).
StatusOr<ExtractionResult> ExtractRequests(const trace::TraceReader& reader, const schema::Schema& schema,
                                           Options opts);
// Streaming variant: requests go to `sink` as they finish (connections to
// `conn_sink`, if given).
Status ExtractRequests(const trace::TraceReader& reader, const schema::Schema& schema, Options opts,
                       const Extractor::RequestSink& sink, Stats* stats,
                       const Extractor::ConnectionSink& conn_sink = nullptr);

// JSON lines, one request per line (format in request_writer.cc).
Status WriteRequestsJsonl(const std::string& path, const std::vector<model::Request>& requests);
void WriteRequestJson(std::string* out, const model::Request& request);  // appends one line
// Adds `"log_likelihood":x` as the last key of one request line (written by
// WriteRequestJson, ending "}\n"): `jackdaw analyze` scores requests only
// once the stream has ended (docs/likelihood.md).
void AppendLogLikelihood(std::string* line, double log_likelihood);
void WriteConnectionJson(std::string* out, const model::Connection& conn);  // appends one line
// "requests 500, events joined 18000 (in requests 17500, discarded 500),
//  late records 0, unaccounted cpu 1.2% (3.4 ms of 280 ms)"
std::string FormatSummary(const Stats& stats);

}  // namespace jackdaw::join
