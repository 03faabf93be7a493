// The Magpie validation (OSDI'04 §6, Tables 2-5) run end to end on this
// machine: the test server is recorded by `jackdaw record` while jackdaw-load
// drives a workload, then the trace is analysed with a schema and compared
// with the load driver's ground truth.
//
// Matching requests to ground truth: each extracted request lists the
// connections it used; the server side's remote port is the client's local
// port, which the load driver logs per request. A client can reuse a port
// within a run, so among the entries with that port the one whose
// send..receive interval overlaps the request's (same CLOCK_MONOTONIC)
// is taken. A request matching several truth entries was merged; a truth
// entry matched by several requests was split; neither is guessed around.
//
// Accounted CPU %: CPU charged to requests (task context plus interrupt
// work joined through packet/IO attributes) over the on-CPU time of every
// thread of the server process, measured from sched_switch while it was
// serving (from the first seed event to the end of the last request, so
// server start-up is left out) — the kernel's work inside their syscalls is
// in that time, as is softirq work that interrupted them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "request/request.h"

namespace jackdaw::validate {

struct Workload {
  std::string table;  // "2".."5": the paper table it reproduces
  std::string name;   // "A/B"
  std::string mix;    // jackdaw-load --mix
  int clients = 1;
  int requests = 500;
};

// Tables 2-5: A, B, A/B, C, D, C/D, E, B/E, A/B/E, F, A/F, A/E/F, A/B/E/F,
// each with 1 and 5 clients. quick: the mixed A/B/E/F run only.
std::vector<Workload> PaperWorkloads(bool quick, int requests);

// The workloads named in `only`, in the order of `all`. Each item is a
// workload name ("A/E/F": both client counts) or a name and a client count
// ("A/E/F:5"); names are matched exactly (case-sensitive, as in the tables).
// An item that selects nothing is an error naming it and the known names.
StatusOr<std::vector<Workload>> SelectWorkloads(const std::vector<Workload>& all,
                                                const std::vector<std::string>& only);

struct RunOptions {
  std::string bin_dir;   // jackdaw, jackdaw-testserver, jackdaw-load
  std::string work_dir;  // traces and ground truth go here
  bool direct_io = true; // C/D read from disk on every request
  int workers = 4;
  int helpers = 2;
  bool verbose = false;
};

struct RecordedRun {
  Workload workload;
  std::string trace;
  std::string truth;
  double wall_s = 0;
  // Connections carry several requests (keep-alive, persistent clients):
  // a request then matches the truth entries on its connection's port whose
  // send..receive interval it overlaps substantially (more than half of the
  // shorter of the two) — several of them is a merge — or, failing that,
  // the one it overlaps most; a request overlapping none is extra. Otherwise
  // (a connection per request) the entry it overlaps most, as before.
  bool shared_connections = false;
};

StatusOr<RecordedRun> RecordWorkload(const RunOptions& opts, const Workload& w);

struct TruthEntry {
  std::string type;
  uint16_t client_port = 0;
  uint64_t send_mono_ns = 0, recv_mono_ns = 0;  // the client's view, CLOCK_MONOTONIC
  uint64_t req_id = 0;
  uint64_t server_cpu_ns = 0;  // the server's own thread-CPU measurement
};
// The client requests of a ground-truth file; lines marked `"setup": true`
// (a connection's set-up exchange a client logged, e.g. PostgreSQL's
// startup) are left out, and ReadSetupExchanges() returns only them.
StatusOr<std::vector<TruthEntry>> ReadGroundTruth(const std::string& path);
StatusOr<std::vector<TruthEntry>> ReadSetupExchanges(const std::string& path);

struct ClusterRow {
  std::string label;
  uint32_t size = 0;
  std::string composition;  // "250A+1B"
  double mean_cpu_ms = 0;
};

struct SchemaResult {
  std::string schema;
  uint64_t sent = 0, extracted = 0, matched = 0, merged = 0, split = 0, missing = 0, unmatched = 0;
  // Of `unmatched`: requests that are a connection's set-up exchange the
  // client logged (same port, overlapping its interval).
  uint64_t setup = 0;
  // Truth entries matched by exactly one request that matches nothing else.
  uint64_t exact = 0;
  // Shared connections: requests whose own events go on past the start of
  // their connection's next exchange (work after the response, a preempted
  // worker's tail); matched by their exchange's interval (AnalyzeRun).
  uint64_t overhang = 0;
  double accounted_cpu = 0;       // fraction: requests and connection life
  double connection_cpu = 0;      // fraction charged to connection life (schemas with `messages`)
  uint64_t connections = 0;       // connections reported
  double accounted_vs_server = 0; // charged CPU of matched requests / server's own spin CPU
  // Matched requests whose client logged the server's own CPU measure
  // (X-Spin-Cpu-Ns), and of them those whose innermost tier — the process
  // furthest from the front, which did the measured work (the backend
  // behind a proxy; the server itself alone) — is charged within 10 % of it.
  uint64_t measured_cpu = 0, measured_cpu_within_10pct = 0;
  std::vector<ClusterRow> clusters;
  double avg_diameter = 0, min_separation = 0;
  double model_error_cpu = 0, model_error_disk = 0, model_error_net = 0, model_error = 0;
  double purity = 0, ari = 0;
  double outside_type_cluster = 0;  // fraction of requests not in their type's majority cluster
  bool bef_separate = true;         // B, E, F in different clusters (where present)
  uint64_t anomalies = 0;
  std::string summary;              // the join's one-line summary
};

// The interval a request is matched to the ground truth by. On a shared
// connection the client sees an exchange, which ends when the next one
// begins (SysProf, "Messages and Interactions": the next request message
// ends the response). The server's own work for a request may go on after
// that (logging after the response, a worker preempted before its next
// read): the request keeps those events, but their time overlaps the
// client's next request, and an overlap test on the request's whole extent
// would call it merged with the next although it holds none of its events.
// So a request with a message is matched by its exchange's interval: from
// its start to the start of the next exchange on its connection, where
// that comes before its last event (counted in *overhang). A join that
// really merged two exchanges leaves no request for the second, so nothing
// clips the merged one and it still counts as merged. Otherwise (and for
// connection-per-request runs) the request's own start and end.
struct MatchSpan {
  uint64_t start_ns = 0, end_ns = 0;
};
// The task CPU a request charges to its innermost tier: the processes
// furthest from the front (all of it when it names no processes).
uint64_t InnermostTierCpuNs(const model::Request& r);

std::vector<MatchSpan> MatchSpans(const std::vector<model::Request>& reqs, bool shared_connections,
                                  uint64_t* overhang);

StatusOr<SchemaResult> AnalyzeRun(const RecordedRun& run, const std::string& schema,
                                  const std::vector<std::string>& schema_dirs);

// One table per paper table, both schemas side by side.
void PrintTables(const std::vector<std::pair<Workload, std::vector<SchemaResult>>>& rows, FILE* out);

}  // namespace jackdaw::validate
