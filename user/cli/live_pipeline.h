// The live pipeline of `jackdaw live`: capture -> reorder -> join ->
// canonicalize -> cluster, continuously, in bounded memory and delay.
//
// Records drained from the per-CPU rings are copied twice, into two arenas
// of fixed blocks (cli/record_arena.h: a record's address is stable). The
// join's arena holds them expanded (a combined syscall as its enter and
// exit) for the join (join::Extractor), whose reorder window holds
// pointers into them; a block is freed once every record in it is older
// than twice the reorder window, measured against the newest record seen,
// so this arena stays small and warm. The flight recorder's arena holds
// them as the rings delivered them, over the flight recorder's span,
// written around the cache; SaveSnapshot() writes what it holds to a .jdw
// trace, per CPU in time order. The records of one drain are handed
// to the join only when the drain is over (EndDrain()), merged across CPUs
// by timestamp: the rings are read one CPU after the other, so pushed as
// they came, a CPU read late in a long drain would bring records older
// than its predecessors' by up to the drain period, late for the reorder
// window (dropped); merged, the reorder window only absorbs what is out of
// order within a CPU, and the reorderer sees one run (its cheapest case).
// Requests the join emits go to the
// model::StreamingModel (the same path `jackdaw analyze` runs, so the model
// equals the offline one on a recording of the same records).
//
// Pipeline delay: for each request, the time from its last event to its
// arrival in the model (now - Request::end_ns, both CLOCK_MONOTONIC); the
// reorder window and the poll interval bound it from below, the join's
// closing rules (a request ends when its last interval closes) from above.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "capture/session.h"
#include "cli/record_arena.h"
#include "control/controller.h"
#include "canonical/canonical.h"
#include "join/extractor.h"
#include "model/streaming_model.h"
#include "schema/schema.h"

namespace jackdaw::cli {

// The model options `jackdaw live` starts from (its --warmup, --warmup-time
// and --idle defaults). The warm-up is analyze's (4096 requests): it fixes
// the normalisation and the threshold for good, and live's former 512 gave
// it more clusters than analyze on the very same requests (nginx
// keep-alive, 30,000 requests: 16 against 12; 6,000: 10 against 5). It is
// cut short after 2 s of requests, so that a slow stream shows clusters
// soon: from 2,048 requests/s up the warm-up is analyze's exactly.
// Clusters idle for 60 s of trace time are dropped (a recording shorter
// than that loses none).
inline model::StreamingModelOptions LiveModelDefaults() {
  model::StreamingModelOptions o;
  o.warmup_requests = 4096;
  o.warmup_ns = 2'000'000'000;
  o.idle_ns = 60'000'000'000;
  return o;
}

struct LivePipelineOptions {
  uint64_t reorder_window_ns = 250'000'000;
  uint64_t flight_ns = 5'000'000'000;  // flight recorder span
  // The flight recorder's cap: at a high event rate the span would take
  // hundreds of MB; the newest records are kept.
  size_t flight_bytes = size_t{48} << 20;
  model::StreamingModelOptions model = LiveModelDefaults();
  model::StreamingModel::AssignCallback on_assign;
};

class LivePipeline : public capture::RecordSink {
 public:
  using RequestHook = std::function<void(const model::Request&)>;
  // A complete request with its canonical form (the model's canonical
  // options), before the model takes both: the likelihood scorer's input.
  using CanonicalHook = std::function<void(const model::Request&, const canonical::CanonicalRequest&)>;

  static StatusOr<std::unique_ptr<LivePipeline>> Create(const schema::Schema& schema,
                                                        const trace::TraceMeta& meta,
                                                        const LivePipelineOptions& options);

