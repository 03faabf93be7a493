#include "control/pins.h"

#include <bpf/bpf.h>
#include <dirent.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "control/control_socket.h"

namespace jackdaw::control {
namespace {

Status EnsureBpffs(const std::string& root) {
  // The parent of root (normally /sys/fs/bpf) must be a bpffs.
  const size_t slash = root.find_last_of('/');
  const std::string parent =
      slash == std::string::npos || slash == 0 ? std::string("/") : std::string(root.data(), slash);
  struct statfs fs {};
  if (statfs(parent.c_str(), &fs) == 0 && fs.f_type == BPF_FS_MAGIC) return Status::Ok();
  if (mount("bpf", parent.c_str(), "bpf", 0, nullptr) != 0)
    return ErrStatus("%s is not a bpffs and cannot be mounted (%s): mount -t bpf bpf %s", parent.c_str(),
                     strerror(errno), parent.c_str());
  return Status::Ok();
}

void RemoveDir(const std::string& dir) {
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") unlink((dir + "/" + name).c_str());
    }
    closedir(d);
  }
  rmdir(dir.c_str());
}

}  // namespace

int CleanStalePins(const std::string& root) {
  int n = 0;
  DIR* d = opendir(root.c_str());
  if (!d) return 0;
  std::vector<std::string> stale;
  while (dirent* e = readdir(d)) {
    std::string id = e->d_name;
    if (id == "." || id == "..") continue;
    if (!SessionAlive(id)) stale.push_back(root + "/" + id);
  }
  closedir(d);
  for (const std::string& dir : stale) RemoveDir(dir), ++n;
  return n;
}

StatusOr<std::unique_ptr<PinnedMaps>> PinnedMaps::Create(const std::string& root, const std::string& session,
                                                         const std::vector<std::pair<std::string, int>>& maps) {
  RETURN_IF_ERROR(EnsureBpffs(root));
  if (mkdir(root.c_str(), 0700) != 0 && errno != EEXIST)
    return ErrStatus("cannot create %s: %s", root.c_str(), strerror(errno));
  CleanStalePins(root);
  std::unique_ptr<PinnedMaps> p(new PinnedMaps());
  p->dir_ = root + "/" + session;
  RemoveDir(p->dir_);  // left by an earlier process with our pid
  if (mkdir(p->dir_.c_str(), 0700) != 0)
    return ErrStatus("cannot create %s: %s", p->dir_.c_str(), strerror(errno));
  for (const auto& [name, fd] : maps) {
    std::string path = p->dir_ + "/" + name;
    if (bpf_obj_pin(fd, path.c_str()) != 0)
      return ErrStatus("cannot pin %s: %s", path.c_str(), strerror(errno));
    p->pins_.push_back(path);
  }
  return p;
}

PinnedMaps::~PinnedMaps() {
  for (const std::string& p : pins_) unlink(p.c_str());
  if (!dir_.empty()) rmdir(dir_.c_str());
}

}  // namespace jackdaw::control
