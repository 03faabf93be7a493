// Debian's PostgreSQL as a private, throwaway cluster for the real-server
// suite: initdb into DIR/data as the `postgres` user (the server refuses to
// run as root), trust authentication, listening on 127.0.0.1:PORT only (no
// Unix socket), fsync and synchronous commit at their defaults so a commit
// flushes the WAL. The system's clusters and /etc/postgresql are never read.
//
// A keeper process owns the cluster's life: our child, it runs initdb,
// starts the postmaster (its child, so the postmaster and the backends it
// forks per connection are one process tree that `record --pid` follows),
// and on SIGTERM — sent by RealServer::Stop(), or by the kernel when the
// process that started it dies (PR_SET_PDEATHSIG: a SIGINT'ed `jackdaw
// reproduce`, a crashed test) — stops the postmaster with a fast shutdown
// (SIGINT; SIGKILL after 10 s) and removes DIR/data. The postmaster also
// gets SIGINT should the keeper die first.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "common/status.h"

namespace jackdaw::validate {

// The newest installed server binary, /usr/lib/postgresql/N/bin/postgres,
// or /usr/lib/postgresql/15/bin/postgres when none is (for the message).
std::string PostgresBinary();

struct PostgresProcesses {
  pid_t keeper = -1;      // our child: signal and reap this one
  pid_t postmaster = -1;  // the server: record this one
};

// Starts the keeper (stdout and stderr of initdb and the server to log_fd)
// and returns once the postmaster runs; it may not accept connections yet.
StatusOr<PostgresProcesses> StartPostgres(const std::string& dir, uint16_t port, int log_fd);

}  // namespace jackdaw::validate
