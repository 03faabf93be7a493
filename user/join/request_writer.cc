// JSON-lines output of extracted requests and the one-line summary.
//
// One request per line:
//   {"id":1,"tgid":42,"start_ns":..,"end_ns":..,"latency_ns":..,
//    "start_tsc":..,"end_tsc":..,"start_wall_ns":..,"end_wall_ns":..,
//    "timed_out":false,"threads":[42,43],
//    "connections":[{"local":"127.0.0.1:8080","remote":"127.0.0.1:5000"}],
//      (a unix socket: {"local":"unix:/run/php/php-fpm.sock","peer_comm":"nginx",
//       "peer_pid":812,"remote":"unix:"}; calls name their unix peer the same way)
//    "totals":{"cpu_ns":..,"softirq_cpu_ns":..,"disk_bytes":..,"disk_ios":..,
//              "net_bytes_in":..,"net_bytes_out":..,"runq_wait_ns":..,
//              "blocked_ns":..,"blocked":{"disk":..,"net":..,"futex":..,
//              "pipe":..,"other":..}},
//    "events":[{"ts_ns":..,"tsc":..,"tid":..,"cpu":..,"type":10,
//               "symbol":"sys_enter:read","cpu_ns":..}, ...],
//    "edges":[[from,to], [from,to,"wakeup"], ...],
//    "processes":[{"tgid":42,"comm":"nginx","tier":0,"cpu_ns":..,...}, ...],
//    "calls":[{"local":..,"remote":..,"peer_tgid":43,"start_ns":..,"end_ns":..,
//              "bytes_out":..,"bytes_in":..,"answered":true,"overlapped":false,...}],
//    "connection_cpu_ns":..}
// (keys of a line appear in byte order, as nlohmann's dump() writes them,
// but for "log_likelihood", which `jackdaw analyze` appends last once its
// likelihood model is learned: AppendLogLikelihood()).
// A request of a schema with `messages` also has
//   "message":{"connection":3,"exchange":0,"in_bytes":..,"out_bytes":..,"pipelined":false}
// and each connection whose life the join charged is one line of its own,
// after its last request:
//   {"type":"connection","id":3,"tgid":42,"local":"127.0.0.1:8080",
//    "remote":"127.0.0.1:5000","start_ns":..,"end_ns":..,"closed":true,
//    "requests":2,"one_way":0,"greetings":0,"setups":0,"pipelined":0,"eof_reads":1,
//    "empty_reads":0,"events":9,"idle_ns":..,"cpu_ns":..,"softirq_cpu_ns":..,
//    "net_bytes_in":..,"net_bytes_out":..}
// (request lines have no "type"; a unix connection's line adds "peer_pid" and
// "peer_comm" after "remote").
// Event fields that are zero or none (synthetic, cpu_ns, disk_bytes,
// net_bytes) are left out to keep lines short; "synthetic" is one of
// "signal", "resume", "wait", "io_start"; edges index "events", and an edge
// the join derived from a kernel wake-up (model::EdgeKind::kWakeup) has a
// third element, "wakeup" (a schema's SYNC has none).
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <nlohmann/json.hpp>

#include "common/safe_file.h"
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

// Written by hand rather than through nlohmann::json: building a tree of
// std::map objects per event was three quarters of `analyze --requests`.
// The bytes are those nlohmann's dump() gives the same tree — keys in
// std::map (byte) order, integers in decimal, no spaces — and strings that
// are not plain printable ASCII still go through nlohmann's serializer
// (its escapes and its UTF-8 check), so the output does not change.
class JsonLine {
 public:
  explicit JsonLine(std::string* out) : out_(*out) {}
  void Raw(std::string_view s) { out_.append(s); }
  void Char(char c) { out_.push_back(c); }
  void U(uint64_t v) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
    (void)ec;
    out_.append(buf, end);
  }
  void Bool(bool b) { out_.append(b ? "true" : "false"); }
  void Str(std::string_view s) {
    for (unsigned char c : s) {
      if (c < 0x20 || c >= 0x80) {
        out_.append(nlohmann::json(std::string(s)).dump());
        return;
      }
    }
    out_.push_back('"');
    for (char c : s) {
      if (c == '"' || c == '\\') out_.push_back('\\');
      out_.push_back(c);
    }
    out_.push_back('"');
  }
  // ,"key":value for an unsigned value.
  void Field(std::string_view k, uint64_t v) {
    Key(k);
    U(v);
  }
  // ,"key": (the key is a literal of plain ASCII).
  void Key(std::string_view k) {
    out_.append(",\"");
    out_.append(k);
    out_.append("\":");
  }

 private:
  std::string& out_;
};

