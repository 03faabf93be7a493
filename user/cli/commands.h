// Subcommands of the jackdaw CLI. Each Register* adds its CLI11 subcommand
// and returns the function that runs it (exit code).
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/usage.h"
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
// `unit` (" seconds", " per second") follows the numbers in the message and
// in --help.
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
      RangeWords(lo, hi, lo_open, unit == " seconds" ? " s" : unit));
}

// --reorder-window DURATION, for every command that puts a trace's records
// in time order (analyze, diff, predict, stitch, live). --window, its old
// spelling, is kept hidden: "window" alone also named ctl's class window.
inline CLI::Option* AddReorderWindow(CLI::App* sub, double* seconds, double lo = 0, double hi = 3600,
                                     bool lo_open = true) {
  CLI::Option* o = sub->add_option("--reorder-window", *seconds,
                                   "records of all CPUs are put in time order within this window; one arriving "
                                   "later than that behind the newest is counted late and dropped")
                       ->type_name("DURATION")
                       ->capture_default_str()
                       ->transform(DurationSeconds(lo, hi, lo_open));
  HiddenAlias(sub, "--window", *seconds, o);
  return o;
}

// --class-window DURATION (interactions, ctl): with per-class granularity,
// how long the kernel sums interactions per class before a row is out.
// `old_name`, the spelling the command had (--interval, --window), is kept
// hidden. `show_default`: false where 0 means "not given" (ctl).
inline CLI::Option* AddClassWindow(CLI::App* sub, double* seconds, const std::string& old_name, double lo = 0,
                                   bool show_default = true) {
  CLI::Option* o = sub->add_option("--class-window", *seconds,
                                   "with per-class granularity: how long interactions are summed per class "
                                   "before the window's rows are out")
                       ->type_name("DURATION")
                       ->transform(DurationSeconds(lo, 3600, lo == 0));
  if (show_default) o->capture_default_str();
  HiddenAlias(sub, old_name, *seconds, o);
  return o;
}

// --json [FILE] for the commands that stream JSON (live, interactions,
// overhead): written to FILE as it comes, or with "-" to standard output;
// `on_stdout` says what becomes of the text then. --json alone is "-", as
// it was when it took no file.
inline CLI::Option* AddJsonLines(CLI::App* sub, std::string* path, const std::string& what,
                                 const std::string& on_stdout) {
  return Output(sub->add_option("--json", *path,
                                what + ", into FILE (the text stays on the terminal); - or --json alone: to "
                                       "standard output, " + on_stdout)
                    ->type_name("[FILE]")
                    ->expected(0, 1)
                    ->default_str("-"));
}

// Exit status of a command that read `reader`: 1 when it was salvaged from
// a damaged or unfinished file (the output is partial), else 0. dump and
// analyze share it so one file gets one answer.
inline int ExitFor(const trace::TraceReader& reader) { return reader.damage().ok() ? 0 : 1; }

// Prints "jackdaw: MESSAGE" on stderr.
void PrintError(const std::string& message);

}  // namespace jackdaw::cli
