// The likelihood model (model/likelihood/): learning and scoring.
//
//   bench_likelihood --benchmark_filter=Learn    prefix tree + ALERGIA over N Reber strings
//   bench_likelihood --benchmark_filter=Score    one string scored (per request, as live would)
//   bench_likelihood --benchmark_filter=AddRequest  canonicalize + add one synthetic request
//   bench_likelihood --benchmark_filter=AddCanonical  add one whose canonical form is made (analyze)
//   bench_likelihood --benchmark_filter=ScoreRequestString  one ~40-event canonical string scored
//
// Targets (issue 33): 1,000 Reber strings learned in < 0.1 s, 1 M requests
// in < 10 s, scoring <= 2 us per request. Reported, never asserted.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "model/likelihood/alergia.h"
#include "model/likelihood/reber_grammar.h"
#include "model/likelihood/request_likelihood.h"
#include "request/synthetic.h"

namespace jackdaw::model::likelihood {
namespace {

std::vector<std::vector<uint32_t>> ReberStrings(size_t n) {
  std::mt19937_64 rng(2003);
  std::vector<std::vector<uint32_t>> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::vector<uint32_t> s;
    for (char c : reber::Generate(rng)) s.push_back(static_cast<uint32_t>(c - 'A'));
    out.push_back(std::move(s));
  }
  return out;
}

void BM_LearnReber(benchmark::State& state) {
  const auto strings = ReberStrings(static_cast<size_t>(state.range(0)));
  size_t states = 0, tree = 0;
  for (auto _ : state) {
    PrefixTree t;
    for (const auto& s : strings) t.Add(s);
    Learned l = LearnAlergia(t);
    states = l.automaton.num_states();
    tree = t.states().size();
    benchmark::DoNotOptimize(l);
  }
  state.counters["tree_states"] = static_cast<double>(tree);
  state.counters["states"] = static_cast<double>(states);
  state.counters["strings_per_s"] =
      benchmark::Counter(static_cast<double>(strings.size()), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_LearnReber)->Arg(1000)->Arg(1000000)->Unit(benchmark::kMillisecond);

void BM_ScoreReber(benchmark::State& state) {
  const auto strings = ReberStrings(100000);
  PrefixTree t;
  for (size_t i = 0; i < 1000; ++i) t.Add(strings[i]);
  const Learned l = LearnAlergia(t);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(l.automaton.Score(strings[i]));
    if (++i == strings.size()) i = 0;
  }
}
BENCHMARK(BM_ScoreReber);

// Requests of ~40 events (the clustering benchmark's shapes): what one
// request costs `jackdaw analyze` for the model (canonical form + tree).
void BM_AddRequest(benchmark::State& state) {
  synthetic::RequestFactory f(2024);
  std::vector<Request> requests;
  for (size_t i = 0; i < 4096; ++i)
    requests.push_back(f.MakeLong(static_cast<int>(i % synthetic::kNumLongShapes), i + 1,
                                  1'000'000'000ull + i * 1'000'000ull, 1000 + i % 8, 2000 + i % 4));
  RequestLikelihood rl({}, LikelihoodOptions{});
  size_t i = 0;
  for (auto _ : state) {
    rl.Add(requests[i]);
    if (++i == requests.size()) i = 0;
  }
  state.counters["tree_states"] = static_cast<double>(rl.tree().states().size());
}
BENCHMARK(BM_AddRequest);

// The same with the canonical form already made: what `jackdaw analyze`
// adds per request past its warm-up, where the streaming model's canonical
// form is shared.
void BM_AddCanonicalRequest(benchmark::State& state) {
  synthetic::RequestFactory f(2024);
  std::vector<Request> requests;
  std::vector<canonical::CanonicalRequest> canonical;
  for (size_t i = 0; i < 4096; ++i) {
    requests.push_back(f.MakeLong(static_cast<int>(i % synthetic::kNumLongShapes), i + 1,
                                  1'000'000'000ull + i * 1'000'000ull, 1000 + i % 8, 2000 + i % 4));
    canonical.push_back(canonical::Canonicalize(requests.back()));
  }
  RequestLikelihood rl({}, LikelihoodOptions{});
  size_t i = 0;
  for (auto _ : state) {
    rl.Add(requests[i], canonical[i]);
    if (++i == requests.size()) i = 0;
  }
}
BENCHMARK(BM_AddCanonicalRequest);

// One request's canonical string (~40 events) scored against the model
// learned from 4,096 of them: what scoring a request as it arrives costs
// once its canonical form exists.
void BM_ScoreRequestString(benchmark::State& state) {
  synthetic::RequestFactory f(2024);
  RequestLikelihood rl({}, LikelihoodOptions{});
  for (size_t i = 0; i < 4096; ++i)
    rl.Add(f.MakeLong(static_cast<int>(i % synthetic::kNumLongShapes), i + 1, 1'000'000'000ull + i * 1'000'000ull,
                      1000 + i % 8, 2000 + i % 4));
  rl.Learn();
  std::vector<std::vector<uint32_t>> strings;
  size_t events = 0;
  for (uint32_t s = 0; s < rl.tree().states().size(); ++s)
    if (rl.tree().states()[s].ends) strings.push_back(rl.tree().Path(s)), events += strings.back().size();
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(rl.automaton().Score(strings[i]));
    if (++i == strings.size()) i = 0;
  }
  state.counters["events_per_string"] = static_cast<double>(events) / static_cast<double>(strings.size());
}
BENCHMARK(BM_ScoreRequestString);

}  // namespace
}  // namespace jackdaw::model::likelihood

BENCHMARK_MAIN();
