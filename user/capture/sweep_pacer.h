// SweepPacer: how long a reader of the rings sleeps before its next sweep.
//
// The rings never wake their reader (a wake-up per record costs more than
// the record), so the reader sleeps between sweeps: as long as the fullest
// ring, filling at the rate the last sweep found, takes to reach a target
// fill, never longer than a maximum nap. From the target on it sweeps again
// at once, so a burst is drained at the reader's full speed, and a steady
// load is drained in batches of the maximum nap.
//
// The recorder naps at most tens of milliseconds (a burst from idle must
// not fill a ring before the next sweep); `jackdaw live` naps up to its
// --drain, because each drain costs it a pass over state that has gone cold
// in between, and it shortens the nap only when the rings fill fast.
#pragma once

#include <cstdint>

namespace jackdaw::capture {

class SweepPacer {
 public:
  // target_fill: the fraction of a ring at which to sweep without sleeping;
  // max_nap_ms: the longest sleep (at least 1); aim_fill (at most
  // target_fill, which it defaults to): the fill a nap is sized to reach.
  // Aiming below the target keeps a steady load from landing on it every
  // other sweep (a nap sized to reach it exactly, then one of 0 ms).
  SweepPacer(double target_fill, int max_nap_ms, double aim_fill = 0);

  // A sweep ended at now_ns and found the fullest ring `fill` full
  // (a fraction of its size, filled since the sweep before).
  void OnSweep(uint64_t now_ns, double fill);

  // Milliseconds to sleep before the next sweep: 0 while a ring reached the
  // target, else the time the fullest ring takes to reach the aim at the
  // last rate, between 1 and max_nap_ms; 1 ms before any interval is known,
  // and after a sweep that found nothing, twice the interval or the nap
  // before, whichever is longer (at most max_nap_ms).
  int NapMs() const { return nap_ms_; }

  int max_nap_ms() const { return max_nap_ms_; }

 private:
  double target_fill_;
  double aim_fill_;
  int max_nap_ms_;
  uint64_t last_sweep_ns_ = 0;
  int nap_ms_ = 1;
  int NextNapMs(uint64_t interval_ns, double fill) const;
};

}  // namespace jackdaw::capture
