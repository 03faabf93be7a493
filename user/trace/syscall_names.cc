#include "trace/syscall_names.h"

#include <utility>

namespace jackdaw::trace {

const std::vector<std::string>& SyscallNames() {
  static const std::vector<std::string> names = [] {
    static const std::pair<int, const char*> kTable[] = {
#include "syscall_names.inc"
    };
    std::vector<std::string> v;
    for (const auto& [nr, name] : kTable) {
      if (nr >= static_cast<int>(v.size())) v.resize(nr + 1);
      v[nr] = name;
    }
    return v;
  }();
  return names;
}

int SyscallNumber(const std::string& name) {
  const auto& names = SyscallNames();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<int>(i);
  return -1;
}

}  // namespace jackdaw::trace
