// The recording and schema the live-path benchmarks run on: the trace named
// by JDW_BENCH_TRACE, the schema by JDW_BENCH_SCHEMA (tcp-threadpool when
// unset). On failure `error` says why and the benchmark skips with it.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include <benchmark/benchmark.h>

#include "schema/schema.h"
#include "trace/trace_reader.h"

namespace jackdaw::bench {

struct BenchTrace {
  std::unique_ptr<trace::TraceReader> reader;
  schema::Schema schema;
  std::string error;
};

inline void OpenBenchTrace(BenchTrace* t) {
  const char* path = getenv("JDW_BENCH_TRACE");
  if (!path || !*path) {
    t->error = "set JDW_BENCH_TRACE to a .jdw recording (e.g. jackdaw record of the test server)";
    return;
  }
  const char* name = getenv("JDW_BENCH_SCHEMA");
  auto schema = schema::LoadSchema(name && *name ? name : "tcp-threadpool", {JDW_SOURCE_DIR "/user/schemas"});
  if (!schema.ok()) {
    t->error = schema.status().message();
    return;
  }
  t->schema = std::move(*schema);
  auto reader = trace::TraceReader::Open(path);
  if (!reader.ok()) {
    t->error = reader.status().message();
    return;
  }
  t->reader = std::move(*reader);
}

// The counters both benchmarks report: the recording's records and
// requests, and the rate and cost per event over every iteration.
inline void SetEventCounters(benchmark::State& state, uint64_t records, uint64_t requests) {
  const double events = static_cast<double>(records) * static_cast<double>(state.iterations());
  state.counters["records"] = static_cast<double>(records);
  state.counters["requests"] = static_cast<double>(requests);
  state.counters["events_per_s"] = benchmark::Counter(events, benchmark::Counter::kIsRate);
  state.counters["ns_per_event"] =
      benchmark::Counter(events, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

}  // namespace jackdaw::bench
