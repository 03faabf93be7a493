// The ports a process listens on, read from /proc: the net group's process
// filter keeps packets to these ports from the first SYN on, so connections
// to a server that was already listening when the session started are
// recorded before accept() names their socket.
#pragma once

#include <cstdint>
#include <sys/types.h>
#include <vector>

namespace jackdaw::capture {

// TCP ports in LISTEN and bound UDP ports of the sockets `pid` holds open,
// read in its own network namespace (/proc/PID/net/...). Empty when the
// process is gone or its fds are unreadable: the kernel side then learns
// the flows from the first packets the process sends.
std::vector<uint16_t> ListeningPortsOf(pid_t pid);

}  // namespace jackdaw::capture
