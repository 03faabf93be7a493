// The workload model (Magpie OSDI'04 §5–§6): what `jackdaw analyze` derives
// from the requests the temporal join emitted.
//
// BuildModel() runs the back half of the pipeline:
//   canonicalize (canonical/) -> serialize -> normalise -> cluster (cluster/)
//   -> representatives, model error, anomalies, latency breakdown.
//
// Definitions, as in the paper's Tables 2–5:
//  * A cluster's representative is its medoid request (a real request, so it
//    can be shown with its events). The model says requests occur as typified
//    by each representative, in proportion to cluster size.
//  * Dia.: mean distance of a cluster's members to its representative.
//    Min. Sep.: distance from the representative to the nearest other
//    representative.
//  * Model error, per resource r: |sum_c size_c * rep_c[r] - sum_i req_i[r]|
//    / sum_i req_i[r] (0 when no request uses r): the relative difference
//    between a synthetic workload mixing the representatives in proportion
//    to cluster size and the parsed requests. The single "combined" figure
//    sums the per-resource absolute differences and totals after dividing
//    each by its normalisation scale, so each resource weighs by its share of
//    the (normalised) demand instead of by its unit.
//  * Accounted CPU % is measured by the join stage (CPU charged to requests
//    over the relevant process CPU); it is passed through.
//  * Anomalies: requests far from every cluster — members of clusters of at
//    most anomaly_max_cluster_size requests (singletons by default) and
//    members farther from their representative than the threshold — each
//    with its serialized events and the reasons it differs from the nearest
//    representative (explain.h).
//  * Latency breakdown per cluster: AppModel-style delta analysis of its
//    slowest vs fastest requests (breakdown.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "canonical/canonical.h"
#include "canonical/serialize.h"
#include "cluster/cluster.h"
#include "cluster/distance.h"
#include "common/status.h"
#include "request/request.h"
#include "model/likelihood/likelihood_report.h"
#include "model/process_mix.h"

