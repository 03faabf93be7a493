#include "model/likelihood/prefix_tree.h"

#include <algorithm>

namespace jackdaw::model::likelihood {

PrefixTree::PrefixTree() : states_(1), parent_{kNoState}, symbol_{0}, depth_{0} {}

uint32_t PrefixTree::Add(std::span<const uint32_t> symbols, std::span<const uint64_t> cpu_ns) {
  uint32_t at = 0;
  ++states_[0].visits;
  for (size_t i = 0; i < symbols.size(); ++i) {
    const uint32_t symbol = symbols[i];
    alphabet_ = std::max(alphabet_, symbol + 1);
    Transition& t = states_[at].FindOrInsert(symbol);
    if (t.target == kNoState) {
      // states_ may reallocate below: keep the index, not the reference.
      const uint32_t child = static_cast<uint32_t>(states_.size());
      t.target = child;
      const uint32_t depth = depth_[at] + 1;
      states_.emplace_back();
      parent_.push_back(at);
      symbol_.push_back(symbol);
      depth_.push_back(depth);
      states_[at].Find(symbol)->count++;
      at = child;
    } else {
      ++t.count;
      at = t.target;
    }
    State& s = states_[at];
    ++s.visits;
    if (!cpu_ns.empty()) s.cpu_ns.Add(static_cast<double>(cpu_ns[i]));
  }
  ++states_[at].ends;
  return at;
}

std::vector<uint32_t> PrefixTree::Path(uint32_t state) const {
  std::vector<uint32_t> path(depth_[state]);
  for (uint32_t s = state; s != 0; s = parent_[s]) path[depth_[s] - 1] = symbol_[s];
  return path;
}

}  // namespace jackdaw::model::likelihood
