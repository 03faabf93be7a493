// A private clickhouse-server for the tests and the benchmark: Debian's
// binary run as a child process (not the system service) with its own
// config and data directory under /tmp, on free loopback ports, stopped
// and removed with the object.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "common/status.h"
#include "support/test_support.h"

namespace jackdaw::testing {

// The server binary: Debian's /usr/sbin/clickhouse-server, or upstream's
// /usr/bin/clickhouse; empty when neither is installed.
std::string ClickHouseBinary();

class PrivateClickHouse {
 public:
  PrivateClickHouse() = default;
  PrivateClickHouse(const PrivateClickHouse&) = delete;
  PrivateClickHouse& operator=(const PrivateClickHouse&) = delete;
  ~PrivateClickHouse();

  // Picks the ports; call before Start() when another server's config
  // must name this one (a cluster's shards).
  void ChoosePorts();
  // Starts the server and waits (up to 60 s) until it answers a query.
  // `remote_servers`: the XML inside <remote_servers>, or empty.
  Status Start(const std::string& remote_servers = "");
  // SIGKILL: a store that vanishes mid-run.
  void Kill();

  pid_t pid() const { return pid_; }
  uint16_t http_port() const { return http_port_; }
  uint16_t tcp_port() const { return tcp_port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(http_port_); }
  // Runs `sql`; the answer's body (TabSeparated), or the error.
  StatusOr<std::string> Query(const std::string& sql) const;
  // A query answering one number.
  uint64_t Number(const std::string& sql) const;

 private:
  std::string dir_;
  uint16_t http_port_ = 0, tcp_port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace jackdaw::testing

// A test that needs clickhouse-server: fails in CI (where it must run),
// skips elsewhere, when Debian's package is not installed.
#define JDW_REQUIRE_CLICKHOUSE()                                                                          \
  do {                                                                                                    \
    if (::jackdaw::testing::ClickHouseBinary().empty()) {                                                 \
      if (::jackdaw::testing::InCi()) FAIL() << "clickhouse-server missing: run scripts/install-deps.sh"; \
      GTEST_SKIP() << "clickhouse-server not installed (scripts/install-deps.sh installs it)";            \
    }                                                                                                     \
  } while (0)
