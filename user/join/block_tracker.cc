#include "join/block_tracker.h"

namespace jackdaw::join {

void BlockTracker::Issue(uint64_t rq, uint64_t ts) {
  bool fresh;
  *inflight_.FindOrInsert(rq, &fresh) = ts;
  // The request structure is reused once completed: issued again without a
  // completion seen, the last one's completion is missing.
  if (!fresh) stats_.block_completions_missing++;
}

void BlockTracker::ExpireBefore(uint64_t horizon) {
  inflight_.EraseIf([&](const uint64_t&, uint64_t& issued) {
    if (issued >= horizon) return false;
    stats_.block_completions_missing++;
    return true;
  });
}

void BlockTracker::Finish(uint64_t now) {
  inflight_.ForEach([&](const uint64_t&, const uint64_t& issued) {
    if (issued + kEndGraceNs < now) {
      stats_.block_completions_missing++;
    } else {
      stats_.block_completions_unseen_at_end++;
    }
  });
  inflight_.Clear();
}

}  // namespace jackdaw::join
