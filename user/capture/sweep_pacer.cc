#include "capture/sweep_pacer.h"

#include <algorithm>

namespace jackdaw::capture {

SweepPacer::SweepPacer(double target_fill, int max_nap_ms, double aim_fill)
    : target_fill_(target_fill),
      aim_fill_(aim_fill > 0 ? std::min(aim_fill, target_fill) : target_fill),
      max_nap_ms_(std::max(1, max_nap_ms)) {}

void SweepPacer::OnSweep(uint64_t now_ns, double fill) {
  interval_ns_ = last_sweep_ns_ && now_ns > last_sweep_ns_ ? now_ns - last_sweep_ns_ : 0;
  last_sweep_ns_ = now_ns;
  last_fill_ = fill;
}

int SweepPacer::NapMs() const {
  if (last_fill_ >= target_fill_) return 0;
  if (last_fill_ <= 0 || interval_ns_ == 0) return max_nap_ms_;
  const double ms_to_aim = double(interval_ns_) * (aim_fill_ / last_fill_) / 1e6;
  return static_cast<int>(std::clamp(ms_to_aim, 1.0, double(max_nap_ms_)));
}

}  // namespace jackdaw::capture
