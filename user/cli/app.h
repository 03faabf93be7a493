// The jackdaw command line as main runs it: every subcommand with its
// options and the function that runs it. Built in one place so the tests
// read the very options, help and man pages a user gets.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace jackdaw::cli {

struct Cli {
  std::unique_ptr<CLI::App> app;
  std::vector<std::pair<CLI::App*, Runner>> runners;  // one per subcommand
};

Cli BuildCli(const std::string& version);

}  // namespace jackdaw::cli
