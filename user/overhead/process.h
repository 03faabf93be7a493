// Child processes for `jackdaw overhead`: started stopped (forked, then held
// before exec) so a tracer can attach to the pid before the first
// instruction of the workload runs; reaped with their resource usage.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace jackdaw::overhead {

struct ExitInfo {
  int status = 0;        // raw wait status
  double cpu_s = 0;      // user + system time of the child and its reaped children
  double wall_s = 0;     // from Go() (or Start for unpaused) to exit
  std::string out, err;  // captured output (when asked)
  bool ok() const;       // exited with status 0
  std::string Describe() const;  // "exit status 3" / "killed by signal 9"
};

class Child {
 public:
  // Forks a child that waits for Go() and then execs argv (PATH searched)
  // with `env` added to this process's environment. capture: stdout and
  // stderr go to pipes read by Wait(); otherwise to /dev/null.
  static StatusOr<Child> Spawn(const std::vector<std::string>& argv,
                               const std::vector<std::pair<std::string, std::string>>& env, bool capture);
  Child(Child&& o) noexcept;
  Child& operator=(Child&& o) noexcept;
  Child(const Child&) = delete;
  ~Child();

  pid_t pid() const { return pid_; }
  void Go();
  // Reads captured output until exit, reaps the child.
  ExitInfo Wait();
  // Reads captured stdout until a line containing `needle` (or exit / the
  // timeout); returns the line. Requires capture.
  StatusOr<std::string> WaitForLine(const std::string& needle, int timeout_ms);
  void Signal(int sig);

 private:
  Child() = default;
  pid_t pid_ = -1;
  int go_fd_ = -1, out_fd_ = -1, err_fd_ = -1;
  uint64_t go_ns_ = 0;
  std::string out_, err_;
};

// Runs argv to completion, capturing its output.
ExitInfo RunToEnd(const std::vector<std::string>& argv);

}  // namespace jackdaw::overhead
