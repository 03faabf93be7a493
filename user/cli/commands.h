// Subcommands of the jackdaw CLI. Each Register* adds its CLI11 subcommand
// and returns the function that runs it (exit code).
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "trace/trace_reader.h"

namespace jackdaw::cli {

using Runner = std::function<int()>;

Runner RegisterRecord(CLI::App& app);
Runner RegisterDump(CLI::App& app);
Runner RegisterAnalyze(CLI::App& app);
Runner RegisterDemo(CLI::App& app);
Runner RegisterReproduce(CLI::App& app);
Runner RegisterOverhead(CLI::App& app);
Runner RegisterLive(CLI::App& app);
Runner RegisterCtl(CLI::App& app);
Runner RegisterInteractions(CLI::App& app);
Runner RegisterExport(CLI::App& app);
Runner RegisterStitch(CLI::App& app);
Runner RegisterDiff(CLI::App& app);
Runner RegisterFleet(CLI::App& app);
Runner RegisterPredict(CLI::App& app);

// Longest --duration accepted: beyond a year the nanosecond count is no
// longer what the user meant, and 1e300 would overflow it (the deadline
// then passed at once).
inline constexpr double kMaxDurationS = 366.0 * 24 * 3600;

// A number in [lo, hi] (or (lo, hi] when lo_open); NaN, infinities and
// anything outside are refused at parse time with one line naming the range.
inline CLI::Validator FiniteRange(double lo, double hi, bool lo_open, const std::string& unit) {
  auto g = [](double v) {
    char buf[32];
    snprintf(buf, sizeof(buf), "%g", v);
    return std::string(buf);
  };
  const std::string range = (lo_open ? "greater than " : "at least ") + g(lo) + " and at most " + g(hi) + unit;
  return CLI::Validator(
      [=](std::string& in) -> std::string {
        char* end = nullptr;
        const double v = strtod(in.c_str(), &end);
        if (end == in.c_str() || *end != '\0' || !std::isfinite(v) || v < lo || (lo_open && v == lo) || v > hi)
          return "'" + in + "' is not a number " + range;
        return std::string();
      },
      "NUMBER in " + std::string(lo_open ? "(" : "[") + g(lo) + ", " + g(hi) + "]");
}

// Exit status of a command that read `reader`: 1 when it was salvaged from
// a damaged or unfinished file (the output is partial), else 0. dump and
// analyze share it so one file gets one answer.
inline int ExitFor(const trace::TraceReader& reader) { return reader.damage().ok() ? 0 : 1; }

// Prints "jackdaw: MESSAGE" on stderr.
void PrintError(const std::string& message);

}  // namespace jackdaw::cli
