#include "validate/real_interactions.h"

#include <gtest/gtest.h>

namespace jackdaw::validate {
namespace {

jdw_interaction Ia(uint16_t rport, uint64_t start, uint64_t end, uint8_t flags = 0) {
  jdw_interaction ia{};
  ia.role = JDW_ROLE_SERVER;
  ia.rport = rport;
  ia.lport = 80;
  ia.req_start = start;
  ia.req_end = start + 1;
  ia.resp_start = start + 2;
  ia.resp_end = end;
  ia.flags = flags;
  return ia;
}

TruthEntry Sent(uint16_t port, uint64_t send, uint64_t recv) {
  TruthEntry t;
  t.client_port = port;
  t.send_mono_ns = send;
  t.recv_mono_ns = recv;
  return t;
}

TEST(MatchOneToOne, KeepAliveRequestsPairByTimeOnOneConnection) {
  // Three requests on one connection, disjoint in time, and one on another.
  std::vector<ConnSpan> left = {{{5000}, 100, 200}, {{5000}, 300, 400}, {{5000}, 500, 600}, {{5001}, 100, 200}};
  std::vector<ConnSpan> right = {{{5000}, 510, 590}, {{5000}, 110, 190}, {{5001}, 120, 180}, {{5000}, 310, 390}};
  OneToOne m = MatchOneToOne(left, right);
  EXPECT_EQ(m.one_to_one, 4u);
  EXPECT_EQ(m.left_unmatched + m.left_multi + m.right_unmatched + m.right_multi, 0u);
  std::vector<std::pair<size_t, size_t>> want = {{0, 1}, {1, 3}, {2, 0}, {3, 2}};
  EXPECT_EQ(m.pairs, want);
}

TEST(MatchOneToOne, MergedSplitAndExtraAreNotOneToOne) {
  // left 0 and 1 are merged into right 0; left 2 is split over right 1, 2;
  // right 3 is on a connection nobody sent on; left 3 matches nothing.
  std::vector<ConnSpan> left = {{{1}, 100, 200}, {{1}, 210, 300}, {{2}, 100, 300}, {{4}, 0, 10}};
  std::vector<ConnSpan> right = {{{1}, 100, 300}, {{2}, 100, 200}, {{2}, 200, 300}, {{3}, 100, 200}};
  OneToOne m = MatchOneToOne(left, right);
  EXPECT_EQ(m.one_to_one, 0u);
  EXPECT_EQ(m.left_unmatched, 1u);
  EXPECT_EQ(m.left_multi, 1u);   // left 2
  EXPECT_EQ(m.right_multi, 1u);  // right 0
  EXPECT_EQ(m.right_unmatched, 1u);
}

TEST(MatchOneToOne, ABriefOverlapAtTheEdgeIsNoMatch) {
  // The next request on the connection starts just before this one ends:
  // under half of the shorter interval in common.
  OneToOne m = MatchOneToOne({{{7}, 100, 200}}, {{{7}, 190, 400}});
  EXPECT_EQ(m.left_unmatched, 1u);
  // A point inside the other matches.
  m = MatchOneToOne({{{7}, 150, 150}}, {{{7}, 100, 200}});
  EXPECT_EQ(m.one_to_one, 1u);
}

TEST(CompareInteractions, CountsTruthJoinAndTiming) {
  std::vector<TruthEntry> truth = {Sent(5000, 1'000'000, 9'000'000), Sent(5000, 10'000'000, 19'000'000),
                                   Sent(5001, 1'000'000, 3'000'000)};
  std::vector<jdw_interaction> ias = {
      Ia(5000, 2'000'000, 8'000'000),
      Ia(5000, 11'000'000, 19'500'000),               // ends 0.5 ms after the client saw it: inside 1 ms
      Ia(5001, 1'200'000, 4'500'000, JDW_IA_PARTIAL),  // ends 1.5 ms late: not inside
  };
  // The join merged the two requests of port 5000, and found the third.
  std::vector<ConnSpan> requests = {{{80, 5000}, 1'500'000, 19'000'000}, {{80, 5001}, 1'100'000, 4'000'000}};
  InteractionAgreement a = CompareInteractions(truth, ias, requests);
  EXPECT_EQ(a.truth.one_to_one, 3u);
  EXPECT_EQ(a.inside_1ms, 2u);
  EXPECT_EQ(a.flagged, 1u);
  EXPECT_EQ(a.join.one_to_one, 1u);
  EXPECT_EQ(a.join.right_multi, 1u);
}

TEST(CompareInteractions, AConnectionsSetUpExchangeIsNamedNotMatchedToARequest) {
  // A PostgreSQL-like connection: the startup exchange, then one query.
  std::vector<TruthEntry> truth = {Sent(5000, 10'000'000, 12'000'000)};
  std::vector<TruthEntry> setups = {Sent(5000, 1'000'000, 5'000'000)};
  std::vector<jdw_interaction> ias = {Ia(5000, 1'500'000, 4'800'000), Ia(5000, 10'200'000, 11'800'000)};
  std::vector<ConnSpan> requests = {{{80, 5000}, 1'500'000, 4'800'000}, {{80, 5000}, 10'200'000, 11'800'000}};
  InteractionAgreement a = CompareInteractions(truth, ias, requests, setups);
  EXPECT_EQ(a.truth.one_to_one, 1u);
  EXPECT_EQ(a.truth.right_unmatched, 1u);
  EXPECT_EQ(a.setup, 1u);
  EXPECT_EQ(a.join.one_to_one, 2u);
  EXPECT_EQ(CompareInteractions(truth, ias, requests).setup, 0u);
}

TEST(InteractionsPathFor, SitsBesideTheTrace) {
  EXPECT_EQ(InteractionsPathFor("/tmp/x/nginx-close_r0.jdw"), "/tmp/x/nginx-close_r0.ia.jdw");
  EXPECT_EQ(InteractionsLogFor("/tmp/x/nginx-close_r0.jdw"), "/tmp/x/nginx-close_r0.ia.log");
}

}  // namespace
}  // namespace jackdaw::validate
