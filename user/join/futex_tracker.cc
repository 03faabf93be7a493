#include "join/futex_tracker.h"

namespace jackdaw::join {
namespace {

// futex(2) op numbers (linux/futex.h); the command is the low 7 bits.
constexpr uint64_t kFutexCmdMask = 127;  // FUTEX_PRIVATE_FLAG (128), FUTEX_CLOCK_REALTIME (256) off
constexpr uint64_t kFutexWake = 1, kFutexRequeue = 3, kFutexCmpRequeue = 4, kFutexWakeOp = 5,
                   kFutexWakeBitset = 10;

}  // namespace

bool FutexTracker::IsWake(uint64_t op) {
  switch (op & kFutexCmdMask) {
    case kFutexWake:
    case kFutexRequeue:
    case kFutexCmpRequeue:
    case kFutexWakeOp:
    case kFutexWakeBitset:
      return true;
    default:
      return false;
  }
}

void FutexTracker::Sleep(uint64_t uaddr, uint32_t tid) {
  bool inserted;
  Sleepers& s = *sleepers_.FindOrInsert(uaddr, &inserted);
  if (inserted) s.count = 0;
  s.count++;
  s.tid = tid;
}

void FutexTracker::Leave(uint64_t uaddr) {
  const size_t at = sleepers_.FindIndex(uaddr);
  if (at == sleepers_.kNpos) return;
  Sleepers& s = sleepers_.ValueAt(at);
  if (s.count <= 1) {
    sleepers_.EraseAt(at);
  } else {
    s.count--;
  }
}

uint32_t FutexTracker::SoleSleeper(uint64_t uaddr) const {
  const Sleepers* s = uaddr ? sleepers_.Find(uaddr) : nullptr;
  return s && s->count == 1 ? s->tid : 0;
}

}  // namespace jackdaw::join
