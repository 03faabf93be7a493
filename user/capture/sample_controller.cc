#include "capture/sample_controller.h"

#include <algorithm>

namespace jackdaw::capture {

SampleController::SampleController(double start_rate, Options o)
    : o_(o), rate_(std::clamp(start_rate, o.min_rate, 1.0)) {}

bool SampleController::Observe(uint64_t now_ns, uint64_t lost_total, double fill) {
  const bool lost = started_ && lost_total > lost_seen_;
  lost_seen_ = lost_total;
  if (!started_) {
    started_ = true;
    changed_at_ = now_ns;
  }
  if (lost || fill >= o_.high_fill) {
    calm_since_ = 0;
    // One halving per settle period: the rings need that long to show the
    // lower rate; halving on every drain would reach the floor at once.
    if (rate_ <= o_.min_rate || now_ns - changed_at_ < o_.settle_ns) return false;
    rate_ = std::max(o_.min_rate, rate_ / 2);
    changed_at_ = now_ns;
    return true;
  }
  if (fill >= o_.low_fill || rate_ >= 1.0) {
    calm_since_ = 0;
    return false;
  }
  if (!calm_since_) calm_since_ = now_ns;
  if (now_ns - calm_since_ < o_.calm_ns) return false;
  rate_ = std::min(1.0, rate_ * 2);
  changed_at_ = now_ns;
  calm_since_ = 0;
  return true;
}

}  // namespace jackdaw::capture
