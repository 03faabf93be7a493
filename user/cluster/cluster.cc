#include "cluster/cluster.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace jackdaw::cluster {
namespace {

// Reports progress every this many items (and at the end of a stage).
constexpr uint64_t kProgressEvery = 256;

void Report(const ProgressCallback& progress, std::string_view stage, uint64_t done,
            uint64_t total) {
  if (progress && (done % kProgressEvery == 0 || done == total)) progress(stage, done, total);
}

// Evenly spaced positions: k * n / count for k < count (all when n <= count).
std::vector<uint32_t> EvenSample(size_t n, size_t count) {
  std::vector<uint32_t> out;
  if (n <= count) {
    out.resize(n);
    std::iota(out.begin(), out.end(), 0u);
    return out;
  }
  out.reserve(count);
  for (size_t k = 0; k < count; ++k) out.push_back(static_cast<uint32_t>(k * n / count));
  return out;
}

// Pairwise distances inside a cluster are capped at this multiple of the
// threshold (at least kMedoidCapMin): a member that far from another is an
// outlier either way, and the cap keeps every comparison banded.
constexpr float kMedoidCapFactor = 4;
constexpr float kMedoidCapMin = 1;

// A member whose summed distance to the sample is within this fraction of
// the medoid's may represent the cluster instead, if its demand is nearer
// the mean.
constexpr double kMedoidSlack = 0.1;

// Sample pairwise distances for the threshold are capped here: the
// threshold is in the lowest valley, far below (capped pairs pile up at the
// cap, which is as good as a family of large distances).
constexpr float kThresholdDistanceCap = 4;

template <typename Get>
uint32_t MedoidOf(Get get, std::span<const uint32_t> members, uint32_t sample, float cap,
                  uint64_t* count) {
  if (members.size() <= 2) return members.front();
  std::vector<uint32_t> pick;
  for (uint32_t p : EvenSample(members.size(), std::max<uint32_t>(sample, 1)))
    pick.push_back(members[p]);
  std::vector<double> sum(pick.size(), 0.0);
  for (size_t i = 0; i < pick.size(); ++i) {
    for (size_t j = i + 1; j < pick.size(); ++j) {
      double d = std::min(Distance(get(pick[i]), get(pick[j]), cap), cap);
      sum[i] += d;
      sum[j] += d;
    }
  }
  if (count) *count += pick.size() * (pick.size() - 1) / 2;
  size_t best = 0;
  for (size_t i = 1; i < pick.size(); ++i)
    if (sum[i] < sum[best]) best = i;
  // Among the members nearly as central as the medoid, the one whose total
  // demand is nearest the sample's mean: the model (representatives times
  // cluster sizes) should reproduce the workload's demand, and a medoid of
  // per-event distances leans to the typical event, so to the low side of
  // skewed demand.
  double mean[kNumResources] = {0, 0, 0};
  for (uint32_t i : pick)
    for (int r = 0; r < kNumResources; ++r) mean[r] += get(i).total[r];
  for (double& m : mean) m /= static_cast<double>(pick.size());
  auto off_mean = [&](size_t i) {
    double s2 = 0;
    for (int r = 0; r < kNumResources; ++r) {
      const double dv = get(pick[i]).total[r] - mean[r];
      s2 += dv * dv;
    }
    return s2;
  };
  const double near = sum[best] * (1 + kMedoidSlack);
  size_t chosen = best;
  double chosen_off = off_mean(best);
  for (size_t i = 0; i < pick.size(); ++i) {
    if (i == best || sum[i] > near) continue;
    const double off = off_mean(i);
    if (off < chosen_off || (off == chosen_off && sum[i] < sum[chosen])) {
      chosen = i;
      chosen_off = off;
    }
  }
  return pick[chosen];
}

// Nearest of `reps` (indices into strings) to s, exactly, with lower-bound
// pruning, among those within `limit` (pos -1 if none). `skip` is excluded.
// Ties go to the lowest position in reps.
struct NearestResult {
  int32_t pos = -1;
  float distance = std::numeric_limits<float>::infinity();
};

template <typename Get>
NearestResult NearestOf(const NormString& s, Get get, const std::vector<uint32_t>& reps,
                        int32_t skip, uint64_t* count,
                        float limit = std::numeric_limits<float>::infinity()) {
  thread_local std::vector<std::pair<float, int32_t>> cand;
  cand.clear();
  for (size_t c = 0; c < reps.size(); ++c) {
    if (static_cast<int32_t>(c) == skip) continue;
    cand.emplace_back(LowerBound(s, get(reps[c])), static_cast<int32_t>(c));
  }
  std::sort(cand.begin(), cand.end());
  NearestResult best;
  float bound = limit;
  for (auto [lb, c] : cand) {
    if (lb > bound) break;
    float d = Distance(s, get(reps[c]), bound);
    ++*count;
    if (d > bound) continue;
    if (best.pos < 0 || d < best.distance || (d == best.distance && c < best.pos)) {
      best.distance = d;
      best.pos = c;
      bound = d;
    }
  }
  return best;
}

}  // namespace