// A unix socket's peer process (IP endpoints have none: nothing is
// written, so their lines stay as they were), keys in byte order between
// "local" and "remote".
void WritePeer(JsonLine& j, const model::Endpoint& e) {
  if (!e.peer_tgid) return;
  j.Key("peer_comm");
  j.Str(e.peer_comm);
  j.Field("peer_pid", e.peer_tgid);
}

void WriteRequestJson(std::string* out, const model::Request& r) {
  JsonLine j(out);
  j.Raw("{\"calls\":[");
  for (size_t i = 0; i < r.calls.size(); ++i) {
    const model::Call& c = r.calls[i];
    if (i) j.Char(',');
    j.Raw("{\"answered\":");
    j.Bool(c.answered);
    j.Field("bytes_in", c.bytes_in);
    j.Field("bytes_out", c.bytes_out);
    j.Field("caller_tgid", c.caller_tgid);
    j.Field("caller_tid", c.caller_tid);
    j.Field("end_ns", c.end_ns);
    j.Field("index", c.index);
    j.Key("local");
    j.Str(c.endpoint.local);
    j.Key("overlapped");
    j.Bool(c.overlapped);
    WritePeer(j, c.endpoint);
    j.Field("peer_tgid", c.peer_tgid);
    j.Key("remote");
    j.Str(c.endpoint.remote);
    j.Field("seq_out_end", c.seq_out_end);
    j.Field("seq_out_start", c.seq_out_start);
    j.Field("start_ns", c.start_ns);
    j.Char('}');
  }
  j.Char(']');
  j.Field("connection_cpu_ns", r.connection_cpu_ns);
  j.Raw(",\"connections\":[");
  for (size_t i = 0; i < r.connections.size(); ++i) {
    if (i) j.Char(',');
    j.Raw("{\"local\":");
    j.Str(r.connections[i].local);
    WritePeer(j, r.connections[i]);
    j.Raw(",\"remote\":");
    j.Str(r.connections[i].remote);
    j.Char('}');
  }
  j.Raw("],\"edges\":[");
  for (size_t i = 0; i < r.edges.size(); ++i) {
    const model::CausalEdge& e = r.edges[i];
    if (i) j.Char(',');
    j.Char('[');
    j.U(e.from);
    j.Char(',');
    j.U(e.to);
    if (e.kind == model::EdgeKind::kWakeup) j.Raw(",\"wakeup\"");
    j.Char(']');
  }
  j.Char(']');
  j.Field("end_ns", r.end_ns);
  j.Field("end_tsc", r.end_tsc);
  j.Field("end_wall_ns", r.end_wall_ns);
  j.Raw(",\"events\":[");
  for (size_t i = 0; i < r.events.size(); ++i) {
    const model::RequestEvent& e = r.events[i];
    if (i) j.Char(',');
    j.Raw("{\"cpu\":");
    j.U(e.cpu);
    if (e.cpu_ns) j.Key("cpu_ns"), j.U(e.cpu_ns);
    if (e.disk_bytes) j.Key("disk_bytes"), j.U(e.disk_bytes);
    if (e.net_bytes) j.Key("net_bytes"), j.U(e.net_bytes);
    j.Key("symbol");
    j.Str(e.symbol.view());
    if (const char* syn = SyntheticName(e.synthetic)) j.Key("synthetic"), j.Str(syn);
    j.Field("tid", e.tid);
    j.Field("ts_ns", e.ts_ns);
    j.Field("tsc", e.tsc);
    j.Field("type", e.record_type);
    j.Char('}');
  }
  j.Char(']');
  j.Field("id", r.id);
  // Only on requests the capture lost records of: complete lines stay as
  // they were.
  if (r.incomplete) {
    j.Key("incomplete");
    j.Bool(true);
    j.Key("incomplete_reason");
    j.Str(r.incomplete_reason);
  }
  j.Field("latency_ns", r.latency_ns());
  if (r.has_message) {
    j.Raw(",\"message\":{\"connection\":");
    j.U(r.connection_id);
    j.Field("exchange", r.exchange);
    j.Field("in_bytes", r.msg_in_bytes);
    j.Field("out_bytes", r.msg_out_bytes);
    j.Key("pipelined");
    j.Bool(r.pipelined);
    j.Char('}');
  }
  j.Raw(",\"processes\":[");
  for (size_t i = 0; i < r.processes.size(); ++i) {
    const model::ProcessSegment& p = r.processes[i];
    if (i) j.Char(',');
    j.Raw("{\"blocked_ns\":");
    j.U(p.blocked_ns);
    j.Key("comm");
    j.Str(p.comm);
    j.Field("cpu_ns", p.cpu_ns);
    j.Field("disk_bytes", p.disk_bytes);
    j.Field("disk_ios", p.disk_ios);
    j.Field("events", p.events);
    j.Field("first_ns", p.first_ns);
    j.Field("last_ns", p.last_ns);
    j.Field("net_bytes_in", p.net_bytes_in);
    j.Field("net_bytes_out", p.net_bytes_out);
    j.Field("runq_wait_ns", p.runq_wait_ns);
    j.Field("softirq_cpu_ns", p.softirq_cpu_ns);
    j.Field("tgid", p.tgid);
    j.Field("threads", p.threads);
    j.Field("tier", p.tier);
    j.Char('}');
  }
  j.Char(']');
  j.Field("start_ns", r.start_ns);
  j.Field("start_tsc", r.start_tsc);
  j.Field("start_wall_ns", r.start_wall_ns);
  j.Field("tgid", r.tgid);
  j.Raw(",\"threads\":[");
  for (size_t i = 0; i < r.threads.size(); ++i) {
    if (i) j.Char(',');
    j.U(r.threads[i]);
  }
  j.Char(']');
  j.Key("timed_out");
  j.Bool(r.timed_out);
  const model::ResourceTotals& t = r.totals;
  j.Raw(",\"totals\":{\"blocked\":{\"disk\":");
  j.U(t.blocked_disk_ns);
  j.Field("futex", t.blocked_futex_ns);
  j.Field("net", t.blocked_net_ns);
  j.Field("other", t.blocked_other_ns);
  j.Field("pipe", t.blocked_pipe_ns);
  j.Char('}');
  j.Field("blocked_ns", t.blocked_ns);
  j.Field("cpu_ns", t.cpu_ns);
  j.Field("disk_bytes", t.disk_bytes);
  j.Field("disk_ios", t.disk_ios);
  j.Field("net_bytes_in", t.net_bytes_in);
  j.Field("net_bytes_out", t.net_bytes_out);
  j.Field("runq_wait_ns", t.runq_wait_ns);
  j.Field("softirq_cpu_ns", t.softirq_cpu_ns);
  j.Raw("}}\n");
}

