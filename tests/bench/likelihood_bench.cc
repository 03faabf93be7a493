// The likelihood model (model/likelihood/): learning and scoring.
//
//   bench_likelihood --benchmark_filter=Learn    prefix tree + ALERGIA over N Reber strings
//   bench_likelihood --benchmark_filter=Score    one string scored (per request, as live would)
//   bench_likelihood --benchmark_filter=AddRequest  canonicalize + add one synthetic request
//   bench_likelihood --benchmark_filter=AddCanonical  add one whose canonical form is made (analyze)
//   bench_likelihood --benchmark_filter=ScoreRequestString  one ~40-event canonical string scored
//   bench_likelihood --benchmark_filter=Online   live's watchdog per request (OnlineLikelihood::Observe):
//       against a saved baseline, learning from the stream, and with the canonical form made too
//
// Targets (issue 33): 1,000 Reber strings learned in < 0.1 s, 1 M requests
// in < 10 s, scoring <= 2 us per request. Reported, never asserted.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "model/likelihood/alergia.h"
#include "model/likelihood/model_io.h"
#include "model/likelihood/online_likelihood.h"
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

// The requests live's watchdog sees: ~40-event synthetic requests of every
// long shape, with their canonical forms (live makes one per request for
// the watchdog and the streaming model together).
struct OnlineInput {
  std::vector<Request> requests;
  std::vector<canonical::CanonicalRequest> canonical;
  OnlineInput() {
    synthetic::RequestFactory f(2024);
    for (size_t i = 0; i < 4096; ++i) {
      requests.push_back(f.MakeLong(static_cast<int>(i % synthetic::kNumLongShapes), i + 1,
                                    1'000'000'000ull + i * 1'000'000ull, 1000 + i % 8, 2000 + i % 4));
      canonical.push_back(canonical::Canonicalize(requests.back()));
    }
  }
};

// A saved model, as `live --baseline` loads it: learned from the input,
// written to JSON and read back.
SavedModel BaselineOf(const OnlineInput& in) {
  RequestLikelihood rl({}, LikelihoodOptions{});
  for (size_t i = 0; i < in.requests.size(); ++i) rl.Add(in.requests[i], in.canonical[i]);
  rl.Learn();
  SavedModel m = rl.Summary().model;
  m.schema = "bench";
  return *ModelFromJson(nlohmann::json::parse(SavedModelToJson(m).dump()), "bench");
}

// What the watchdog adds per request in `jackdaw live --baseline`: symbol
// lookups and the automaton's walk (the canonical form is shared). One
// request per iteration: the Time column is ns per request. Arg: how many
// distinct requests the loop cycles through. In live the canonical form was
// made just before, so it is in the cache: 32 requests (~200 KB) stand for
// that; 4,096 (~24 MB of canonical forms) read every one from memory, the
// worst case (a cache miss per event's symbol).
void BM_OnlineScoreBaseline(benchmark::State& state) {
  const OnlineInput in;
  OnlineLikelihood ol(BaselineOf(in), OnlineOptions{});
  const size_t pool = static_cast<size_t>(state.range(0));
  size_t i = 0, unlikely = 0, events = 0;
  for (auto _ : state) {
    const auto r = ol.Observe(in.requests[i], in.canonical[i]);
    unlikely += r.unlikely;
    events += r.events;
    if (++i == pool) i = 0;
  }
  state.counters["events_per_request"] = static_cast<double>(events) / static_cast<double>(state.iterations());
  state.counters["unlikely_share"] = static_cast<double>(unlikely) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_OnlineScoreBaseline)->Arg(32)->Arg(4096);

// The same learning from the stream (`jackdaw live` without --baseline):
// scored, added to the prefix tree, and ALERGIA run again every 4,096
// requests (its cost spread over them). Arg as above.
void BM_OnlineScoreLearning(benchmark::State& state) {
  const OnlineInput in;
  OnlineLikelihood ol(OnlineOptions{});
  for (size_t i = 0; i < 1000; ++i) ol.Observe(in.requests[i], in.canonical[i]);  // the warm-up
  const size_t pool = static_cast<size_t>(state.range(0));
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(ol.Observe(in.requests[i], in.canonical[i]));
    if (++i == pool) i = 0;
  }
  state.counters["learnings"] = static_cast<double>(ol.stats().learnings);
}
BENCHMARK(BM_OnlineScoreLearning)->Arg(32)->Arg(4096);

// With the canonical form made here too: the whole cost had the streaming
// model not needed the form anyway (within its warm-up it makes its own).
void BM_OnlineScoreWithCanonical(benchmark::State& state) {
  const OnlineInput in;
  OnlineLikelihood ol(BaselineOf(in), OnlineOptions{});
  const canonical::Canonicalizer canonicalize({});
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(ol.Observe(in.requests[i], canonicalize(in.requests[i])));
    if (++i == in.requests.size()) i = 0;
  }
}
BENCHMARK(BM_OnlineScoreWithCanonical);

}  // namespace
}  // namespace jackdaw::model::likelihood

BENCHMARK_MAIN();