float MedoidCap(double threshold) {
  return std::max(kMedoidCapMin, kMedoidCapFactor * static_cast<float>(threshold));
}

ThresholdEstimate DeriveThreshold(std::span<const NormString> strings, uint32_t sample) {
  ThresholdEstimate est;
  est.source = ThresholdEstimate::Source::kFloor;
  est.threshold = kFloorThreshold;
  std::vector<uint32_t> pick = EvenSample(strings.size(), std::max<uint32_t>(sample, 2));
  est.sample_size = static_cast<uint32_t>(pick.size());
  if (pick.size() < 3) return est;
  std::vector<float> d;
  d.reserve(pick.size() * (pick.size() - 1) / 2);
  for (size_t i = 0; i < pick.size(); ++i)
    for (size_t j = i + 1; j < pick.size(); ++j)
      d.push_back(std::min(Distance(strings[pick[i]], strings[pick[j]], kThresholdDistanceCap),
                           kThresholdDistanceCap));
  std::sort(d.begin(), d.end());
  const double n = static_cast<double>(d.size());

  // Density of log(distance) on a grid, by a Gaussian kernel (histogram
  // then convolution). Distances below kDensityMin count at kDensityMin.
  const double x0 = std::log(kDensityMin);
  const double x1 = std::log(static_cast<double>(kThresholdDistanceCap)) + 4 * kDensityBandwidth;
  const size_t g = static_cast<size_t>(std::ceil((x1 - x0) / kDensityStep)) + 1;
  std::vector<double> hist(g, 0.0), dens(g, 0.0);
  for (float v : d) {
    const double x = std::log(std::max<double>(v, kDensityMin));
    hist[std::min(g - 1, static_cast<size_t>(std::lround((x - x0) / kDensityStep)))] += 1;
  }
  const long half = static_cast<long>(std::ceil(4 * kDensityBandwidth / kDensityStep));
  std::vector<double> kernel(static_cast<size_t>(2 * half + 1));
  for (long k = -half; k <= half; ++k) {
    const double z = static_cast<double>(k) * kDensityStep / kDensityBandwidth;
    kernel[static_cast<size_t>(k + half)] = std::exp(-0.5 * z * z);
  }
  for (size_t i = 0; i < g; ++i) {
    if (hist[i] == 0) continue;
    for (long k = -half; k <= half; ++k) {
      const long j = static_cast<long>(i) + k;
      if (j >= 0 && j < static_cast<long>(g)) dens[j] += hist[i] * kernel[k + half];
    }
  }
  auto at = [&](size_t i) { return std::exp(x0 + static_cast<double>(i) * kDensityStep); };
  auto below = [&](double t) {
    return static_cast<size_t>(std::upper_bound(d.begin(), d.end(), static_cast<float>(t)) -
                               d.begin());
  };
  const double min_below = std::max(1.0, kGapMinMass * n);
  const double tiny = 1e-9 * *std::max_element(dens.begin(), dens.end());

  // The lowest valley reaching above kGapMinTop: a run of grid points of
  // locally least density (a plateau of nothing, in a clean gap) whose
  // density is at most 1/kValleyProminence of the peaks on both sides (the
  // highest densities before the density falls below the valley's again),
  // with at least kGapMinMass of the pairs below it.
  bool several_families = false;
  // The first weak valley: where the scan falls back when a strong valley
  // further up turns out to lie between groups of kinds (below).
  bool have_weak = false;
  ThresholdEstimate weak = est;
  size_t i = 0;
  while (i + 1 < g) {
    // Descend to the next local minimum run [a, b] (a plateau if flat).
    size_t a = i;
    while (a + 1 < g && dens[a + 1] <= dens[a] + tiny) {
      if (dens[a + 1] < dens[a] - tiny) {
        ++a;
        continue;
      }
      // Flat: see whether the plateau ends by rising (a valley) or falling.
      size_t e = a + 1;
      while (e + 1 < g && std::abs(dens[e + 1] - dens[a]) <= tiny) ++e;
      if (e + 1 < g && dens[e + 1] < dens[a] - tiny) {
        a = e;  // it falls further: keep descending
        continue;
      }
      break;
    }
    size_t b = a;
    while (b + 1 < g && std::abs(dens[b + 1] - dens[a]) <= tiny) ++b;
    if (b + 1 >= g) break;  // the density never rises again
    // Start of the run (the plateau may begin before a).
    while (a > 0 && std::abs(dens[a - 1] - dens[b]) <= tiny) --a;
    const double v = std::max(dens[a], tiny);
    double left = 0, right = 0;
    size_t lpeak = a, rpeak = b;
    for (size_t k = a; k-- > 0 && dens[k] >= dens[a] - tiny;)
      if (dens[k] > left) left = dens[k], lpeak = k;
    for (size_t k = b + 1; k < g && dens[k] >= dens[a] - tiny; ++k)
      if (dens[k] > right) right = dens[k], rpeak = k;
    const double prominence = std::min(left, right) / v;
    const size_t mid = (a + b) / 2;
    if (at(b) >= kGapMinTop) {
      if (prominence >= kValleyWeakProminence) several_families = true;
      const double t = std::min(at(b), std::max(at(mid), kGapMinTop));
      const bool enough_below = static_cast<double>(below(t)) >= min_below;
      if (prominence >= kValleyProminence && enough_below) {
        // Its lower mode is the spread of requests of one kind only if that
        // is below kGapMinTop. Beyond it the scan has passed the
        // kinds' own spread (through valleys blurred by a few odd requests)
        // and this valley lies between groups of kinds, whose members it
        // would merge: fall back to the first weak valley, else the floor.
        // More clusters rather than merged kinds.
        //
        // Unless that lower mode is one family with the kinds' own spread:
        // from it down to kGapMinTop the density never dips to a weak valley
        // (1/kValleyWeakProminence of the mode). Kinds whose own spread is
        // wide (a database's one-row INSERT with and without a log write of
        // its own: 0.05-0.65 apart) have their mode above kGapMinTop with a
        // shoulder below it; a group of kinds stands apart from the kinds'
        // own spread by a valley (in the black-box A/B/E/F run, 0.1 of the
        // A-B mode's 689 between them).
        bool kinds_below = at(lpeak) <= kGapMinTop;
        for (size_t k = lpeak; !kinds_below && k-- > 0;) {
          if (dens[k] * kValleyWeakProminence < dens[lpeak]) break;
          kinds_below = at(k) <= kGapMinTop;
        }
        if (!kinds_below) return have_weak ? weak : est;
        est.threshold = t;
        est.source = ThresholdEstimate::Source::kGap;
        est.gap_low = at(lpeak);
        est.gap_high = at(rpeak);
        return est;
      }
      if (!have_weak && prominence >= kValleyWeakProminence && enough_below) {
        have_weak = true;
        weak.threshold = t;
        weak.source = ThresholdEstimate::Source::kGap;
        weak.gap_low = at(lpeak);
        weak.gap_high = at(rpeak);
      }
    }
    // Climb out of this valley to the next peak.
    i = b + 1;
    while (i + 1 < g && dens[i + 1] >= dens[i] - tiny) ++i;
  }
  // No clear valley. If the density has none at all, the distances are one
  // family (one kind of request, perhaps a few outliers) and the threshold
  // holds most of it; otherwise the families blur into each other, and the
  // floor errs on the side of more clusters rather than merging kinds.
  if (several_families) return est;
  const double q = d[static_cast<size_t>(kTailQuantile * (n - 1))];
  if (q > kFloorThreshold) {
    est.source = ThresholdEstimate::Source::kTail;
    est.threshold = q;
    est.gap_low = q;
  }
  return est;
}

