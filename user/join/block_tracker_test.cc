#include "join/block_tracker.h"

#include <gtest/gtest.h>

namespace jackdaw::join {
namespace {

TEST(BlockTracker, CompletedRequestsAreNotCounted) {
  Stats st;
  BlockTracker b(st);
  b.Issue(0xa, 100);
  b.Issue(0xb, 200);
  b.Complete(0xa);
  b.Complete(0xb);
  b.Finish(10 * BlockTracker::kEndGraceNs);
  EXPECT_EQ(st.block_completions_missing, 0u);
  EXPECT_EQ(st.block_completions_unseen_at_end, 0u);
}

TEST(BlockTracker, ReissueWithoutCompletionCountsTheLostOne) {
  Stats st;
  BlockTracker b(st);
  b.Issue(0xa, 100);
  b.Issue(0xa, 300);  // the structure reused: the first completion was lost
  EXPECT_EQ(st.block_completions_missing, 1u);
  EXPECT_EQ(b.in_flight(), 1u);
  b.Complete(0xa);
  EXPECT_EQ(b.in_flight(), 0u);
}

TEST(BlockTracker, ExpiryCountsOnlyRequestsOlderThanTheHorizon) {
  Stats st;
  BlockTracker b(st);
  b.Issue(1, 100);
  b.Issue(2, 500);
  b.ExpireBefore(400);
  EXPECT_EQ(st.block_completions_missing, 1u);
  EXPECT_EQ(b.in_flight(), 1u);
  b.Complete(1);  // too late: already counted, and no longer tracked
  EXPECT_EQ(b.in_flight(), 1u);
}

TEST(BlockTracker, AtTheEndRecentRequestsAreUnseenNotMissing) {
  Stats st;
  BlockTracker b(st);
  const uint64_t end = 5 * BlockTracker::kEndGraceNs;
  b.Issue(1, end - 2 * BlockTracker::kEndGraceNs);  // long enough for any device
  b.Issue(2, end - BlockTracker::kEndGraceNs / 2);  // in flight when recording stopped?
  b.Finish(end);
  EXPECT_EQ(st.block_completions_missing, 1u);
  EXPECT_EQ(st.block_completions_unseen_at_end, 1u);
  EXPECT_EQ(b.in_flight(), 0u);
}

TEST(BlockTracker, IssueTimeOfACompletionWhoseIssueWasSeen) {
  jdw_block_complete_record r{};
  r.hdr.type = JDW_EVENT_BLOCK_COMPLETE;
  r.hdr.size = sizeof(r);
  r.hdr.ts = 900;
  r.body.issue_ts = 300;
  uint64_t issue = 0;
  EXPECT_TRUE(BlockTracker::IssueTime(r.hdr, &issue));
  EXPECT_EQ(issue, 300u);
  r.body.issue_ts = 0;  // the capture did not see the issue
  EXPECT_FALSE(BlockTracker::IssueTime(r.hdr, &issue));
  r.body.issue_ts = 901;  // after its own completion: not a start
  EXPECT_FALSE(BlockTracker::IssueTime(r.hdr, &issue));
  r.body.issue_ts = 300;
  r.hdr.size = sizeof(r.hdr) + 8;  // truncated
  EXPECT_FALSE(BlockTracker::IssueTime(r.hdr, &issue));
  r.hdr.size = sizeof(r);
  r.hdr.type = JDW_EVENT_BLOCK_ISSUE;
  EXPECT_FALSE(BlockTracker::IssueTime(r.hdr, &issue));
}

}  // namespace
}  // namespace jackdaw::join
