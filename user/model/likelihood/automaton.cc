#include "model/likelihood/automaton.h"

#include <cmath>

namespace jackdaw::model::likelihood {

Automaton::Automaton(std::vector<State> states, uint32_t alphabet_size)
    : states_(std::move(states)), alphabet_(alphabet_size), symbol_counts_(alphabet_size, 0) {
  // A state's visits are the strings through it, so summing over states
  // counts each string's symbols once per state they entered from: the
  // symbols' frequencies over the training strings.
  for (const State& s : states_) {
    end_count_ += s.ends;
    for (const Transition& t : s.out)
      if (t.symbol < alphabet_) symbol_counts_[t.symbol] += t.count;
  }
  total_count_ = end_count_;
  uint64_t best = end_count_;
  for (uint32_t a = 0; a < alphabet_; ++a) {
    total_count_ += symbol_counts_[a];
    if (symbol_counts_[a] > best) best = symbol_counts_[a], unigram_best_ = a;
  }
}

size_t Automaton::num_transitions() const {
  size_t n = 0;
  for (const State& s : states_) n += s.out.size();
  return n;
}

double Automaton::Probability(uint32_t state, uint32_t symbol) const {
  // K symbols + end + one bucket for every symbol never seen.
  const double outcomes = static_cast<double>(alphabet_) + 2;
  if (state == kNoState) {
    uint64_t c = 0;
    if (symbol == kEndSymbol) c = end_count_;
    else if (symbol < alphabet_) c = symbol_counts_[symbol];
    return (static_cast<double>(c) + 1) / (static_cast<double>(total_count_) + outcomes);
  }
  const State& s = states_[state];
  const double seen = static_cast<double>(s.out.size() + (s.ends ? 1 : 0));
  const double n = static_cast<double>(s.visits);
  if (n == 0) return 1 / outcomes;
  uint64_t c = 0;
  if (symbol == kEndSymbol) {
    c = s.ends;
  } else if (const Transition* t = s.Find(symbol); t && symbol < alphabet_) {
    c = t->count;
  }
  if (c > 0) return static_cast<double>(c) / (n + seen);
  return seen / ((n + seen) * (outcomes - seen));
}

uint32_t Automaton::MostProbable(uint32_t state) const {
  if (state == kNoState) return unigram_best_;
  const State& s = states_[state];
  uint32_t best = kEndSymbol;
  uint64_t count = s.ends;
  for (const Transition& t : s.out)
    if (t.count > count) count = t.count, best = t.symbol;
  return best;
}

double Automaton::LogProbability(std::span<const uint32_t> symbols, std::vector<Step>* steps) const {
  if (steps) steps->clear();
  double log_sum = 0;
  uint32_t state = states_.empty() ? kNoState : 0;
  for (size_t i = 0; i <= symbols.size(); ++i) {
    const uint32_t symbol = i < symbols.size() ? symbols[i] : kEndSymbol;
    const double p = Probability(state, symbol);
    log_sum += std::log(p);
    if (steps) {
      const uint32_t expected = MostProbable(state);
      steps->push_back(Step{static_cast<uint32_t>(i), state, symbol, p, expected, Probability(state, expected)});
    }
    if (symbol != kEndSymbol) state = Next(state, symbol);
  }
  return log_sum;
}

double Automaton::Score(std::span<const uint32_t> symbols, std::vector<Step>* steps) const {
  return LogProbability(symbols, steps) / static_cast<double>(symbols.size() + 1);
}

}  // namespace jackdaw::model::likelihood
