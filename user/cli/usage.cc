#include "cli/usage.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

#include "common/safe_file.h"
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

namespace {

std::string G(double v) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

// A year reads better as 366 days than as 3.16224e+07 s.
std::string Seconds(double v) {
  if (v >= 86400) return G(v / 86400) + (v == 86400 ? " day" : " days");
  if (v >= 3600 && std::fmod(v, 3600) == 0) return G(v / 3600) + " h";
  return G(v) + " s";
}

}  // namespace

std::string RangeWords(double lo, double hi, bool lo_open, const std::string& unit) {
  return lo_open ? "above " + G(lo) + ", up to " + G(hi) + unit : G(lo) + " to " + G(hi) + unit;
}

CLI::Validator IntRange(long long lo, long long hi) {
  return CLI::Range(lo, hi).description(std::to_string(lo) + " to " + std::to_string(hi));
}

CLI::Validator DurationSeconds(double lo, double hi, bool lo_open) {
  auto g = [](double v) { return G(v); };
  const std::string range = (lo_open ? "greater than " : "at least ") + Seconds(lo) + " and at most " + Seconds(hi);
  // The units are said once per command, in its help's footer (kDurationNote).
  const std::string words = (lo_open ? "above " + Seconds(lo) + ", up to " : Seconds(lo) + " to ") + Seconds(hi);
  return CLI::Validator(
      [=](std::string& in) -> std::string {
        const std::optional<double> v = ParseDurationSeconds(in);
        if (!v || *v < lo || (lo_open && *v == lo) || *v > hi)
          return "'" + in + "' is not a duration " + range + " (e.g. 30s, 250ms, 2m; a bare number is seconds)";
        in = g(*v);
        return std::string();
      },
      words);
}

namespace {

// CLI11 2.1 reaches an option's validators only through a non-const
// accessor, which throws past the last.
std::vector<const CLI::Validator*> Validators(const CLI::Option& opt) {
  std::vector<const CLI::Validator*> out;
  auto& o = const_cast<CLI::Option&>(opt);
  for (int i = 0;; ++i) {
    try {
      out.push_back(o.get_validator(i));
    } catch (const CLI::OptionNotFound&) {
      break;
    }
  }
  return out;
}

}  // namespace

std::string OptionValueName(const CLI::Option& opt) {
  if (!opt.get_option_text().empty()) return opt.get_option_text();
  if (opt.get_expected_max() == 0) return std::string();  // a flag
  // get_type_name() is the type name followed by ":" and each validator's
  // description; only the type name is the value's name.
  std::string name = opt.get_type_name();
  std::string suffix;
  for (const CLI::Validator* v : Validators(opt))
    if (const std::string d = v->get_description(); !d.empty()) suffix += ":" + d;
  const bool ends_in_suffix =
      name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  if (!suffix.empty() && ends_in_suffix) name.resize(name.size() - suffix.size());
  if (opt.get_expected_max() == CLI::detail::expected_max_vector_size) name += " ...";
  return name;
}

std::string OptionHelpText(const CLI::Option& opt) {
  std::string extra;
  for (const CLI::Validator* v : Validators(opt))
    if (const std::string d = v->get_description(); !d.empty()) extra += (extra.empty() ? "" : "; ") + d;
  // An optional value's default_str is what the option alone means (--json
  // alone is "-"), which its help says; it is not a default.
  const bool optional_value = opt.get_expected_min() == 0 && opt.get_expected_max() > 0;
  if (!opt.get_default_str().empty() && !optional_value) {
    extra += (extra.empty() ? "default " : "; default ") + opt.get_default_str();
    // A duration's default is kept in seconds.
    if (OptionValueName(opt) == "DURATION" && ParseDurationSeconds(opt.get_default_str()) &&
        opt.get_default_str().find_first_not_of("0123456789.") == std::string::npos)
      extra += " s";
  }
  if (opt.get_required()) extra += extra.empty() ? "required" : "; required";
  if (opt.get_group() == kOutputGroup) extra += extra.empty() ? "- for standard output" : "; - for standard output";
  std::string help = opt.get_description();
  if (!extra.empty()) help += (help.empty() ? "(" : " (") + extra + ")";
  return help;
}

