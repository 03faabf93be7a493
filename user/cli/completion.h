// Bash completion written from the CLI's own definitions — the visible
// subcommands and each one's options — like the man pages, so it cannot
// drift from what the binary accepts. `jackdaw help-completion` prints it;
// `make install` and the Debian package install it where bash-completion
// looks (share/bash-completion/completions/jackdaw).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace jackdaw::cli {

// The script: completes subcommands after `jackdaw`, a subcommand's options
// after it, and file names where an option takes a value.
std::string BashCompletion(const CLI::App& app);

// Adds the hidden `help-completion` subcommand.
Runner RegisterHelpCompletion(CLI::App& app);

}  // namespace jackdaw::cli
