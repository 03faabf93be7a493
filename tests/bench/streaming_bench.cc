// Bounded memory of the streaming model: N synthetic requests (the six
// Magpie Table 1 types, user/model/synthetic.h), generated on the fly and
// fed to model::StreamingModel as `jackdaw analyze` feeds it. Reported per
// run: resident memory after 10 % of the stream and at its end (flat means
// their ratio stays near 1 whatever N), the process' peak, and throughput in
// requests and events per second.
//   BUILD/bin/bench_streaming --benchmark_filter='BM_Stream/1000000'
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>

#include "model/streaming_model.h"
#include "request/synthetic.h"

namespace jackdaw::model {
namespace {

double StatusMb(const char* key) {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  double kb = 0;
  while (fgets(line, sizeof(line), f))
    if (strncmp(line, key, strlen(key)) == 0) kb = strtod(line + strlen(key), nullptr);
  fclose(f);
  return kb / 1024;
}

void BM_Stream(benchmark::State& state) {
  const uint64_t n = static_cast<uint64_t>(state.range(0));
  double rss_early = 0, rss_end = 0, events = 0;
  for (auto _ : state) {
    synthetic::RequestFactory f(1);
    auto sm = StreamingModel::Create({});
    if (!sm.ok()) return state.SkipWithError(sm.status().message().c_str());
    const char kTypes[] = "ABCDEF";
    events = 0;
    for (uint64_t i = 0; i < n; ++i) {
      Request r = f.Make(kTypes[i % 6], i + 1, 1'000'000'000ull + i * 100'000ull, 1000 + i % 8, 2000 + i % 4);
      events += static_cast<double>(r.events.size());
      (*sm)->Add(std::move(r));
      if (i + 1 == n / 10) rss_early = StatusMb("VmRSS:");
    }
    benchmark::DoNotOptimize((*sm)->Snapshot());
    rss_end = StatusMb("VmRSS:");
  }
  state.counters["rss_mb_at_10pct"] = rss_early;
  state.counters["rss_mb_at_end"] = rss_end;
  state.counters["rss_growth"] = rss_early > 0 ? rss_end / rss_early : 0;
  state.counters["peak_rss_mb"] = StatusMb("VmHWM:");
  state.counters["requests_per_s"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsRate);
  state.counters["events_per_s"] = benchmark::Counter(events, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Stream)->Arg(100'000)->Arg(1'000'000)->Arg(10'000'000)->Arg(50'000'000)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
}  // namespace jackdaw::model

BENCHMARK_MAIN();
