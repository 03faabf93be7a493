// Subcommands of the jackdaw CLI. Each Register* adds its CLI11 subcommand
// and returns the function that runs it (exit code).
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace jackdaw::cli {

using Runner = std::function<int()>;

Runner RegisterRecord(CLI::App& app);
Runner RegisterDump(CLI::App& app);
Runner RegisterAnalyze(CLI::App& app);
Runner RegisterDemo(CLI::App& app);
Runner RegisterReproduce(CLI::App& app);
Runner RegisterOverhead(CLI::App& app);

// Prints "jackdaw: MESSAGE" on stderr.
void PrintError(const std::string& message);

}  // namespace jackdaw::cli
