#include "diff/diff_output.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace jackdaw::diff {
namespace {

using nlohmann::ordered_json;

// One value in the metric's unit, short enough for a table column.
std::string FormatValue(Metric m, double v) {
  char buf[48];
  switch (m) {
    case Metric::kFrequency:
    case Metric::kStructure: snprintf(buf, sizeof(buf), "%.1f%%", v * 100); break;
    case Metric::kLatency:
    case Metric::kCpu: snprintf(buf, sizeof(buf), "%.3f ms", v); break;
    case Metric::kDisk:
    case Metric::kNet: snprintf(buf, sizeof(buf), "%.1f KiB", v / 1024); break;
  }
  return buf;
}

std::string FormatRates(const Change& c) {
  if (c.metric != Metric::kFrequency) return "";
  char buf[64];
  snprintf(buf, sizeof(buf), "  (%.1f -> %.1f req/s)", c.rate_before, c.rate_after);
  return buf;
}

ordered_json KindJson(const KindSummary& k) {
  ordered_json j{{"kind", k.kind},
                 {"before_clusters", k.before_labels},
                 {"after_clusters", k.after_labels},
                 {"before_requests", k.before_requests},
                 {"after_requests", k.after_requests}};
  if (!k.before_labels.empty() && !k.after_labels.empty()) j["distance"] = k.distance;
  if (!k.nearest_before.empty()) j["nearest_before"] = k.nearest_before, j["distance"] = k.distance;
  if (!k.representative.empty()) j["representative"] = k.representative;
  return j;
}

}  // namespace

void WriteTextTable(const DiffResult& r, std::ostream& out, size_t max_rows) {
  char line[320];
  snprintf(line, sizeof(line),
           "BEFORE %llu requests in %.2f s, AFTER %llu requests in %.2f s; CPU demand %.3f -> %.3f CPU-s/s\n",
           static_cast<unsigned long long>(r.before_requests), r.before_duration_s,
           static_cast<unsigned long long>(r.after_requests), r.after_duration_s, r.cpu_rate_before,
           r.cpu_rate_after);
  out << line;
  out << r.matched.size() << " kinds matched, " << r.new_kinds.size() << " new, " << r.gone_kinds.size() << " gone\n";
  for (const KindSummary& k : r.new_kinds)
    out << "  new " << k.kind << " (" << k.after_requests << " requests), nearest BEFORE kind "
        << (k.nearest_before.empty() ? "none" : k.nearest_before) << ": " << k.representative << "\n";
  for (const KindSummary& k : r.gone_kinds)
    out << "  gone " << k.kind << " (" << k.before_requests << " requests): " << k.representative << "\n";
  size_t significant = 0;
  for (const Change& c : r.changes) significant += c.significant;
  out << significant << " significant of " << r.changes.size() << " changes tested\n\n";
  snprintf(line, sizeof(line), "%-12s %-10s %12s    %-12s %9s %9s %7s  %s\n", "KIND", "METRIC", "BEFORE", "AFTER",
           "EFFECT", "P", "SHARE", "SIGNIFICANT");
  out << line;
  size_t rows = 0;
  for (const Change& c : r.changes) {
    if (max_rows && rows++ == max_rows) {
      out << "... " << r.changes.size() - max_rows << " more (all in --json)\n";
      break;
    }
    snprintf(line, sizeof(line), "%-12s %-10s %12s -> %-12s %+8.1f%% %9.2g %6.1f%%  %s%s\n", c.kind.c_str(),
             MetricName(c.metric), FormatValue(c.metric, c.before).c_str(), FormatValue(c.metric, c.after).c_str(),
             c.effect * 100, c.p_value, c.share * 100, c.significant ? "yes" : "no", FormatRates(c).c_str());
    out << line;
  }
}

ordered_json DiffToJson(const DiffResult& r, const DiffOptions& o) {
  ordered_json j;
  j["format"] = "jackdaw.diff";
  j["version"] = 1;
  j["settings"] = {{"alpha", o.alpha}, {"min_effect", o.min_effect}, {"min_request_effect", o.min_request_effect},
                   {"min_structure_requests", o.min_structure_requests}};
  j["before"] = {{"requests", r.before_requests}, {"duration_s", r.before_duration_s},
                 {"cpu_rate", r.cpu_rate_before}};
  j["after"] = {{"requests", r.after_requests}, {"duration_s", r.after_duration_s},
                {"cpu_rate", r.cpu_rate_after}};
  ordered_json matched = ordered_json::array(), added = ordered_json::array(), gone = ordered_json::array();
  for (const KindSummary& k : r.matched) matched.push_back(KindJson(k));
  for (const KindSummary& k : r.new_kinds) added.push_back(KindJson(k));
  for (const KindSummary& k : r.gone_kinds) gone.push_back(KindJson(k));
  j["matched"] = std::move(matched);
  j["new_kinds"] = std::move(added);
  j["gone_kinds"] = std::move(gone);
  ordered_json changes = ordered_json::array();
  for (const Change& c : r.changes) {
    ordered_json cj{{"kind", c.kind},
                    {"metric", MetricName(c.metric)},
                    {"unit", MetricUnit(c.metric)},
                    {"before", c.before},
                    {"after", c.after},
                    {"effect", c.effect},
                    {"p_value", c.p_value},
                    {"raw_p_value", c.raw_p},
                    {"significant", c.significant},
                    {"share", c.share},
                    {"cpu_rate_delta", c.cpu_rate_delta}};
    if (c.metric == Metric::kFrequency || c.metric == Metric::kStructure)
      cj["rate_before"] = c.rate_before, cj["rate_after"] = c.rate_after;
    changes.push_back(std::move(cj));
  }
  j["changes"] = std::move(changes);
  return j;
}

}  // namespace jackdaw::diff
