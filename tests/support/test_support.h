// Helpers shared by the integration tests.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace jackdaw::testing {

// eBPF tests need root. Outside CI they skip with a reason; in CI (env CI
// set) a skip would hide a broken setup, so they fail instead.
#define JDW_REQUIRE_ROOT()                                                                  \
  do {                                                                                      \
    if (!::jackdaw::testing::IsRoot()) {                                                    \
      if (::jackdaw::testing::InCi()) FAIL() << "eBPF test needs root, and CI must run it";  \
      GTEST_SKIP() << "eBPF test needs root (run: sudo make test)";                         \
    }                                                                                       \
  } while (0)

bool IsRoot();
bool InCi();
std::string BinDir();
std::string TempPath(const std::string& stem);
// The whole file at `path` ("" if it cannot be read).
std::string ReadWholeFile(const std::string& path);

// A child process created stopped: it execs argv only after Go(), so its
// pid can be put in a filter before it runs its first instruction.
class PausedChild {
 public:
  explicit PausedChild(const std::vector<std::string>& argv);
  ~PausedChild();
  pid_t pid() const { return pid_; }
  void Go();
  // Waits for exit; returns stdout. exit_code receives the status.
  std::string Wait(int* exit_code);

 private:
  pid_t pid_ = -1;
  int go_fd_ = -1;
  int out_fd_ = -1;
};

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};
// Runs argv to completion, capturing stdout and stderr.
CommandResult RunCommand(const std::vector<std::string>& argv);

// Whether something accepts TCP connections on 127.0.0.1:port now.
bool AcceptsOnLoopback(int port);

}  // namespace jackdaw::testing
