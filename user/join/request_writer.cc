// JSON-lines output of extracted requests and the one-line summary.
//
// One request per line:
//   {"id":1,"tgid":42,"start_ns":..,"end_ns":..,"latency_ns":..,
//    "start_tsc":..,"end_tsc":..,"start_wall_ns":..,"end_wall_ns":..,
//    "timed_out":false,"threads":[42,43],
//    "connections":[{"local":"127.0.0.1:8080","remote":"127.0.0.1:5000"}],
//    "totals":{"cpu_ns":..,"softirq_cpu_ns":..,"disk_bytes":..,"disk_ios":..,
//              "net_bytes_in":..,"net_bytes_out":..,"runq_wait_ns":..,
//              "blocked_ns":..,"blocked":{"disk":..,"net":..,"futex":..,
//              "pipe":..,"other":..}},
//    "events":[{"ts_ns":..,"tsc":..,"tid":..,"cpu":..,"type":10,
//               "symbol":"sys_enter:read","cpu_ns":..}, ...],
//    "edges":[[from,to], [from,to,"wakeup"], ...]}
// A request of a schema with `messages` also has
//   "message":{"connection":3,"exchange":0,"in_bytes":..,"out_bytes":..,"pipelined":false}
// and each connection whose life the join charged is one line of its own,
// after its last request:
//   {"type":"connection","id":3,"tgid":42,"local":"127.0.0.1:8080",
//    "remote":"127.0.0.1:5000","start_ns":..,"end_ns":..,"closed":true,
//    "requests":2,"one_way":0,"greetings":0,"setups":0,"pipelined":0,"eof_reads":1,
//    "empty_reads":0,"events":9,"idle_ns":..,"cpu_ns":..,"softirq_cpu_ns":..,
//    "net_bytes_in":..,"net_bytes_out":..}
// (request lines have no "type").
// Event fields that are zero or none (synthetic, cpu_ns, disk_bytes,
// net_bytes) are left out to keep lines short; "synthetic" is one of
// "signal", "resume", "wait", "io_start"; edges index "events", and an edge
// the join derived from a kernel wake-up (model::EdgeKind::kWakeup) has a
// third element, "wakeup" (a schema's SYNC has none).
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "join/extractor.h"