  void OnRecord(uint32_t cpu, const uint8_t* data, size_t size) override;
  // Combined syscall records arrive whole and are expanded straight into
  // the arena (one copy of each event, not a copy on the stack and another
  // into the arena).
  bool TakesWireRecords() const override { return true; }
  // The drain is over: its records go to the join, merged by timestamp.
  void EndDrain();
  // The capture's clock reached `ts` with every record before it delivered
  // (a drain that began then): requests a window older are finished though
  // the traced processes went idle (CLOCK_MONOTONIC ns, the records' clock).
  void AdvanceTo(uint64_t ts);
  // Where the capture lost records, located after a drain; call before its
  // EndDrain() (join::Extractor::AddLossIntervals).
  void AddLossIntervals(const std::vector<trace::LossInterval>& l) { extractor_->AddLossIntervals(l); }
  // Frees arena blocks nobody needs any more; call after each drain.
  void Trim();
  void Finish();

  // Counts every record per group (jackdaw ctl status): a direct call on
  // the hot path, not a std::function.
  void set_record_counter(control::Controller* c) { counter_ = c; }
  void set_request_hook(RequestHook h) { request_hook_ = std::move(h); }
  // With a canonical hook every complete request is canonicalized here, once,
  // and the form handed to the model too (past its warm-up it uses it as it
  // is), so scoring costs the scorer's own work only.
  void set_canonical_hook(CanonicalHook h) { canonical_hook_ = std::move(h); }
  // Each connection's life as the join reports it (schemas with `messages`:
  // when it closes or the session ends).
  void set_connection_hook(join::Extractor::ConnectionSink h) { extractor_->SetConnectionSink(std::move(h)); }

  model::StreamingModel& model() { return *model_; }
  const join::Stats& join_stats() const { return extractor_->stats(); }
  uint64_t late_records() const { return extractor_->late_records(); }
  uint64_t records() const { return records_; }
  uint64_t arena_bytes() const { return window_.bytes() + flight_.bytes(); }
  // Pipeline delay of the requests that arrived since the last call (max
  // and the count), then reset.
  struct Delay {
    uint64_t requests = 0;
    uint64_t max_ns = 0;
    uint64_t timed_out = 0;  // closed by the schema timeout: not timed
  };
  Delay TakeDelay();

  // What the flight recorder holds: the span asked for, the span held, and
  // whether the byte cap cut the span short (the records it released were
  // younger than the span).
  struct FlightWindow {
    double asked_s = 0, held_s = 0;
    uint64_t bytes = 0, cap_bytes = 0;
    bool capped = false;
  };
  FlightWindow flight_window() const;

  // Writes the flight recorder's records to `path` with `header`.
  StatusOr<uint64_t> SaveSnapshot(const std::string& path, const nlohmann::json& header) const;

 private:
  LivePipeline() = default;
  // A record now in the join's arena is counted and waits for EndDrain().
  // Inline: once or twice per record.
  [[gnu::always_inline]] inline void Take(uint32_t cpu, jdw_record_header* h);
  uint64_t FlightSpanNs() const;  // what the flight recorder keeps by time

  LivePipelineOptions options_;
  std::unique_ptr<model::StreamingModel> model_;
  std::unique_ptr<join::Extractor> extractor_;
  RecordArena window_;  // expanded records for the join, twice the reorder window
  RecordArena flight_;  // records as delivered, the flight recorder's span
  uint64_t newest_ts_ = 0;
  uint64_t flight_cut_ts_ = 0;  // the newest record the flight recorder's cap released
  uint64_t records_ = 0;
  Delay delay_;
  control::Controller* counter_ = nullptr;
  // Records of the current drain, per CPU in ring order.
  std::vector<std::vector<jdw_record_header*>> drained_;
  std::vector<std::pair<uint64_t, uint32_t>> heads_;  // merge heap: (ts, cpu)
  std::vector<size_t> next_;                          // merge: next record per CPU
  // Up to this many CPUs EndDrain() finds the next head by a scan.
  static constexpr uint32_t kScanMergeCpus = 8;
  RequestHook request_hook_;
  CanonicalHook canonical_hook_;
  std::unique_ptr<canonical::Canonicalizer> canonicalize_;
};

// The TraceMeta of a live session (as the recorder's header would say).
trace::TraceMeta LiveMeta(const capture::CaptureBackend& session, const std::vector<capture::UsdtTarget>& usdt);

}  // namespace jackdaw::cli
