#include "capture/sweep_pacer.h"

#include <algorithm>

namespace jackdaw::capture {

SweepPacer::SweepPacer(double target_fill, int max_nap_ms, double aim_fill)
    : target_fill_(target_fill),
      aim_fill_(aim_fill > 0 ? std::min(aim_fill, target_fill) : target_fill),
      max_nap_ms_(std::max(1, max_nap_ms)) {}

void SweepPacer::OnSweep(uint64_t now_ns, double fill) {
  const uint64_t interval_ns = last_sweep_ns_ && now_ns > last_sweep_ns_ ? now_ns - last_sweep_ns_ : 0;
  last_sweep_ns_ = now_ns;
  nap_ms_ = NextNapMs(interval_ns, fill);
}

int SweepPacer::NextNapMs(uint64_t interval_ns, double fill) const {
  if (fill >= target_fill_) return 0;
  // Nothing yet, or nothing since a sweep moments ago, says little about
  // the rate: a sweep straight after draining a burst finds the ring empty
  // while the burst goes on. The nap grows from 1 ms, doubling while the
  // sweeps find nothing, so an idle ring still reaches the longest nap
  // within about a second, and a full-speed one is never left a whole
  // longest nap unread (a 256 KB ring fills in 25 ms at nginx's rate). A
  // sweep woken early (a control request) that finds nothing keeps the
  // nap it had: an empty short interval is no news.
  if (interval_ns == 0) return std::max(1, nap_ms_);
  if (fill <= 0)
    return static_cast<int>(
        std::clamp(std::max(2.0 * double(interval_ns) / 1e6, double(nap_ms_)), 1.0, double(max_nap_ms_)));
  const double ms_to_aim = double(interval_ns) * (aim_fill_ / fill) / 1e6;
  return static_cast<int>(std::clamp(ms_to_aim, 1.0, double(max_nap_ms_)));
}

}  // namespace jackdaw::capture
