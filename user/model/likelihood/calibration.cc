#include "model/likelihood/calibration.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace jackdaw::model::likelihood {

double CalibratedThreshold(const PrefixTree& tree, const Automaton& automaton, double quantile) {
  std::vector<std::pair<double, uint64_t>> scored;  // (score, times seen)
  uint64_t total = 0;
  const auto& states = tree.states();
  for (uint32_t s = 0; s < states.size(); ++s) {
    if (states[s].ends == 0) continue;
    scored.emplace_back(automaton.Score(tree.Path(s)), states[s].ends);
    total += states[s].ends;
  }
  if (scored.empty()) return 0;
  std::sort(scored.begin(), scored.end());
  // The lowest score with more than `quantile` of the strings at or below
  // it: fewer than that share score strictly below.
  const double below = quantile * double(total);
  uint64_t seen = 0;
  for (const auto& [score, n] : scored) {
    seen += n;
    if (double(seen) > below) return score;
  }
  return scored.back().first;
}

}  // namespace jackdaw::model::likelihood
