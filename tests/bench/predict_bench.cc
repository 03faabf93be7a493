// Speed of `jackdaw predict`'s simulation (issue 34's target: 1 M simulated
// requests in under 10 s): the six Magpie Table 1 request types
// (user/request/synthetic.h, with preemptions, so scripts have the recorded
// shape), 200 recorded requests of each replayed by 8 closed-loop clients on
// 2 CPUs, and by Poisson arrivals at 70 % of the CPUs. Reported: simulated
// requests and simulation events per second of wall time.
//   BUILD/bin/bench_predict --benchmark_filter='BM_Simulate/1000000'
#include <benchmark/benchmark.h>

#include <vector>

#include "predict/script.h"
#include "predict/simulator.h"
#include "request/synthetic.h"

namespace jackdaw::predict {
namespace {

struct Workload {
  std::vector<std::vector<RequestScript>> scripts;
  std::vector<SimKind> kinds;
  double mean_cpu_ns = 0;
};

Workload Table1() {
  Workload w;
  model::synthetic::Jitter j;
  j.preempt = true;
  j.max_runq_ns = 2'000'000;
  model::synthetic::RequestFactory f(1, j);
  const char kTypes[] = "ABCDEF";
  w.scripts.resize(6);
  double cpu = 0, n = 0;
  for (int t = 0; t < 6; ++t)
    for (uint64_t i = 0; i < 200; ++i) {
      w.scripts[t].push_back(BuildScript(f.Make(kTypes[t], i + 1, 1'000'000'000ull + i * 100'000'000ull, 1000, 2000)));
      cpu += static_cast<double>(w.scripts[t].back().cpu_ns);
      n += 1;
    }
  w.mean_cpu_ns = cpu / n;
  for (int t = 0; t < 6; ++t) {
    SimKind k;
    k.label = "c" + std::to_string(t);
    k.share = 1.0 / 6;
    for (const RequestScript& s : w.scripts[t]) k.scripts.push_back(&s);
    w.kinds.push_back(std::move(k));
  }
  return w;
}

void Run(benchmark::State& state, bool open_loop) {
  const Workload w = Table1();
  SimConfig c;
  c.cpus = 2;
  c.woken_slice_ns = 1.5e6;  // predict's default scheduler on 2 CPUs
  c.wakeup_ns = 20'000;
  c.requests = static_cast<uint64_t>(state.range(0));
  if (open_loop) c.rate_per_s = 0.7 * c.cpus * 1e9 / w.mean_cpu_ns;
  else c.clients = 8;
  uint64_t events = 0, simulated = 0;
  for (auto _ : state) {
    SimResult r = Simulate(w.kinds, c);
    events += r.events;
    simulated += r.completed + c.requests / 10;  // with the warm-up
    benchmark::DoNotOptimize(r);
  }
  state.counters["requests_per_s"] = benchmark::Counter(static_cast<double>(simulated), benchmark::Counter::kIsRate);
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}

void BM_Simulate(benchmark::State& state) { Run(state, false); }
void BM_SimulateOpenLoop(benchmark::State& state) { Run(state, true); }
BENCHMARK(BM_Simulate)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_SimulateOpenLoop)->Arg(1'000'000)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
}  // namespace jackdaw::predict

BENCHMARK_MAIN();
