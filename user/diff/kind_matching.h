// Which kinds of request of BEFORE are which of AFTER: Magpie's distance
// (cluster/distance.h) between the two models' representatives, both
// normalised with one normalisation, so a distance means the same on either
// side.
//
// Kinds are matched as the connected parts of the graph whose edges join a
// BEFORE and an AFTER kind within the threshold, not one to one: the same
// behaviour recorded twice may come out as one cluster on one side and two
// close ones on the other (a cluster split at a different place), and a
// one-to-one pairing would report half of it as a new kind. A part with
// kinds on both sides is one matched kind (its members pooled); an AFTER
// kind alone is new (a structural change), named with its nearest BEFORE
// kind; a BEFORE kind alone is gone.
#pragma once

#include <cstdint>
#include <vector>

#include "diff/diff_side.h"

namespace jackdaw::diff {

struct MatchOptions {
  cluster::Normalization normalization;
  double threshold = 0;
};

// BEFORE's normalisation and threshold: the baseline sets the units that
// AFTER is measured in.
MatchOptions BaselineMatchOptions(const Side& before);

struct MatchedKind {
  std::vector<uint32_t> before, after;  // kind indices, ascending
  double distance = 0;                  // closest BEFORE–AFTER pair within
};

struct NewKind {
  uint32_t after = 0;
  int32_t nearest_before = -1;  // -1 when BEFORE has no kind at all
  double distance = 0;          // to it
};

struct KindMatching {
  std::vector<MatchedKind> matched;  // by their first BEFORE kind
  std::vector<NewKind> added;        // by AFTER index
  std::vector<uint32_t> gone;        // BEFORE indices
};

// distances[i][j]: BEFORE kind i to AFTER kind j.
std::vector<std::vector<double>> RepresentativeDistances(const Side& before, const Side& after,
                                                         const cluster::Normalization& norm);

KindMatching MatchKinds(const std::vector<std::vector<double>>& distances, double threshold);

inline KindMatching MatchKinds(const Side& before, const Side& after, const MatchOptions& o) {
  return MatchKinds(RepresentativeDistances(before, after, o.normalization), o.threshold);
}

}  // namespace jackdaw::diff