void AppendLogLikelihood(std::string* line, double log_likelihood) {
  size_t close = line->rfind('}');
  if (close == std::string::npos) return;
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), log_likelihood);
  if (ec != std::errc()) return;
  line->insert(close, ",\"log_likelihood\":" + std::string(buf, end));
}

// Keys in insertion order, as the nlohmann::ordered_json this replaced.
void WriteConnectionJson(std::string* out, const model::Connection& c) {
  JsonLine j(out);
  j.Raw("{\"type\":\"connection\"");
  j.Field("id", c.id);
  j.Field("tgid", c.tgid);
  j.Key("local");
  j.Str(c.endpoint.local);
  j.Key("remote");
  j.Str(c.endpoint.remote);
  if (c.endpoint.peer_tgid) {
    j.Field("peer_pid", c.endpoint.peer_tgid);
    j.Key("peer_comm");
    j.Str(c.endpoint.peer_comm);
  }
  j.Field("start_ns", c.start_ns);
  j.Field("end_ns", c.end_ns);
  j.Key("closed");
  j.Bool(c.closed);
  const std::pair<const char*, uint64_t> counts[] = {
      {"requests", c.requests},   {"one_way", c.one_way},
      {"greetings", c.greetings}, {"setups", c.setups},
      {"pipelined", c.pipelined}, {"eof_reads", c.eof_reads},
      {"empty_reads", c.empty_reads}, {"events", c.events},
      {"idle_ns", c.idle_ns},     {"cpu_ns", c.cpu_ns},
      {"softirq_cpu_ns", c.softirq_cpu_ns}, {"net_bytes_in", c.net_bytes_in},
      {"net_bytes_out", c.net_bytes_out}};
  for (const auto& [key, value] : counts) j.Field(key, value);
  j.Raw("}\n");
}

Status WriteRequestsJsonl(const std::string& path, const std::vector<model::Request>& requests) {
  FILE* f = stdout;
  if (path != "-") {
    ASSIGN_OR_RETURN(f, OpenOwnedStream(path, kOutputFileMode));
  }
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
