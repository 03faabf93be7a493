// BPF objects of a session pinned under <root>/<session>/ (root
// /sys/fs/bpf/jackdaw), so `bpftool map dump pinned
// /sys/fs/bpf/jackdaw/<session>/control` shows what the session runs with
// while it runs.
//
// Lifecycle: Create() mounts bpffs at /sys/fs/bpf if nothing is mounted
// there, removes the pins of sessions whose process is gone (a session
// killed with SIGKILL cannot remove its own), then pins each map. The
// destructor unlinks every pin and the session directory; sessions install
// SIGINT/SIGTERM handlers that end their main loop, so the destructor runs
// on those signals too. A pin keeps its map alive after the process exits,
// which is why stale pins must go.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace jackdaw::control {

inline constexpr const char* kDefaultPinRoot = "/sys/fs/bpf/jackdaw";

class PinnedMaps {
 public:
  // maps: (file name, map fd).
  static StatusOr<std::unique_ptr<PinnedMaps>> Create(const std::string& root, const std::string& session,
                                                      const std::vector<std::pair<std::string, int>>& maps);
  ~PinnedMaps();
  const std::string& dir() const { return dir_; }

 private:
  PinnedMaps() = default;
  std::string dir_;
  std::vector<std::string> pins_;
};

// Removes <root>/<id>/ for every id whose process is gone; returns how many.
int CleanStalePins(const std::string& root = kDefaultPinRoot);

}  // namespace jackdaw::control
