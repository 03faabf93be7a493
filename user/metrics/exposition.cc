#include "metrics/exposition.h"

#include <cmath>

#include <fmt/format.h>

namespace jackdaw::metrics {

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string EscapeHelp(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // Counters are integers most of the time: print them without exponent up
  // to 2^53, where doubles stop being exact.
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

bool ValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool ValidLabelName(std::string_view name) {
  if (name.empty() || name.substr(0, 2) == "__") return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

void Exposition::Family(std::string_view name, std::string_view help, MetricType type) {
  static constexpr const char* kTypes[] = {"counter", "gauge", "histogram", "untyped"};
  family_ = std::string(name);
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, EscapeHelp(help), name,
                      kTypes[static_cast<int>(type)]);
}

void Exposition::Series(std::string_view suffix, const Labels& labels,
                        const std::pair<std::string, std::string>* extra, double value) {
  out_ += family_;
  out_ += suffix;
  if (!labels.empty() || extra) {
    out_ += '{';
    bool first = true;
    auto put = [&](const std::pair<std::string, std::string>& l) {
      if (!first) out_ += ',';
      first = false;
      out_ += l.first;
      out_ += "=\"";
      out_ += EscapeLabelValue(l.second);
      out_ += '"';
    };
    for (const auto& l : labels) put(l);
    if (extra) put(*extra);
    out_ += '}';
  }
  out_ += ' ';
  out_ += FormatValue(value);
  out_ += '\n';
}

void Exposition::Sample(const Labels& labels, double value) { Series("", labels, nullptr, value); }

void Exposition::Histogram(const Labels& labels, const std::vector<double>& upper_bounds,
                           const std::vector<uint64_t>& counts, double sum) {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < upper_bounds.size(); ++i) {
    cumulative += i < counts.size() ? counts[i] : 0;
    const std::pair<std::string, std::string> le{"le", FormatValue(upper_bounds[i])};
    Series("_bucket", labels, &le, static_cast<double>(cumulative));
  }
  for (size_t i = upper_bounds.size(); i < counts.size(); ++i) cumulative += counts[i];
  const std::pair<std::string, std::string> inf{"le", "+Inf"};
  Series("_bucket", labels, &inf, static_cast<double>(cumulative));
  Series("_sum", labels, nullptr, sum);
  Series("_count", labels, nullptr, static_cast<double>(cumulative));
}

}  // namespace jackdaw::metrics
