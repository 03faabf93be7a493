// Clustering throughput: 10,000 requests of ~40 events (8 shapes, seeded
// jitter), the size the brief sets a one-second, one-core budget for.
//
//   bench_cluster --benchmark_filter=BM_ClusterRequests
#include <benchmark/benchmark.h>

#include <vector>

#include "canonical/canonical.h"
#include "canonical/serialize.h"
#include "cluster/cluster.h"
#include "cluster/distance.h"
#include "request/synthetic.h"
#include "model/workload_model.h"

namespace jackdaw::cluster {
namespace {

std::vector<model::Request> LongRequests(size_t n) {
  model::synthetic::RequestFactory f(2024);
  std::vector<model::Request> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i)
    out.push_back(f.MakeLong(static_cast<int>(i % model::synthetic::kNumLongShapes), i + 1,
                             1'000'000'000ull + i * 1'000'000ull, 1000 + i % 8, 2000 + i % 4));
  return out;
}

struct Prepared {
  std::vector<model::Request> requests;
  canonical::SymbolTable symbols;
  std::vector<canonical::SerializedRequest> serialized;
  std::vector<NormString> norm;
  double events_per_request = 0;
};

const Prepared& Get(size_t n) {
  static Prepared* p = [n] {
    auto* p = new Prepared;
    p->requests = LongRequests(n);
    size_t events = 0;
    for (const model::Request& r : p->requests) {
      p->serialized.push_back(canonical::Serialize(canonical::Canonicalize(r), &p->symbols));
      events += p->serialized.back().tokens.size();
    }
    Normalization norm = DeriveNormalization(p->serialized);
    for (const auto& s : p->serialized) p->norm.push_back(Normalize(s, norm));
    p->events_per_request = static_cast<double>(events) / static_cast<double>(n);
    return p;
  }();
  return *p;
}

constexpr size_t kRequests = 10'000;

void BM_ClusterRequests(benchmark::State& state) {
  const Prepared& p = Get(kRequests);
  Clustering c;
  for (auto _ : state) {
    c = ClusterRequests(p.norm);
    benchmark::DoNotOptimize(c);
  }
  state.counters["requests"] = static_cast<double>(kRequests);
  state.counters["events_per_request"] = p.events_per_request;
  state.counters["clusters"] = static_cast<double>(c.clusters.size());
  state.counters["distances"] = static_cast<double>(c.distance_computations);
  state.counters["threshold"] = c.threshold.threshold;
}
BENCHMARK(BM_ClusterRequests)->Unit(benchmark::kMillisecond)->MinTime(3.0);

// The whole back half of `jackdaw analyze`: canonicalize, serialize,
// normalise, cluster, model error, anomalies, breakdown.
void BM_BuildModel(benchmark::State& state) {
  const Prepared& p = Get(kRequests);
  for (auto _ : state) {
    auto m = model::BuildModel(p.requests);
    benchmark::DoNotOptimize(m);
  }
  state.counters["requests"] = static_cast<double>(kRequests);
}
BENCHMARK(BM_BuildModel)->Unit(benchmark::kMillisecond)->MinTime(3.0);

void BM_Distance(benchmark::State& state) {
  const Prepared& p = Get(kRequests);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(Distance(p.norm[i % 1000], p.norm[(i * 7 + 3) % 1000]));
    ++i;
  }
  state.counters["tokens"] = p.events_per_request;
}
BENCHMARK(BM_Distance);

}  // namespace
}  // namespace jackdaw::cluster

BENCHMARK_MAIN();
