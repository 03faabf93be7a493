#include "export/otlp/request_spans.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "export/otlp/span_ids.h"

namespace jackdaw::otlp {
namespace {

using nlohmann::json;

json StringAttr(const char* key, const std::string& v) { return {{"key", key}, {"value", {{"stringValue", v}}}}; }
// int64 values are decimal strings in OTLP/JSON (the protobuf JSON mapping).
json IntAttr(const char* key, uint64_t v) {
  return {{"key", key}, {"value", {{"intValue", std::to_string(v)}}}};
}
json BoolAttr(const char* key, bool v) { return {{"key", key}, {"value", {{"boolValue", v}}}}; }

// A monotonic instant of the request as wall-clock ns, a decimal string.
struct WallClock {
  const model::Request& r;
  std::string operator()(uint64_t mono_ns) const {
    const int64_t offset = static_cast<int64_t>(mono_ns) - static_cast<int64_t>(r.start_ns);
    return std::to_string(static_cast<uint64_t>(static_cast<int64_t>(r.start_wall_ns) + offset));
  }
};

json Span(const std::string& trace_id, const std::string& span_id, const std::string& parent, const std::string& name,
          int kind, const std::string& start, const std::string& end, json attributes, bool error) {
  json s = {{"traceId", trace_id}, {"spanId", span_id}};
  if (!parent.empty()) s["parentSpanId"] = parent;
  s["name"] = name;
  s["kind"] = kind;
  s["startTimeUnixNano"] = start;
  s["endTimeUnixNano"] = end;
  s["attributes"] = std::move(attributes);
  // STATUS_CODE_ERROR (2) marks what the backend should flag; unset (0)
  // otherwise, as OTLP wants for spans nobody judged.
  s["status"] = error ? json{{"code", 2}, {"message", "incomplete: the capture lost records it needs"}}
                      : json{{"code", 0}};
  return s;
}

std::string ProcessRole(const model::ProcessSegment& p) { return "proc:" + std::to_string(p.tgid); }

}  // namespace

PeerAddress SplitEndpoint(const std::string& endpoint) {
  PeerAddress out{endpoint, 0};
  if (endpoint.rfind("unix:", 0) == 0) return out;
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos || colon + 1 >= endpoint.size()) return out;
  char* end = nullptr;
  const unsigned long port = strtoul(endpoint.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port > 65535) return out;
  std::string name = endpoint.substr(0, colon);
  if (name.size() >= 2 && name.front() == '[' && name.back() == ']') name = name.substr(1, name.size() - 2);
  return {name, static_cast<uint32_t>(port)};
}

