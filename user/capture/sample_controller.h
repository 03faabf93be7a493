// The head-sampling rate under `--sample auto`: the share of connections
// recorded whole (bpf/jackdaw.bpf.h, "head sampling"), halved when the
// rings lose records or fill past half, doubled again after a calm spell.
//
// Whole requests under overload rather than every request in part: a lost
// record damages the request it belonged to (and, through CPU and wake-up
// accounting, its neighbours), so the reader's capacity is better spent on
// fewer connections recorded completely. Like SysProf's adaptive
// granularity, the rate follows the load: it falls as soon as the reader is
// overrun and rises only when a doubled rate would still leave the rings
// well below half full, so it does not oscillate.
#pragma once

#include <cstdint>

namespace jackdaw::capture {

class SampleController {
 public:
  struct Options {
    double min_rate = 1.0 / 64;
    double high_fill = 0.5;    // a ring this full: lower the rate
    double low_fill = 0.0625;  // fuller than this, twice the rate would risk high_fill
    uint64_t settle_ns = 250'000'000;  // after a change, before lowering again
    uint64_t calm_ns = 5'000'000'000;  // no loss, rings below low_fill: raise
  };

  explicit SampleController(double start_rate = 1.0) : SampleController(start_rate, Options{}) {}
  SampleController(double start_rate, Options o);

  // After a drain: the cumulative count of records lost and the fullest
  // ring's fill (0..1) found by it. True when the rate changed.
  bool Observe(uint64_t now_ns, uint64_t lost_total, double fill);
  double rate() const { return rate_; }

 private:
  Options o_;
  double rate_;
  uint64_t lost_seen_ = 0;
  bool started_ = false;
  uint64_t changed_at_ = 0;
  uint64_t calm_since_ = 0;  // 0: not calm
};

}  // namespace jackdaw::capture
