// The "Bayesian watchdog" of Magpie (HotOS 2003 §3): every request scored
// as it arrives in `jackdaw live`, against either a saved model (live
// --baseline: an analyze --json, model_io.h) or one learned from the stream
// itself.
//
// Learned from the stream: the first `warmup` complete requests only train
// (no model yet, no score); then ALERGIA learns the automaton and every
// request is scored by the current one before it is added to the prefix
// tree, and the automaton is learned again every `relearn_every` requests,
// so new behaviour becomes usual once it is common.
//
// Bounded memory: the prefix tree grows with the distinct canonical
// strings, not the requests, but a workload whose strings keep changing
// would grow it without end. When it reaches `max_tree_states` states the
// automaton is learned from it one last time and the tree starts again
// empty: the automaton (never larger than the tree it came from) keeps
// scoring while the new tree collects `relearn_every` requests, and the
// next automaton comes from those alone. So at most one tree of
// `max_tree_states` (about 100 bytes a state) and one automaton are held,
// and the model forgets what it has not seen since the restart. Symbols are
// capped too (`max_symbols`): past it a new symbol is scored as unknown and
// its request is not learned. A saved baseline is never changed.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "canonical/canonical.h"
#include "model/likelihood/likelihood_report.h"
#include "model/likelihood/prefix_tree.h"
#include "request/request.h"

namespace jackdaw::model::likelihood {

struct OnlineOptions {
  // A request scoring below this (mean log-probability per event) is
  // reported as unlikely. Unset: calibrated at every learning on the
  // requests learned (calibration.h), or a baseline's own calibration.
  std::optional<double> threshold;
  uint32_t warmup = 1000;         // requests learned before the first score
  uint32_t relearn_every = 4096;  // requests between two learnings
  size_t max_tree_states = 50000;
  size_t max_symbols = 4096;
  double alpha = 0.05;
};

class OnlineLikelihood {
 public:
  // Learns from the stream.
  explicit OnlineLikelihood(const OnlineOptions& options);
  // Scores against `baseline`, which is never changed.
  OnlineLikelihood(SavedModel baseline, const OnlineOptions& options);
  // Not copyable: the symbol cache points into this object's own map.
  OnlineLikelihood(const OnlineLikelihood&) = delete;
  OnlineLikelihood& operator=(const OnlineLikelihood&) = delete;

  struct Result {
    bool scored = false;  // false: incomplete, or still warming up
    double log_likelihood = 0;
    bool unlikely = false;
    uint32_t events = 0;
  };
  // Scores the request (its canonical form made with the options its model
  // was learned under) and, when learning, learns from it.
  Result Observe(const Request& request, const canonical::CanonicalRequest& canonical);
  // The same for a string of symbol names (tests, benchmarks).
  Result ObserveSymbols(const std::vector<std::string>& symbols);

  struct Stats {
    uint64_t scored = 0, unlikely = 0;
    uint64_t learned = 0;     // requests the learning has taken in (all trees)
    uint64_t learnings = 0;   // automata learned
    uint64_t tree_restarts = 0;
    uint64_t not_learned = 0;  // requests with a symbol past max_symbols
    size_t tree_states = 0, model_states = 0;
    bool baseline = false;
    bool has_model = false;
  };
  Stats stats() const;
  // The threshold in force (0 before the first model).
  double threshold() const { return threshold_; }
  const Automaton& automaton() const { return automaton_; }

 private:
  // The symbol's id, interned while learning (below max_symbols); an id
  // past the automaton's alphabet (the unknown-symbol outcome) otherwise.
  uint32_t Id(const std::string& symbol);
  Result Take(std::span<const uint64_t> cpu_ns);
  void Learn();

  OnlineOptions options_;
  double threshold_ = 0;
  bool learning_ = true;
  std::unordered_map<std::string, uint32_t> ids_;
  // Scoring is in the request path (issue 33: <= 2 us a request), and a
  // request's ~40 symbols are a handful of names repeated: a direct-mapped
  // cache in front of ids_, keyed by a hash of the name's length and its
  // ends and checked by comparing the name, saves most hash-map lookups.
  // It points into ids_ (node keys are stable), which only grows.
  struct CacheSlot {
    const std::string* name = nullptr;
    uint32_t id = 0;
  };
  static constexpr size_t kCacheSlots = 64;
  CacheSlot cache_[kCacheSlots];
  uint32_t next_id_ = 0;
  Automaton automaton_;
  bool has_model_ = false;
  PrefixTree tree_;
  uint64_t since_learn_ = 0;
  bool unlearnable_ = false;  // the string being taken has a symbol past max_symbols
  Stats stats_;
  std::vector<uint32_t> buffer_;
  std::vector<uint64_t> cpu_buffer_;
};

}  // namespace jackdaw::model::likelihood
