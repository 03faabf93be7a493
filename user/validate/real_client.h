// The real-server suite's clients: HTTP/1.1 (a connection per request, or
// keep-alive; plain or TLS), DNS over UDP (each client its own socket, one
// query at a time), memcached's text protocol, redis' RESP2 (GET/SET as arrays
// of bulk strings), MariaDB's (greeting, login, COM_QUERY; mysql_wire.h)
// and PostgreSQL's v3 protocol
// (simple queries; pg_wire.h), both on persistent connections. A
// PostgreSQL connection's startup exchange and its Terminate belong to the
// connection, not to requests: the startup is logged with `"setup": true`
// (ReadGroundTruth leaves it out; ReadSetupExchanges reads it), so an
// extracted request that is really a set-up can be named as one. Each
// client thread records its own ground truth per request — kind, its local
// port (the server's remote port), CLOCK_MONOTONIC just before the first
// byte is sent and just after the last byte of the response arrives — in the
// same JSON-lines form as jackdaw-load, so ReadGroundTruth() and the
// scoring read both.
//
// Request kinds are interleaved deterministically (a seeded shuffle of equal
// shares), and client i takes every clients-th request, so two runs of one
// workload send the same sequence. A response that is not what the kind
// expects (status, length) fails the run: the ground truth would be wrong.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace jackdaw::validate {

enum class Protocol { kHttp, kMemcache, kPostgres, kRedis, kMysql, kDns };

struct RequestKind {
  std::string name;        // ground-truth label: "5K", "get-100K"
  std::string target;      // HTTP path, memcached key, or SQL
  std::string op = "get";  // memcached: get | set; PostgreSQL: the CommandComplete tag expected;
                           // MariaDB: "rows N" or "affected N"
  size_t bytes = 0;        // expected body / value size (set: bytes sent); PostgreSQL: least row bytes
  int http_status = 200;   // DNS (op: the record type, A, AAAA or TXT): the response code expected
};

struct ClientOptions {
  Protocol protocol = Protocol::kHttp;
  uint16_t port = 0;  // on 127.0.0.1
  std::vector<RequestKind> kinds;
  int clients = 4;
  int requests = 300;  // total over all clients
  bool keep_alive = true;
  // Pause between a response and the next request on a connection, so
  // persistent connections have idle time between messages, as real ones do.
  uint32_t think_us = 500;
  uint32_t seed = 1;
  std::string truth_path;
  // HTTP over TLS of this version (12 or 13; 0: plain). Each connection's
  // handshake is logged as set-up ("tls-handshake"); with a connection per
  // request each offers the previous one's session (a resumed handshake).
  int tls = 0;
};

// Runs the clients to completion and writes the ground truth.
Status RunClients(const ClientOptions& o);

// Stores every `get` kind's value (and nothing else) before recording, so
// the recorded gets hit. memcached and redis (`protocol`) only.
Status PrepareMemcache(uint16_t port, const std::vector<RequestKind>& kinds);
Status PrepareKeyValue(Protocol protocol, uint16_t port, const std::vector<RequestKind>& kinds);

// RESP2 framing, exposed for the unit test's server: a command as an array
// of bulk strings.
std::string RespCommand(const std::vector<std::string>& args);

// Creates and fills the tables ServerRequestKinds(kPostgres) query, then
// checkpoints, before recording. PostgreSQL only.
Status PreparePostgres(uint16_t port);

// Runs `statements` on one connection (login, queries, COM_QUIT) before
// recording: MariaDB's database and tables. Each must succeed.
Status PrepareMysql(uint16_t port, const std::vector<std::string>& statements);

}  // namespace jackdaw::validate
