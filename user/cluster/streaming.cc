#include "cluster/streaming.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "cluster/cluster.h"

namespace jackdaw::cluster {
namespace {

uint64_t Mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

StreamingClusterer::StreamingClusterer(StreamingOptions options) : options_(options) {
  options_.sample_per_cluster = std::max<uint32_t>(options_.sample_per_cluster, 2);
  options_.max_clusters = std::max<uint32_t>(options_.max_clusters, 1);
}

StreamingClusterer::Nearest StreamingClusterer::FindNearest(const NormString& s,
                                                            float limit) const {
  // Visit candidates by increasing lower bound; stop when the bound passes
  // the best exact distance (which is then the nearest; ties: lowest index).
  thread_local std::vector<std::pair<float, int32_t>> order;
  order.clear();
  for (size_t i = 0; i < clusters_.size(); ++i) {
    float lb = LowerBound(s, clusters_[i].representative().string);
    if (lb <= limit) order.emplace_back(lb, static_cast<int32_t>(i));
  }
  std::sort(order.begin(), order.end());
  Nearest best;
  float best_d = limit;
  bool found = false;
  for (const auto& [lb, i] : order) {
    if (lb > best_d) break;
    ++distance_computations_;
    float d = Distance(s, clusters_[i].representative().string, best_d);
    if (d <= best_d && (!found || d < best_d || i < best.index)) {
      best = Nearest{i, d};
      best_d = d;
      found = true;
    }
  }
  return found ? best : Nearest{};
}

StreamingClusterer::Assignment StreamingClusterer::Add(NormString s, uint64_t key,
                                                       uint64_t now_ns) {
  Assignment out;
  ++stats_.requests;
  if (options_.idle_ns) AgeOut(now_ns, &out.released);
  Nearest nn = FindNearest(s, static_cast<float>(options_.threshold));
  if (nn.index >= 0) {
    StreamCluster& c = clusters_[nn.index];
    ++c.count;
    c.sum_distance += nn.distance;
    c.max_distance = std::max<double>(c.max_distance, nn.distance);
    c.last_ns = std::max(c.last_ns, now_ns);
    out.cluster_id = c.id;
    out.distance = nn.distance;
    if (c.sample.size() < options_.sample_per_cluster) {
      c.sample.push_back(Member{std::move(s), key, nn.distance});
    } else {
      // Reservoir sampling (Vitter's algorithm R) with a deterministic draw.
      uint64_t j = Mix(c.id * 0x100000001b3ull ^ c.count) % c.count;
      if (j < c.sample.size() && j != c.rep) {
        out.released.push_back(c.sample[j].key);
        c.sample[j] = Member{std::move(s), key, nn.distance};
      } else {
        out.released.push_back(key);
      }
    }
    if (c.count >= c.next_recentre) Recentre(&c);
  } else {
    StreamCluster c;
    c.id = next_id_++;
    c.count = 1;
    c.first_ns = c.last_ns = now_ns;
    c.sample.push_back(Member{std::move(s), key, 0});
    clusters_.push_back(std::move(c));
    ++stats_.clusters_founded;
    out.cluster_id = clusters_.back().id;
    out.founded = true;
    if (clusters_.size() > options_.max_clusters) {
      // The least recently fed of the smallest, never the one just founded.
      size_t victim = 0;
      for (size_t i = 1; i + 1 < clusters_.size(); ++i) {
        const StreamCluster& a = clusters_[i];
        const StreamCluster& b = clusters_[victim];
        if (a.count < b.count || (a.count == b.count && a.last_ns < b.last_ns)) victim = i;
      }
      Remove(victim, &out.released);
      ++stats_.clusters_evicted;
    }
  }
  stats_.distance_computations = distance_computations_;
  return out;
}

std::vector<uint64_t> StreamingClusterer::Seed(std::vector<Member> members, uint32_t rep,
                                               uint64_t count, double sum_distance,
                                               double max_distance, uint64_t first_ns,
                                               uint64_t last_ns) {
  std::vector<uint64_t> released;
  StreamCluster c;
  c.id = next_id_++;
  c.count = std::max<uint64_t>(count, members.size());
  c.sum_distance = sum_distance;
  c.max_distance = max_distance;
  c.first_ns = first_ns;
  c.last_ns = last_ns;
  const size_t k = options_.sample_per_cluster;
  const size_t n = members.size();
  for (size_t i = 0; i < n; ++i) {
    // Evenly spaced positions, and the representative wherever it is.
    bool keep = n <= k ? true : (i == rep || (i * k / n != (i + 1) * k / n && c.sample.size() + 1 < k));
    if (!keep) {
      released.push_back(members[i].key);
      continue;
    }
    if (i == rep) c.rep = static_cast<uint32_t>(c.sample.size());
    c.sample.push_back(std::move(members[i]));
  }
  while (c.next_recentre <= c.count) c.next_recentre *= 4;
  ++stats_.clusters_founded;
  clusters_.push_back(std::move(c));
  return released;
}

void StreamingClusterer::Recentre(StreamCluster* c) {
  std::vector<NormString> strings;
  strings.reserve(c->sample.size());
  for (const Member& m : c->sample) strings.push_back(m.string);
  std::vector<uint32_t> all(strings.size());
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  c->rep = Medoid(strings, all, options_.medoid_sample, MedoidCap(options_.threshold),
                  &distance_computations_);
  while (c->next_recentre <= c->count) c->next_recentre *= 4;
  ++stats_.recentres;
}

void StreamingClusterer::Remove(size_t index, std::vector<uint64_t>* released) {
  for (const Member& m : clusters_[index].sample) released->push_back(m.key);
  clusters_.erase(clusters_.begin() + static_cast<std::ptrdiff_t>(index));
}

void StreamingClusterer::AgeOut(uint64_t now_ns, std::vector<uint64_t>* released) {
  for (size_t i = clusters_.size(); i-- > 0;) {
    if (clusters_[i].last_ns + options_.idle_ns < now_ns) {
      Remove(i, released);
      ++stats_.clusters_aged_out;
    }
  }
}

}  // namespace jackdaw::cluster
