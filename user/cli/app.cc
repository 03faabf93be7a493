#include "cli/app.h"

#include <cstdio>

#include "cli/completion.h"
#include "cli/man_page.h"
#include "cli/usage.h"

namespace jackdaw::cli {

void PrintError(const std::string& message) {
  if (message.rfind("jackdaw", 0) == 0) fprintf(stderr, "%s\n", message.c_str());
  else fprintf(stderr, "jackdaw: %s\n", message.c_str());
}

Cli BuildCli(const std::string& version) {
  Cli cli;
  cli.app = std::make_unique<CLI::App>(
      "jackdaw: per-request tracing and workload modelling for Linux servers.\n"
      "Captures scheduler, syscall, block and network events with eBPF, joins them into\n"
      "requests (Magpie's temporal join) and clusters requests into a workload model.\n\n"
      "Typical session:\n"
      "  sudo jackdaw record -o web.jdw -- ./server --port 8080   # trace a command\n"
      "  sudo jackdaw record -o web.jdw --pid 1234 --duration 30  # or a running process\n"
      "  jackdaw dump web.jdw --summary                           # what was captured\n"
      "  jackdaw analyze web.jdw --schema tcp-threadpool          # requests and clusters\n",
      "jackdaw");
  CLI::App& app = *cli.app;
  // Before the subcommands: each copies its parent's formatter when added.
  app.formatter(std::make_shared<HelpFormatter>());
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every subcommand");
  app.set_version_flag("--version", "jackdaw " + version, "print jackdaw's version and exit");
  auto add = [&](Runner r) {
    auto subs = app.get_subcommands([](CLI::App*) { return true; });
    cli.runners.push_back({subs.back(), r});
  };
  add(RegisterRecord(app));
  add(RegisterDump(app));
  add(RegisterAnalyze(app));
  add(RegisterDiff(app));
  add(RegisterPredict(app));
  add(RegisterDemo(app));
  add(RegisterReproduce(app));
  add(RegisterExport(app));
  add(RegisterStitch(app));
  add(RegisterFleet(app));
  add(RegisterInteractions(app));
  add(RegisterLive(app));
  add(RegisterCtl(app));
  add(RegisterOverhead(app));
  add(RegisterHelpMan(app, version));
  add(RegisterHelpCompletion(app));
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    std::string footer = TakesDuration(*sub) ? kDurationNote : "";
    if (!OutputOptions(*sub).empty()) footer += (footer.empty() ? "" : "\n") + std::string(kOutputNote);
    if (!footer.empty()) sub->footer(footer);
  }
  return cli;
}

}  // namespace jackdaw::cli
