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
//     members (among members nearly as central, the one whose total demand
//     is nearest the members' mean: see Medoid());
//  4. clusters whose representatives are within the threshold of each other
//     are joined (union-find over all such pairs, then new medoids, until
//     none is left): a founder was beyond the threshold of every
//     representative when it arrived, but representatives move as clusters
//     grow;
//  5. if refine is set, every request is reassigned to its nearest
//     representative (repeated refine_iterations times, re-centring between
//     rounds, stopping early when nothing moves). A representative stays in
//     its own cluster, so none empties. Members may now lie beyond the
//     threshold; the model reports them as anomalies;
//  5b. outlier clusters (fewer than outlier_share of the requests; see
//     kOutlierShare) are dissolved: each member joins its nearest regular
//     representative, beyond the threshold (an anomaly in the model);
//  6. statistics: diameter (mean member-to-representative distance, the
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
  // kGap: the least dense point of a valley in the pairwise distances;
  // kTail: no valley, one family of distances, its kTailQuantile;
  // kFloor: kFloorThreshold (too few requests, or families that blur).
  enum class Source : uint8_t { kUser, kGap, kFloor, kTail } source = Source::kFloor;
  // For kGap: the densest distances on either side of the valley (the
  // typical distance within clusters, and the nearest family of distances
  // between them). For kTail: the threshold.
  double gap_low = 0, gap_high = 0;
  uint32_t sample_size = 0;
};

// Default threshold derived from the data. The pairwise distances of an
// evenly spaced sample of `sample` requests (capped at 4, so every
// comparison is banded) are smoothed into a density over log(distance): a
// Gaussian kernel of kDensityBandwidth on a grid of kDensityStep. Distances
// between members of one kind of request form the low end, distances between
// kinds one family per pair of kinds above it. The threshold is the least
// dense point of the lowest valley that
//   * reaches above kGapMinTop (a quarter of a typical request's demand, or
//     a few events: smaller differences are variation, not kinds; the
//     threshold is never below it),
//   * is deep: its density is at most 1/kValleyProminence of the highest
//     density on each side before the density falls below the valley's
//     again (so a ripple in the tail of one family is not a valley), and
//   * has at least kGapMinMass of the pairs below it (real intra-cluster
//     pairs, not a few near-duplicates).
// Lowest, not deepest: a deep valley between two families of inter-cluster
// distances must not merge clusters. A valley rather than an empty gap:
// real distances within a kind have tails (a packet more, a lost CPU slice)
// that reach towards the nearest other kind. Without such a valley, if the
// density has no valley at all (none of even kValleyWeakProminence), the
// distances are one family and the threshold is their kTailQuantile (at
// least kFloorThreshold); otherwise the families blur into each other and
// the threshold is kFloorThreshold, erring towards more clusters rather
// than merging kinds.
inline constexpr double kDensityMin = 1e-3;        // smaller distances count as this
inline constexpr double kDensityStep = 0.02;       // grid step in log(distance)
inline constexpr double kDensityBandwidth = 0.08;  // kernel sigma in log(distance)
inline constexpr double kValleyProminence = 2.5;
inline constexpr double kValleyWeakProminence = 1.5;
inline constexpr double kTailQuantile = 0.95;
inline constexpr double kGapMinMass = 0.01;
inline constexpr double kGapMinTop = 0.25;
inline constexpr double kFloorThreshold = 0.25;
ThresholdEstimate DeriveThreshold(std::span<const NormString> strings, uint32_t sample = 128);

// Outlier clusters (Magpie OSDI'04 §6.3: outliers "always placed in a
// cluster on their own"): a cluster holding fewer than kOutlierShare of the
// requests is not a kind of request of the workload but a few requests
// slowed or perturbed by something outside them (a cold worker's first
// request, a vCPU descheduled in the middle of a send, a page fault, a
// packet cut differently). Whether a recording happens to have one, two or
// four such requests is chance, so counting each as a cluster makes the
// model of one workload differ from recording to recording. Their members
// are attached to the nearest regular representative (the model still
// reports each of them as an anomaly: it lies beyond the threshold of that
// representative) and Clustering counts them. A share, not a size: the
// number of perturbed requests grows with the length of the recording. It
// never applies to small inputs (below 1/kOutlierShare requests every
// cluster is regular), nor when no cluster would be left.
inline constexpr double kOutlierShare = 0.02;

struct ClusterOptions {
  double threshold = 0;  // <= 0: DeriveThreshold()
  // Clusters with fewer than this share of the requests are outliers,
  // attached to their nearest regular cluster; 0 keeps every cluster.
  double outlier_share = kOutlierShare;
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
  uint32_t merged_clusters = 0;        // clusters joined because their representatives were close
  // Outlier clusters (ClusterOptions::outlier_share) whose members were
  // attached to their nearest regular cluster, and those members.
  uint32_t outlier_clusters = 0;
  uint32_t outlier_requests = 0;
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
// Then, among the sampled members whose summed distance is within
// kMedoidSlack (10 %) of that minimum, the one whose total normalised demand
// is nearest the sample's mean: the representative stands for the cluster
// in the model (representatives times cluster sizes), and a medoid of
// per-event distances leans to the typical event, so to the low side of
// skewed demand, or to one side of a demand that comes in two amounts.
uint32_t Medoid(std::span<const NormString> strings, std::span<const uint32_t> members,
                uint32_t sample, float cap, uint64_t* distance_computations = nullptr);
// The cap used for medoids: 4 x threshold, at least 1.
float MedoidCap(double threshold);

Clustering ClusterRequests(std::span<const NormString> strings, const ClusterOptions& options = {});

}  // namespace jackdaw::cluster
