// Magpie's incremental clustering (OSDI'04 §5) over an unbounded stream of
// requests, in memory bounded by the model rather than by the stream.
//
// StreamingClusterer keeps, per cluster: its representative (an owned copy
// of one member's normalised string), the member count, the running sum and
// maximum of member-to-representative distances at assignment, the first and
// last time (caller's clock, e.g. the request's trace timestamp) a member
// arrived, and a reservoir sample of at most `sample_per_cluster` members
// (their strings and the caller's keys). Nothing else of a request is kept,
// so memory is O(clusters x sample x string length), whatever the length of
// the stream.
//
// Add() is the online step: the request joins the cluster whose
// representative is nearest, unless that distance exceeds the threshold, in
// which case it founds a new cluster and represents it. Representatives are
// re-centred to the medoid of the sample when a cluster reaches 8, 32, 128,
// ... members (as IncrementalClusterer does, but over the reservoir: a
// uniform sample of all members, not the first ones).
//
// Adapting to a changing workload (live mode):
//  * a new kind of request founds a new cluster at once;
//  * a cluster that has received no member for `idle_ns` of the caller's
//    clock is aged out (removed, its keys released) on the next Add() —
//    0 keeps every cluster;
//  * when more than `max_clusters` exist, the least recently fed cluster
//    among the smallest (singletons first) is evicted, so a flood of
//    anomalies cannot grow the model without bound.
// Both are counted in stats(). Ageing and eviction only depend on the
// sequence of Add() calls and their timestamps, never on wall-clock time,
// so the same stream gives the same clusters offline and live.
//
// Reservoir replacement is decided by a hash of (cluster id, member count):
// deterministic, so a stream clustered twice gives identical samples.
//
// Keys: the caller hands a key with each request (e.g. an index into its own
// store of retained requests). A key is "held" while it is in some cluster's
// sample (the representative's key is always held: the representative is a
// sample member). Add() reports every key that stops being held, including
// the new request's own key when it was not sampled, so the caller can free
// what it keeps per request.
#pragma once

#include <cstdint>
#include <vector>

#include "cluster/distance.h"

namespace jackdaw::cluster {

struct StreamingOptions {
  double threshold = 0.25;
  uint32_t sample_per_cluster = 16;
  uint32_t max_clusters = 512;
  uint64_t idle_ns = 0;  // 0: never age clusters out
  uint32_t medoid_sample = 24;
};

struct StreamingStats {
  uint64_t requests = 0;
  uint64_t clusters_founded = 0;
  uint64_t clusters_aged_out = 0;
  uint64_t clusters_evicted = 0;
  uint64_t recentres = 0;
  uint64_t distance_computations = 0;
};

class StreamingClusterer {
 public:
  struct Member {
    NormString string;
    uint64_t key = 0;
    float distance = 0;  // to the representative when it joined
  };
  struct StreamCluster {
    uint64_t id = 0;        // stable for the cluster's life; never reused
    uint32_t rep = 0;       // index into sample
    uint64_t count = 0;     // every member ever assigned
    double sum_distance = 0;
    double max_distance = 0;
    uint64_t first_ns = 0, last_ns = 0;
    std::vector<Member> sample;
    uint64_t next_recentre = 8;

    const Member& representative() const { return sample[rep]; }
    double diameter() const { return count ? sum_distance / static_cast<double>(count) : 0; }
  };
  struct Assignment {
    uint64_t cluster_id = 0;
    float distance = 0;
    bool founded = false;  // the request founded a new cluster
    // Keys no longer held by any cluster (see the class comment).
    std::vector<uint64_t> released;
  };

  explicit StreamingClusterer(StreamingOptions options);

  Assignment Add(NormString s, uint64_t key, uint64_t now_ns);

  // A cluster taken over from a batch clustering (the warm-up): its
  // representative, members (at most sample_per_cluster are kept, evenly
  // spaced, plus the representative) and how many members it stands for.
  // Returns the keys not kept.
  std::vector<uint64_t> Seed(std::vector<Member> members, uint32_t rep, uint64_t count,
                             double sum_distance, double max_distance, uint64_t first_ns,
                             uint64_t last_ns);

  // Nearest representative within `limit`: cluster index (into clusters())
  // or -1.
  struct Nearest {
    int32_t index = -1;
    float distance = 0;
  };
  Nearest FindNearest(const NormString& s, float limit) const;

  const std::vector<StreamCluster>& clusters() const { return clusters_; }
  const StreamingStats& stats() const { return stats_; }
  const StreamingOptions& options() const { return options_; }

 private:
  void Recentre(StreamCluster* c);
  void Remove(size_t index, std::vector<uint64_t>* released);
  void AgeOut(uint64_t now_ns, std::vector<uint64_t>* released);

  StreamingOptions options_;
  std::vector<StreamCluster> clusters_;
  uint64_t next_id_ = 0;
  StreamingStats stats_;
  mutable uint64_t distance_computations_ = 0;
};

}  // namespace jackdaw::cluster
