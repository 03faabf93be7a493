// Futex wake-ups, for remote wake-ups the kernel records without their
// waker. A wakeup of a thread whose CPU is idle is queued to that CPU and
// runs there in the IPI handler (ttwu_queue): its sched_wakeup names the
// idle task, in interrupt context, not the thread that asked for it. For a
// futex sleeper the futex address names the waker: the last thread that
// called a FUTEX_WAKE-like operation on that address.
//
// Keeps, per futex address, the last wake call (expired after the join's
// timeout) and the threads asleep there (how many, and the last one), so
// that a wake returning "woke 1" with exactly one sleeper identifies the
// wakee before the kernel's record arrives.
#pragma once

#include <cstdint>

#include "join/flat_map.h"

namespace jackdaw::join {

class FutexTracker {
 public:
  struct Wake {
    uint64_t ts;
    uint32_t tid, tgid;
  };

  // FUTEX_WAKE, _REQUEUE, _CMP_REQUEUE, _WAKE_OP, _WAKE_BITSET (the op
  // argument, flags masked off).
  static bool IsWake(uint64_t op);

  void NoteWake(uint64_t uaddr, const Wake& w) {
    bool inserted;
    *wakes_.FindOrInsert(uaddr, &inserted) = w;
  }
  // The last wake call on `uaddr`, or nullptr.
  const Wake* LastWake(uint64_t uaddr) const { return wakes_.Find(uaddr); }

  // Thread `tid` goes to sleep on `uaddr` (!= 0) / leaves it.
  void Sleep(uint64_t uaddr, uint32_t tid);
  void Leave(uint64_t uaddr);
  // The one thread asleep on `uaddr`; 0 if none or several.
  uint32_t SoleSleeper(uint64_t uaddr) const;

  void ExpireWakesBefore(uint64_t horizon) {
    wakes_.EraseIf([&](const uint64_t&, Wake& w) { return w.ts < horizon; });
  }

 private:
  struct Sleepers {
    uint32_t count;
    uint32_t tid;  // the last one to fall asleep
  };
  FlatMap<uint64_t, Wake, U64Hash> wakes_;
  FlatMap<uint64_t, Sleepers, U64Hash> sleepers_;
};

}  // namespace jackdaw::join
