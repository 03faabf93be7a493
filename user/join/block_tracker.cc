#include "join/block_tracker.h"

namespace jackdaw::join {

bool BlockTracker::IssueTime(const jdw_record_header& rec, uint64_t* issue_ts) {
  if (rec.type != JDW_EVENT_BLOCK_COMPLETE || rec.size < sizeof(jdw_block_complete_record)) return false;
  const auto& bc = reinterpret_cast<const jdw_block_complete_record&>(rec);
  *issue_ts = bc.body.issue_ts;
  return *issue_ts != 0 && *issue_ts <= rec.ts;  // 0: the issue was not seen
}

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
