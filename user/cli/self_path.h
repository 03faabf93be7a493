// The running jackdaw binary's own path, for subcommands that find files
// installed beside it (schemas, the test server, the load driver).
#pragma once

#include <unistd.h>

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

namespace jackdaw::cli {

// /proc/self/exe, or "jackdaw" when it cannot be read.
inline std::string SelfPath() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "jackdaw";
}

// The path, read when `sub` is parsed (not when it is registered), into
// the string the subcommand's run callback captures.
inline std::shared_ptr<std::string> SelfPathAtParse(CLI::App* sub) {
  auto path = std::make_shared<std::string>();
  sub->preparse_callback([path](size_t) { *path = SelfPath(); });
  return path;
}

}  // namespace jackdaw::cli
