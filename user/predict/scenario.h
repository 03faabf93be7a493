// A what-if question put to the recorded workload: which kinds arrive in
// what proportions, and how much each kind's demands change. Checked
// against what the recording knows; every refusal is one line naming the
// cause and the fix.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "predict/simulator.h"
#include "predict/workload.h"

namespace jackdaw::predict {

// --scale KIND:RESOURCE=F: KIND's cpu, disk or wait demand times F.
struct Scale {
  std::string kind;
  std::string resource;  // "cpu", "disk", "wait"
  double factor = 1;
};

// --mix KIND=SHARE: KIND is SHARE (0..1) of the arrivals.
struct MixShare {
  std::string kind;
  double share = 0;
};

StatusOr<Scale> ParseScale(const std::string& text);
StatusOr<MixShare> ParseMix(const std::string& text);

// The simulator's kinds: the recorded ones with their recorded shares, but
// for kinds given a share by `mix` (the others keep their recorded
// proportions of what is left), with `scales` applied. A kind the recording
// never saw, a share outside [0, 1] or shares summing past 1 (or not to 1
// when every kind is given) are refused.
StatusOr<std::vector<SimKind>> MakeKinds(const RecordedWorkload& w, const std::vector<Scale>& scales,
                                         const std::vector<MixShare>& mix);

}  // namespace jackdaw::predict
