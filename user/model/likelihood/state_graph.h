// The counted states both the prefix tree and the learned automaton are
// made of: how many strings reached a state, how many ended there, and how
// many left it on each symbol and to which state. ALERGIA (alergia.h) turns
// the prefix tree into the automaton by folding states of one graph.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "model/likelihood/running_stats.h"

namespace jackdaw::model::likelihood {

inline constexpr uint32_t kNoState = std::numeric_limits<uint32_t>::max();

struct Transition {
  uint32_t symbol = 0;
  uint32_t target = kNoState;
  uint64_t count = 0;  // strings that took it
};

struct State {
  uint64_t visits = 0;  // strings that reached the state (ends + sum of out counts)
  uint64_t ends = 0;    // of them, strings that ended here
  std::vector<Transition> out;  // sorted by symbol
  // Resource demand of the events that led into the state (CPU ns each):
  // what a request typically spends on reaching this point.
  RunningStats cpu_ns;

  const Transition* Find(uint32_t symbol) const {
    auto it = std::lower_bound(out.begin(), out.end(), symbol,
                               [](const Transition& t, uint32_t s) { return t.symbol < s; });
    return it != out.end() && it->symbol == symbol ? &*it : nullptr;
  }
  Transition* Find(uint32_t symbol) {
    return const_cast<Transition*>(static_cast<const State*>(this)->Find(symbol));
  }
  // The transition on `symbol`, inserted (to kNoState, count 0) if absent.
  Transition& FindOrInsert(uint32_t symbol) {
    auto it = std::lower_bound(out.begin(), out.end(), symbol,
                               [](const Transition& t, uint32_t s) { return t.symbol < s; });
    if (it == out.end() || it->symbol != symbol) it = out.insert(it, Transition{symbol, kNoState, 0});
    return *it;
  }
};

}  // namespace jackdaw::model::likelihood
