// CPU per event of `jackdaw live`'s whole path after the rings, on a real
// recording: what bench_live_path measures (join, streaming model) plus the
// reader's side of it, cli::LivePipeline: the copy of each record into the
// flight recorder's arena, the per-drain merge across CPUs, the arena's
// trimming. The trace's records are read into memory once, per CPU in ring
// order; each iteration hands them to a fresh LivePipeline as live does:
// drains of DRAIN ns of record time (live drains every 0.25 s), in each one
// every CPU's records of that span in turn (OnRecord), then EndDrain() and
// Trim(); Finish() at the end. Wire records are expanded by the trace
// reader, so OnRecord() copies events as they are (its expansion of a
// combined syscall into the arena is not in the figure).
//
//   JDW_BENCH_TRACE=server.jdw BUILD/bin/bench_live_pipeline --benchmark_repetitions=5
// (JDW_BENCH_SCHEMA: another schema than tcp-threadpool, by name or path;
// JDW_BENCH_DRAIN_NS: the drain span, 250000000 unless told)
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cli/live_pipeline.h"
#include "schema/schema.h"
#include "trace/trace_reader.h"
#include "bench_trace.h"

namespace jackdaw {
namespace {

struct LoadedTrace : bench::BenchTrace {
  // Per CPU: its records back to back (8-byte aligned), in ring order.
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<std::vector<size_t>> offsets;
  uint64_t records = 0, first_ts = UINT64_MAX, last_ts = 0;
};

const LoadedTrace& Trace() {
  static LoadedTrace* t = [] {
    auto* t = new LoadedTrace();
    bench::OpenBenchTrace(t);
    if (!t->error.empty()) return t;
    std::vector<trace::RecordCursor> cursors = t->reader->CursorsByCpu(/*retain=*/false);
    t->bytes.resize(cursors.size());
    t->offsets.resize(cursors.size());
    for (size_t c = 0; c < cursors.size(); ++c) {
      while (const jdw_record_header* h = cursors[c].Peek()) {
        std::vector<uint8_t>& b = t->bytes[c];
        t->offsets[c].push_back(b.size());
        const auto* p = reinterpret_cast<const uint8_t*>(h);
        b.insert(b.end(), p, p + h->size);
        b.resize((b.size() + 7) & ~size_t{7}, 0);
        t->first_ts = std::min<uint64_t>(t->first_ts, h->ts);
        t->last_ts = std::max<uint64_t>(t->last_ts, h->ts);
        ++t->records;
        cursors[c].Advance(h);
      }
    }
    return t;
  }();
  return *t;
}

// One pass over the trace (apart, so that a profiler can count it alone:
// valgrind --tool=callgrind --toggle-collect='*RunPipeline*').
[[gnu::noinline]] void RunPipeline(cli::LivePipeline& pl, const LoadedTrace& t, uint64_t drain) {
  std::vector<size_t> next(t.offsets.size(), 0);
  for (uint64_t end = t.first_ts + drain;; end += drain) {
    bool more = false;
    for (size_t c = 0; c < t.offsets.size(); ++c) {
      const std::vector<size_t>& offs = t.offsets[c];
      size_t& i = next[c];
      for (; i < offs.size(); ++i) {
        const auto* h = reinterpret_cast<const jdw_record_header*>(t.bytes[c].data() + offs[i]);
        if (h->ts >= end) break;
        pl.OnRecord(static_cast<uint32_t>(c), reinterpret_cast<const uint8_t*>(h), h->size);
      }
      more |= i < offs.size();
    }
    pl.EndDrain();
    pl.Trim();
    if (!more) break;
  }
  pl.Finish();
}

void BM_LivePipeline(benchmark::State& state) {
  const LoadedTrace& t = Trace();
  if (!t.error.empty()) return state.SkipWithError(t.error.c_str());
  const char* drain_env = getenv("JDW_BENCH_DRAIN_NS");
  const uint64_t drain = drain_env && *drain_env ? strtoull(drain_env, nullptr, 10) : 250'000'000;
  cli::LivePipelineOptions o;
  o.reorder_window_ns = 250'000'000;
  o.flight_ns = 5'000'000'000;
  o.model.warmup_requests = 512;
  o.model.warmup_ns = 2'000'000'000;
  o.model.idle_ns = 60'000'000'000;
  uint64_t requests = 0;
  for (auto _ : state) {
    auto p = cli::LivePipeline::Create(t.schema, t.reader->meta(), o);
    if (!p.ok()) return state.SkipWithError(p.status().message().c_str());
    RunPipeline(**p, t, drain);
    requests = (*p)->model().stats().requests;
  }
  bench::SetEventCounters(state, t.records, requests);
}
BENCHMARK(BM_LivePipeline)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace jackdaw

BENCHMARK_MAIN();
