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
  bool forced = false;   // Stop() had to kill it: it ignored its stop signal
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
  // Asks the child to end with `sig` and waits for it like Wait(), sending
  // `sig` again every second it lives on, SIGTERM from a quarter of
  // `grace_ms`, and SIGKILL after it (ExitInfo::forced). A tracer told to
  // stop can let the signal go by (bpftrace 0.17 here idled in its poll loop
  // for half an hour after the SIGINT it catches, repeated, and ended at
  // once on SIGTERM); the harness must end regardless.
  ExitInfo Stop(int sig, int grace_ms);
  // Reads captured stdout until a line containing `needle` (or exit / the
  // timeout); returns the line. Requires capture.
  StatusOr<std::string> WaitForLine(const std::string& needle, int timeout_ms);
  void Signal(int sig);

 private:
  // Wait()'s loop; `sig` > 0 turns on Stop()'s resend and kill schedule.
  ExitInfo Reap(int sig, int grace_ms);

  Child() = default;
  pid_t pid_ = -1;
  int go_fd_ = -1, out_fd_ = -1, err_fd_ = -1;
  uint64_t go_ns_ = 0;
  std::string out_, err_;
};

// Runs argv to completion, capturing its output.
ExitInfo RunToEnd(const std::vector<std::string>& argv);

}  // namespace jackdaw::overhead
