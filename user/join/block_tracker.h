// Block requests issued and not completed yet (request id -> issue time):
// a completion that never comes is an I/O whose bytes no request can get,
// which the user must be told (Stats::block_completions_missing).
//
// The kernel reuses a request structure once it completed, so an issue of
// an id already in flight means the previous completion was lost. Entries
// older than the join's timeout are expired as lost; at the end of the trace
// the ones issued within kEndGraceNs of the end are counted apart (in
// flight when recording stopped, or lost: the trace cannot tell).
#pragma once

#include <cstdint>

#include "jackdaw/abi.h"
#include "join/flat_map.h"
#include "join/stats.h"

namespace jackdaw::join {

class BlockTracker {
 public:
  // Devices answer in milliseconds: an I/O this old at the end is lost.
  static constexpr uint64_t kEndGraceNs = 1'000'000'000;

  explicit BlockTracker(Stats& stats) : stats_(stats) {}

  // Where a block completion's request began: its issue time, if the capture
  // saw the issue (the completion carries it). The join places a synthetic
  // io_start there, so the request's start is charged to its submitter.
  // Inline: the join asks for every record.
  static bool IssueTime(const jdw_record_header& rec, uint64_t* issue_ts) {
    if (rec.type != JDW_EVENT_BLOCK_COMPLETE || rec.size < sizeof(jdw_block_complete_record)) return false;
    const auto& bc = reinterpret_cast<const jdw_block_complete_record&>(rec);
    *issue_ts = bc.body.issue_ts;
    return *issue_ts != 0 && *issue_ts <= rec.ts;  // 0: the issue was not seen
  }

  void Issue(uint64_t rq, uint64_t ts);
  void Complete(uint64_t rq) { inflight_.Erase(rq); }
  // Requests issued before `horizon` still without a completion: lost.
  void ExpireBefore(uint64_t horizon);
  // End of trace at `now`: classifies and forgets what is left.
  void Finish(uint64_t now);
  size_t in_flight() const { return inflight_.size(); }

 private:
  Stats& stats_;
  FlatMap<uint64_t, uint64_t, U64Hash> inflight_;
};

}  // namespace jackdaw::join
