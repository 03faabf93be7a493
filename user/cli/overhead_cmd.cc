// jackdaw overhead: what tracing costs a workload, measured side by side.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <memory>
#include <sstream>

#include "capture/session.h"
#include "cli/commands.h"
#include "overhead/harness.h"
#include "overhead/report.h"
#include "trace/event_table.h"

namespace jackdaw::cli {
namespace {

struct OverheadArgs {
  std::string probes;
  bool probes_given = false;  // not given: each group alone, then all together
  int runs = 5;
  int warmup = 1;
  std::string workload = "getppid";
  std::string json_out;  // "-": standard output, instead of the table
  bool no_tools = false;
  std::vector<std::string> command;
};

std::string BinDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string self(buf, n);
  return self.substr(0, self.rfind('/'));
}

StatusOr<std::vector<uint32_t>> Configs(const std::string& probes, bool given) {
  constexpr uint32_t kCapture[] = {JDW_GROUP_SCHED, JDW_GROUP_SYSCALL, JDW_GROUP_BLOCK, JDW_GROUP_NET};
  std::vector<uint32_t> out;
  if (!given) {
    uint32_t all = 0;
    for (uint32_t g : kCapture) out.push_back(1u << g), all |= 1u << g;
    out.push_back(all);
    // The in-kernel interaction summaries alone (jackdaw interactions).
    out.push_back(1u << JDW_GROUP_INTERACT);
    return out;
  }
  uint32_t mask = 0;
  std::stringstream ss(probes);
  std::string item;
  while (std::getline(ss, item, ',')) {
    uint32_t g;
    if (item.empty()) continue;
    if (!trace::ParseGroup(item, &g) || g == JDW_GROUP_APP)
      return ErrStatus("--probes: '%s' is not a capture group; use some of sched,syscall,block,net,interact",
                       item.c_str());
    mask |= 1u << g;
  }
  if (!mask) return ErrStatus("--probes is empty; use some of sched,syscall,block,net,interact");
  return std::vector<uint32_t>{mask};
}

int Run(const OverheadArgs& a) {
  auto configs = Configs(a.probes, a.probes_given);
  if (!configs.ok()) return PrintError(configs.status().message()), 1;
  Status priv = capture::CheckPrivileges();
  if (!priv.ok()) return PrintError(priv.message()), 2;
  // Before the runs, which take minutes: a path that cannot be written fails now.
  if (!a.json_out.empty())
    if (Status out = CheckOutput(a.json_out); !out.ok()) return PrintError("--json: " + out.message()), 1;
  std::unique_ptr<overhead::Workload> wl;
  if (!a.command.empty()) {
    wl = overhead::CommandWorkload(a.command);
  } else {
    auto b = overhead::BuiltinWorkload(a.workload, BinDir());
    if (!b.ok()) return PrintError(b.status().message()), 1;
    wl = std::move(*b);
  }
  overhead::HarnessOptions ho;
  ho.configs = *configs;
  ho.runs = a.runs;
  ho.warmup = a.warmup;
  ho.compare_tools = !a.no_tools;
  if (!capture::EnsureTracefs().ok()) ho.compare_tools = false;
  auto results = overhead::RunHarness(*wl, ho);
  if (!results.ok()) return PrintError(results.status().message()), results.status().exit_code();
  const nlohmann::json report = overhead::ReportJson(wl->name(), ho, *results);
  fputs(overhead::ReportText(report).c_str(), stdout);
  if (!a.json_out.empty()) {
    Status written = WriteOutput(a.json_out, report.dump(2) + "\n");
    if (!written.ok()) return PrintError("--json: " + written.message()), 1;
    fprintf(stderr, "jackdaw: report (JSON) written to %s\n", OutputName(a.json_out).c_str());
  }
  return 0;
}

}  // namespace

Runner RegisterOverhead(CLI::App& app) {
  auto args = std::make_shared<OverheadArgs>();
  CLI::App* sub = app.add_subcommand(
      "overhead",
      "Measure what tracing costs a workload: untraced and traced runs alternate (after a\n"
      "warm-up), and jackdaw is compared with perf record on the same tracepoints and with an\n"
      "equivalent bpftrace script. Reports the median time (min-max), CPU time, the ratio to\n"
      "untraced with a 95% confidence interval, events captured and lost, events/s, the added\n"
      "ns per event and bytes per event, and warns when the noise is larger than the effect.\n"
      "  sudo jackdaw overhead                                  getppid loop, each group, all, interact\n"
      "  sudo jackdaw overhead --workload nginx --probes sched,syscall,net\n"
      "  sudo jackdaw overhead --runs 9 --json overhead.json -- ./my-benchmark --quick\n"
      "The workload's environment has JACKDAW_OVERHEAD_MODE=untraced|jackdaw|perf|bpftrace.");
  CLI::Option* probes =
      sub->add_option("--probes", args->probes,
                      "one configuration: these groups together (default: each of sched,syscall,block,net "
                      "alone, then all four, then interact alone: the in-kernel interaction summaries)")
          ->type_name("GROUP,...");
  sub->add_option("--runs", args->runs, "measured runs per tracer")
      ->type_name("N")
      ->check(IntRange(2, 1000))
      ->capture_default_str();
  sub->add_option("--warmup", args->warmup, "warm-up rounds, not kept")
      ->type_name("N")
      ->check(IntRange(0, 100))
      ->capture_default_str();
  sub->add_option("--workload", args->workload, "built-in workload: " + overhead::BuiltinWorkloadNames())
      ->type_name("NAME")
      ->capture_default_str();
  AddJsonLines(sub, &args->json_out, "the report as JSON (schema jackdaw-overhead/1)",
               "the text going to standard error");
  sub->add_flag("--no-tools", args->no_tools, "skip the perf and bpftrace comparisons");
  sub->add_option("command", args->command, "measure this command instead of a built-in workload (after --)")
      ->type_name("CMD");
  // Everything after the command is the command's: `--json -- ./bench
  // --quick` keeps --quick, though --json's optional FILE takes the "--".
  sub->positionals_at_end(true);
  return [args, probes] {
    args->probes_given = probes->count() > 0;
    return Run(*args);
  };
}

}  // namespace jackdaw::cli
