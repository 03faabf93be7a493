// jackdaw: reconstruct what each request did on a Linux server from kernel
// events alone. perf-like subcommands (cli/app.cc lists them).
#include "cli/app.h"
#include "cli/usage.h"

int main(int argc, char** argv) {
  jackdaw::cli::Cli cli = jackdaw::cli::BuildCli(JDW_VERSION);
  if (auto status = jackdaw::cli::RejectUnknownCommand(*cli.app, argc, argv)) return *status;
  try {
    cli.app->parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return jackdaw::cli::ReportParseError(*cli.app, e);
  }
  for (auto& [sub, run] : cli.runners)
    if (sub->parsed()) {
      if (auto status = jackdaw::cli::ClaimStdout(*sub)) return *status;
      return run();
    }
  return 1;
}