IncrementalClusterer::IncrementalClusterer(double threshold, uint32_t medoid_sample)
    : threshold_(threshold), medoid_sample_(std::max<uint32_t>(medoid_sample, 2)) {}

IncrementalClusterer::Nearest IncrementalClusterer::FindNearest(const NormString& s,
                                                                float limit) const {
  thread_local std::vector<uint32_t> reps;
  reps.clear();
  for (const State& c : clusters_) reps.push_back(c.rep);
  NearestResult r = NearestOf(
      s, [&](uint32_t i) -> const NormString& { return *strings_[i]; }, reps, -1,
      &distance_computations_, limit);
  return Nearest{r.pos, r.distance};
}

uint32_t IncrementalClusterer::Add(const NormString* s) {
  const uint32_t index = static_cast<uint32_t>(strings_.size());
  strings_.push_back(s);
  // Only a representative within the threshold matters here, so the search
  // is limited to it and every comparison is banded.
  Nearest nn = FindNearest(*s, static_cast<float>(threshold_));
  if (nn.cluster >= 0 && nn.distance <= threshold_) {
    State& c = clusters_[nn.cluster];
    c.members.push_back(index);
    c.sum_distance += nn.distance;
    if (c.members.size() >= c.next_recentre) Recentre(&c);
    return static_cast<uint32_t>(nn.cluster);
  }
  State c;
  c.rep = index;
  c.members.push_back(index);
  clusters_.push_back(std::move(c));
  return static_cast<uint32_t>(clusters_.size() - 1);
}

