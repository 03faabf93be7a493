#include "model/scoring.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <vector>

namespace jackdaw::model {
namespace {

double Choose2(double n) { return n * (n - 1) / 2; }

}  // namespace

double Purity(std::span<const uint32_t> clusters, std::span<const uint32_t> truth) {
  if (clusters.empty() || clusters.size() != truth.size()) return 0;
  std::map<uint32_t, std::map<uint32_t, uint64_t>> table;
  for (size_t i = 0; i < clusters.size(); ++i) table[clusters[i]][truth[i]]++;
  uint64_t majority = 0;
  for (const auto& [c, row] : table) {
    uint64_t best = 0;
    for (const auto& [t, count] : row) best = std::max(best, count);
    majority += best;
  }
  return static_cast<double>(majority) / static_cast<double>(clusters.size());
}

double AdjustedRandIndex(std::span<const uint32_t> clusters, std::span<const uint32_t> truth) {
  if (clusters.size() != truth.size()) return 0;
  const double n = static_cast<double>(clusters.size());
  if (clusters.size() < 2) return 1;
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> cells;
  std::map<uint32_t, uint64_t> a, b;
  for (size_t i = 0; i < clusters.size(); ++i) {
    cells[{clusters[i], truth[i]}]++;
    a[clusters[i]]++;
    b[truth[i]]++;
  }
  double index = 0, sum_a = 0, sum_b = 0;
  for (const auto& [k, v] : cells) index += Choose2(static_cast<double>(v));
  for (const auto& [k, v] : a) sum_a += Choose2(static_cast<double>(v));
  for (const auto& [k, v] : b) sum_b += Choose2(static_cast<double>(v));
  const double expected = sum_a * sum_b / Choose2(n);
  const double max_index = 0.5 * (sum_a + sum_b);
  if (max_index == expected) return 1;  // both partitions trivial and identical
  return (index - expected) / (max_index - expected);
}

AgreementScore ScoreAgainstTruth(const WorkloadModel& model,
                                 const std::unordered_map<uint64_t, std::string>& truth) {
  AgreementScore s;
  std::unordered_map<std::string, uint32_t> label_ids;
  std::vector<uint32_t> clusters, labels;
  for (const RequestSummary& r : model.requests) {
    auto it = truth.find(r.id);
    if (it == truth.end()) {
      s.unlabeled++;
      continue;
    }
    auto [lit, inserted] = label_ids.emplace(it->second, static_cast<uint32_t>(label_ids.size()));
    clusters.push_back(r.cluster);
    labels.push_back(lit->second);
  }
  s.scored = clusters.size();
  if (!clusters.empty()) {
    s.purity = Purity(clusters, labels);
    s.adjusted_rand_index = AdjustedRandIndex(clusters, labels);
  }
  return s;
}

std::string Composition(const ClusterSummary& cluster,
                        const std::unordered_map<uint64_t, std::string>& truth) {
  std::map<std::string, uint64_t> counts;
  for (uint64_t id : cluster.member_ids) {
    auto it = truth.find(id);
    counts[it == truth.end() ? "?" : it->second]++;
  }
  std::vector<std::pair<uint64_t, std::string>> v;
  for (auto& [label, count] : counts) v.emplace_back(count, label);
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  std::string s;
  for (auto& [count, label] : v) {
    if (!s.empty()) s += "+";
    s += std::to_string(count) + label;
  }
  return s;
}

}  // namespace jackdaw::model
