#pragma once

#include <string>
#include <vector>

namespace jackdaw::trace {

// x86-64 syscall names indexed by number ("" where unused), generated at
// build time from the kernel's uapi unistd_64.h.
const std::vector<std::string>& SyscallNames();
// Number of a syscall by name, or -1.
int SyscallNumber(const std::string& name);

}  // namespace jackdaw::trace
