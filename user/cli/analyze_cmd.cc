// jackdaw analyze: requests (temporal join) and the workload model.
#include "cli/commands.h"

namespace jackdaw::cli {

Runner RegisterAnalyze(CLI::App& app) {
  auto file = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand("analyze", "Extract requests from a trace and cluster them (in progress).");
  sub->add_option("file", *file, "trace file (.jdw)")->required();
  return [] {
    PrintError("analyze: not built yet in this version");
    return 1;
  };
}

}  // namespace jackdaw::cli
