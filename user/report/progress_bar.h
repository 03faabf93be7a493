// A progress bar on stderr for long analyses, fed by
// cluster::ProgressCallback (model::ModelOptions::cluster.progress).
//
// Redraws in place with '\r' when stderr is a terminal, at most every
// kRedrawInterval and only when the integer percentage changed; when stderr
// is not a terminal it prints one line per stage at its end, so logs stay
// readable. Stages are named by the caller ("canonicalize", "cluster", ...).
// Not thread-safe: call from the analysing thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "cluster/cluster.h"

namespace jackdaw::report {

class ProgressBar {
 public:
  static constexpr std::chrono::milliseconds kRedrawInterval{100};

  // `out` defaults to stderr; `force_tty` overrides the isatty() check (tests).
  explicit ProgressBar(FILE* out = stderr, int force_tty = -1);
  ~ProgressBar();

  void Update(std::string_view stage, uint64_t done, uint64_t total);
  // Finishes the current line, if any.
  void Finish();

  // A callback bound to this bar; the bar must outlive it.
  cluster::ProgressCallback Callback();

 private:
  FILE* out_;
  bool tty_;
  std::string stage_;
  int last_percent_ = -1;
  bool line_open_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace jackdaw::report
