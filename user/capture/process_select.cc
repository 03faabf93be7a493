#include "capture/process_select.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace jackdaw::capture {
namespace {

constexpr long kCgroup2Magic = 0x63677270;

std::vector<uint32_t> ListPids(const std::string& proc) {
  std::vector<uint32_t> out;
  DIR* d = opendir(proc.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const unsigned long v = strtoul(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && v > 0 && v <= UINT32_MAX) out.push_back(uint32_t(v));
  }
  closedir(d);
  return out;
}

// The parent pid from /proc/PID/stat; the comm field may hold spaces and
// parentheses, so the fields are counted from the last ')'.
bool ReadPpid(const std::string& proc, uint32_t pid, uint32_t* ppid) {
  std::ifstream f(proc + "/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close = s.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(s.substr(close + 1));
  std::string state;
  long long pp = -1;
  if (!(rest >> state >> pp) || pp < 0) return false;
  *ppid = uint32_t(pp);
  return true;
}

std::vector<uint32_t> Sorted(std::vector<uint32_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace

std::vector<uint32_t> DescendantsOf(uint32_t pid, const std::string& proc) {
  std::multimap<uint32_t, uint32_t> children;
  for (uint32_t p : ListPids(proc)) {
    uint32_t pp;
    if (ReadPpid(proc, p, &pp)) children.emplace(pp, p);
  }
  std::vector<uint32_t> out = {pid}, todo = {pid};
  while (!todo.empty()) {
    const uint32_t p = todo.back();
    todo.pop_back();
    auto [lo, hi] = children.equal_range(p);
    for (auto it = lo; it != hi; ++it) {
      // A pid cycle cannot exist, but a recycled pid read mid-scan could
      // make one appear; never visit a pid twice.
      if (std::find(out.begin(), out.end(), it->second) != out.end()) continue;
      out.push_back(it->second);
      todo.push_back(it->second);
    }
  }
  return Sorted(out);
}

std::vector<uint32_t> ProcessesWithComm(const std::string& comm, const std::string& proc) {
  std::vector<uint32_t> out;
  for (uint32_t p : ListPids(proc)) {
    std::ifstream f(proc + "/" + std::to_string(p) + "/comm");
    std::string c;
    if (std::getline(f, c) && c == comm) out.push_back(p);
  }
  return Sorted(out);
}

std::string CgroupV2Mount(const std::string& proc) {
  std::ifstream f(proc + "/self/mountinfo");
  std::string line;
  while (std::getline(f, line)) {
    // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string fstype;
    tail >> fstype;
    if (fstype != "cgroup2") continue;
    std::istringstream head(line.substr(0, dash));
    std::string id, parent, dev, root, mountpoint;
    if (head >> id >> parent >> dev >> root >> mountpoint) return mountpoint;
  }
  return "";
}

StatusOr<CgroupTarget> ResolveCgroup(const std::string& arg, const std::string& proc) {
  const std::string mount = CgroupV2Mount(proc);
  if (mount.empty())
    return ErrStatus("--cgroup %s: no cgroup v2 hierarchy is mounted (mount it: mount -t cgroup2 none "
                     "/sys/fs/cgroup/unified)",
                     arg.c_str());
  namespace fs = std::filesystem;
  std::string path = arg;
  if (arg.rfind(mount + "/", 0) != 0 && arg != mount) {
    std::string rel = arg;
    while (!rel.empty() && rel.front() == '/') rel.erase(0, 1);
    path = rel.empty() ? mount : mount + "/" + rel;
  }
  std::error_code ec;
  path = fs::weakly_canonical(path, ec).string();
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return ErrStatus("--cgroup %s: %s is not a cgroup directory (give a path under %s, e.g. "
                     "system.slice/nginx.service; a process's is in /proc/PID/cgroup, line 0::)",
                     arg.c_str(), path.c_str(), mount.c_str());
  struct statfs sfs;
  if (statfs(path.c_str(), &sfs) != 0 || sfs.f_type != kCgroup2Magic)
    return ErrStatus("--cgroup %s: %s is not in the cgroup v2 hierarchy (give a path under %s, e.g. "
                     "system.slice/nginx.service)",
                     arg.c_str(), path.c_str(), mount.c_str());
  const std::string canon_mount = fs::weakly_canonical(mount, ec).string();
  if (path.rfind(canon_mount, 0) != 0)
    return ErrStatus("--cgroup %s: %s is outside the cgroup v2 mount (give a path under %s, e.g. "
                     "system.slice/nginx.service)",
                     arg.c_str(), path.c_str(), canon_mount.c_str());
  CgroupTarget t;
  t.path = path;
  t.id = st.st_ino;
  const std::string rel = path.substr(canon_mount.size());
  t.level = uint32_t(std::count(rel.begin(), rel.end(), '/'));
  return t;
}

std::vector<uint32_t> ProcessesInCgroup(const CgroupTarget& target) {
  std::vector<uint32_t> out;
  std::vector<std::string> dirs = {target.path};
  while (!dirs.empty()) {
    const std::string d = dirs.back();
    dirs.pop_back();
    std::ifstream f(d + "/cgroup.procs");
    uint32_t p;
    while (f >> p) out.push_back(p);
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(d, ec))
      if (e.is_directory(ec) && !e.is_symlink(ec)) dirs.push_back(e.path().string());
  }
  return Sorted(out);
}

}  // namespace jackdaw::capture
