// The JSON form of loss intervals (trace/loss_intervals.h), as the recorder
// writes them and the reader appends them.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "trace/loss_intervals.h"

namespace jackdaw::trace {
inline nlohmann::json LossIntervalsJson(const std::vector<LossInterval>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (const LossInterval& l : v) a.push_back({l.cpu, l.group, l.from_ns, l.to_ns, l.lost});
  return a;
}

// Appends the well-formed intervals of `j` to `out`; false if any was not.
inline bool AppendLossIntervals(const nlohmann::json& j, std::vector<LossInterval>* out) {
  if (!j.is_array()) return false;
  bool ok = true;
  for (const auto& e : j) {
    if (!e.is_array() || e.size() != 5) {
      ok = false;
      continue;
    }
    bool num = true;
    for (const auto& x : e) num = num && x.is_number_unsigned();
    if (!num || e[2].get<uint64_t>() > e[3].get<uint64_t>()) {
      ok = false;
      continue;
    }
    out->push_back(LossInterval{e[0].get<uint32_t>(), e[1].get<uint32_t>(), e[2].get<uint64_t>(),
                                e[3].get<uint64_t>(), e[4].get<uint64_t>()});
  }
  return ok;
}

}  // namespace jackdaw::trace
