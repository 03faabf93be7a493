// The workload model built from a stream of requests in bounded memory:
// what `jackdaw analyze` and `jackdaw live` both run, so that offline and
// live give the same model on the same trace.
//
// Two phases:
//  1. Warm-up: the first `warmup_requests` requests (or those starting
//     within `warmup_ns` of the first, whichever ends first; 0 = no time
//     limit) are buffered whole. When the warm-up ends, BuildModel() runs on
//     them exactly as the batch path does (normalisation, derived threshold,
//     incremental pass, medoids, merging, refinement), and its clusters seed
//     a cluster::StreamingClusterer; the normalisation and the threshold are
//     fixed from then on. A stream that ends within its warm-up therefore
//     gets exactly BuildModel()'s model.
//  2. Streaming: each request is canonicalized, serialized, normalised and
//     given to the StreamingClusterer. What is kept per request is only
//     what a cluster's reservoir sample holds (the request, its canonical
//     form and string, for reports and latency breakdowns); running sums per
//     cluster (count, demand, latency histogram) cover every member.
// Memory: O(warm-up) during the warm-up, then O(clusters x sample), never
// O(stream). Everything depends only on the sequence of requests and their
// timestamps (cluster ageing uses trace time, reservoir draws are hashed),
// so Add() over the same stream gives the same model whether Snapshot() was
// called in between (live) or not (offline).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "cluster/streaming.h"
#include "common/status.h"
#include "request/request.h"
#include "model/workload_model.h"

namespace jackdaw::model {

// Log-bucketed latency histogram: bucket k counts latencies in
// [kBase * 2^(k/4), kBase * 2^((k+1)/4)), so a quantile read from it is
// within 19 % (one bucket) of the exact order statistic.
class LatencyHistogram {
 public:
  static constexpr int kBuckets = 112;         // 1 us .. ~268 s
  static constexpr double kBaseNs = 1000;
  void Add(uint64_t ns);
  uint64_t count() const { return count_; }
  double sum_ns() const { return sum_ns_; }
  // Upper edge of the bucket holding the q-quantile (0 if empty).
  double QuantileNs(double q) const;
  static double UpperEdgeNs(int bucket);
  uint64_t bucket(int k) const { return buckets_[k]; }

 private:
  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0;
  double sum_ns_ = 0;
};

// Running statistics of one cluster, over every member it was given.
struct ClusterRunning {
  uint64_t id = 0;  // StreamingClusterer's stable id
  uint64_t count = 0;
  Resources demand_sum;
  LatencyHistogram latency;
  ProcessMix processes;  // per-process demand of its requests
  uint64_t first_ns = 0, last_ns = 0;
  std::string representative_text;
  bool anomalous = false;  // count <= anomaly_max_cluster_size
};

struct StreamingModelOptions {
  ModelOptions model;  // canonical form, threshold (0: derived at warm-up), anomalies, ...
  uint32_t warmup_requests = 4096;
  uint64_t warmup_ns = 0;
  uint32_t sample_per_cluster = 16;
  uint32_t max_clusters = 512;
  uint64_t idle_ns = 0;  // StreamingOptions::idle_ns
};

struct StreamingModelStats {
  uint64_t requests = 0;
  // Requests marked incomplete (Request::incomplete), kept out of the model
  // and not counted in `requests`.
  uint64_t incomplete = 0;
  uint64_t retained = 0;  // requests held now (warm-up buffer or samples)
  uint64_t peak_retained = 0;
  bool warmed_up = false;
  cluster::StreamingStats clusters;
};

class StreamingModel {
 public:
  // Called for each request once it is assigned (streaming phase), and for
  // every warm-up request when the warm-up ends: its id, the stable id of
  // the cluster it joined, and whether it founded that cluster after the
  // warm-up (a new behaviour: an anomaly until others join it).
  struct Assigned {
    uint64_t request_id = 0;
    uint64_t cluster_id = 0;
    double distance = 0;
    bool founded = false;
  };
  using AssignCallback = std::function<void(const Assigned&)>;

  static StatusOr<std::unique_ptr<StreamingModel>> Create(const StreamingModelOptions& options,
                                                          AssignCallback on_assign = {});
  ~StreamingModel();

  void Add(Request&& request);
  // The same, with the request's canonical form already made with the
  // model's canonical options (`jackdaw analyze` makes it for the likelihood
  // model too): past the warm-up it is used as it is, not made again.
  void Add(Request&& request, canonical::CanonicalRequest&& canonical);
  // End of stream. A stream that ended within its warm-up stays buffered:
  // its Snapshot() is BuildModel() over all of it.
  Status Finish();

  // The model so far, as BuildModel() shapes it, with `requests` (and the
  // canonical forms) holding the retained requests only; cluster sizes,
  // means, model error and the request count cover every request
  // (WorkloadModel::streamed_requests). `requests` out: the retained
  // requests, aligned with the model's, for the Perfetto and HTML reports.
  StatusOr<WorkloadModel> Snapshot(std::vector<Request>* requests = nullptr) const;

  // Per current cluster, largest first (cheap: no request is copied).
  std::vector<ClusterRunning> Running() const;

  const StreamingModelStats& stats() const;
  bool warmed_up() const { return stats().warmed_up; }
  // The normalisation and threshold in use (valid once warmed up).
  const cluster::Normalization& normalization() const;
  double threshold() const;

  class Impl;

 private:
  explicit StreamingModel(std::unique_ptr<Impl> impl);
  void Add(Request&& request, canonical::CanonicalRequest* canonical);  // null: made here
  std::unique_ptr<Impl> impl_;
};

}  // namespace jackdaw::model
