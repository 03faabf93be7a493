// How the CLI answers a user's mistakes, the same for every subcommand: one
// line on stderr beginning "jackdaw:", naming the cause and the fix, and
// one exit status for every usage error.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/status.h"

namespace jackdaw::cli {

// Exit statuses, as the man page and README document them: runtime failures
// exit 1 (kExitFailure); a usage error (unknown command or option, a bad
// value) and a missing privilege exit 2, so scripts tell "fix the command
// line or run as root" apart from "it ran and failed".
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// The subcommand `typed` most likely meant, if one is close enough to be a
// typo (at most half its letters wrong, and never more than 2: a swapped
// pair of letters, "lvie", is two).
std::optional<std::string> NearestCommand(std::string_view typed, const std::vector<std::string>& commands);

// "5", "5s", "250ms", "2m", "1h", "1.5s" -> seconds; nullopt for anything
// else. A bare number is seconds, as --duration always took.
std::optional<double> ParseDurationSeconds(std::string_view text);

// A transformer for options that take seconds: accepts a duration with a
// unit (ParseDurationSeconds), hands the option its value in seconds, and
// refuses values outside (lo, hi] (or [lo, hi] when !lo_open) with one line
// naming the range. Shared so every duration option reads units alike.
// Give the option type_name("DURATION").
CLI::Validator DurationSeconds(double lo, double hi, bool lo_open);

// What a DURATION is, said once under each command's options that take one.
inline constexpr const char* kDurationNote =
    "DURATION: a number with a unit, 30s, 250ms, 2m, 1h; a bare number is seconds.";

// Whether one of the options `sub` shows takes a DURATION.
bool TakesDuration(const CLI::App& sub);

// "0.01 to 5 s", "above 0, up to 1 h": a range as --help words it.
std::string RangeWords(double lo, double hi, bool lo_open, const std::string& unit);

// An integer in [lo, hi], described in words for --help.
CLI::Validator IntRange(long long lo, long long hi);

// --help in a user's words. CLI11 shows an option's value as its parser
// sees it ("FLOAT:NUMBER in (0, 3600]=0.25"); this shows the type_name each
// option is given (SECONDS, FILE, PID) and moves what its validators check
// and its default into the help text, in words:
//   --reorder-window SECONDS  reorder window (above 0, up to 3600 s; default 0.25)
// The man page and the tests read options through the same two functions.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override;
  std::string make_option_opts(const CLI::Option* opt) const override;
  std::string make_option_desc(const CLI::Option* opt) const override;
};

// What an option's value is called ("SECONDS", "PID ..."; empty for a flag).
std::string OptionValueName(const CLI::Option& opt);

// An option's help: its description, then its range and default in words.
std::string OptionHelpText(const CLI::Option& opt);

// Gives `to` the checks and transforms of `from`, in the same order.
void CopyValidators(const CLI::Option& from, CLI::Option* to);

// An old spelling kept working for scripts, hidden from --help, the man
// page and completion: `name` ("--window") sets `variable`, as `target`
// (the new spelling, bound to the same variable) does, with its checks.
template <typename T>
CLI::Option* HiddenAlias(CLI::App* sub, const std::string& name, T& variable, const CLI::Option* target) {
  CLI::Option* alias = sub->add_option(name, variable, "old spelling of " + target->get_name());
  alias->group("");
  alias->type_name(OptionValueName(*target));
  CopyValidators(*target, alias);
  return alias;
}

// Before parsing: a first argument that is neither an option nor a
// subcommand is answered "unknown command 'X'; did you mean 'Y'?" (exit 2),
// where CLI11 would only say a subcommand is required.
std::optional<int> RejectUnknownCommand(const CLI::App& app, int argc, const char* const* argv);

// A parse error as the user sees it: help and --version print and exit 0;
// every other error is one "jackdaw: ..." line (with the subcommand's --help
// as the fix) and exit 2.
int ReportParseError(const CLI::App& app, const CLI::ParseError& e);

// Outputs. Every option that names an output file is in this group (shown
// as its own section of --help) and takes "-" for standard output; when one
// does, the command's text goes to standard error (ClaimStdout), so a pipe
// gets the data alone.
inline constexpr const char* kOutputGroup = "Outputs";

// What "-" does, said once under each command's options that have outputs.
inline constexpr const char* kOutputNote =
    "Outputs: - is standard output; what the command prints besides then goes to standard error. "
    "Only one output can be -.";

// Puts `opt` in kOutputGroup.
CLI::Option* Output(CLI::Option* opt);

// The options of kOutputGroup in `sub`, hidden aliases left out.
std::vector<const CLI::Option*> OutputOptions(const CLI::App& sub);

// Before a parsed subcommand runs: an exit status when two of its outputs
// name "-" (one stream cannot hold both; a usage error) or standard output
// cannot be kept for the data; else, with one output at "-", reserves
// standard output for it (ReserveStdoutForData).
std::optional<int> ClaimStdout(const CLI::App& sub);

bool IsStdout(const std::string& path);

// "standard output" for "-", else the path: for "written to ..." lines.
std::string OutputName(const std::string& path);

// Whether `path` can be written (CheckOutputFile); "-" always can.
Status CheckOutput(const std::string& path);

// From here on what the command prints to stdout goes to stderr, and the
// writers' "-" (StdoutDataFd) is the real standard output.
Status ReserveStdoutForData();

// Writes `content` to `path` (WriteOwnedFile), or to standard output.
Status WriteOutput(const std::string& path, const std::string& content);

// An output written as it goes (live's and interactions' JSON lines): the
// file, created as WriteOwnedFile does, or standard output for "-". Close
// it with CloseOutput.
StatusOr<FILE*> OpenOutput(const std::string& path);
void CloseOutput(FILE* f);

}  // namespace jackdaw::cli
