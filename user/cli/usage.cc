#include "cli/usage.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "schema/edit_distance.h"

namespace jackdaw::cli {

std::optional<std::string> NearestCommand(std::string_view typed, const std::vector<std::string>& commands) {
  const size_t allowed = std::min<size_t>(2, (typed.size() + 1) / 2);
  std::optional<std::string> best;
  size_t best_distance = allowed + 1;
  for (const std::string& c : commands) {
    const size_t d = schema::EditDistance(typed, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

std::optional<double> ParseDurationSeconds(std::string_view text) {
  const std::string s(text);
  char* end = nullptr;
  const double v = strtod(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(v)) return std::nullopt;
  const std::string_view unit(end);
  if (unit.empty() || unit == "s") return v;
  if (unit == "ms") return v / 1e3;
  if (unit == "us") return v / 1e6;
  if (unit == "m" || unit == "min") return v * 60;
  if (unit == "h") return v * 3600;
  return std::nullopt;
}

CLI::Validator DurationSeconds(double lo, double hi, bool lo_open) {
  auto g = [](double v) {
    char buf[32];
    snprintf(buf, sizeof(buf), "%g", v);
    return std::string(buf);
  };
  // A year reads better as 366 days than as 3.16224e+07 s.
  auto seconds = [g](double v) { return v >= 86400 ? g(v / 86400) + " days" : g(v) + " s"; };
  const std::string range = (lo_open ? "greater than " : "at least ") + seconds(lo) + " and at most " + seconds(hi);
  return CLI::Validator(
      [=](std::string& in) -> std::string {
        const std::optional<double> v = ParseDurationSeconds(in);
        if (!v || *v < lo || (lo_open && *v == lo) || *v > hi)
          return "'" + in + "' is not a duration " + range + " (e.g. 30s, 250ms, 2m; a bare number is seconds)";
        in = g(*v);
        return std::string();
      },
      "DURATION");
}

std::optional<int> RejectUnknownCommand(const CLI::App& app, int argc, const char* const* argv) {
  if (argc < 2 || argv[1][0] == '-' || argv[1][0] == '\0') return std::nullopt;
  const std::string typed = argv[1];
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == typed) return std::nullopt;
    if (!sub->get_group().empty()) names.push_back(sub->get_name());  // hidden ones are not suggested
  }
  const std::optional<std::string> near = NearestCommand(typed, names);
  fprintf(stderr, "jackdaw: unknown command '%s'; %s\n", typed.c_str(),
          near ? ("did you mean '" + *near + "'?").c_str() : "see jackdaw --help for the commands");
  return kExitUsage;
}

int ReportParseError(const CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
  std::string where = "jackdaw";
  for (const CLI::App* sub : app.get_subcommands())
    if (sub->parsed()) where += " " + sub->get_name();
  std::string message = e.what();
  if (!message.empty() && message.back() == '\n') message.pop_back();
  fprintf(stderr, "jackdaw: %s (see %s --help)\n", message.c_str(), where.c_str());
  return kExitUsage;
}

}  // namespace jackdaw::cli
