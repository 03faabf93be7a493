// jackdaw-load's engine: drives jackdaw-testserver with a deterministic mix of
// Table 1 request types and records the ground truth of every request.
//
// The request sequence (seq -> type) is fixed by the mix and the seed before
// any request is sent, so a run is reproducible whatever the concurrency.
// K client threads take the next seq from a shared counter (closed loop: a
// client sends its next request when the previous one completed). With a
// rate R, seq i is not sent before start + i/R (fixed arrival schedule); if
// all K clients are busy it goes late, and the record keeps both times.
// Without --keepalive every request opens its own TCP connection, so the
// client's local port names the request on the wire.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "testserver/request_types.h"

namespace jackdaw::testserver {

struct MixEntry {
  const RequestType* type = nullptr;
  double weight = 0;  // normalised: the entries sum to 1
};

// Parses "A:0.5,B:0.5" (a bare "A" means weight 1). The error names the bad
// part and the expected format.
StatusOr<std::vector<MixEntry>> ParseMix(std::string_view spec);

// "A:0.500,B:0.500".
std::string FormatMix(const std::vector<MixEntry>& mix);

// The type of each request, seq 0..n-1, drawn from `mix` with a
// mt19937_64(seed); identical for identical arguments on every platform.
std::vector<const RequestType*> GenerateSequence(const std::vector<MixEntry>& mix, size_t n,
                                                 uint64_t seed);

struct Target {
  std::string host;
  uint16_t port = 0;
  std::string base;  // "http://HOST:PORT"
  sockaddr_in addr{};
};

// Parses "http://HOST[:PORT][/]" (PORT defaults to 80).
StatusOr<Target> ParseUrl(std::string_view url);

struct LoadOptions {
  Target target;
  size_t requests = 500;
  std::vector<MixEntry> mix;
  uint64_t seed = 1;
  int clients = 1;
  double rate = 0;  // requests/s; 0 = as fast as the clients go
  bool keepalive = false;
  int timeout_ms = 10000;
};

// Ground truth of one request. Times are taken by the client: send_* when it
// began the request (before connect() for a new connection, before writing
// the request on a kept-alive one), recv_* when the whole response was read.
struct RequestRecord {
  uint64_t seq = 0;
  char type = '?';
  std::string url;
  int client = 0;             // client thread 0..K-1
  uint16_t local_port = 0;    // client side of the TCP connection
  uint64_t sched_mono_ns = 0; // --rate: when it was due; else 0
  uint64_t send_mono_ns = 0;
  uint64_t recv_mono_ns = 0;
  uint64_t send_wall_ns = 0;
  uint64_t recv_wall_ns = 0;
  uint64_t latency_ns = 0;    // recv_mono_ns - send_mono_ns
  int status = 0;             // HTTP status, 0 if no response
  uint64_t bytes = 0;         // response body bytes
  uint64_t wire_bytes = 0;    // response head + body bytes
  uint64_t req_id = 0;        // server's X-Request-Id (the USDT req_id)
  uint64_t server_cpu_ns = 0; // server's X-Spin-Cpu-Ns (0 for C, D)
  std::string error;          // "" if the request succeeded

  bool ok() const { return error.empty() && status == 200; }
};

struct LoadResult {
  std::vector<RequestRecord> records;  // indexed by seq; only requests begun
  // Set when the server went away mid-run (connection refused after some
  // requests were answered): the records hold what was sent until then.
  std::string fatal;
  uint64_t start_mono_ns = 0;
  uint64_t end_mono_ns = 0;
};

// Runs the whole load. Fails (with the message to print) only when the server
// cannot be reached at all (connection refused before any answer); if it
// goes away later the result carries `fatal` and the requests sent so far,
// so their ground truth is still written. Other failures are per-request
// errors in the records.
StatusOr<LoadResult> RunLoad(const LoadOptions& opts);

enum class TruthFormat { kJsonLines, kCsv };
std::string CsvHeader();
std::string FormatRecord(const RequestRecord& r, TruthFormat format);  // one line, with '\n'
Status WriteGroundTruth(const std::string& path, TruthFormat format,
                        const std::vector<RequestRecord>& records);

// Human summary: requests, errors, throughput, mean/p50/p99 latency per type.
std::string FormatSummary(const LoadResult& result);

}  // namespace jackdaw::testserver
