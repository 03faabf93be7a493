// Behavioural clustering of serialized requests (Magpie OSDI'04 §5).
//
// IncrementalClusterer is Magpie's online algorithm: each new request is
// compared with every cluster's representative and joins the nearest one,
// unless that distance exceeds the threshold, in which case it founds a new
// cluster and is its representative. Per cluster it maintains the
// representative, the members and the sum of member-to-representative
// distances at assignment (so the average diameter is always at hand);
// separations are computed at the end. A founder need not be central: when a
// cluster reaches 8, 32, 128, ... members the representative is re-centred
// to the medoid of an evenly spaced sample of its members, which keeps the
// online assignment from depending too much on arrival order.
//
// ClusterRequests() is the batch driver used by `jackdaw analyze`:
//  1. threshold: ClusterOptions::threshold if > 0, else DeriveThreshold();
//  2. the incremental pass over all requests in input order;
//  3. each cluster's representative becomes the medoid of (a sample of) its
//     members; then, if refine is set, every request is reassigned to its
//     nearest representative (repeated refine_iterations times, re-centring
//     between rounds, stopping early when nothing moves). A representative
//     stays in its own cluster, so none empties. Members may now lie beyond
//     the threshold; the model reports them as anomalies;
//  4. statistics: diameter (mean member-to-representative distance, the
//     paper's "Dia."), maximum member distance, minimum separation (distance
//     from the representative to the nearest other representative, "Min.
//     Sep."), the average diameter and the average inter-cluster distance.
// Clusters are returned largest first (ties: earliest first member), so ids
// are stable for a given input order.
//
// Nearest-representative search computes LowerBound() for every candidate,
// visits them in increasing bound order and stops when the bound reaches the
// best exact distance; exact distances use the best so far as cutoff. The
// result is exactly the nearest representative (ties: lowest cluster index).
// Where only a representative within the threshold matters (the online
// pass, and first in refinement) the threshold is the initial cutoff, so
// every comparison is banded (distance.h).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "cluster/distance.h"

namespace jackdaw::cluster {

// Progress of a long stage: called with done in [0, total]; total is fixed
// for a stage. Cheap callers may be invoked often; implementations throttle.
using ProgressCallback = std::function<void(std::string_view stage, uint64_t done, uint64_t total)>;

// How the threshold was chosen.
struct ThresholdEstimate {
  double threshold = 0;
  enum class Source : uint8_t { kUser, kGap, kFloor } source = Source::kFloor;
  // For kGap: the gap in the sorted sample pairwise distances whose
  // geometric mean is the threshold.
  double gap_low = 0, gap_high = 0;
  uint32_t sample_size = 0;
};

// Default threshold derived from the data. Pairwise distances of an evenly
// spaced sample of `sample` requests are sorted; intra-cluster pairs form the
// low end, inter-cluster pairs the high end. The threshold is the geometric
// mean of the lowest gap where consecutive distances differ by a factor of
// at least kGapRatio, the part below holds at least kGapMinMass of the pairs
// (so it is made of real intra-cluster pairs, not a few near-duplicates) and
// its upper end is at least kGapMinTop (a quarter of a typical request's
// demand, or a few events: smaller differences are variation, not kinds).
// Lowest, not widest: a wide gap between two families of inter-cluster
// distances must not merge clusters. Without such a gap the data has one
// scale of variation and the threshold is kFloorThreshold. Sample distances
// are capped at 4 (distances that large are never near the lowest gap), so
// every comparison is banded.
inline constexpr double kGapRatio = 2.0;
inline constexpr double kGapMinMass = 0.01;
inline constexpr double kGapMinTop = 0.25;
inline constexpr double kFloorThreshold = 0.25;
ThresholdEstimate DeriveThreshold(std::span<const NormString> strings, uint32_t sample = 128);

struct ClusterOptions {
  double threshold = 0;  // <= 0: DeriveThreshold()
  uint32_t threshold_sample = 128;
  bool refine = true;
  uint32_t refine_iterations = 1;
  uint32_t medoid_sample = 48;  // members considered when choosing a medoid
  ProgressCallback progress;    // optional
};

struct Cluster {
  uint32_t representative = 0;    // index into the input
  std::vector<uint32_t> members;  // input indices, ascending
  double diameter = 0;            // mean member distance to representative
  double max_distance = 0;
  double min_separation = 0;  // to the nearest other representative; 0 if alone
  int32_t nearest_cluster = -1;
};

struct Clustering {
  std::vector<Cluster> clusters;     // largest first
  std::vector<uint32_t> assignment;  // per input: cluster index
  std::vector<float> distance;       // per input: distance to its representative
  ThresholdEstimate threshold;
  // Mean over requests of the distance to their representative (the
  // size-weighted mean of cluster diameters).
  double avg_diameter = 0;
  // Mean over pairs of representatives (an even sample of at most 256 of
  // them, fewer for long strings, when there are more clusters).
  double avg_inter_cluster_distance = 0;
  uint64_t distance_computations = 0;  // exact (possibly cut-off) DP runs
  uint32_t refine_moves = 0;           // requests that changed cluster in refinement
};

// The online algorithm; usable on a live stream with a fixed threshold.
class IncrementalClusterer {
 public:
  IncrementalClusterer(double threshold, uint32_t medoid_sample = 48);

  // `s` must outlive the clusterer (it is referenced, not copied). Returns
  // the cluster index the request joined.
  uint32_t Add(const NormString* s);

  struct Nearest {
    int32_t cluster = -1;
    float distance = std::numeric_limits<float>::infinity();
  };
  // Nearest representative within `limit` (cluster -1 if none).
  Nearest FindNearest(const NormString& s,
                      float limit = std::numeric_limits<float>::infinity()) const;

  size_t num_clusters() const { return clusters_.size(); }
  size_t num_requests() const { return strings_.size(); }
  double threshold() const { return threshold_; }
  // Average over clusters of the mean member-to-representative distance at
  // assignment time.
  double AverageDiameter() const;
  uint64_t distance_computations() const { return distance_computations_; }

  // Members as indices in Add() order.
  const std::vector<uint32_t>& members(size_t cluster) const { return clusters_[cluster].members; }
  uint32_t representative(size_t cluster) const { return clusters_[cluster].rep; }
  const std::vector<const NormString*>& strings() const { return strings_; }

 private:
  struct State {
    uint32_t rep = 0;
    std::vector<uint32_t> members;
    double sum_distance = 0;
    size_t next_recentre = 8;
  };
  void Recentre(State* c);

  double threshold_;
  uint32_t medoid_sample_;
  std::vector<const NormString*> strings_;
  std::vector<State> clusters_;
  mutable uint64_t distance_computations_ = 0;
};

// Medoid of the given members (indices into strings): among an evenly
// spaced sample of them, the member minimising the summed distance to the
// sample, each distance capped at `cap` (a far member is an outlier either
// way, and capped comparisons are banded, hence cheap); ties: earliest.
uint32_t Medoid(std::span<const NormString> strings, std::span<const uint32_t> members,
                uint32_t sample, float cap, uint64_t* distance_computations = nullptr);
// The cap used for medoids: 4 x threshold, at least 1.
float MedoidCap(double threshold);

Clustering ClusterRequests(std::span<const NormString> strings, const ClusterOptions& options = {});

}  // namespace jackdaw::cluster