namespace jackdaw::join {
namespace {

const char* SyntheticName(model::SyntheticKind k) {
  switch (k) {
    case model::SyntheticKind::kSignal:
      return "signal";
    case model::SyntheticKind::kResume:
      return "resume";
    case model::SyntheticKind::kWait:
      return "wait";
    case model::SyntheticKind::kIoStart:
      return "io_start";
    default:
      return nullptr;
  }
}

}  // namespace

void WriteRequestJson(std::string* out, const model::Request& r) {
  nlohmann::json j;
  j["id"] = r.id;
  j["tgid"] = r.tgid;
  j["start_ns"] = r.start_ns;
  j["end_ns"] = r.end_ns;
  j["latency_ns"] = r.latency_ns();
  j["start_tsc"] = r.start_tsc;
  j["end_tsc"] = r.end_tsc;
  j["start_wall_ns"] = r.start_wall_ns;
  j["end_wall_ns"] = r.end_wall_ns;
  j["timed_out"] = r.timed_out;
  j["threads"] = r.threads;
  if (r.has_message)
    j["message"] = {{"connection", r.connection_id},
                    {"exchange", r.exchange},
                    {"in_bytes", r.msg_in_bytes},
                    {"out_bytes", r.msg_out_bytes},
                    {"pipelined", r.pipelined}};
  auto& conns = j["connections"] = nlohmann::json::array();
  for (const model::Endpoint& e : r.connections) conns.push_back({{"local", e.local}, {"remote", e.remote}});
  const model::ResourceTotals& t = r.totals;
  j["totals"] = {{"cpu_ns", t.cpu_ns},
                 {"softirq_cpu_ns", t.softirq_cpu_ns},
                 {"disk_bytes", t.disk_bytes},
                 {"disk_ios", t.disk_ios},
                 {"net_bytes_in", t.net_bytes_in},
                 {"net_bytes_out", t.net_bytes_out},
                 {"runq_wait_ns", t.runq_wait_ns},
                 {"blocked_ns", t.blocked_ns},
                 {"blocked",
                  {{"disk", t.blocked_disk_ns},
                   {"net", t.blocked_net_ns},
                   {"futex", t.blocked_futex_ns},
                   {"pipe", t.blocked_pipe_ns},
                   {"other", t.blocked_other_ns}}}};
  auto& evs = j["events"] = nlohmann::json::array();
  for (const model::RequestEvent& e : r.events) {
    nlohmann::json ev = {{"ts_ns", e.ts_ns}, {"tsc", e.tsc}, {"tid", e.tid},
                         {"cpu", e.cpu},     {"type", e.record_type}, {"symbol", e.symbol}};
    if (const char* syn = SyntheticName(e.synthetic)) ev["synthetic"] = syn;
    if (e.cpu_ns) ev["cpu_ns"] = e.cpu_ns;
    if (e.disk_bytes) ev["disk_bytes"] = e.disk_bytes;
    if (e.net_bytes) ev["net_bytes"] = e.net_bytes;
    evs.push_back(std::move(ev));
  }
  auto& edges = j["edges"] = nlohmann::json::array();
  for (const model::CausalEdge& e : r.edges) {
    if (e.kind == model::EdgeKind::kWakeup) {
      edges.push_back({e.from, e.to, "wakeup"});
    } else {
      edges.push_back({e.from, e.to});
    }
  }
  *out += j.dump();
  *out += '\n';
}

nlohmann::ordered_json ConnectionJson(const model::Connection& c) {
  return {{"type", "connection"},   {"id", c.id},
          {"tgid", c.tgid},         {"local", c.endpoint.local},
          {"remote", c.endpoint.remote}, {"start_ns", c.start_ns},
          {"end_ns", c.end_ns},     {"closed", c.closed},
          {"requests", c.requests}, {"one_way", c.one_way},
          {"greetings", c.greetings}, {"setups", c.setups},
          {"pipelined", c.pipelined},
          {"eof_reads", c.eof_reads}, {"empty_reads", c.empty_reads},
          {"events", c.events},     {"idle_ns", c.idle_ns},
          {"cpu_ns", c.cpu_ns},     {"softirq_cpu_ns", c.softirq_cpu_ns},
          {"net_bytes_in", c.net_bytes_in}, {"net_bytes_out", c.net_bytes_out}};
}

void WriteConnectionJson(std::string* out, const model::Connection& c) {
  *out += ConnectionJson(c).dump();
  *out += '\n';
}

Status WriteRequestsJsonl(const std::string& path, const std::vector<model::Request>& requests) {
  FILE* f = path == "-" ? stdout : fopen(path.c_str(), "w");
  if (!f) return ErrStatus("cannot write %s: %s", path.c_str(), strerror(errno));
  std::string line;
  bool ok = true;
  for (const model::Request& r : requests) {
    line.clear();
    WriteRequestJson(&line, r);
    ok &= fwrite(line.data(), 1, line.size(), f) == line.size();
  }
  ok &= fflush(f) == 0;
  if (f != stdout) ok &= fclose(f) == 0;
  if (!ok) return ErrStatus("error writing %s: %s", path.c_str(), strerror(errno));
  return Status::Ok();
}

std::string FormatSummary(const Stats& s) {
  char buf[512];
  const double pct = s.cpu_observed_ns ? 100.0 * static_cast<double>(s.cpu_unattributed_ns) /
                                             static_cast<double>(s.cpu_observed_ns)
                                       : 0.0;
  snprintf(buf, sizeof(buf),
           "requests %" PRIu64 " (timed out %" PRIu64 "), events joined %" PRIu64 " (in requests %" PRIu64
           ", discarded %" PRIu64 "), late records %" PRIu64 ", unattributed cpu %.1f%% (%.3f ms of %.3f ms)",
           s.requests_emitted, s.requests_timed_out, s.events_joined, s.events_in_requests, s.events_discarded,
           s.late_records + s.late_io_starts, pct, static_cast<double>(s.cpu_unattributed_ns) / 1e6,
           static_cast<double>(s.cpu_observed_ns) / 1e6);
  std::string out = buf;
  // Only when they happened: both point at evidence the join could not use.
  if (s.seed_conflicts) {
    snprintf(buf, sizeof(buf), ", %" PRIu64 " events reached two requests (kept apart)", s.seed_conflicts);
    out += buf;
  }
  if (const uint64_t missing = s.sched_chain_breaks + s.sched_running_inferred) {
    snprintf(buf, sizeof(buf), ", %" PRIu64 " of %" PRIu64 " switch-ins missing from the trace", missing,
             s.sched_switches);
    out += buf;
  }
  return out;
}

}  // namespace jackdaw::join
