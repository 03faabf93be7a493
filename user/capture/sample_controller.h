// The head-sampling rate under `--sample auto`: the share of connections
// recorded whole (bpf/jackdaw.bpf.h, "head sampling"), halved when the
// rings lose records or fill past half while the reader was busy (not
// after a long nap, which the sweep pacer shortens by itself), doubled
// again after a calm spell in which the reader had the room for twice the
// records.
//
// Whole requests under overload rather than every request in part: a lost
// record damages the request it belonged to (and, through CPU and wake-up
// accounting, its neighbours), so the reader's capacity is better spent on
// fewer connections recorded completely. Like SysProf's adaptive
// granularity, the rate follows the load: it falls as soon as the reader is
// overrun and rises only when a doubled rate would still leave the reader
// in time, so it does not oscillate.
//
// Room to double is judged by what the reader does, not by how full it
// lets the rings get between sweeps: the sweep pacer naps until a ring is
// about a sixteenth full whatever the rate, so the fill at a sweep says
// little about the rate. What doubles with the rate is the reader's work:
// a spell in which the reader was busy (not waiting for the rings) less
// than `raise_busy` of the time, and no ring got half as full as
// `high_fill` (a stall of the reader as long as the worst of the spell
// would, at twice the rate, fill a ring that far), can take twice the rate.
#pragma once

#include <cstdint>

namespace jackdaw::capture {

class SampleController {
 public:
  struct Options {
    double min_rate = 1.0 / 64;
    double high_fill = 0.5;    // a ring this full: lower the rate
    double raise_busy = 0.4;   // the reader busy less than this share of a calm spell: raise
    uint64_t settle_ns = 250'000'000;  // after a change, before lowering again
    uint64_t calm_ns = 5'000'000'000;  // no loss, rings below low_fill: raise
  };

  explicit SampleController(double start_rate = 1.0) : SampleController(start_rate, Options{}) {}
  SampleController(double start_rate, Options o);

  // After a drain: the cumulative count of records lost, the fullest
  // ring's fill (0..1) found by it, and how long the reader waited for
  // the rings (napped) since the previous call. True when the rate changed.
  bool Observe(uint64_t now_ns, uint64_t lost_total, double fill, uint64_t waited_ns);
  double rate() const { return rate_; }

 private:
  Options o_;
  double rate_;
  uint64_t lost_seen_ = 0;
  bool started_ = false;
  uint64_t changed_at_ = 0;
  uint64_t last_ns_ = 0;
  uint64_t calm_since_ = 0;  // 0: not calm
  uint64_t calm_waited_ns_ = 0;  // of the calm spell
};

}  // namespace jackdaw::capture
