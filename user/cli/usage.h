// How the CLI answers a user's mistakes, the same for every subcommand: one
// line on stderr beginning "jackdaw:", naming the cause and the fix, and
// one exit status for every usage error.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

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
CLI::Validator DurationSeconds(double lo, double hi, bool lo_open);

// Before parsing: a first argument that is neither an option nor a
// subcommand is answered "unknown command 'X'; did you mean 'Y'?" (exit 2),
// where CLI11 would only say a subcommand is required.
std::optional<int> RejectUnknownCommand(const CLI::App& app, int argc, const char* const* argv);

// A parse error as the user sees it: help and --version print and exit 0;
// every other error is one "jackdaw: ..." line (with the subcommand's --help
// as the fix) and exit 2.
int ReportParseError(const CLI::App& app, const CLI::ParseError& e);

}  // namespace jackdaw::cli
