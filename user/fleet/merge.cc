#include "fleet/merge.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <set>

#include "cluster/distance.h"

namespace jackdaw::fleet {
namespace {

// "cpu=1.500000ms", "disk=4096B", "net=250B" into `d`.
void ParseAnnotation(std::string_view field, canonical::Demand* d) {
  const size_t eq = field.find('=');
  if (eq == std::string_view::npos) return;
  const std::string key(field.substr(0, eq)), value(field.substr(eq + 1));
  char* end = nullptr;
  const double v = strtod(value.c_str(), &end);
  if (end == value.c_str() || !std::isfinite(v) || v < 0 || v > 1e18) return;
  if (key == "cpu") d->cpu_ns = static_cast<uint64_t>(std::llround(v * 1e6));
  else if (key == "disk") d->disk_bytes = static_cast<uint64_t>(v);
  else if (key == "net") d->net_bytes = static_cast<uint64_t>(v);
}

canonical::Token ParseToken(std::string_view text, canonical::SymbolTable* symbols) {
  canonical::Token t;
  const size_t brace = text.rfind('{');
  if (brace == std::string_view::npos || brace == 0 || text.back() != '}') {
    t.symbol = symbols->Intern(text);
    return t;
  }
  t.symbol = symbols->Intern(text.substr(0, brace));
  std::string_view fields = text.substr(brace + 1, text.size() - brace - 2);
  while (!fields.empty()) {
    const size_t comma = fields.find(',');
    ParseAnnotation(fields.substr(0, comma), &t.demand);
    if (comma == std::string_view::npos) break;
    fields.remove_prefix(comma + 1);
  }
  return t;
}

}  // namespace

canonical::SerializedRequest ParseRepresentative(const std::string& text, canonical::SymbolTable* symbols) {
  canonical::SerializedRequest r;
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t space = rest.find(' ');
    const std::string_view token = rest.substr(0, space);
    if (!token.empty()) {
      r.tokens.push_back(ParseToken(token, symbols));
      r.total += r.tokens.back().demand;
    }
    if (space == std::string_view::npos) break;
    rest.remove_prefix(space + 1);
  }
  return r;
}

std::vector<FleetKind> MergeKinds(const std::vector<HostCluster>& rows, const MergeOptions& options) {
  canonical::SymbolTable symbols;
  std::vector<canonical::SerializedRequest> parsed;
  parsed.reserve(rows.size());
  for (const HostCluster& c : rows) parsed.push_back(ParseRepresentative(c.representative, &symbols));
  // Scales from the representatives themselves, as the clusterer derives
  // them from its requests.
  std::vector<canonical::SerializedRequest> with_rep;
  for (size_t i = 0; i < rows.size(); ++i)
    if (!rows[i].representative.empty()) with_rep.push_back(parsed[i]);
  const cluster::Normalization norm = cluster::DeriveNormalization(with_rep);
  std::vector<cluster::NormString> strings;
  strings.reserve(rows.size());
  for (const auto& p : parsed) strings.push_back(cluster::Normalize(p, norm));

  std::vector<size_t> order(rows.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (rows[a].requests != rows[b].requests) return rows[a].requests > rows[b].requests;
    if (rows[a].host != rows[b].host) return rows[a].host < rows[b].host;
    return rows[a].cluster < rows[b].cluster;
  });

  struct Building {
    FleetKind kind;
    size_t founder = 0;
    std::set<std::string> hosts;
  };
  std::vector<Building> kinds;
  for (size_t i : order) {
    const HostCluster& c = rows[i];
    int best = -1;
    double best_d = 0;
    if (!c.representative.empty()) {
      for (size_t k = 0; k < kinds.size(); ++k) {
        const Building& b = kinds[k];
        if (b.kind.schema != c.schema || b.kind.representative.empty() || b.hosts.count(c.host)) continue;
        const double d = cluster::Distance(strings[i], strings[b.founder], static_cast<float>(options.max_distance));
        if (d <= options.max_distance && (best < 0 || d < best_d)) best = static_cast<int>(k), best_d = d;
      }
    }
    if (best < 0) {
      Building b;
      b.kind.schema = c.schema;
      b.kind.representative = c.representative;
      b.founder = i;
      kinds.push_back(std::move(b));
      best = static_cast<int>(kinds.size() - 1);
      best_d = 0;
    }
    Building& b = kinds[static_cast<size_t>(best)];
    b.kind.members.push_back({i, best_d});
    b.kind.requests += c.requests;
    b.hosts.insert(c.host);
  }

  std::vector<FleetKind> out;
  for (Building& b : kinds) out.push_back(std::move(b.kind));
  std::stable_sort(out.begin(), out.end(),
                   [](const FleetKind& a, const FleetKind& b) { return a.requests > b.requests; });
  for (size_t k = 0; k < out.size(); ++k) out[k].name = "k" + std::to_string(k);
  for (FleetKind& lone : out) {
    if (lone.members.size() != 1 || lone.representative.empty()) continue;
    for (const FleetKind& other : out) {
      if (&other == &lone || other.schema != lone.schema || other.representative.empty()) continue;
      const double d = cluster::Distance(strings[lone.members[0].row], strings[other.members[0].row]);
      if (lone.nearest_distance < 0 || d < lone.nearest_distance) lone.nearest_distance = d, lone.nearest_kind = other.name;
    }
  }
  return out;
}

}  // namespace jackdaw::fleet
