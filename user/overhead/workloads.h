// The workloads `jackdaw overhead` measures. A workload run is prepared
// stopped (its processes exist but have not started the measured work), so
// the tracer under test attaches to their pids first; then it runs to the
// end and reports its cost.
//
// Kinds:
//  - a command (built-in jackdaw-workload loops, or the user's CMD): one
//    process, traced from its first instruction; cost = wall time from
//    release to exit;
//  - a server under a load driver (the test server under jackdaw-load,
//    nginx under wrk): the server is traced (its forks too), the driver is
//    not; cost = wall time per request.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "overhead/process.h"

namespace jackdaw::overhead {

using Env = std::vector<std::pair<std::string, std::string>>;

struct RunCost {
  double wall_s = 0;   // wall time of the measured work
  double cpu_s = 0;    // CPU time of the workload's processes
  double ops = 1;      // requests served (servers), 1 for commands
  double per_op_s() const { return ops > 0 ? wall_s / ops : wall_s; }
};

class PreparedRun {
 public:
  virtual ~PreparedRun() = default;
  // The processes a tracer follows (forks included).
  virtual std::vector<pid_t> traced_pids() const = 0;
  // Releases the workload and waits for it to finish. A workload that fails
  // returns an error naming its exit status.
  virtual StatusOr<RunCost> Run() = 0;
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string name() const = 0;
  // Whether a tracer that follows one process and not its forks measures it
  // (bpftrace's pid filter): false for forking servers.
  virtual bool single_process() const { return true; }
  // env is added to the workload's environment (JACKDAW_OVERHEAD_MODE).
  virtual StatusOr<std::unique_ptr<PreparedRun>> Prepare(const Env& env) = 0;
};

// Built-in workloads by name; bin_dir holds jackdaw-workload & co.
StatusOr<std::unique_ptr<Workload>> BuiltinWorkload(const std::string& name, const std::string& bin_dir);
// "getppid, socketpair, ..." for --help and errors.
std::string BuiltinWorkloadNames();
std::unique_ptr<Workload> CommandWorkload(std::vector<std::string> argv);

}  // namespace jackdaw::overhead
