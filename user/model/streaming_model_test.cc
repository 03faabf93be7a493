#include "model/streaming_model.h"

#include <gtest/gtest.h>

#include <map>

#include "model/scoring.h"
#include "request/synthetic.h"

namespace jackdaw::model {
namespace {

std::vector<Request> Mix(std::string_view types, size_t per_type, std::string* truth, uint64_t seed = 42) {
  synthetic::RequestFactory f(seed);
  return f.MakeMix(types, per_type, truth);
}

// The clusters of a model as (size, representative id, sorted member ids).
std::vector<std::tuple<uint32_t, uint64_t, std::vector<uint64_t>>> Shape(const WorkloadModel& m) {
  std::vector<std::tuple<uint32_t, uint64_t, std::vector<uint64_t>>> out;
  for (const ClusterSummary& c : m.clusters) {
    auto ids = c.member_ids;
    std::sort(ids.begin(), ids.end());
    out.emplace_back(c.size, c.representative_id, ids);
  }
  return out;
}

TEST(StreamingModel, WithinWarmupItIsTheBatchModel) {
  std::string truth;
  std::vector<Request> reqs = Mix("ABCDEF", 50, &truth);
  auto batch = BuildModel(reqs);
  ASSERT_TRUE(batch.ok());
  StreamingModelOptions o;
  o.warmup_requests = 1000;
  auto sm = StreamingModel::Create(o);
  ASSERT_TRUE(sm.ok());
  for (const Request& r : reqs) (*sm)->Add(Request(r));
  ASSERT_TRUE((*sm)->Finish().ok());
  std::vector<Request> kept;
  auto snap = (*sm)->Snapshot(&kept);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->streamed_requests, reqs.size());
  ASSERT_EQ(snap->clusters.size(), batch->clusters.size());
  for (size_t k = 0; k < batch->clusters.size(); ++k) {
    EXPECT_EQ(snap->clusters[k].size, batch->clusters[k].size);
    EXPECT_EQ(snap->clusters[k].representative_id, batch->clusters[k].representative_id);
    EXPECT_NEAR(snap->clusters[k].mean.cpu_ns, batch->clusters[k].mean.cpu_ns, 1e-6 * batch->clusters[k].mean.cpu_ns + 1);
  }
  EXPECT_NEAR(snap->error.combined, batch->error.combined, 1e-9);
  EXPECT_EQ(snap->anomalies.size(), batch->anomalies.size());
}

// Requests the capture lost records of are counted, not modelled: with a
// few of them, each made an outlier (ten times the CPU), the model is the
// one of the complete requests alone, with no extra anomaly.
TEST(StreamingModel, IncompleteRequestsStayOutOfTheModel) {
  std::string truth;
  std::vector<Request> reqs = Mix("AB", 40, &truth);
  auto batch = BuildModel(reqs);
  ASSERT_TRUE(batch.ok());
  StreamingModelOptions o;
  o.warmup_requests = 1000;
  auto sm = StreamingModel::Create(o);
  ASSERT_TRUE(sm.ok());
  for (const Request& r : reqs) (*sm)->Add(Request(r));
  for (int i = 0; i < 3; i++) {
    Request damaged = reqs[i];
    damaged.id = 100000 + i;
    damaged.incomplete = true;
    for (RequestEvent& e : damaged.events) e.cpu_ns *= 10;
    damaged.totals.cpu_ns *= 10;
    (*sm)->Add(std::move(damaged));
  }
  EXPECT_EQ((*sm)->stats().requests, reqs.size());
  EXPECT_EQ((*sm)->stats().incomplete, 3u);
  auto snap = (*sm)->Snapshot();
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->clusters.size(), batch->clusters.size());
  EXPECT_EQ(snap->anomalies.size(), batch->anomalies.size());
  EXPECT_NEAR(snap->error.combined, batch->error.combined, 1e-9);
}

// Offline (no snapshots) and live (a snapshot every few hundred requests,
// as the live view takes one every second) give the same model.
TEST(StreamingModel, SnapshotsDoNotChangeTheModel) {
  std::string truth;
  std::vector<Request> reqs = Mix("ABCDEF", 400, &truth, 9);
  StreamingModelOptions o;
  o.warmup_requests = 300;
  o.sample_per_cluster = 8;
  auto offline = StreamingModel::Create(o);
  auto live = StreamingModel::Create(o);
  ASSERT_TRUE(offline.ok() && live.ok());
  for (size_t i = 0; i < reqs.size(); ++i) {
    (*offline)->Add(Request(reqs[i]));
    (*live)->Add(Request(reqs[i]));
    if (i % 250 == 0) {
      ASSERT_TRUE((*live)->Snapshot().ok());
      (*live)->Running();
    }
  }
  ASSERT_TRUE((*offline)->Finish().ok());
  ASSERT_TRUE((*live)->Finish().ok());
  auto a = (*offline)->Snapshot();
  auto b = (*live)->Snapshot();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(Shape(*a), Shape(*b));
  EXPECT_EQ(a->error.combined, b->error.combined);
  EXPECT_EQ(a->anomalies.size(), b->anomalies.size());
}

