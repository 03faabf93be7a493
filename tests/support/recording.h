// `jackdaw record ARGS -o FILE` run in the background by an integration
// test: started once it says it is recording, stopped with SIGINT, its
// trace read back with `jackdaw dump`.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace jackdaw::testing {

class BackgroundRecording {
 public:
  BackgroundRecording(std::vector<std::string> args, const std::string& stem);
  ~BackgroundRecording();
  bool started() const;
  // What jackdaw wrote on stderr so far.
  std::string log() const;
  // Stops it (SIGINT; a recording that ended by itself is only reaped),
  // expects exit 0, and returns `jackdaw dump` of the trace.
  std::string StopAndDump();
  // StopAndDump(), then the number of getppid entries in the trace.
  int StopAndCountGetppid();

 private:
  std::string path_, log_;
  pid_t pid_ = -1;
};

// A child that exists (with its pid) before a recording starts: it waits
// for Go(), then runs `body` and exits 0. Killed if still there at the end.
class GatedChild {
 public:
  explicit GatedChild(const std::function<void()>& body);
  ~GatedChild();
  pid_t pid() const { return pid_; }
  void Go();
  // Go(), then waits for its exit (reaped: its pid is free afterwards)
  // and expects exit 0.
  void RunToEnd();

 private:
  pid_t pid_ = -1;
  int go_ = -1;
};

// In a child: execs jackdaw-workload --getppid CALLS (stdout to /dev/null).
[[noreturn]] void ExecGetppidWorkload(int calls);

// Lines of a dump whose record type is `type` (e.g. "block_issue").
int CountRecords(const std::string& dump, const std::string& type);

}  // namespace jackdaw::testing
