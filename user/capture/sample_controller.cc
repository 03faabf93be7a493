#include "capture/sample_controller.h"

#include <algorithm>

namespace jackdaw::capture {

SampleController::SampleController(double start_rate, Options o)
    : o_(o), rate_(std::clamp(start_rate, o.min_rate, 1.0)) {}

bool SampleController::Observe(uint64_t now_ns, uint64_t lost_total, double fill, uint64_t waited_ns) {
  const bool lost = started_ && lost_total > lost_seen_;
  lost_seen_ = lost_total;
  if (!started_) {
    started_ = true;
    changed_at_ = last_ns_ = now_ns;
  }
  const uint64_t since_last = now_ns - last_ns_;
  last_ns_ = now_ns;
  // A ring past high_fill after a nap that took most of the interval is
  // the nap's doing (a burst arriving while the reader slept long, idle a
  // moment before), and the pacer shortens the next nap; after a short
  // one the reader itself could not keep up.
  const bool overrun = fill >= o_.high_fill && std::min(waited_ns, since_last) * 2 < since_last;
  if (lost || overrun) {
    calm_since_ = 0;
    // One halving per settle period: the rings need that long to show the
    // lower rate; halving on every drain would reach the floor at once.
    if (rate_ <= o_.min_rate || now_ns - changed_at_ < o_.settle_ns) return false;
    rate_ = std::max(o_.min_rate, rate_ / 2);
    changed_at_ = now_ns;
    return true;
  }
  if (fill >= o_.high_fill / 2 || rate_ >= 1.0) {
    calm_since_ = 0;
    return false;
  }
  if (!calm_since_) {
    // The spell starts now: what came before this call is not part of it.
    calm_since_ = now_ns;
    calm_waited_ns_ = 0;
    return false;
  }
  calm_waited_ns_ += std::min(waited_ns, since_last);
  const uint64_t spell = now_ns - calm_since_;
  if (spell < o_.calm_ns) return false;
  const double busy = 1.0 - double(calm_waited_ns_) / double(spell);
  // A busy reader: the spell starts over, so a raise always rests on the
  // last calm_ns, not on an average with a quieter past.
  calm_since_ = now_ns;
  calm_waited_ns_ = 0;
  if (busy >= o_.raise_busy) return false;
  rate_ = std::min(1.0, rate_ * 2);
  changed_at_ = now_ns;
  calm_since_ = 0;
  return true;
}

}  // namespace jackdaw::capture