bool TakesDuration(const CLI::App& sub) {
  for (const CLI::Option* opt : sub.get_options())
    if (!opt->get_group().empty() && OptionValueName(*opt) == "DURATION") return true;
  return false;
}

std::string HelpFormatter::make_option_name(const CLI::Option* opt, bool is_positional) const {
  // A flag's value when given bare ("--json{-}") is the parser's business.
  std::string name = CLI::Formatter::make_option_name(opt, is_positional);
  for (size_t open; (open = name.find('{')) != std::string::npos;) {
    const size_t close = name.find('}', open);
    if (close == std::string::npos) break;
    name.erase(open, close - open + 1);
  }
  return name;
}

std::string HelpFormatter::make_option_opts(const CLI::Option* opt) const {
  const std::string name = OptionValueName(*opt);
  // A value given only as --json=FILE is shown so, without a space.
  if (name.rfind("[=", 0) == 0) return name;
  return name.empty() ? std::string() : " " + name;
}

std::string HelpFormatter::make_option_desc(const CLI::Option* opt) const { return OptionHelpText(*opt); }

void CopyValidators(const CLI::Option& from, CLI::Option* to) {
  // transform() puts each at the front: added last to first, they run in
  // `from`'s order; as transforms, those that rewrite the value still do.
  const std::vector<const CLI::Validator*> all = Validators(from);
  for (auto it = all.rbegin(); it != all.rend(); ++it) to->transform(**it);
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

CLI::Option* Output(CLI::Option* opt) { return opt->group(kOutputGroup); }

std::vector<const CLI::Option*> OutputOptions(const CLI::App& sub) {
  std::vector<const CLI::Option*> out;
  for (const CLI::Option* opt : sub.get_options())
    if (opt->get_group() == kOutputGroup) out.push_back(opt);
  return out;
}

std::optional<int> ClaimStdout(const CLI::App& sub) {
  std::vector<std::string> to_stdout;
  for (const CLI::Option* opt : OutputOptions(sub))
    if (opt->count() > 0 && IsStdout(opt->as<std::string>())) to_stdout.push_back(opt->get_name());
  if (to_stdout.size() > 1) {
    std::string names;
    for (size_t i = 0; i < to_stdout.size(); ++i)
      names += (i == 0 ? "" : i + 1 == to_stdout.size() ? " and " : ", ") + to_stdout[i];
    fprintf(stderr,
            "jackdaw: %s %s write to standard output (-), which holds only one output: give %s a file "
            "(e.g. %s FILE)\n",
            names.c_str(), to_stdout.size() == 2 ? "both" : "all", to_stdout.size() == 2 ? "one" : "all but one",
            to_stdout.back().c_str());
    return kExitUsage;
  }
  if (to_stdout.empty()) return std::nullopt;
  if (Status reserved = ReserveStdoutForData(); !reserved.ok()) {
    fprintf(stderr, "jackdaw: %s\n", reserved.message().c_str());
    return kExitFailure;
  }
  return std::nullopt;
}

bool IsStdout(const std::string& path) { return IsStdoutPath(path); }

std::string OutputName(const std::string& path) { return IsStdout(path) ? "standard output" : path; }

Status CheckOutput(const std::string& path) { return CheckOutputFile(path); }

Status ReserveStdoutForData() {
  if (StdoutDataFd() != STDOUT_FILENO) return Status::Ok();
  fflush(stdout);
  // Closed by exec: a traced command's output goes to stderr with the text.
  const int data = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0);
  if (data < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    const int e = errno;
    if (data >= 0) close(data);
    return ErrStatus("cannot keep standard output for the data: %s", strerror(e));
  }
  StdoutDataFd() = data;
  // Line by line, as stderr: the text keeps its place among the
  // "written to" lines printed there.
  setvbuf(stdout, nullptr, _IOLBF, 0);
  return Status::Ok();
}

Status WriteOutput(const std::string& path, const std::string& content) {
  return WriteOwnedFile(path, content, kOutputFileMode);
}

StatusOr<FILE*> OpenOutput(const std::string& path) { return OpenOwnedStream(path, kOutputFileMode); }

void CloseOutput(FILE* f) {
  if (f) fclose(f);
}

}  // namespace jackdaw::cli
