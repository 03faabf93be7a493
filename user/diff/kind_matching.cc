#include "diff/kind_matching.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace jackdaw::diff {
namespace {

// Symbol ids mean something only within their table: both sides'
// representatives are re-interned into one table before they are compared.
canonical::SerializedRequest Reintern(const canonical::SerializedRequest& r, const canonical::SymbolTable& from,
                                      canonical::SymbolTable* to) {
  canonical::SerializedRequest out = r;
  for (canonical::Token& t : out.tokens) t.symbol = to->Intern(from.Name(t.symbol));
  return out;
}

uint32_t Find(std::vector<uint32_t>& parent, uint32_t x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

}  // namespace

MatchOptions BaselineMatchOptions(const Side& before) {
  return MatchOptions{before.normalization, before.threshold};
}

std::vector<std::vector<double>> RepresentativeDistances(const Side& before, const Side& after,
                                                         const cluster::Normalization& norm) {
  canonical::SymbolTable joint;
  std::vector<cluster::NormString> b, a;
  for (const Kind& k : before.kinds)
    b.push_back(cluster::Normalize(Reintern(k.representative, before.symbols, &joint), norm));
  for (const Kind& k : after.kinds)
    a.push_back(cluster::Normalize(Reintern(k.representative, after.symbols, &joint), norm));
  std::vector<std::vector<double>> d(b.size(), std::vector<double>(a.size()));
  for (size_t i = 0; i < b.size(); ++i)
    for (size_t j = 0; j < a.size(); ++j) d[i][j] = cluster::Distance(b[i], a[j]);
  return d;
}

KindMatching MatchKinds(const std::vector<std::vector<double>>& distances, double threshold) {
  const uint32_t nb = uint32_t(distances.size());
  const uint32_t na = nb ? uint32_t(distances[0].size()) : 0;
  // Union-find over BEFORE kinds [0, nb) and AFTER kinds [nb, nb + na).
  std::vector<uint32_t> parent(nb + na);
  std::iota(parent.begin(), parent.end(), 0);
  for (uint32_t i = 0; i < nb; ++i)
    for (uint32_t j = 0; j < na; ++j)
      if (distances[i][j] <= threshold) parent[Find(parent, i)] = Find(parent, nb + j);

  KindMatching out;
  std::vector<int32_t> part_of_root(nb + na, -1);
  std::vector<MatchedKind> parts;
  for (uint32_t x = 0; x < nb + na; ++x) {
    int32_t& p = part_of_root[Find(parent, x)];
    if (p < 0) p = int32_t(parts.size()), parts.emplace_back();
    (x < nb ? parts[p].before : parts[p].after).push_back(x < nb ? x : x - nb);
  }
  for (MatchedKind& part : parts) {
    if (part.after.empty()) {
      out.gone.push_back(part.before[0]);
      continue;
    }
    if (part.before.empty()) {
      NewKind n{part.after[0], -1, 0};
      double best = std::numeric_limits<double>::infinity();
      for (uint32_t i = 0; i < nb; ++i)
        if (distances[i][n.after] < best) best = distances[i][n.after], n.nearest_before = int32_t(i);
      n.distance = n.nearest_before >= 0 ? best : 0;
      out.added.push_back(n);
      continue;
    }
    part.distance = std::numeric_limits<double>::infinity();
    for (uint32_t i : part.before)
      for (uint32_t j : part.after) part.distance = std::min(part.distance, distances[i][j]);
    out.matched.push_back(std::move(part));
  }
  std::sort(out.gone.begin(), out.gone.end());
  std::sort(out.added.begin(), out.added.end(), [](const NewKind& x, const NewKind& y) { return x.after < y.after; });
  return out;
}

}  // namespace jackdaw::diff
