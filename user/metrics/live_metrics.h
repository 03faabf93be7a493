// The metrics of a `jackdaw live` session, as Prometheus reads them.
//
// Per schema (the session's one schema): requests, latency histogram, CPU
// seconds and disk/net bytes demanded, anomalies (requests that founded a
// new cluster after the warm-up) — counters over the whole session, fed
// request by request (OnRequest / OnAnomaly), so they never go down when
// clusters age out. Incomplete requests (the capture lost records while
// they ran) have a counter of their own and are in no other series, as
// they are kept out of the model. Per cluster: the same from the model's running
// statistics (model::ClusterRunning covers every member of the cluster),
// plus whether it is anomalous; a cluster that ages out simply stops being
// exported (its series ends, as Prometheus expects of a vanished target).
// Per schema too, the likelihood watchdog (model/likelihood/
// online_likelihood.h): a histogram of the scored requests' log-likelihood
// (mean log-probability per canonical event, <= 0; fixed bounds from -10 to
// 0, denser near 0 where the usual requests are) and a counter of those
// below the threshold. Per probe group: events delivered and records lost in the kernel. Plus
// gauges of the pipeline itself (delay, clusters, memory).
//
// Names follow Prometheus conventions: jackdaw_ prefix, base units
// (seconds, bytes), _total on counters. Latency buckets are every fourth
// edge of model::LatencyHistogram (powers of two from 8 us to 33.6 s), so
// the exported histogram is exact at its bounds, never re-estimated.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/streaming_model.h"
#include "request/request.h"

namespace jackdaw::metrics {

struct GroupCounters {
  std::string name;
  bool enabled = false;
  uint64_t events = 0;
  uint64_t lost = 0;
};

// What the session knows at scrape time.
struct LiveState {
  std::vector<model::ClusterRunning> clusters;
  std::vector<GroupCounters> groups;
  uint64_t records = 0;
  double pipeline_delay_s = 0;
  uint64_t rss_bytes = 0;
  bool warmed_up = false;
  uint64_t likelihood_states = 0;  // of the automaton scoring requests (0: none yet)
};

class LiveMetrics {
 public:
  explicit LiveMetrics(std::string schema) : schema_(std::move(schema)) {}

  void OnRequest(const model::Request& r);
  void OnAnomaly() { ++anomalies_; }
  // A request scored by the likelihood watchdog.
  void OnLikelihood(double log_likelihood, bool unlikely);
  std::string Render(const LiveState& state) const;

  uint64_t requests() const { return requests_; }
  uint64_t incomplete() const { return incomplete_; }

  // The histogram's upper bounds (seconds) and per-bucket counts
  // (non-cumulative, last = above every bound) of a LatencyHistogram.
  static const std::vector<double>& BucketBounds();
  static std::vector<uint64_t> BucketCounts(const model::LatencyHistogram& h);
  // The log-likelihood histogram's upper bounds (ascending, the last 0).
  static const std::vector<double>& LikelihoodBounds();

 private:
  std::string schema_;
  uint64_t requests_ = 0;
  uint64_t anomalies_ = 0;
  uint64_t incomplete_ = 0;
  uint64_t cpu_ns_ = 0, disk_bytes_ = 0, net_bytes_ = 0;
  model::LatencyHistogram latency_;
  uint64_t unlikely_ = 0;
  std::vector<uint64_t> likelihood_counts_;  // per LikelihoodBounds() bucket, then above
  double likelihood_sum_ = 0;
};

}  // namespace jackdaw::metrics
