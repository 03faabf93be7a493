// Prometheus text exposition format, version 0.0.4: what a scrape of
// `jackdaw live --metrics` returns.
//
// An Exposition is written family by family: Family() emits the # HELP and
// # TYPE lines, then Sample() / Histogram() emit that family's series, so a
// family's samples are contiguous as the format requires. Label values are
// escaped (backslash, double quote, newline), HELP text too (backslash,
// newline); values are printed as the shortest decimal that reads back to
// the same double, with +Inf, -Inf and NaN spelled as Prometheus parses them.
// Histogram() takes per-bucket (non-cumulative) counts and writes the
// cumulative _bucket series, always ending with le="+Inf" == _count.
//
// Metric and label names are the caller's constants; ValidMetricName() and
// ValidLabelName() state the rule for their tests.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jackdaw::metrics {

inline constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

using Labels = std::vector<std::pair<std::string, std::string>>;

enum class MetricType { kCounter, kGauge, kHistogram, kUntyped };

class Exposition {
 public:
  // Starts a family: the following samples carry `name`.
  void Family(std::string_view name, std::string_view help, MetricType type);
  // One series of the current (counter, gauge or untyped) family.
  void Sample(const Labels& labels, double value);
  // One histogram series of the current histogram family. `upper_bounds`
  // ascending; `counts[i]` observations in (upper_bounds[i-1],
  // upper_bounds[i]]; counts.size() == upper_bounds.size() + 1, the last
  // entry counting those above every bound.
  void Histogram(const Labels& labels, const std::vector<double>& upper_bounds,
                 const std::vector<uint64_t>& counts, double sum);

  const std::string& text() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  void Series(std::string_view suffix, const Labels& labels, const std::pair<std::string, std::string>* extra,
              double value);

  std::string out_;
  std::string family_;
};

std::string EscapeLabelValue(std::string_view v);
std::string EscapeHelp(std::string_view v);
std::string FormatValue(double v);
bool ValidMetricName(std::string_view name);
bool ValidLabelName(std::string_view name);

}  // namespace jackdaw::metrics
