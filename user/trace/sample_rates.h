// Head sampling as a trace records it (record --sample): the header's
// "sample" {"mode": "off" | "fixed" | "auto", "rate": R} and, in meta chunks
// and the footer, "sample_rates": [[mono ns, rate], ...], each change once,
// in time order, the first at the recording's start, and
// "sample_left_out_exchanges". A trace without them recorded every
// connection.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace jackdaw::trace {

struct SampleRates {
  std::string mode = "off";
  std::vector<std::pair<uint64_t, double>> changes;  // (mono ns, share of connections recorded)
  // "sample_left_out_exchanges" (cumulative, in meta chunks and the
  // footer): the exchanges the connections left out of the sample made, as
  // the kernel counted them. nullopt in traces from before the count.
  std::optional<uint64_t> left_out_exchanges;

  bool on() const { return mode != "off"; }
  // The rate in force at `ts` (the first one before the first change).
  double RateAt(uint64_t ts) const {
    if (changes.empty()) return 1.0;
    auto it = std::upper_bound(changes.begin(), changes.end(), ts,
                               [](uint64_t t, const std::pair<uint64_t, double>& c) { return t < c.first; });
    return it == changes.begin() ? changes.front().second : std::prev(it)->second;
  }
  double Lowest() const {
    double r = 1.0;
    for (const auto& c : changes) r = std::min(r, c.second);
    return r;
  }
};

}  // namespace jackdaw::trace
