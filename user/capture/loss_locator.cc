#include "capture/loss_locator.h"

#include <algorithm>

namespace jackdaw::capture {

void LossLocator::Observe(uint64_t now_ns, const std::vector<std::vector<uint64_t>>& counts, uint64_t drain_from_ns) {
  if (last_.size() < counts.size()) last_.resize(counts.size());
  for (size_t cpu = 0; cpu < counts.size(); ++cpu) {
    std::vector<uint64_t>& before = last_[cpu];
    if (before.size() < counts[cpu].size()) before.resize(counts[cpu].size(), 0);
    for (size_t g = 0; g < counts[cpu].size(); ++g) {
      // Counters only grow; a smaller one is a reset backend: nothing lost.
      if (counts[cpu][g] > before[g]) {
        new_.push_back(trace::LossInterval{static_cast<uint32_t>(cpu), static_cast<uint32_t>(g), last_ns_, now_ns,
                                           counts[cpu][g] - before[g]});
        ++intervals_;
      }
      before[g] = counts[cpu][g];
    }
  }
  last_ns_ = std::min(drain_from_ns, now_ns);
}

}  // namespace jackdaw::capture