namespace jackdaw::model {

struct ModelOptions {
  canonical::CanonicalOptions canonical;
  cluster::ClusterOptions cluster;  // threshold, refinement, progress
  // Per-resource normalisation; derived from the data when unset.
  std::optional<cluster::Normalization> normalization;
  // From the join stage: fraction (0..1) of relevant CPU charged to requests.
  std::optional<double> accounted_cpu_fraction;
  uint32_t anomaly_max_cluster_size = 1;
  uint32_t max_reasons = 5;         // per anomaly
  double breakdown_fraction = 0.1;  // slowest/fastest share per cluster
};

// Resource demand as doubles (means and model totals are not integral).
struct Resources {
  double cpu_ns = 0;
  double disk_bytes = 0;
  double net_bytes = 0;
  double get(int r) const { return r == 0 ? cpu_ns : r == 1 ? disk_bytes : net_bytes; }
  void set(int r, double v) { (r == 0 ? cpu_ns : r == 1 ? disk_bytes : net_bytes) = v; }
};

struct RequestSummary {
  uint64_t id = 0;
  uint32_t cluster = 0;
  double distance = 0;  // to its cluster's representative
  bool anomaly = false;
  uint64_t start_ns = 0;
  uint64_t latency_ns = 0;  // as observed (end - start)
  uint64_t canonical_latency_ns = 0;
  canonical::Demand demand;  // sum over events
  uint32_t num_events = 0;   // after canonicalization
  uint32_t num_threads = 0;  // canonical threads
  std::vector<ProcessSegment> processes;  // its parts, per process (Request::processes)
  // Mean log-probability per canonical event under the likelihood model
  // (model/likelihood/), where one was learned.
  std::optional<double> log_likelihood;
};

struct Distribution {
  double min = 0, p25 = 0, median = 0, p75 = 0, max = 0, mean = 0;
};

struct ClusterSummary {
  uint32_t id = 0;
  std::string label;  // "c0", "c1", ... (stable, largest first)
  uint32_t size = 0;
  uint32_t representative = 0;  // index into WorkloadModel::requests
  uint64_t representative_id = 0;
  std::vector<uint32_t> members;     // indices into WorkloadModel::requests
  std::vector<uint64_t> member_ids;  // request ids, same order
  double diameter = 0;
  double max_distance = 0;
  double min_separation = 0;
  int32_t nearest_cluster = -1;
  Resources mean;  // over members
  Resources representative_demand;
  Distribution cpu_ms, disk_kb, net_kb, latency_ms, canonical_latency_ms;
  std::string representative_text;  // canonical::ToText of the representative
  bool anomalous = false;           // size <= anomaly_max_cluster_size
  // Mean demand per request by process, when its requests crossed
  // processes (process_mix.h); empty otherwise.
  std::vector<ProcessDemand> processes;
};

struct ModelError {
  Resources model_total;                                    // sum_c size_c * representative
  Resources measured_total;                                 // sum over requests
  double per_resource[cluster::kNumResources] = {0, 0, 0};  // fractions
  double combined = 0;                                      // fraction
};

// One event of an anomaly's serialized string.
struct AnomalyEvent {
  std::string symbol;
  canonical::Demand demand;
  bool differs = false;  // unmatched, or different symbol / demand than the representative
};

struct Anomaly {
  enum class Kind : uint8_t { kSmallCluster, kBeyondThreshold };
  Kind kind = Kind::kSmallCluster;
  uint32_t request = 0;  // index into WorkloadModel::requests
  uint64_t request_id = 0;
  uint32_t cluster = 0;
  int32_t compared_cluster = -1;  // whose representative it is compared with
  uint64_t compared_request_id = 0;
  double distance = 0;               // to that representative
  std::vector<std::string> reasons;  // most significant first
  std::vector<AnomalyEvent> events;
};

// AppModel §3.4 delta analysis of one cluster: the slowest vs the fastest
// requests. Work = own demand on the critical path (canonical latency);
// waiting = run queue, I/O, locks, other blocking.
struct LatencyBreakdown {
  uint32_t cluster = 0;
  uint32_t group_size = 0;  // requests in each of the two groups
  struct Side {
    double latency_ns = 0, canonical_latency_ns = 0;
    double cpu_ns = 0, disk_bytes = 0, net_bytes = 0;
    double runq_wait_ns = 0, blocked_disk_ns = 0, blocked_net_ns = 0;
    double blocked_futex_ns = 0, blocked_other_ns = 0;
  } fast, slow;
  // slow - fast
  double delta_latency_ns = 0;
  double delta_work_ns = 0;  // canonical latency
  double delta_runq_ns = 0;
  double delta_io_ns = 0;    // blocked on disk + network
  double delta_lock_ns = 0;  // blocked on futex
  double delta_other_ns = 0;
  enum class Verdict : uint8_t {
    kNone,
    kWork,
    kRunQueue,
    kIo,
    kLocks,
    kOther
  } verdict = Verdict::kNone;
  std::string explanation;  // one line
};

const char* VerdictName(LatencyBreakdown::Verdict v);

struct WorkloadModel;

// A request's canonical demand as the model's resource vector.
Resources FromDemand(const canonical::Demand& d);
// Min, quartiles (linear interpolation between order statistics), max, mean.
Distribution Describe(std::vector<double> v);
// Fills m.anomalies, most distant first: members of small clusters compared
// with the nearest other cluster, members of ordinary clusters beyond the
// threshold compared with their own representative; marks those requests.
void FindAnomalies(WorkloadModel& m, const std::function<cluster::NormString(uint32_t)>& norm_of,
                   size_t max_reasons);

struct ModelStats {
  uint64_t dropped_scheduling_events = 0;
  uint64_t ignored_backward_edges = 0;
  uint64_t duplicate_edges = 0;
  uint64_t merged_repeats = 0;  // events merged into a run or the interrupt aggregate
  uint64_t merged_edges = 0;    // edges made one by merged runs
  uint64_t elided_wakeup_forks = 0;  // wake-up hand-offs whose Signal/Resume went
  uint64_t inferred_joins = 0;       // joins added where no wake-up showed them
  uint64_t idle_wakeups = 0;         // woken threads that did nothing of the request's
  uint64_t distance_computations = 0;
  uint32_t merged_clusters = 0;  // clusters joined because their representatives were close
  uint32_t outlier_clusters = 0;  // outlier clusters attached to their nearest cluster (cluster.h)
  uint32_t outlier_requests = 0;  // their members (anomalies)
  uint32_t refine_moves = 0;
};

struct WorkloadModel {
  std::vector<RequestSummary> requests;      // input order
  // Requests the model was built from. BuildModel(): requests.size(); a
  // streaming model (streaming_model.h) keeps only a sample of them in
  // `requests` while sizes, means and model error cover all of these.
  uint64_t streamed_requests = 0;
  std::vector<ClusterSummary> clusters;      // largest first
  std::vector<Anomaly> anomalies;            // by decreasing distance
  std::vector<LatencyBreakdown> breakdowns;  // clusters with >= 2 requests
  ModelError error;
  cluster::Normalization normalization;
  cluster::ThresholdEstimate threshold;
  std::optional<double> accounted_cpu_fraction;
  // Head sampling (record --sample): how the connections were sampled
  // ("off", "fixed", "auto") and the requests the model was built from as a
  // share of those the server served (each weighed by the rate in force
  // when it began): sizes and rates divide by it to estimate the whole.
  // `sample_rate`: that share as the rates asked for make it; `sampled_share`:
  // as measured from the work the sample left out, where the trace says
  // (analyze: sample gaps' run time against the recorded run time), else
  // the same.
  std::string sample_mode = "off";
  double sample_rate = 1.0;
  double sampled_share = 1.0;
  double avg_diameter = 0;
  double avg_inter_cluster_distance = 0;
  ModelStats stats;
  // The likelihood model's size and least likely requests (filled by
  // `jackdaw analyze`, model/likelihood/request_likelihood.h); absent
  // (present = false) otherwise.
  likelihood::LikelihoodSummary likelihood;
  // Per request (input order): kept for reports that draw canonical forms.
  canonical::SymbolTable symbols;
  std::vector<canonical::CanonicalRequest> canonical;
  std::vector<canonical::SerializedRequest> serialized;
};

// Fails only on invalid options (non-positive normalisation scales, a
// breakdown fraction outside (0, 0.5]).
StatusOr<WorkloadModel> BuildModel(std::span<const Request> requests,
                                   const ModelOptions& options = {});

// Model error of an assignment (exposed for tests and what-if tools).
ModelError ComputeModelError(std::span<const RequestSummary> requests,
                             std::span<const ClusterSummary> clusters,
                             const cluster::Normalization& norm);

}  // namespace jackdaw::model