void IncrementalClusterer::Recentre(State* c) {
  c->rep = MedoidOf([&](uint32_t i) -> const NormString& { return *strings_[i]; }, c->members,
                    std::min<uint32_t>(medoid_sample_, 24), MedoidCap(threshold_),
                    &distance_computations_);
  c->next_recentre *= 4;
}

double IncrementalClusterer::AverageDiameter() const {
  if (clusters_.empty()) return 0;
  double sum = 0;
  for (const State& c : clusters_) sum += c.sum_distance / static_cast<double>(c.members.size());
  return sum / static_cast<double>(clusters_.size());
}

uint32_t Medoid(std::span<const NormString> strings, std::span<const uint32_t> members,
                uint32_t sample, float cap, uint64_t* distance_computations) {
  return MedoidOf([&](uint32_t i) -> const NormString& { return strings[i]; }, members, sample, cap,
                  distance_computations);
}

Clustering ClusterRequests(std::span<const NormString> strings, const ClusterOptions& options) {
  Clustering out;
  const size_t n = strings.size();
  const auto& progress = options.progress;
  uint64_t computations = 0;
  auto get = [&](uint32_t i) -> const NormString& { return strings[i]; };

  if (options.threshold > 0) {
    out.threshold.threshold = options.threshold;
    out.threshold.source = ThresholdEstimate::Source::kUser;
  } else {
    if (progress) progress("threshold", 0, 1);
    out.threshold = DeriveThreshold(strings, options.threshold_sample);
    if (progress) progress("threshold", 1, 1);
  }
  if (n == 0) return out;

  // 1. Magpie's incremental pass.
  IncrementalClusterer inc(out.threshold.threshold, options.medoid_sample);
  for (size_t i = 0; i < n; ++i) {
    inc.Add(&strings[i]);
    Report(progress, "cluster", i + 1, n);
  }
  computations += inc.distance_computations();
  std::vector<std::vector<uint32_t>> members(inc.num_clusters());
  for (size_t c = 0; c < inc.num_clusters(); ++c) members[c] = inc.members(c);
  std::vector<uint32_t> assignment(n);
  std::vector<float> distance(n, 0);
  for (size_t c = 0; c < members.size(); ++c)
    for (uint32_t i : members[c]) assignment[i] = static_cast<uint32_t>(c);

  // 2. Representatives become medoids.
  std::vector<uint32_t> reps(members.size());
  auto choose_reps = [&] {
    for (size_t c = 0; c < members.size(); ++c)
      reps[c] = MedoidOf(get, members[c], options.medoid_sample, MedoidCap(out.threshold.threshold),
                         &computations);
  };
  choose_reps();

  // 3. Clusters whose representatives are within the threshold of each
  // other are one cluster: a founder was beyond the threshold of every
  // representative when it arrived, but representatives move as clusters
  // grow. Pairs within the threshold are joined (union-find, so a chain
  // joins whole), medoids are recomputed, until no pair is left.
  const float limit = static_cast<float>(out.threshold.threshold);
  for (;;) {
    const size_t k = members.size();
    std::vector<uint32_t> parent(k);
    std::iota(parent.begin(), parent.end(), 0u);
    auto find = [&](uint32_t x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];
      return x;
    };
    bool merged = false;
    for (size_t a = 0; a < k; ++a) {
      const NormString& sa = strings[reps[a]];
      for (size_t b = a + 1; b < k; ++b) {
        const NormString& sb = strings[reps[b]];
        if (LowerBound(sa, sb) > limit) continue;
        ++computations;
        if (Distance(sa, sb, limit) > limit) continue;
        uint32_t ra = find(static_cast<uint32_t>(a)), rb = find(static_cast<uint32_t>(b));
        if (ra == rb) continue;
        parent[std::max(ra, rb)] = std::min(ra, rb);
        merged = true;
      }
    }
    if (!merged) break;
    std::vector<std::vector<uint32_t>> joined;
    std::vector<int32_t> slot(k, -1);
    for (size_t c = 0; c < k; ++c) {
      const uint32_t r = find(static_cast<uint32_t>(c));
      if (slot[r] < 0) {
        slot[r] = static_cast<int32_t>(joined.size());
        joined.emplace_back();
      }
      auto& dst = joined[static_cast<size_t>(slot[r])];
      dst.insert(dst.end(), members[c].begin(), members[c].end());
    }
    out.merged_clusters += static_cast<uint32_t>(k - joined.size());
    for (auto& m : joined) std::sort(m.begin(), m.end());
    members = std::move(joined);
    for (size_t c = 0; c < members.size(); ++c)
      for (uint32_t i : members[c]) assignment[i] = static_cast<uint32_t>(c);
    reps.resize(members.size());
    choose_reps();
  }

  // 4. Optionally, every request moves to its nearest representative.
  const uint32_t rounds = options.refine ? std::max<uint32_t>(options.refine_iterations, 1) : 0;
  for (uint32_t round = 0; round < rounds; ++round) {
    if (round > 0) choose_reps();
    std::vector<uint32_t> rep_of(n, UINT32_MAX);
    for (size_t c = 0; c < reps.size(); ++c) rep_of[reps[c]] = static_cast<uint32_t>(c);
    uint32_t moves = 0;
    for (size_t i = 0; i < n; ++i) {
      uint32_t target;
      float d;
      if (rep_of[i] != UINT32_MAX) {
        target = rep_of[i];  // a representative stays in its own cluster
        d = 0;
      } else {
        // Banded search within the threshold first; only requests beyond
        // it from every representative need the full one.
        const float limit = static_cast<float>(out.threshold.threshold);
        NearestResult r = NearestOf(strings[i], get, reps, -1, &computations, limit);
        if (r.pos < 0) r = NearestOf(strings[i], get, reps, -1, &computations);
        target = static_cast<uint32_t>(r.pos);
        d = r.distance;
      }
      moves += target != assignment[i];
      assignment[i] = target;
      distance[i] = d;
      Report(progress, "refine", i + 1, n);
    }
    out.refine_moves += moves;
    for (auto& m : members) m.clear();
    for (size_t i = 0; i < n; ++i) members[assignment[i]].push_back(static_cast<uint32_t>(i));
    if (moves == 0) break;
  }
  if (rounds == 0) {
    for (size_t c = 0; c < members.size(); ++c)
      for (uint32_t i : members[c]) {
        distance[i] = i == reps[c] ? 0 : Distance(strings[i], strings[reps[c]]);
        ++computations;
      }
  }

  // 4b. Outlier clusters: their members go to the nearest regular
  // representative (kOutlierShare in cluster.h).
  if (options.outlier_share > 0 && members.size() > 1) {
    const double min_size = options.outlier_share * static_cast<double>(n);
    std::vector<uint32_t> regular_reps;
    std::vector<uint32_t> regular_of;  // position in regular_reps -> cluster
    for (size_t c = 0; c < members.size(); ++c) {
      if (static_cast<double>(members[c].size()) >= min_size) {
        regular_reps.push_back(reps[c]);
        regular_of.push_back(static_cast<uint32_t>(c));
      }
    }
    if (!regular_reps.empty() && regular_reps.size() < members.size()) {
      std::vector<std::vector<uint32_t>> kept;
      std::vector<uint32_t> kept_reps;
      std::vector<uint32_t> new_index(members.size(), UINT32_MAX);
      for (uint32_t c : regular_of) {
        new_index[c] = static_cast<uint32_t>(kept.size());
        kept.push_back(std::move(members[c]));
        kept_reps.push_back(reps[c]);
      }
      for (size_t c = 0; c < members.size(); ++c) {
        if (new_index[c] != UINT32_MAX) continue;
        ++out.outlier_clusters;
        for (uint32_t i : members[c]) {
          const NearestResult r = NearestOf(strings[i], get, regular_reps, -1, &computations);
          const uint32_t target = new_index[regular_of[static_cast<size_t>(r.pos)]];
          kept[target].push_back(i);
          assignment[i] = target;
          distance[i] = r.distance;
          ++out.outlier_requests;
        }
      }
      for (size_t c = 0; c < kept.size(); ++c) {
        std::sort(kept[c].begin(), kept[c].end());
        for (uint32_t i : kept[c]) assignment[i] = static_cast<uint32_t>(c);
      }
      members = std::move(kept);
      reps = std::move(kept_reps);
    }
  }

  // 5. Order clusters largest first (ties: earliest first member); no
  // cluster is empty because representatives never leave their cluster.
  std::vector<uint32_t> order(members.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (members[a].size() != members[b].size()) return members[a].size() > members[b].size();
    return members[a].front() < members[b].front();
  });
  std::vector<uint32_t> new_id(members.size());
  for (size_t k = 0; k < order.size(); ++k) new_id[order[k]] = static_cast<uint32_t>(k);
  out.clusters.resize(order.size());
  std::vector<uint32_t> final_reps(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    Cluster& c = out.clusters[k];
    c.representative = reps[order[k]];
    c.members = std::move(members[order[k]]);
    final_reps[k] = c.representative;
  }
  out.assignment.resize(n);
  for (size_t i = 0; i < n; ++i) out.assignment[i] = new_id[assignment[i]];
  out.distance = std::move(distance);

  // 6. Statistics.
  double weighted = 0;
  for (size_t k = 0; k < out.clusters.size(); ++k) {
    Cluster& c = out.clusters[k];
    double sum = 0, mx = 0;
    for (uint32_t i : c.members) {
      sum += out.distance[i];
      mx = std::max<double>(mx, out.distance[i]);
    }
    c.diameter = sum / static_cast<double>(c.members.size());
    c.max_distance = mx;
    weighted += sum;
    if (out.clusters.size() > 1) {
      NearestResult r = NearestOf(strings[c.representative], get, final_reps,
                                  static_cast<int32_t>(k), &computations);
      c.min_separation = r.distance;
      c.nearest_cluster = r.pos;
    }
    Report(progress, "separation", k + 1, out.clusters.size());
  }
  out.avg_diameter = weighted / static_cast<double>(n);
  // Mean distance over pairs of representatives, over an even sample of
  // them sized so that the exact comparisons stay within a budget of
  // dynamic-programme cells (all of them, up to 256, for short strings).
  constexpr double kPairCellBudget = 2e8;
  double mean_len = 0;
  for (uint32_t r : final_reps) mean_len += static_cast<double>(strings[r].tokens.size());
  mean_len = std::max(1.0, mean_len / static_cast<double>(std::max<size_t>(final_reps.size(), 1)));
  const size_t max_pair_reps =
      static_cast<size_t>(std::clamp(std::sqrt(2 * kPairCellBudget) / mean_len, 16.0, 256.0));
  std::vector<uint32_t> pick = EvenSample(final_reps.size(), max_pair_reps);
  double pair_sum = 0;
  uint64_t pairs = 0;
  for (size_t a = 0; a < pick.size(); ++a)
    for (size_t b = a + 1; b < pick.size(); ++b) {
      pair_sum += Distance(strings[final_reps[pick[a]]], strings[final_reps[pick[b]]]);
      ++pairs;
    }
  computations += pairs;
  out.avg_inter_cluster_distance = pairs ? pair_sum / static_cast<double>(pairs) : 0;
  out.distance_computations = computations;
  return out;
}

}  // namespace jackdaw::cluster
