// Debian's packaged servers, run privately for the real-server suite: each
// gets its own configuration, document root, logs and pid file in a fresh
// directory, listens on 127.0.0.1 on a port that was free a moment before,
// and runs in the foreground as our child in its own process group. The
// system's /etc configuration and any running service are never read or
// touched (each server is pointed at the generated file explicitly).
//
// Shapes: nginx (a master and 2 event-loop workers, epoll, Debian's
// sendfile on), memcached (4 worker threads behind one listener thread,
// libevent), apache2 with mpm_prefork (pre-forked single-threaded worker
// processes), PostgreSQL (a postmaster that forks one backend process per
// connection; real_postgres.h), redis (one thread's event loop serves every
// connection; its background threads do no request work), lighttpd (one
// single-threaded event-loop process, no workers), MariaDB (one thread per
// connection, a server-first protocol: a greeting, then the client's login;
// a throwaway data directory from mariadb-install-db, run with
// --skip-grant-tables on 127.0.0.1 only, InnoDB flushing its log at each
// commit as by default).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "validate/real_client.h"

namespace jackdaw::validate {

// kNginxTls: nginx serving the same files over TLS 1.2 and 1.3 (a
// self-signed certificate in its directory, a shared session cache).
// kUnbound: a DNS resolver answering a local zone over UDP from one
// unconnected socket shared by its 2 threads.
// kNginxProxy: a stack of two processes, nginx as a reverse proxy
// (proxy_pass to an upstream with `keepalive`, so its backend connections
// are pooled and carry many requests in turn) in front of
// jackdaw-testserver --keepalive serving Table 1's kinds; a request's work
// is in both.
// kLemp: nginx -> php-fpm -> MariaDB or redis, four processes (real_lemp.h).
// kCaddy: a Go server, its goroutines multiplexed over GOMAXPROCS (2 here)
// OS threads that park and hand work to each other: an M:N runtime.
// kJdkPool: the JDK's HTTP server with a fixed pool of 8 threads fed from
// one shared queue (real_jdk.h).
enum class ServerKind {
  kNginx,
  kNginxTls,
  kNginxProxy,
  kMemcached,
  kApachePrefork,
  kPostgres,
  kRedis,
  kLighttpd,
  kMariadb,
  kUnbound,
  kLemp,
  kCaddy,
  kJdkPool
};

const char* ServerName(ServerKind k);
// The binary each kind runs, and the Debian package that provides it.
std::string ServerBinary(ServerKind k);
const char* ServerPackage(ServerKind k);

// The request kinds the suite sends to a server of this kind (its document
// root or its stored values are made to fit them).
std::vector<RequestKind> ServerRequestKinds(ServerKind k);

// What the MariaDB workload needs stored before recording (database, tables,
// rows), in order.
std::vector<std::string> MariadbSetupStatements();

class RealServer {
 public:
  // Writes the configuration into dir (created; must not exist or be
  // empty), starts the server and waits until it accepts connections.
  // bin_dir: where jackdaw-testserver is (a stack with it as its backend).
  static StatusOr<std::unique_ptr<RealServer>> Start(ServerKind kind, const std::string& dir,
                                                     const std::string& bin_dir = "");
  ~RealServer();  // stops it if still running

  // The server's top process (nginx's master, the postmaster): what
  // `record --pid` is given.
  pid_t pid() const { return pid_; }
  // Every process tree of the stack, the front first (its backends after):
  // `record --pid` is given each.
  std::vector<pid_t> pids() const;
  uint16_t port() const { return port_; }
  ServerKind kind() const { return kind_; }
  // Asks the server to stop, waits (up to 10 s, then kills its group).
  Status Stop();

 private:
  RealServer() = default;
  // Takes ownership of this (a new server): waits until it accepts, or
  // fails with its log's tail if it exits or does not within `seconds`.
  StatusOr<std::unique_ptr<RealServer>> AwaitAccepting(const std::string& log, int seconds);
  // Forks argv in a process group of its own, its output appended to log.
  Status Spawn(std::vector<std::string> argv, const std::string& log);
  Status StopProcess();  // this process alone, not its backends
  // The LEMP stack's php-fpm, MariaDB and redis, their data stored, into
  // backends_; its nginx's server block.
  StatusOr<std::string> StartLempBackends(const std::string& dir);
  // jackdaw-testserver --keepalive from bin_dir, on a free port, in dir.
  static StatusOr<std::unique_ptr<RealServer>> StartTestserverBackend(const std::string& bin_dir,
                                                                      const std::string& dir);
  ServerKind kind_ = ServerKind::kNginx;
  // A stack's processes behind the front, stopped after it.
  std::vector<std::unique_ptr<RealServer>> backends_;
  pid_t pid_ = -1;
  pid_t child_ = -1;  // our child, signalled and reaped: pid_, or PostgreSQL's keeper
  uint16_t port_ = 0;
  std::string unix_path_;  // it is ready when this socket accepts (php-fpm), else port_
  std::string dir_;
};

// A port on 127.0.0.1 that nothing listens on right now.
StatusOr<uint16_t> FreeLoopbackPort();

}  // namespace jackdaw::validate
