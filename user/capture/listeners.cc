#include "capture/listeners.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>

namespace jackdaw::capture {
namespace {

std::set<uint64_t> SocketInodesOf(pid_t pid) {
  std::set<uint64_t> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  char target[64];
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string link = dir + "/" + e->d_name;
    const ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
    if (n <= 0) continue;
    target[n] = 0;
    unsigned long long inode = 0;
    if (sscanf(target, "socket:[%llu]", &inode) == 1) out.insert(inode);
  }
  closedir(d);
  return out;
}

// /proc/net/{tcp,tcp6,udp,udp6}: "sl local_address rem_address st ... inode".
void AddPorts(const std::string& table, bool listen_only, const std::set<uint64_t>& inodes,
              std::vector<uint16_t>* ports) {
  std::ifstream f(table);
  std::string line;
  std::getline(f, line);  // header
  constexpr unsigned kTcpListen = 0x0A;
  while (std::getline(f, line)) {
    char local[64], remote[64];
    unsigned state = 0;
    unsigned long long inode = 0;
    // sl: local rem st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
    if (sscanf(line.c_str(), " %*u: %63s %63s %x %*s %*s %*s %*u %*u %llu", local, remote, &state, &inode) != 4)
      continue;
    if (!inodes.count(inode) || (listen_only && state != kTcpListen)) continue;
    const char* colon = strrchr(local, ':');
    if (!colon) continue;
    const auto port = static_cast<uint16_t>(strtoul(colon + 1, nullptr, 16));
    if (port) ports->push_back(port);
  }
}

}  // namespace

std::vector<uint16_t> ListeningPortsOf(pid_t pid) {
  std::vector<uint16_t> ports;
  const std::set<uint64_t> inodes = SocketInodesOf(pid);
  if (inodes.empty()) return ports;
  const std::string net = "/proc/" + std::to_string(pid) + "/net/";
  AddPorts(net + "tcp", true, inodes, &ports);
  AddPorts(net + "tcp6", true, inodes, &ports);
  AddPorts(net + "udp", false, inodes, &ports);
  AddPorts(net + "udp6", false, inodes, &ports);
  std::sort(ports.begin(), ports.end());
  ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
  return ports;
}

}  // namespace jackdaw::capture