// A canonical form made by the caller (analyze shares it with the
// likelihood model) gives the model it would have made itself.
TEST(StreamingModel, CanonicalFormsMadeByTheCallerGiveTheSameModel) {
  std::string truth;
  std::vector<Request> reqs = Mix("ABCDEF", 100, &truth, 5);
  StreamingModelOptions o;
  o.warmup_requests = 120;
  auto own = StreamingModel::Create(o);
  auto given = StreamingModel::Create(o);
  ASSERT_TRUE(own.ok() && given.ok());
  const canonical::Canonicalizer canonicalize(o.model.canonical);
  for (const Request& r : reqs) {
    (*own)->Add(Request(r));
    (*given)->Add(Request(r), canonicalize(r));
  }
  auto a = (*own)->Snapshot();
  auto b = (*given)->Snapshot();
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*own)->warmed_up());
  EXPECT_EQ(Shape(*a), Shape(*b));
  EXPECT_EQ(a->error.combined, b->error.combined);
  ASSERT_EQ(a->serialized.size(), b->serialized.size());
  for (size_t i = 0; i < a->serialized.size(); ++i)
    EXPECT_EQ(canonical::ToText(a->serialized[i], a->symbols), canonical::ToText(b->serialized[i], b->symbols));
}

// Past the warm-up the partition is the batch path's, up to the requests the
// batch path's refinement would move: measured with the adjusted Rand index
// between the two assignments of every request, and against ground truth.
TEST(StreamingModel, StreamingAgreesWithBatch) {
  std::string truth;
  std::vector<Request> reqs = Mix("ABCDEF", 1000, &truth, 5);
  auto batch = BuildModel(reqs);
  ASSERT_TRUE(batch.ok());
  StreamingModelOptions o;
  o.warmup_requests = 600;
  std::map<uint64_t, uint64_t> assigned;
  auto sm = StreamingModel::Create(o, [&](const StreamingModel::Assigned& a) {
    assigned[a.request_id] = a.cluster_id;
  });
  ASSERT_TRUE(sm.ok());
  for (const Request& r : reqs) (*sm)->Add(Request(r));
  ASSERT_TRUE((*sm)->Finish().ok());
  ASSERT_EQ(assigned.size(), reqs.size());
  std::vector<uint32_t> s, b, t;
  for (size_t i = 0; i < reqs.size(); ++i) {
    s.push_back(static_cast<uint32_t>(assigned.at(reqs[i].id)));
    b.push_back(batch->requests[i].cluster);
    t.push_back(static_cast<uint32_t>(truth[i]));
  }
  const double ari_batch = AdjustedRandIndex(s, b);
  const double ari_truth_stream = AdjustedRandIndex(s, t);
  const double ari_truth_batch = AdjustedRandIndex(b, t);
  EXPECT_GE(ari_batch, 0.97);
  EXPECT_GE(ari_truth_stream, ari_truth_batch - 0.03);
  auto snap = (*sm)->Snapshot();
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->streamed_requests, reqs.size());
  uint64_t total = 0;
  for (const auto& c : snap->clusters) total += c.size;
  EXPECT_EQ(total, reqs.size());
  EXPECT_NEAR(snap->error.combined, batch->error.combined, 0.05);
  RecordProperty("ari_vs_batch", std::to_string(ari_batch));
  RecordProperty("ari_truth_stream", std::to_string(ari_truth_stream));
  RecordProperty("ari_truth_batch", std::to_string(ari_truth_batch));
  printf("ARI stream vs batch %.4f; vs truth: stream %.4f batch %.4f; model error stream %.4f batch %.4f\n",
         ari_batch, ari_truth_stream, ari_truth_batch, snap->error.combined, batch->error.combined);
}

TEST(StreamingModel, RetainsOnlyTheWarmupOrTheSamples) {
  std::string truth;
  std::vector<Request> reqs = Mix("ABCDEF", 1000, &truth, 3);
  StreamingModelOptions o;
  o.warmup_requests = 200;
  o.sample_per_cluster = 8;
  auto sm = StreamingModel::Create(o);
  ASSERT_TRUE(sm.ok());
  for (const Request& r : reqs) (*sm)->Add(Request(r));
  const auto& st = (*sm)->stats();
  const size_t clusters = (*sm)->Running().size();
  EXPECT_TRUE(st.warmed_up);
  EXPECT_LE(st.peak_retained, std::max<uint64_t>(200, clusters * 8 + 1));
  EXPECT_LE(st.retained, clusters * 8);
  uint64_t n = 0;
  for (const ClusterRunning& c : (*sm)->Running()) {
    n += c.count;
    EXPECT_EQ(c.latency.count(), c.count);
    EXPECT_GT(c.latency.QuantileNs(0.99), 0);
    EXPECT_GE(c.latency.QuantileNs(0.99), c.latency.QuantileNs(0.5));
  }
  EXPECT_EQ(n, reqs.size());
}

TEST(LatencyHistogram, QuantilesWithinOneBucket) {
  LatencyHistogram h;
  for (uint64_t i = 1; i <= 1000; ++i) h.Add(i * 10'000);  // 10 us .. 10 ms
  EXPECT_NEAR(h.QuantileNs(0.5), 5e6, 5e6 * 0.2);
  EXPECT_NEAR(h.QuantileNs(0.99), 9.9e6, 9.9e6 * 0.2);
  EXPECT_EQ(h.count(), 1000u);
}

}  // namespace
}  // namespace jackdaw::model
