// Per-request likelihood (Magpie HotOS 2003 §4.2, the "Bayesian watchdog"):
// the requests' canonical event strings (canonical/canonical.h, the symbol
// of each canonical event in serialization order, as the clustering reads
// them) train a probabilistic automaton with ALERGIA (alergia.h), and each
// request is scored by the mean log-probability per event of its string
// (automaton.h), so long and short requests compare.
//
// Requests arrive one at a time (the join's order) and only the prefix tree
// is kept: Add() returns the tree state the request's string ended at, and
// every request that ended there has the same score (ScoreOfState(), after
// Learn()). A caller that needs a score per request keeps that state (the
// --requests spool carries it on each line); the ranked list keeps, per
// tree state, the `unlikely` smallest ids of the requests that ended there. Memory
// grows with the distinct canonical strings, not with the requests.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "canonical/canonical.h"
#include "canonical/serialize.h"
#include "model/likelihood/alergia.h"
#include "model/likelihood/likelihood_report.h"
#include "model/likelihood/prefix_tree.h"
#include "request/request.h"

namespace jackdaw::model::likelihood {

struct LikelihoodOptions {
  double alpha = 0.05;             // ALERGIA's merge test (alergia.h)
  uint32_t unlikely = 10;          // requests in the ranked list
  uint32_t steps_per_request = 3;  // unlikely steps shown per request
};

class RequestLikelihood {
 public:
  RequestLikelihood(const canonical::CanonicalOptions& canonical, const LikelihoodOptions& options);

  // Learns from the request; returns the tree state its string ended at,
  // kNoState for an incomplete request (kept out, as the model keeps it).
  uint32_t Add(const Request& request);
  // The same with its canonical form already made (with the options this
  // was constructed with), so a caller that needs it too makes it once.
  uint32_t Add(const Request& request, const canonical::CanonicalRequest& canonical);
  // Adds an already canonical string (tests, benchmarks, other front ends).
  uint32_t AddSymbols(uint64_t request_id, const std::vector<std::string>& symbols,
                      const std::vector<uint64_t>& cpu_ns = {});
  void Learn();

  // After Learn(): the score of every request whose string ended at `state`
  // (an Add() result; none for kNoState).
  std::optional<double> ScoreOfState(uint32_t state) const;
  // After Learn(): a request scored afresh (the same value as its Add()
  // state's when it was learned; none if it is incomplete).
  std::optional<double> Score(const Request& request);
  // The ranked list and the model's size (after Learn()).
  LikelihoodSummary Summary() const;
  const Automaton& automaton() const { return learned_.automaton; }
  const PrefixTree& tree() const { return tree_; }

 private:
  uint32_t AddString(uint64_t request_id, std::span<const uint64_t> cpu_ns);
  UnlikelyRequest Explain(uint64_t request_id, uint32_t state) const;
  std::string SymbolName(uint32_t symbol) const;
  void Encode(const canonical::CanonicalRequest& c);

  canonical::Canonicalizer canonicalize_;
  LikelihoodOptions options_;
  canonical::SymbolTable symbols_;
  PrefixTree tree_;
  // Per tree state where strings ended: the `unlikely` smallest ids of the
  // requests that did (a max-heap; ties rank by id), all a ranked list can
  // need from it.
  std::unordered_map<uint32_t, std::vector<uint64_t>> ended_;
  Learned learned_;
  std::vector<double> state_score_;  // per tree state: the score of a string ending there
  double learn_seconds_ = 0;
  std::optional<double> unlikely_below_;
  bool learned_done_ = false;
  std::vector<uint32_t> buffer_;
  std::vector<uint64_t> cpu_buffer_;
};

}  // namespace jackdaw::model::likelihood
