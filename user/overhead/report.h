// What `jackdaw overhead` prints: per configuration and tracer, the median
// (min-max) cost, the ratio to untraced with its confidence interval,
// events captured and lost, events/s, added ns per event and bytes per
// event, and a warning where the noise is larger than the effect.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "overhead/harness.h"

namespace jackdaw::overhead {

// The machine-readable report (schema "jackdaw-overhead/1").
nlohmann::json ReportJson(const std::string& workload, const HarnessOptions& opts,
                          const std::vector<ConfigResult>& results);
// The same as a text table.
std::string ReportText(const nlohmann::json& report);

}  // namespace jackdaw::overhead
