// Per-request likelihood (Magpie HotOS 2003 §4.2, the "Bayesian watchdog"):
// the requests' canonical event strings (canonical/canonical.h, the symbol
// of each canonical event in serialization order, as the clustering reads
// them) train a probabilistic automaton with ALERGIA (alergia.h), and each
// request is scored by the mean log-probability per event of its string
// (automaton.h), so long and short requests compare.
//
// Requests arrive one at a time (the join's order) and only the prefix tree
// and one tree state per request are kept: memory grows with the distinct
// prefixes, not with the events. Learn() once the stream ends; then every
// request has its score (incomplete requests, which the model keeps out,
// have none) and the least likely can be explained step by step.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "canonical/canonical.h"
#include "canonical/serialize.h"
#include "model/likelihood/alergia.h"
#include "model/likelihood/likelihood_report.h"
#include "model/likelihood/prefix_tree.h"
#include "request/request.h"

namespace jackdaw::model::likelihood {

struct LikelihoodOptions {
  double alpha = 0.05;          // ALERGIA's merge test (alergia.h)
  uint32_t unlikely = 10;       // requests in the ranked list
  uint32_t steps_per_request = 3;  // unlikely steps shown per request
};

class RequestLikelihood {
 public:
  RequestLikelihood(const canonical::CanonicalOptions& canonical, const LikelihoodOptions& options);

  // In arrival order; an incomplete request is counted (it has an arrival
  // number) but not learned or scored.
  void Add(const Request& request);
  // Adds an already canonical string (tests, benchmarks, other front ends).
  void AddSymbols(uint64_t request_id, const std::vector<std::string>& symbols,
                  const std::vector<uint64_t>& cpu_ns = {});
  void Learn();

  size_t arrivals() const { return ids_.size(); }
  // Score of the request that arrived `arrival`-th (after Learn()).
  std::optional<double> ScoreAt(size_t arrival) const;
  // Scores of the requests with these ids (one pass over the arrivals):
  // for the few requests a report lists.
  std::vector<std::optional<double>> ScoresOf(const std::vector<uint64_t>& ids) const;
  // The ranked list and the model's size (after Learn()).
  LikelihoodSummary Summary() const;
  const Automaton& automaton() const { return learned_.automaton; }
  const PrefixTree& tree() const { return tree_; }

 private:
  UnlikelyRequest Explain(size_t arrival) const;
  std::string SymbolName(uint32_t symbol) const;

  canonical::Canonicalizer canonicalize_;
  LikelihoodOptions options_;
  canonical::SymbolTable symbols_;
  PrefixTree tree_;
  std::vector<uint64_t> ids_;    // per arrival
  std::vector<uint32_t> nodes_;  // per arrival: its tree state (kNoState: not learned)
  Learned learned_;
  std::vector<double> node_score_;  // per tree state: the score of a string ending there
  double learn_seconds_ = 0;
  bool learned_done_ = false;
  std::vector<uint32_t> buffer_;
  std::vector<uint64_t> cpu_buffer_;
};

}  // namespace jackdaw::model::likelihood
