// jackdaw: reconstruct what each request did on a Linux server from kernel
// events alone (DESIGN.md). perf-like subcommands.
#include <cstdio>
#include <vector>

#include "cli/commands.h"
#include "cli/completion.h"
#include "cli/man_page.h"
#include "cli/usage.h"

namespace jackdaw::cli {
void PrintError(const std::string& message) {
  if (message.rfind("jackdaw", 0) == 0) fprintf(stderr, "%s\n", message.c_str());
  else fprintf(stderr, "jackdaw: %s\n", message.c_str());
}
}  // namespace jackdaw::cli

int main(int argc, char** argv) {
  CLI::App app{
      "jackdaw: per-request tracing and workload modelling for Linux servers.\n"
      "Captures scheduler, syscall, block and network events with eBPF, joins them into\n"
      "requests (Magpie's temporal join) and clusters requests into a workload model.\n\n"
      "Typical session:\n"
      "  sudo jackdaw record -o web.jdw -- ./server --port 8080   # trace a command\n"
      "  sudo jackdaw record -o web.jdw --pid 1234 --duration 30  # or a running process\n"
      "  jackdaw dump web.jdw --summary                           # what was captured\n"
      "  jackdaw analyze web.jdw --schema tcp-threadpool          # requests and clusters\n",
      "jackdaw"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every subcommand");
  app.set_version_flag("--version", "jackdaw " JDW_VERSION, "print jackdaw's version and exit");
  std::vector<std::pair<CLI::App*, jackdaw::cli::Runner>> runners;
  auto add = [&](jackdaw::cli::Runner r) {
    auto subs = app.get_subcommands([](CLI::App*) { return true; });
    runners.push_back({subs.back(), r});
  };
  add(jackdaw::cli::RegisterRecord(app));
  add(jackdaw::cli::RegisterDump(app));
  add(jackdaw::cli::RegisterAnalyze(app));
  add(jackdaw::cli::RegisterDiff(app));
  add(jackdaw::cli::RegisterPredict(app));
  add(jackdaw::cli::RegisterDemo(app));
  add(jackdaw::cli::RegisterReproduce(app));
  add(jackdaw::cli::RegisterExport(app));
  add(jackdaw::cli::RegisterStitch(app));
  add(jackdaw::cli::RegisterFleet(app));
  add(jackdaw::cli::RegisterInteractions(app));
  add(jackdaw::cli::RegisterLive(app));
  add(jackdaw::cli::RegisterCtl(app));
  add(jackdaw::cli::RegisterOverhead(app));
  add(jackdaw::cli::RegisterHelpMan(app, JDW_VERSION));
  add(jackdaw::cli::RegisterHelpCompletion(app));
  if (auto status = jackdaw::cli::RejectUnknownCommand(app, argc, argv)) return *status;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return jackdaw::cli::ReportParseError(app, e);
  }
  for (auto& [sub, run] : runners)
    if (sub->parsed()) return run();
  return 1;
}
