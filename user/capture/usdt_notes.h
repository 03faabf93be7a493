// Lists the USDT probes (SystemTap SDT notes, .note.stapsdt) an ELF binary
// carries, so `record --usdt BINARY` can attach all of them by name.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace jackdaw::capture {

struct UsdtProbe {
  std::string provider;
  std::string name;
  bool has_semaphore = false;
};

StatusOr<std::vector<UsdtProbe>> ListUsdtProbes(const std::string& binary);

}  // namespace jackdaw::capture
