// The probe and process-selection options `jackdaw record` and `jackdaw
// live` share: --probes, --syscalls, --usdt, --buffer-size, --pid,
// --cgroup, --comm. One definition of their flags, help text and checks,
// turned into capture::CaptureOptions by Resolve().
//
// Process selection: the kernel's tgid filter follows forks from the moment
// the probes are attached, and admits processes entering the --cgroup or
// exec-ing as --comm (struct jdw_admit); what exists before must be put in
// the filter by hand. Selection::Scan() lists it — every descendant of a
// --pid, every process of the cgroup subtree, every process named --comm —
// and the commands call it once before attaching and again after, so
// nothing forked in between is missed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "capture/process_select.h"
#include "capture/session.h"
#include "common/status.h"

namespace jackdaw::cli {

struct CaptureArgs {
  std::string probes = "sched,syscall,block,net";
  std::string syscalls;
  std::vector<std::string> usdt;
  std::string buffer_size = "8M";
  bool no_combine = false;  // --no-combine: one record per syscall enter and exit
  std::vector<uint32_t> pids;
  std::string cgroup;
  std::string comm;
};

// Adds the options to `sub`; `verb` names what the command does with the
// selected processes in the help ("trace", "model").
void AddCaptureOptions(CLI::App* sub, CaptureArgs* args, const std::string& verb = "trace");

// The processes a command selected, resolved.
class Selection {
 public:
  bool empty() const { return pids_.empty() && !cgroup_.id && comm_.empty(); }
  // Processes selected now (never this process), for the tgid filter.
  std::vector<uint32_t> Scan() const;
  // "pid(s) and their descendants", "cgroup X", "processes named Y" or
  // "system-wide".
  std::string Describe() const;

 private:
  friend StatusOr<Selection> Resolve(const CaptureArgs&, capture::CaptureOptions*);
  std::vector<uint32_t> pids_;
  capture::CgroupTarget cgroup_;
  std::string comm_;
};

// Checks the arguments (one line naming the cause and the fix per failure)
// and fills `co`: groups, syscalls, ring size, USDT targets, the kernel's
// admission by cgroup and comm, the processes selected now in co->tgids and
// co->filter_tgid when anything is selected.
StatusOr<Selection> Resolve(const CaptureArgs& args, capture::CaptureOptions* co);

// --sample RATE|auto|off (record, live): a share of connections in (0, 1]
// recorded whole, auto (the rings decide: capture/sample_controller.h), or
// off / "" (every connection). One line naming the fix on error.
Status ParseSample(const std::string& s, bool* on, bool* automatic, double* rate);

// "sched,net" -> group mask; one line naming the valid groups on error.
StatusOr<uint32_t> ParseGroups(const std::string& list);

}  // namespace jackdaw::cli
