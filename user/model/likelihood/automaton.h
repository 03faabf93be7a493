// A probabilistic deterministic finite automaton (PDFA) learned by ALERGIA
// (alergia.h), and the likelihood it gives a string.
//
// Probabilities are the counts of the training strings, smoothed so that a
// string the training never showed still has a finite likelihood:
//  * At a state, the outcomes are the K symbols of the training alphabet,
//    the end of the string, and one "unknown symbol" bucket. Witten-Bell
//    smoothing: with N strings through the state and T distinct outcomes
//    seen there, a seen outcome has count/(N+T) and the mass T/(N+T) is
//    shared equally by the unseen outcomes. The more strings a state saw and
//    the fewer outcomes it had, the less an unseen one is worth; a state seen
//    by 3 strings keeps a quarter for surprises, one seen by 10,000 with two
//    outcomes 0.02 %.
//  * A string that leaves the automaton (a transition it has not got) is
//    scored from then on by the symbols' overall frequencies, Laplace-
//    smoothed over the K+2 outcomes: the model knows nothing of where the
//    string is, only how common each event is.
// The score of a string is its mean log-probability per symbol, the end
// counted as a symbol, so long and short strings compare: 0 for a string
// the model is sure of, log(1/2) = -0.69 for one whose every step was a coin
// toss, lower for rare branches.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/likelihood/state_graph.h"

namespace jackdaw::model::likelihood {

// Symbol id standing for the end of a string in Step::symbol / expected.
inline constexpr uint32_t kEndSymbol = kNoState - 1;

class Automaton {
 public:
  Automaton() = default;
  // `states[0]` is the start state; symbols are below `alphabet_size`.
  Automaton(std::vector<State> states, uint32_t alphabet_size);

  // One step of a scored string: at `state` (kNoState: off the automaton)
  // it took `symbol` (kEndSymbol: it ended) with `probability`, where the
  // most probable outcome was `expected` with `expected_probability`.
  struct Step {
    uint32_t position = 0;  // index in the string (its length for the end)
    uint32_t state = kNoState;
    uint32_t symbol = 0;
    double probability = 0;
    uint32_t expected = 0;
    double expected_probability = 0;
  };

  // Mean log-probability per symbol, the end included (<= 0). Fills
  // `steps`, one per symbol and one for the end, when given.
  double Score(std::span<const uint32_t> symbols, std::vector<Step>* steps = nullptr) const;
  // The natural log of the string's probability (the sum Score() averages).
  double LogProbability(std::span<const uint32_t> symbols, std::vector<Step>* steps = nullptr) const;

  // The smoothed probability of `symbol` (kEndSymbol: ending; >= alphabet:
  // a symbol never seen) at `state` (kNoState: off the automaton).
  double Probability(uint32_t state, uint32_t symbol) const;
  // The state after `symbol` from `state`, kNoState if it has no such
  // transition (or `state` is kNoState).
  uint32_t Next(uint32_t state, uint32_t symbol) const {
    if (state == kNoState) return kNoState;
    const Transition* t = states_[state].Find(symbol);
    return t ? t->target : kNoState;
  }
  // The most probable outcome at `state` (a symbol or kEndSymbol).
  uint32_t MostProbable(uint32_t state) const;

  const std::vector<State>& states() const { return states_; }
  size_t num_states() const { return states_.size(); }
  size_t num_transitions() const;
  uint32_t alphabet_size() const { return alphabet_; }
  uint64_t strings() const { return states_.empty() ? 0 : states_[0].visits; }

 private:
  std::vector<State> states_;
  uint32_t alphabet_ = 0;
  // Off-automaton (unigram) model: each symbol's count over all training
  // strings, the number of ends, and the total of both.
  std::vector<uint64_t> symbol_counts_;
  uint64_t end_count_ = 0;
  uint64_t total_count_ = 0;
  uint32_t unigram_best_ = kEndSymbol;
};

}  // namespace jackdaw::model::likelihood
