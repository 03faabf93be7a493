// Agreement of a clustering with ground truth, for the reproduction of
// Magpie's Tables 2–5 (DESIGN.md "Validation").
//
//  * Purity: each cluster votes for its most frequent true label; purity is
//    the fraction of requests carrying their cluster's majority label. 1 is
//    perfect; it rewards over-splitting, hence also:
//  * Adjusted Rand index (Hubert & Arabie 1985): pair-counting agreement
//    corrected for chance, from the contingency table n_ij:
//      ARI = (sum_ij C(n_ij,2) - E) / (0.5 (sum_i C(a_i,2) + sum_j C(b_j,2)) - E)
//      E   = sum_i C(a_i,2) sum_j C(b_j,2) / C(n,2)
//    1 for identical partitions (up to renaming), ~0 for random ones, can be
//    negative. When both partitions are trivial (the denominator is 0) the
//    partitions are identical and the ARI is 1.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>

#include "model/workload_model.h"

namespace jackdaw::model {

double Purity(std::span<const uint32_t> clusters, std::span<const uint32_t> truth);
double AdjustedRandIndex(std::span<const uint32_t> clusters, std::span<const uint32_t> truth);

struct AgreementScore {
  double purity = 0;
  double adjusted_rand_index = 0;
  uint64_t scored = 0;     // requests with a truth label
  uint64_t unlabeled = 0;  // requests without one (left out of both scores)
};

// truth: request id -> true label (e.g. the load driver's type letter).
AgreementScore ScoreAgainstTruth(const WorkloadModel& model,
                                 const std::unordered_map<uint64_t, std::string>& truth);

// "266A+1B": a cluster's composition by true label, largest first.
std::string Composition(const ClusterSummary& cluster,
                        const std::unordered_map<uint64_t, std::string>& truth);

}  // namespace jackdaw::model
