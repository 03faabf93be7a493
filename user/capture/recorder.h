// Recorder: a CaptureBackend (eBPF probes or jackdaw.ko) drained into a
// .jdw TraceWriter.
//
// Records of each CPU are staged and written as one chunk per CPU when the
// stage holds flush_bytes or every flush_interval. Within a chunk records
// are put in timestamp order: the only disorder a CPU's ring can hold is a
// record nested (irq) inside another's reserve/submit, a window of a few
// hundred ns. A record older than one already written for its CPU is kept
// and counted (late_records) — the reorder stage absorbs it.
//
// Chunks are handed to an AsyncTraceWriter, which compresses and writes
// them on its own thread: the drain never waits for zstd or the disk
// unless the writer falls max_queued_bytes behind.
//
// Draining: each CPU's ring is consumed in place (capture/ring_reader.h);
// the reader sleeps between sweeps as long as the rings, filling at the
// rate the last sweep found, take to reach 1/16 (none once there; at most
// poll_timeout_ms: capture/sweep_pacer.h), so a steady load is drained in
// batches rather than every millisecond; its thread runs at nice -10 so
// producers on every CPU cannot starve it.
//
// Clock pairs (rdtsc, CLOCK_MONOTONIC) are taken at Start, every
// clock_interval and at Stop; the current mapping and the cumulative loss
// counters are written as a metadata chunk each time, so a killed recording
// still carries both.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "capture/clock_sync.h"
#include "capture/loss_locator.h"
#include "capture/backend.h"
#include "capture/session.h"
#include "capture/sample_controller.h"
#include "capture/sweep_pacer.h"
#include "trace/async_writer.h"

namespace jackdaw::capture {

struct RecorderOptions {
  CaptureOptions capture;
  // "bpf", "kmod" (jackdaw.ko), or "auto": eBPF when its probes load, else
  // the module when /dev/jackdaw exists.
  std::string backend = "bpf";
  std::string output = "jackdaw.jdw";
  size_t flush_bytes = 1u << 20;
  uint64_t flush_interval_ns = 200'000'000;
  uint64_t clock_interval_ns = 1'000'000'000;
  // The longest the reader sleeps between sweeps (Step() shortens it as
  // the rings fill faster). Bounded so that a burst starting right after a
  // sweep cannot fill a ring before the next: at the fastest drain measured
  // (bench_capture, about 130 MB/s into one CPU's ring) 30 ms is 4 MB, half
  // the default 8 MB ring.
  int poll_timeout_ms = 30;
  // Record chunks compressed on the writer thread (trace/async_writer.h).
  trace::Compression compression = trace::Compression::kZstd;
  std::vector<std::string> command;  // recorded in the header
  // Head sampling: capture.sample loads it at capture.sample_rate; with
  // sample_auto the rate follows the rings (capture/sample_controller.h).
  bool sample_auto = false;
};

struct RecorderStats {
  uint64_t records = 0;  // events: a wire record (abi.h) counts as the events it stands for
  uint64_t wire_records = 0;  // combined syscall records among them (each 2 events, 1 record)
  uint64_t bytes = 0;  // file size so far
  uint64_t lost = 0;
  uint64_t late_records = 0;
  uint64_t record_bytes_raw = 0;     // records before compression
  uint64_t record_bytes_stored = 0;  // and as stored
  uint64_t writer_stalls = 0;        // times the drain waited for the disk
  double sample_rate = 1.0;          // in force now
  double sample_rate_min = 1.0;      // the lowest in force at any time
};

class Recorder : RecordSink {
 public:
  static StatusOr<std::unique_ptr<Recorder>> Create(const RecorderOptions& opts);
  ~Recorder() override;

  CaptureBackend& session() { return *session_; }
  // The eBPF session when that is the backend (runtime control, pinned maps,
  // group-specific maps); nullptr for the module.
  CaptureSession* bpf_session() { return dynamic_cast<CaptureSession*>(session_.get()); }
  // Which backend runs and, under "auto", why it was chosen.
  const std::string& backend_choice() const { return backend_choice_; }

