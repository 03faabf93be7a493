// What the recording says about the workload, per kind (a cluster of the
// workload model, labelled as `jackdaw analyze` labels it): a sample of its
// requests as scripts to replay, every request's latency, and the measures
// the self-check compares the simulation with (throughput, latency
// quantiles, utilisations, requests in flight).
//
// Requests reach the collector before the model assigns them (the model
// tells their cluster later, by request id), so the collector holds each
// request's script until then: memory is the scripts in the model's warm-up
// plus one sample per kind.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "predict/script.h"
#include "request/request.h"

namespace jackdaw::predict {

struct RecordedKind {
  std::string label;
  uint64_t count = 0;
  std::vector<RequestScript> scripts;  // a uniform sample of its requests
  std::vector<double> latencies_ns;    // every request's
  double cpu_ns = 0, disk_ns = 0;      // over every request
  double runq_ns = 0;                  // run-queue waits, over every request
  uint64_t wakeups = 0;                // threads woken from blocking, over every request
};

struct RecordedWorkload {
  std::vector<RecordedKind> kinds;  // in label order (c0, c1, ...)
  uint32_t cpus = 0;
  uint64_t requests = 0;
  uint64_t first_start_ns = 0, last_end_ns = 0;
  double latency_sum_ns = 0;
  uint64_t unassigned = 0;  // requests whose cluster the model no longer has
  // The kernel's wake-up latency (signal to the wakee running), taken as
  // the lower quartile of the recorded wake-ups between a request's threads:
  // the ones that found a CPU free. 0 when no request had such a wake-up.
  double wakeup_ns = 0;

  double duration_ns() const { return static_cast<double>(last_end_ns - first_start_ns); }
  double throughput_per_s() const;
  // Little's law: the mean number of requests in flight.
  double mean_in_flight() const;
  // The closed-loop clients that recorded load most likely had: requests in
  // flight, rounded (at least 1).
  uint32_t EstimatedClients() const;
  // A client's time between one answer and its next request (its own work,
  // the network, connecting) when `clients` clients made the recorded
  // throughput: clients / throughput - mean latency, at least 0.
  double ClientGapNs(uint32_t clients) const;
  double cpu_utilisation() const;   // requests' CPU over cpus x duration
  double disk_utilisation() const;  // requests' disk service over duration
  // (CPU + run-queue wait) / CPU over every request: how much longer the
  // requests' CPU work took than the CPU it needed. The wake-up latency
  // of every wake-up is taken out of the run-queue wait: the simulation
  // replays it as a latency, not as waiting for a CPU.
  double cpu_stretch() const;
  const RecordedKind* Find(const std::string& label) const;
};

class WorkloadCollector {
 public:
  explicit WorkloadCollector(size_t scripts_per_kind = 4000, uint64_t seed = 1)
      : per_kind_(scripts_per_kind), rng_(seed) {}

  // A request about to be given to the model.
  void Add(const model::Request& request);
  // The model put request `request_id` in the cluster with stable id
  // `cluster_id`.
  void Assign(uint64_t request_id, uint64_t cluster_id);
  // `labels`: the model's clusters, stable id and label, in label order.
  RecordedWorkload Finish(const std::vector<std::pair<uint64_t, std::string>>& labels, uint32_t cpus);

 private:
  struct Pending {
    RequestScript script;
    uint64_t start_ns = 0, end_ns = 0;
  };
  struct Bucket {
    RecordedKind kind;
    uint64_t first_start = UINT64_MAX, last_end = 0;
  };

  size_t per_kind_;
  std::mt19937_64 rng_;
  std::unordered_map<uint64_t, Pending> pending_;
  std::vector<uint32_t> wake_gaps_;  // the first kMaxWakeGaps
  std::map<uint64_t, Bucket> buckets_;
};

}  // namespace jackdaw::predict
