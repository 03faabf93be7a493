// Process selection for `jackdaw record`: which processes the tgid filter
// starts with, and what the kernel-side admission (struct jdw_admit) needs.
//
// The tgid filter follows forks from the moment the probes are attached, so
// what already exists must be found here: every descendant of a --pid (an
// HTTP server's master and its pre-forked workers), every process in a
// --cgroup subtree, every process whose comm is --comm. Processes are read
// from /proc (or a given root, for tests); one that exits while it is read
// is skipped, never an error. Callers scan once before attaching and again
// after, so nothing forked in between is missed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace jackdaw::capture {

// pid itself and every live process descended from it, sorted.
std::vector<uint32_t> DescendantsOf(uint32_t pid, const std::string& proc = "/proc");

// Processes (tgids) whose comm is `comm` exactly, sorted.
std::vector<uint32_t> ProcessesWithComm(const std::string& comm, const std::string& proc = "/proc");

struct CgroupTarget {
  std::string path;  // directory in the cgroup v2 hierarchy
  uint64_t id = 0;   // the kernel's cgroup id: the directory's inode number
  uint32_t level = 0;
};

// The cgroup v2 mount point, from mountinfo ("" if none is mounted).
std::string CgroupV2Mount(const std::string& proc = "/proc");

// Resolves --cgroup: an absolute directory inside the cgroup v2 mount
// (/sys/fs/cgroup/system.slice/nginx.service) or a path relative to it, as
// /proc/PID/cgroup prints it (/system.slice/nginx.service).
StatusOr<CgroupTarget> ResolveCgroup(const std::string& arg, const std::string& proc = "/proc");

// Every process in the cgroup and the cgroups below it, sorted.
std::vector<uint32_t> ProcessesInCgroup(const CgroupTarget& target);

}  // namespace jackdaw::capture
