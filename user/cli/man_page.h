// Man pages written from the CLI's own definitions — the subcommands, their
// descriptions and every option's names, value type, default and help — so
// the reference cannot drift from what the binary accepts. `jackdaw
// help-man` prints them; `make` writes them to build/man/.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace jackdaw::cli {

// The visible subcommands' names, in the order `jackdaw --help` lists them.
std::vector<std::string> ManPageCommands(const CLI::App& app);

// jackdaw(1) when `sub` is null (the commands, exit status), else
// jackdaw-SUB(1) (synopsis, description, every option), in roff.
std::string ManPage(const CLI::App& app, const CLI::App* sub, const std::string& version);

// Adds the hidden `help-man [SUBCOMMAND | --list]` subcommand.
Runner RegisterHelpMan(CLI::App& app, const std::string& version);

}  // namespace jackdaw::cli
