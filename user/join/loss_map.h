// The capture's loss intervals (trace/loss_intervals.h) as the join asks
// about them: per CPU, merged into disjoint intervals sorted by time, once
// for the probe groups the schema's join needs (a request that ran on a CPU
// while such records were lost is incomplete) and once for the sched group
// alone (a thread the sched records have on CPU across such a loss may have
// left it: its run there is unknown). Intervals are in CLOCK_MONOTONIC ns,
// the join's time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "jackdaw/abi.h"
#include "trace/loss_intervals.h"

namespace jackdaw::join {

// The probe group of a record type (JDW_GROUP_MAX for none).
inline uint32_t GroupOfRecordType(uint16_t type) {
  switch (type) {
#define JDW_LOSS_MAP_GROUP(name, id, group, str, fields, st) \
  case id:                                                   \
    return JDW_GROUP_##group;
    JDW_EVENT_TABLE(JDW_LOSS_MAP_GROUP)
#undef JDW_LOSS_MAP_GROUP
    default:
      return JDW_GROUP_MAX;
  }
}

class LossMap {
 public:
  LossMap() = default;
  // The intervals of `all` whose group is in `groups` (bit per JDW_GROUP_*).
  LossMap(const std::vector<trace::LossInterval>& all, uint32_t groups) {
    for (const trace::LossInterval& l : all) {
      if (l.group >= 32 || !(groups & (1u << l.group))) continue;
      if (l.cpu >= by_cpu_.size()) by_cpu_.resize(size_t{l.cpu} + 1);
      by_cpu_[l.cpu].push_back(Span{l.from_ns, l.to_ns});
      empty_ = false;
    }
    for (std::vector<Span>& v : by_cpu_) {
      std::sort(v.begin(), v.end(), [](const Span& a, const Span& b) { return a.from < b.from; });
      std::vector<Span> merged;
      for (const Span& s : v) {
        if (!merged.empty() && s.from <= merged.back().to) {
          merged.back().to = std::max(merged.back().to, s.to);
        } else {
          merged.push_back(s);
        }
      }
      v.swap(merged);
    }
  }
  bool empty() const { return empty_; }
  // Whether records of `cpu` were lost at some time in [from, to].
  bool Touches(uint32_t cpu, uint64_t from, uint64_t to) const {
    if (cpu >= by_cpu_.size()) return false;
    const std::vector<Span>& v = by_cpu_[cpu];
    // Disjoint and sorted: the first one ending at or after `from` is the
    // only candidate.
    auto it = std::lower_bound(v.begin(), v.end(), from, [](const Span& s, uint64_t t) { return s.to < t; });
    return it != v.end() && it->from <= to;
  }

 private:
  struct Span {
    uint64_t from, to;
  };
  std::vector<std::vector<Span>> by_cpu_;
  bool empty_ = true;
};

}  // namespace jackdaw::join
