#include "cluster/distance.h"

#include "cluster/cluster.h"  // kFloorThreshold

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace jackdaw::cluster {
namespace {

using canonical::Demand;
using canonical::SerializedRequest;
using canonical::Token;

SerializedRequest Req(std::vector<Token> tokens) {
  SerializedRequest r;
  r.tokens = std::move(tokens);
  for (const Token& t : r.tokens) r.total += t.demand;
  return r;
}

Token T(uint32_t sym, uint64_t cpu_ns = 0, uint64_t disk = 0, uint64_t net = 0) {
  return Token{sym, Demand{cpu_ns, disk, net}};
}

// Symbol cost 1 keeps the arithmetic in these tests obvious; the log term
// on totals is off here and tested on its own below.
const Normalization kMs{1e6, 4096, 4096, 1.0, 0.0};

NormString N(std::vector<Token> tokens, const Normalization& n = kMs) {
  return Normalize(Req(std::move(tokens)), n);
}

NormString Random(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> len(0, 12), sym(0, 4), cpu(0, 5'000'000), bytes(0, 3);
  std::vector<Token> t;
  int n = len(rng);
  for (int i = 0; i < n; ++i)
    t.push_back(T(sym(rng), cpu(rng), bytes(rng) * 4096u, bytes(rng) == 3 ? 1500u : 0u));
  return N(std::move(t));
}

// Responses of 5 KB, 12 KB and 256 KB (plus a 300 B request) with the
// scales a mix of them derives: the linear part alone puts 5 KB and 12 KB a
// few hundredths of a unit apart; with the log term on totals the two are as
// clearly apart as a doubling, and 256 KB further still.
TEST(DistanceTest, TotalsOnALogScaleSeparateSmallKindsBesideALargeOne) {
  std::vector<SerializedRequest> mix;
  for (uint64_t kb : {5, 12, 256}) mix.push_back(Req({T(0, 50'000, 0, 300), T(1, 30'000, 0, kb * 1024)}));
  Normalization norm = DeriveNormalization(mix);
  Normalization linear = norm;
  linear.totals_weight = 0;
  auto d = [&](size_t i, size_t j, const Normalization& n) {
    return Distance(Normalize(mix[i], n), Normalize(mix[j], n));
  };
  EXPECT_LT(d(0, 1, linear), 0.1f) << "the linear unit follows the 256 KB kind";
  EXPECT_GT(d(0, 1, norm), 0.6f);
  EXPECT_GT(d(1, 2, norm), 2.5f);
  EXPECT_NEAR(TotalsDistance(Normalize(mix[0], norm), Normalize(mix[1], norm)),
              std::log((1 + 12.0 * 1024 / 1500 + 0.2) / (1 + 5.0 * 1024 / 1500 + 0.2)), 0.02);
  // Splitting a response into more tokens leaves the log term unchanged.
  SerializedRequest split = Req({T(0, 50'000, 0, 300), T(1, 15'000, 0, 6 * 1024), T(1, 15'000, 0, 6 * 1024)});
  EXPECT_NEAR(TotalsDistance(Normalize(split, norm), Normalize(mix[1], norm)), 0.0f, 1e-5);
  // The log term is a lower bound of the distance.
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 3; ++j) {
      NormString a = Normalize(mix[i], norm), b = Normalize(mix[j], norm);
      EXPECT_LE(TotalsDistance(a, b), Distance(a, b) + 1e-5f);
      EXPECT_LE(LowerBound(a, b), Distance(a, b) + 1e-4f);
    }
}

SerializedRequest Msg(std::vector<Token> tokens, uint64_t in, uint64_t out) {
  SerializedRequest r = Req(std::move(tokens));
  r.msg_in_bytes = in;
  r.msg_out_bytes = out;
  return r;
}

// Two requests whose work is alike (one-row INSERT and point SELECT: ~100 us
// of CPU, packets below an MTU) differ in what was asked and answered: 53 B
// in / 22 B out against 37 B / 90 B. On a ratio scale that is as clear as 5
// KB against 12 KB, while a byte of framing more in a 300 B message is not.
TEST(DistanceTest, MessagesSeparateSmallSizesByRatio) {
  auto work = [] { return std::vector<Token>{T(0, 90'000, 0, 105), T(1, 30'000, 0, 88)}; };
  std::vector<SerializedRequest> mix = {Msg(work(), 53, 22), Msg(work(), 37, 90), Msg(work(), 300, 5 * 1024),
                                        Msg(work(), 300, 12 * 1024), Msg(work(), 301, 5 * 1024),
                                        Req(work())};
  Normalization norm = DeriveNormalization(mix);
  auto d = [&](size_t i, size_t j, const Normalization& n) {
    return Distance(Normalize(mix[i], n), Normalize(mix[j], n));
  };
  Normalization off = norm;
  off.message_weight = 0;
  EXPECT_LT(d(0, 1, off), 0.01f) << "resource demand alone cannot tell them apart";
  const float small = d(0, 1, norm), large = d(2, 3, norm);
  EXPECT_NEAR(small, std::hypot(std::log1p(53 / 16.0) - std::log1p(37 / 16.0), std::log1p(22 / 16.0) - std::log1p(90 / 16.0)),
              1e-4);
  EXPECT_GT(small, 1.0f);
  EXPECT_GT(large, 0.8f);
  EXPECT_GT(small, 0.8f * large) << "22 B vs 90 B is as clear as 5 KB vs 12 KB";
  EXPECT_LT(d(2, 4, norm), 0.01f) << "a byte of framing";
  // A request without a message (a schema without `messages`) sits at the
  // origin of the term, so the distance stays a metric.
  EXPECT_NEAR(d(5, 0, norm), std::hypot(std::log1p(53 / 16.0), std::log1p(22 / 16.0)), 1e-4);
  EXPECT_LE(d(5, 0, norm), d(0, 1, norm) + d(5, 1, norm) + 1e-4f);
  for (size_t i = 0; i < mix.size(); ++i)
    for (size_t j = 0; j < mix.size(); ++j) {
      NormString a = Normalize(mix[i], norm), b = Normalize(mix[j], norm);
      EXPECT_LE(LowerBound(a, b), Distance(a, b) + 1e-4f);
      EXPECT_NEAR(Distance(a, b), Distance(b, a), 1e-5f);
    }
}

// Block writes are batched by timing (group commit: one request flushes 180
// KB of others' log, another finds its own already durable): the distance
// leaves them out. Block reads are the request's own and count.
TEST(DistanceTest, BlockWritesAreLeftOutReadsCount) {
  auto with = [](uint64_t read, uint64_t written) {
    Token io = T(1, 20'000, read + written, 0);
    io.demand.disk_write_bytes = written;
    return Msg({T(0, 90'000, 0, 105), io}, 53, 22);
  };
  std::vector<SerializedRequest> mix = {with(0, 0), with(0, 8192), with(0, 184 * 1024), with(12'288, 0)};
  Normalization norm = DeriveNormalization(mix);
  auto d = [&](size_t i, size_t j) { return Distance(Normalize(mix[i], norm), Normalize(mix[j], norm)); };
  EXPECT_NEAR(d(0, 1), 0.0f, 1e-6);
  EXPECT_NEAR(d(1, 2), 0.0f, 1e-6);
  EXPECT_GT(d(0, 3), 1.0f) << "12 KB read from disk";
  EXPECT_EQ(norm.disk_bytes, 12'288) << "the scale follows what is compared";
}

// One 256 KB response as nginx sent it in three recordings (packets as the
// kernel cut them: segmentation offload, window, a corked socket), beside
// 5 KB and 12 KB ones. The three are one kind: below any threshold the
// clusterer derives (at least kFloorThreshold) apart; 5 KB against 12 KB
// stays a doubling apart.
std::vector<Token> Response(uint32_t sym_pkt, std::vector<uint64_t> packets, uint64_t cpu_each = 5'000) {
  std::vector<Token> t = {T(0, 20'000, 0, 115), T(1, 10'000), T(2, 30'000)};
  for (uint64_t p : packets) {
    t.push_back(T(sym_pkt, cpu_each, 0, p));
    t.push_back(T(3, 0, 0, 52));  // its ACK
  }
  return t;
}

TEST(DistanceTest, OneResponseCutIntoDifferentPacketsIsOneDemand) {
  const auto a = Req(Response(4, {32834, 32834, 47682, 47682, 47682, 47682}));
  const auto b = Req(Response(4, {32834, 32834, 47682, 47682, 65549, 30000}));
  const auto c = Req(Response(4, {65549, 65549, 65549, 32000, 27749}));
  const auto k5 = Req(Response(4, {5500}));
  const auto k12 = Req(Response(4, {12400}));
  std::vector<SerializedRequest> mix = {a, b, c, k5, k12};
  const Normalization norm = DeriveNormalization(mix);
  auto d = [&](const SerializedRequest& x, const SerializedRequest& y) {
    return Distance(Normalize(x, norm), Normalize(y, norm));
  };
  EXPECT_LT(d(a, b), 0.5 * kFloorThreshold);
  EXPECT_LT(d(a, c), kFloorThreshold);  // a packet and its ACK fewer: 2 plain edits
  EXPECT_GT(d(k5, k12), 0.6f);
  EXPECT_GT(d(k12, a), 2.5f);
  // Per-token network bytes, if asked for, are back (and split the kind).
  Normalization per_token = norm;
  per_token.token_net_weight = 1;
  EXPECT_GT(Distance(Normalize(a, per_token), Normalize(c, per_token)), 2 * kFloorThreshold);
}

TEST(DistanceTest, IdenticalStringsAreAtZero) {
  NormString a = N({T(0, 1'000'000), T(1, 0, 4096), T(2)});
  EXPECT_EQ(Distance(a, a), 0.0f);
}

TEST(DistanceTest, SymbolMismatchCostsOne) {
  EXPECT_FLOAT_EQ(Distance(N({T(0)}), N({T(1)})), 1.0f);
}

TEST(DistanceTest, ResourceDeltaIsNormalisedEuclidean) {
  // 3 ms of CPU against 16 KiB of disk at scales 1 ms and 4 KiB: sqrt(3^2 + 4^2).
  EXPECT_FLOAT_EQ(Distance(N({T(0, 3'000'000)}), N({T(0, 0, 16384)})), 5.0f);
  // Different symbol adds one.
  EXPECT_FLOAT_EQ(Distance(N({T(0, 3'000'000)}), N({T(1, 0, 16384)})), 6.0f);
}

TEST(DistanceTest, SymbolCostWeighsStructure) {
  Normalization w = kMs;
  w.symbol_cost = 0.1;
  EXPECT_FLOAT_EQ(Distance(N({T(0)}, w), N({T(1)}, w)), 0.1f);
  EXPECT_FLOAT_EQ(Distance(N({T(0)}, w), N({T(0), T(1, 2'000'000)}, w)), 2.1f);
  EXPECT_FLOAT_EQ(Normalization{}.symbol_cost, kDefaultSymbolCost);
  // Bounds and the band hold with any weight.
  std::mt19937_64 rng(5);
  for (int iter = 0; iter < 200; ++iter) {
    std::uniform_int_distribution<int> len(0, 12), sym(0, 4), cpu(0, 3'000'000);
    std::vector<Token> x, y;
    for (int i = len(rng); i > 0; --i) x.push_back(T(sym(rng), cpu(rng)));
    for (int i = len(rng); i > 0; --i) y.push_back(T(sym(rng), cpu(rng)));
    NormString a = N(x, w), b = N(y, w);
    float ab = Distance(a, b);
    EXPECT_LE(LowerBound(a, b), ab + 1e-4f);
    for (float cutoff : {0.3f * ab, ab, 1.5f * ab + 0.05f}) {
      float d = Distance(a, b, cutoff);
      if (ab <= cutoff)
        EXPECT_NEAR(d, ab, 1e-4 * (1 + ab));
      else
        EXPECT_GT(d, cutoff);
    }
  }
}

TEST(DistanceTest, InsertionCostsOnePlusItsDemand) {
  EXPECT_FLOAT_EQ(Distance(N({T(0)}), N({T(0), T(1, 2'000'000)})), 3.0f);
  EXPECT_FLOAT_EQ(Distance(N({}), N({T(0), T(1, 2'000'000)})), 4.0f);
  EXPECT_FLOAT_EQ(Distance(N({T(0), T(1, 2'000'000)}), N({})), 4.0f);
}

TEST(DistanceTest, MetricPropertiesAndBoundsOnRandomStrings) {
  std::mt19937_64 rng(42);
  for (int iter = 0; iter < 300; ++iter) {
    NormString a = Random(rng), b = Random(rng), c = Random(rng);
    float ab = Distance(a, b), ba = Distance(b, a), bc = Distance(b, c), ac = Distance(a, c);
    EXPECT_NEAR(ab, ba, 1e-3 * (1 + ab));
    EXPECT_LE(ac, ab + bc + 1e-3f * (1 + ac));
    EXPECT_LE(LowerBound(a, b), ab + 1e-4f);
    // With a cutoff: exact at or below it, above it otherwise.
    for (float cutoff : {0.5f * ab, ab, 2.0f * ab + 0.1f}) {
      float d = Distance(a, b, cutoff);
      if (ab <= cutoff)
        EXPECT_FLOAT_EQ(d, ab);
      else
        EXPECT_GT(d, cutoff);
    }
    float sum = TotalsDistance(a, b);
    for (const AlignmentStep& s : Align(a, b)) sum += s.cost;
    EXPECT_NEAR(sum, ab, 1e-3 * (1 + ab));
  }
}

TEST(DistanceTest, AlignmentNamesExtraAndMissingTokens) {
  NormString a = N({T(0), T(5, 100'000'000), T(1, 0, 4096)});
  NormString b = N({T(0), T(1, 0, 4096), T(2)});
  std::vector<AlignmentStep> steps = Align(a, b);
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].op, EditOp::kPair);
  EXPECT_EQ(steps[1].op, EditOp::kExtra);
  EXPECT_EQ(steps[1].a_index, 1);
  EXPECT_FLOAT_EQ(steps[1].cost, 101.0f);
  EXPECT_EQ(steps[2].op, EditOp::kPair);
  EXPECT_EQ(steps[3].op, EditOp::kMissing);
  EXPECT_EQ(steps[3].b_index, 2);
}

TEST(NormalizationTest, MeanOfNonZeroRequestTotals) {
  std::vector<SerializedRequest> reqs = {
      Req({T(0, 10'000'000), T(1, 0, 0, 100)}),
      Req({T(0, 30'000'000, 12288)}),
      Req({T(0, 20'000'000, 4096, 300)}),
      Req({T(0)}),
  };
  Normalization n = DeriveNormalization(reqs);
  EXPECT_DOUBLE_EQ(n.cpu_ns, 20'000'000.0);
  EXPECT_DOUBLE_EQ(n.disk_bytes, 8192.0);
  // The mean (200 B) is below one packet: the scale is the floor.
  EXPECT_DOUBLE_EQ(n.net_bytes, kMinNetScaleBytes);
  Normalization none = DeriveNormalization(std::vector<SerializedRequest>{Req({T(0)})});
  EXPECT_DOUBLE_EQ(none.cpu_ns, 1.0);
}

// Each resource's scale is at least its granularity, so a resource used only
// incidentally does not have its noise magnified to a whole request's demand.
TEST(NormalizationTest, ScalesAreFlooredAtTheResourcesGranularity) {
  std::vector<SerializedRequest> reqs = {
      Req({T(0, 50'000, 512, 300)}),
      Req({T(0, 150'000, 1024, 500)}),
  };
  Normalization n = DeriveNormalization(reqs);
  EXPECT_DOUBLE_EQ(n.cpu_ns, kMinCpuScaleNs);
  EXPECT_DOUBLE_EQ(n.disk_bytes, kMinDiskScaleBytes);
  EXPECT_DOUBLE_EQ(n.net_bytes, kMinNetScaleBytes);
  // Above the floors the mean rules.
  reqs = {Req({T(0, 30'000'000, 65536, 12'000)}), Req({T(0, 10'000'000, 8192, 4'000)})};
  n = DeriveNormalization(reqs);
  EXPECT_DOUBLE_EQ(n.cpu_ns, 20'000'000.0);
  EXPECT_DOUBLE_EQ(n.disk_bytes, 36864.0);
  EXPECT_DOUBLE_EQ(n.net_bytes, 8'000.0);
}

}  // namespace
}  // namespace jackdaw::cluster
