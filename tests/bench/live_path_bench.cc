// CPU per event of `jackdaw live`'s analysis path on a real recording:
// records -> join (reorder, temporal join, accounting) -> streaming model
// (canonicalize, cluster), with live's settings (0.25 s reorder window, a
// warm-up of 512 requests or 2 s, 60 s idle). The trace's records are read
// into memory once, merged across CPUs by timestamp as live hands a drain
// to the join; each iteration then joins and models all of them. Decoding
// and the rings are not in the figure, only the part of live that grows
// with the events a request brings.
//
// events_per_s and ns_per_event are per second of this thread's CPU time
// (Google Benchmark divides rate counters by CPU time), so other processes
// on the machine change them less than wall time; compare two builds by
// running both on the same trace, alternated.
//
//   JDW_BENCH_TRACE=server.jdw BUILD/bin/bench_live_path --benchmark_repetitions=5
// (JDW_BENCH_SCHEMA: another schema than tcp-threadpool, by name or path)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "join/extractor.h"
#include "model/streaming_model.h"
#include "schema/schema.h"
#include "trace/trace_reader.h"
#include "bench_trace.h"

namespace jackdaw {
namespace {

struct LoadedTrace : bench::BenchTrace {
  std::vector<uint8_t> bytes;            // every record, 8-byte aligned, in time order
  std::vector<size_t> offsets;           // of each record in bytes
};

const LoadedTrace& Trace() {
  static LoadedTrace* t = [] {
    auto* t = new LoadedTrace();
    bench::OpenBenchTrace(t);
    if (!t->error.empty()) return t;
    // The CPUs' records merged by timestamp (ties: the lower CPU), as
    // LivePipeline::EndDrain() and ExtractRequests() hand them over.
    std::vector<trace::RecordCursor> cursors = t->reader->CursorsByCpu(/*retain=*/false);
    for (;;) {
      int best = -1;
      uint64_t best_ts = 0;
      for (size_t i = 0; i < cursors.size(); i++) {
        const jdw_record_header* h = cursors[i].Peek();
        if (h && (best < 0 || h->ts < best_ts)) best = static_cast<int>(i), best_ts = h->ts;
      }
      if (best < 0) break;
      const jdw_record_header* h = cursors[best].Peek();
      t->offsets.push_back(t->bytes.size());
      const auto* p = reinterpret_cast<const uint8_t*>(h);
      t->bytes.insert(t->bytes.end(), p, p + h->size);
      t->bytes.resize((t->bytes.size() + 7) & ~size_t{7}, 0);
      cursors[best].Advance(h);
    }
    return t;
  }();
  return *t;
}

void BM_LivePath(benchmark::State& state) {
  const LoadedTrace& t = Trace();
  if (!t.error.empty()) return state.SkipWithError(t.error.c_str());
  join::Options jo;
  jo.reorder_window = 250'000'000;
  model::StreamingModelOptions mo;
  mo.warmup_requests = 512;
  mo.warmup_ns = 2'000'000'000;
  mo.idle_ns = 60'000'000'000;
  uint64_t requests = 0;
  for (auto _ : state) {
    auto model = model::StreamingModel::Create(mo);
    if (!model.ok()) return state.SkipWithError(model.status().message().c_str());
    model::StreamingModel& m = **model;
    auto ex = join::Extractor::Create(t.schema, t.reader->meta(), jo, [&](model::Request&& r) { m.Add(std::move(r)); });
    if (!ex.ok()) return state.SkipWithError(ex.status().message().c_str());
    for (size_t off : t.offsets) (*ex)->Push(reinterpret_cast<const jdw_record_header*>(t.bytes.data() + off));
    (*ex)->Finish();
    (void)m.Finish();
    requests = m.stats().requests;
  }
  bench::SetEventCounters(state, t.offsets.size(), requests);
}
BENCHMARK(BM_LivePath)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace jackdaw

BENCHMARK_MAIN();