std::vector<ServiceSpan> RequestSpans(const model::Request& r, const SpanContext& ctx, const std::string& cluster) {
  const WallClock wall{r};
  const std::string trace_id = TraceIdHex(ctx.trace_key, r.id);
  const std::string root_id = SpanIdHex(ctx.trace_key, r.id, "request");
  auto comm_of = [&](uint32_t tgid) -> std::string {
    for (const model::ProcessSegment& p : r.processes)
      if (p.tgid == tgid && !p.comm.empty()) return p.comm;
    return tgid ? "pid " + std::to_string(tgid) : "unknown";
  };
  std::vector<ServiceSpan> out;
  out.reserve(1 + r.processes.size() + r.calls.size());

  // The request span.
  json attrs = json::array();
  if (!cluster.empty()) attrs.push_back(StringAttr("jackdaw.cluster", cluster));
  attrs.push_back(IntAttr("jackdaw.request_id", r.id));
  attrs.push_back(IntAttr("jackdaw.cpu_ns", r.totals.cpu_ns));
  attrs.push_back(IntAttr("jackdaw.softirq_cpu_ns", r.totals.softirq_cpu_ns));
  attrs.push_back(IntAttr("jackdaw.disk_bytes", r.totals.disk_bytes));
  attrs.push_back(IntAttr("jackdaw.net_bytes_in", r.totals.net_bytes_in));
  attrs.push_back(IntAttr("jackdaw.net_bytes_out", r.totals.net_bytes_out));
  attrs.push_back(IntAttr("jackdaw.runq_wait_ns", r.totals.runq_wait_ns));
  attrs.push_back(IntAttr("jackdaw.blocked_ns", r.totals.blocked_ns));
  attrs.push_back(IntAttr("jackdaw.connection_cpu_ns", r.connection_cpu_ns));
  attrs.push_back(IntAttr("jackdaw.threads", r.threads.size()));
  attrs.push_back(BoolAttr("jackdaw.incomplete", r.incomplete));
  if (r.incomplete && !r.incomplete_reason.empty())
    attrs.push_back(StringAttr("jackdaw.incomplete_reason", r.incomplete_reason));
  if (r.timed_out) attrs.push_back(BoolAttr("jackdaw.timed_out", true));
  if (!r.connections.empty()) {
    const model::Endpoint& front = r.connections.front();
    const PeerAddress peer = SplitEndpoint(front.remote);
    if (!peer.name.empty()) attrs.push_back(StringAttr("net.peer.name", peer.name));
    if (peer.port) attrs.push_back(IntAttr("net.peer.port", peer.port));
    const PeerAddress local = SplitEndpoint(front.local);
    if (local.port) attrs.push_back(IntAttr("net.host.port", local.port));
  }
  const std::string front_service = r.processes.empty() ? comm_of(r.tgid) : comm_of(r.processes.front().tgid);
  out.push_back({front_service, Span(trace_id, root_id, "", cluster.empty() ? "request" : cluster, kSpanKindServer,
                                     wall(r.start_ns), wall(r.end_ns), std::move(attrs), r.incomplete)});

  // Calls first by role (their ids parent the processes they reached).
  std::vector<std::string> call_ids;
  call_ids.reserve(r.calls.size());
  for (size_t i = 0; i < r.calls.size(); ++i)
    call_ids.push_back(SpanIdHex(ctx.trace_key, r.id, "call:" + std::to_string(i)));
  auto process_id = [&](uint32_t tgid) -> std::string {
    for (const model::ProcessSegment& p : r.processes)
      if (p.tgid == tgid) return SpanIdHex(ctx.trace_key, r.id, ProcessRole(p));
    return root_id;
  };

  // Only a call from a nearer tier parents a process: the links then form
  // a tree whatever calls the request made back to its callers.
  auto tier_of = [&](uint32_t tgid) -> uint32_t {
    for (const model::ProcessSegment& p : r.processes)
      if (p.tgid == tgid) return p.tier;
    return UINT32_MAX;
  };
  for (const model::ProcessSegment& p : r.processes) {
    // Reached by a call of this request (the first that names it), else a
    // direct part of the request (its front process, or one joined by a
    // wake-up or a pipe rather than a traced call).
    std::string parent = root_id;
    if (p.tier > 0)
      for (size_t i = 0; i < r.calls.size(); ++i)
        if (r.calls[i].peer_tgid == p.tgid && tier_of(r.calls[i].caller_tgid) < p.tier) {
          parent = call_ids[i];
          break;
        }
    json a = json::array({IntAttr("process.pid", p.tgid), IntAttr("jackdaw.tier", p.tier),
                          IntAttr("jackdaw.events", p.events), IntAttr("jackdaw.threads", p.threads),
                          IntAttr("jackdaw.cpu_ns", p.cpu_ns), IntAttr("jackdaw.softirq_cpu_ns", p.softirq_cpu_ns),
                          IntAttr("jackdaw.disk_bytes", p.disk_bytes), IntAttr("jackdaw.disk_ios", p.disk_ios),
                          IntAttr("jackdaw.net_bytes_in", p.net_bytes_in),
                          IntAttr("jackdaw.net_bytes_out", p.net_bytes_out),
                          IntAttr("jackdaw.runq_wait_ns", p.runq_wait_ns), IntAttr("jackdaw.blocked_ns", p.blocked_ns)});
    const std::string service = comm_of(p.tgid);
    out.push_back({service, Span(trace_id, SpanIdHex(ctx.trace_key, r.id, ProcessRole(p)), parent,
                                 service + " tier " + std::to_string(p.tier), kSpanKindServer, wall(p.first_ns),
                                 wall(p.last_ns), std::move(a), false)});
  }

  for (size_t i = 0; i < r.calls.size(); ++i) {
    const model::Call& c = r.calls[i];
    const PeerAddress peer = SplitEndpoint(c.endpoint.remote);
    json a = json::array();
    if (!peer.name.empty()) a.push_back(StringAttr("net.peer.name", peer.name));
    if (peer.port) a.push_back(IntAttr("net.peer.port", peer.port));
    if (!c.endpoint.peer_comm.empty()) a.push_back(StringAttr("peer.service", c.endpoint.peer_comm));
    a.push_back(IntAttr("jackdaw.bytes_out", c.bytes_out));
    a.push_back(IntAttr("jackdaw.bytes_in", c.bytes_in));
    a.push_back(BoolAttr("jackdaw.answered", c.answered));
    a.push_back(BoolAttr("jackdaw.remote", c.peer_tgid == 0));
    if (c.overlapped) a.push_back(BoolAttr("jackdaw.overlapped", true));
    a.push_back(IntAttr("jackdaw.call_index", c.index));
    out.push_back({comm_of(c.caller_tgid),
                   Span(trace_id, call_ids[i], process_id(c.caller_tgid), "call " + c.endpoint.remote,
                        kSpanKindClient, wall(c.start_ns), wall(c.end_ns), std::move(a), false)});
  }
  return out;
}

}  // namespace jackdaw::otlp
