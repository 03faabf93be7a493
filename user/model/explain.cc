#include "model/explain.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace jackdaw::model {
namespace {

constexpr const char* kDisplayName[cluster::kNumResources] = {"CPU", "disk", "net"};

double Get(const canonical::Demand& d, int r) {
  return static_cast<double>(r == 0 ? d.cpu_ns : r == 1 ? d.disk_bytes : d.net_bytes);
}

std::string Signed(int r, double delta) {
  return (delta >= 0 ? "+" : "-") + FormatResource(r, std::abs(delta));
}

// "(CPU 100.000 ms, net 250 B)"; empty when there is no demand.
std::string DemandText(const canonical::Demand& d) {
  std::string s;
  for (int r = 0; r < cluster::kNumResources; ++r) {
    if (Get(d, r) == 0) continue;
    s += s.empty() ? " (" : ", ";
    s += std::string(kDisplayName[r]) + " " + FormatResource(r, Get(d, r));
  }
  return s.empty() ? s : s + ")";
}

}  // namespace

std::string FormatResource(int resource, double value) {
  char buf[64];
  if (resource == 0) {
    if (value >= 1e6)
      snprintf(buf, sizeof(buf), "%.3f ms", value / 1e6);
    else
      snprintf(buf, sizeof(buf), "%.1f us", value / 1e3);
  } else if (value < 1024) {
    snprintf(buf, sizeof(buf), "%.0f B", value);
  } else if (value < 1024.0 * 1024) {
    snprintf(buf, sizeof(buf), "%.1f KiB", value / 1024);
  } else {
    snprintf(buf, sizeof(buf), "%.1f MiB", value / (1024.0 * 1024));
  }
  return buf;
}

Explanation Explain(const canonical::SerializedRequest& anomaly,
                    const cluster::NormString& anomaly_norm,
                    const canonical::SerializedRequest& representative,
                    const cluster::NormString& representative_norm,
                    const canonical::SymbolTable& symbols, const cluster::Normalization& norm,
                    double noticeable, uint32_t max_reasons) {
  Explanation ex;
  for (const canonical::Token& t : anomaly.tokens)
    ex.events.push_back(AnomalyEvent{symbols.Name(t.symbol), t.demand, false});

  // Totals first: the headline a reader wants ("100 ms more CPU").
  std::string totals;
  for (int r = 0; r < cluster::kNumResources; ++r) {
    double a = Get(anomaly.total, r), b = Get(representative.total, r);
    if (std::abs(a - b) / norm.scale(r) < noticeable) continue;
    totals += totals.empty() ? "in total " : "; ";
    totals += std::string(kDisplayName[r]) + " " + Signed(r, a - b) + " (" + FormatResource(r, a) +
              " vs " + FormatResource(r, b) + " in the representative)";
  }
  // The exchange's payload, when its ratio term is noticeable.
  const uint64_t msg_a[2] = {anomaly.msg_in_bytes, anomaly.msg_out_bytes};
  const uint64_t msg_b[2] = {representative.msg_in_bytes, representative.msg_out_bytes};
  for (int d = 0; d < 2; ++d) {
    if (std::abs(anomaly_norm.log_msg[d] - representative_norm.log_msg[d]) < noticeable) continue;
    totals += totals.empty() ? "" : "; ";
    totals += std::string(d == 0 ? "message in " : "message out ") + FormatResource(1, double(msg_a[d])) +
              " vs " + FormatResource(1, double(msg_b[d]));
  }
  if (anomaly.tokens.size() != representative.tokens.size()) {
    totals += totals.empty() ? "" : "; ";
    totals += std::to_string(anomaly.tokens.size()) + " events vs " +
              std::to_string(representative.tokens.size());
  }

  // Per-step reasons, merged when the same sentence recurs.
  struct Agg {
    double weight = 0;
    int count = 0;
  };
  std::map<std::string, Agg> agg;
  // The alignment keeps the whole table; very long requests get the totals
  // only.
  constexpr size_t kMaxAlignCells = size_t{16} << 20;
  const bool align =
      anomaly_norm.tokens.size() * representative_norm.tokens.size() <= kMaxAlignCells;
  auto add = [&](std::string text, double weight) {
    Agg& a = agg[std::move(text)];
    a.weight += weight;
    a.count++;
  };
  const std::vector<cluster::AlignmentStep> steps =
      align ? cluster::Align(anomaly_norm, representative_norm)
            : std::vector<cluster::AlignmentStep>{};
  for (const cluster::AlignmentStep& s : steps) {
    if (s.op == cluster::EditOp::kExtra) {
      const canonical::Token& t = anomaly.tokens[s.a_index];
      ex.events[s.a_index].differs = true;
      add("extra event '" + symbols.Name(t.symbol) + "'" + DemandText(t.demand), s.cost);
    } else if (s.op == cluster::EditOp::kMissing) {
      const canonical::Token& t = representative.tokens[s.b_index];
      add("missing event '" + symbols.Name(t.symbol) + "'" + DemandText(t.demand) +
              " that the representative has",
          s.cost);
    } else {
      const canonical::Token& a = anomaly.tokens[s.a_index];
      const canonical::Token& b = representative.tokens[s.b_index];
      if (a.symbol != b.symbol) {
        ex.events[s.a_index].differs = true;
        add("event '" + symbols.Name(a.symbol) + "' where the representative has '" +
                symbols.Name(b.symbol) + "'",
            s.cost);
        continue;
      }
      std::string diff;
      for (int r = 0; r < cluster::kNumResources; ++r) {
        double x = Get(a.demand, r), y = Get(b.demand, r);
        if (std::abs(x - y) / norm.scale(r) < noticeable) continue;
        diff += diff.empty() ? "" : ", ";
        diff += std::string(kDisplayName[r]) + " " + FormatResource(r, x) + " vs " +
                FormatResource(r, y) + " (" + Signed(r, x - y) + ")";
      }
      if (diff.empty()) continue;
      ex.events[s.a_index].differs = true;
      add("event '" + symbols.Name(a.symbol) + "' " + diff, s.cost);
    }
  }
  std::vector<std::pair<double, std::string>> ranked;
  for (auto& [text, a] : agg)
    ranked.emplace_back(a.weight,
                        a.count > 1 ? text + " (x" + std::to_string(a.count) + ")" : text);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });

  if (!totals.empty()) ex.reasons.push_back(totals);
  for (auto& [w, text] : ranked) {
    if (ex.reasons.size() >= max_reasons) break;
    ex.reasons.push_back(std::move(text));
  }
  if (ex.reasons.empty()) ex.reasons.push_back("no single event differs noticeably");
  return ex;
}

}  // namespace jackdaw::model