  // Attaches the configured groups and starts the clock. Call before the
  // workload starts.
  Status Start();
  // One drain step: poll, stage, flush what is due, sync the clock if due.
  Status Step();
  // Runs Step() on a thread until Stop() or until a step fails (Stop()
  // then returns that failure).
  Status StartBackground();
  // True while the background thread is stepping.
  bool running() const;
  // Detaches, drains what is left, writes losses and the footer.
  Status Stop();

  RecorderStats stats() const;
  // Records delivered per probe group since Start() (index: JDW_GROUP_*).
  // Counted by the draining thread: read it from the thread that calls
  // Step() (a foreground recording's loop), not beside StartBackground().
  std::array<uint64_t, JDW_GROUP_MAX> group_records() const;
  // A record from a source beside the probes (libpcap), in the probes'
  // timebase, staged with `cpu`'s records (sorted into them at flush; one
  // older than what was already written for that CPU counts as late). Call
  // from the thread that calls Step(), before Stop().
  void AddRecord(uint32_t cpu, const uint8_t* data, size_t size) { OnRecord(cpu, data, size); }

 private:
  // Per record type: one increment per record on the drain path, mapped
  // to groups only when asked.
  std::array<uint64_t, JDW_EVENT_MAX> type_records_{};
  struct CpuStage {
    std::vector<uint8_t> buf;
    uint64_t count = 0;  // records staged
    uint64_t wire = 0;   // wire records among them
    // Kept as records arrive (their header is read anyway), so a flush
    // need not walk the stage to learn whether it must sort.
    uint64_t max_ts = 0;     // newest staged timestamp
    uint64_t min_ts = ~0ull;  // oldest
    bool sorted = true;       // staged in timestamp order
    uint64_t last_written_ts = 0;
    uint64_t last_flush_ns = 0;
  };

  Recorder() = default;
  void OnRecord(uint32_t cpu, const uint8_t* data, size_t size) override;
  // The trace keeps combined syscall records as they are; the reader
  // expands them (trace/record_decoder.h).
  bool TakesWireRecords() const override { return true; }
  Status FlushCpu(uint32_t cpu);
  Status FlushAll();
  Status SyncClock();
  nlohmann::json Header() const;

  RecorderOptions opts_;
  std::unique_ptr<CaptureBackend> session_;
  std::string backend_choice_;
  std::unique_ptr<trace::AsyncTraceWriter> writer_;
  std::vector<CpuStage> stages_;
  std::vector<uint8_t> sort_scratch_;
  ClockFit clock_;
  uint64_t last_clock_ns_ = 0;
  std::atomic<uint64_t> records_{0}, bytes_{0}, lost_{0}, late_{0}, wire_{0};
  std::atomic<uint64_t> malformed_{0};  // records dropped: size not their header's
  std::thread thread_;
  std::atomic<bool> running_{false};
  Status thread_status_;
  bool stopped_ = false;
  Status deferred_;
  SweepPacer pacer_{1.0 / 16, 30};  // the reader's naps (reader thread), up to poll_timeout_ms
  // Losses located in time (trace/loss_intervals.h): the counters are read
  // after a drain, at most every kLossReadEveryNs (a read is a map lookup
  // per group, and a busy reader sweeps thousands of times a second), so an
  // interval spans that much at least.
  static constexpr uint64_t kLossReadEveryNs = 2'000'000;
  LossLocator losses_;
  uint64_t last_loss_read_ns_ = 0;
  uint64_t ReadLossesInto(uint64_t drain_from_ns);  // returns the total so far
  // Head sampling: the rate in force and its changes not yet written
  // ([[mono ns, rate], ...], trace/trace_reader.h "sample_rates").
  SampleController sampler_;
  std::atomic<double> sample_rate_{1.0}, sample_rate_min_{1.0};
  nlohmann::json unwritten_rates_ = nlohmann::json::array();
  void NoteSampleRate(uint64_t ts, double rate);
};

// Thread/process names of tgids (all processes if empty) from /proc:
// {"tid": {"tgid": N, "comm": "..."}}.
nlohmann::json ScanTasks(const std::vector<uint32_t>& tgids);
// A clock mapping as a trace's header, meta and footer carry it ("clock").
nlohmann::json ClockJson(const trace::ClockMapping& m);

}  // namespace jackdaw::capture
