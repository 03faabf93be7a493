#include "export/clickhouse/rows.h"

#include "export/clickhouse/json_row.h"

namespace jackdaw::clickhouse {
namespace {

// A monotonic instant of the request as wall-clock ns (see rows.h).
uint64_t Wall(const model::Request& r, uint64_t mono_ns) {
  return static_cast<uint64_t>(static_cast<int64_t>(r.start_wall_ns) +
                               (static_cast<int64_t>(mono_ns) - static_cast<int64_t>(r.start_ns)));
}

uint32_t EventCount(const model::Request& r) { return static_cast<uint32_t>(r.events.size()); }

}  // namespace

std::string RequestRowHead(const RowContext& ctx, const model::Request& r) {
  std::string out;
  out.reserve(768 + 160 * (r.processes.size() + r.calls.size()));
  JsonRow j(&out);
  j.Field("host", ctx.host);
  j.Field("schema", ctx.schema);
  j.Field("request_id", r.id);
  j.Field("start_ns", r.start_wall_ns);
  j.Field("end_ns", Wall(r, r.end_ns));
  j.Field("mono_start_ns", r.start_ns);
  j.Field("latency_ns", r.latency_ns());
  j.Field("incomplete", r.incomplete ? 1 : 0);
  j.Field("timed_out", r.timed_out ? 1 : 0);
  j.Field("tgid", r.tgid);
  j.Field("events", EventCount(r));
  j.Field("threads", r.threads.size());
  const model::ResourceTotals& t = r.totals;
  j.Field("cpu_ns", t.cpu_ns);
  j.Field("softirq_cpu_ns", t.softirq_cpu_ns);
  j.Field("disk_bytes", t.disk_bytes);
  j.Field("disk_ios", t.disk_ios);
  j.Field("net_bytes_in", t.net_bytes_in);
  j.Field("net_bytes_out", t.net_bytes_out);
  j.Field("runq_wait_ns", t.runq_wait_ns);
  j.Field("blocked_ns", t.blocked_ns);
  j.Field("blocked_disk_ns", t.blocked_disk_ns);
  j.Field("blocked_net_ns", t.blocked_net_ns);
  j.Field("connection_cpu_ns", r.connection_cpu_ns);
  if (r.has_message) {
    j.Field("connection_id", r.connection_id);
    j.Field("exchange", r.exchange);
    j.Field("msg_in_bytes", r.msg_in_bytes);
    j.Field("msg_out_bytes", r.msg_out_bytes);
  }
  using P = model::ProcessSegment;
  const auto& ps = r.processes;
  j.Array("processes.tgid", ps, [](const P& p) { return p.tgid; });
  j.Array("processes.comm", ps, [](const P& p) -> const std::string& { return p.comm; });
  j.Array("processes.tier", ps, [](const P& p) { return p.tier; });
  j.Array("processes.events", ps, [](const P& p) { return p.events; });
  j.Array("processes.cpu_ns", ps, [](const P& p) { return p.cpu_ns; });
  j.Array("processes.disk_bytes", ps, [](const P& p) { return p.disk_bytes; });
  j.Array("processes.net_bytes_in", ps, [](const P& p) { return p.net_bytes_in; });
  j.Array("processes.net_bytes_out", ps, [](const P& p) { return p.net_bytes_out; });
  j.Array("processes.blocked_ns", ps, [](const P& p) { return p.blocked_ns; });
  using E = model::Endpoint;
  j.Array("connections.local", r.connections, [](const E& e) -> const std::string& { return e.local; });
  j.Array("connections.remote", r.connections, [](const E& e) -> const std::string& { return e.remote; });
  j.Array("connections.peer_tgid", r.connections, [](const E& e) { return e.peer_tgid; });
  using C = model::Call;
  const auto& cs = r.calls;
  j.Array("calls.start_ns", cs, [&](const C& c) { return Wall(r, c.start_ns); });
  j.Array("calls.end_ns", cs, [&](const C& c) { return Wall(r, c.end_ns); });
  j.Array("calls.caller_tgid", cs, [](const C& c) { return c.caller_tgid; });
  j.Array("calls.peer_tgid", cs, [](const C& c) { return c.peer_tgid; });
  j.Array("calls.local", cs, [](const C& c) -> const std::string& { return c.endpoint.local; });
  j.Array("calls.remote", cs, [](const C& c) -> const std::string& { return c.endpoint.remote; });
  j.Array("calls.bytes_out", cs, [](const C& c) { return c.bytes_out; });
  j.Array("calls.bytes_in", cs, [](const C& c) { return c.bytes_in; });
  j.Array("calls.seq_out_start", cs, [](const C& c) { return c.seq_out_start; });
  j.Array("calls.seq_out_end", cs, [](const C& c) { return c.seq_out_end; });
  j.Array("calls.answered", cs, [](const C& c) { return c.answered; });
  return out;
}

void EndRequestRow(std::string* head, int64_t cluster) {
  head->append(",\"cluster\":");
  head->append(std::to_string(cluster));
  head->append("}\n");
}

std::string ConnectionRow(const RowContext& ctx, const model::Connection& c, int64_t mono_to_wall_ns) {
  std::string out;
  JsonRow j(&out);
  auto wall = [&](uint64_t mono) { return static_cast<uint64_t>(static_cast<int64_t>(mono) + mono_to_wall_ns); };
  j.Field("host", ctx.host);
  j.Field("schema", ctx.schema);
  j.Field("connection_id", c.id);
  j.Field("tgid", c.tgid);
  j.Field("local", c.endpoint.local);
  j.Field("remote", c.endpoint.remote);
  j.Field("start_ns", wall(c.start_ns));
  j.Field("end_ns", wall(c.end_ns));
  j.Field("mono_start_ns", c.start_ns);
  j.Field("closed", c.closed ? 1 : 0);
  j.Field("requests", c.requests);
  j.Field("one_way", c.one_way);
  j.Field("greetings", c.greetings);
  j.Field("setups", c.setups);
  j.Field("pipelined", c.pipelined);
  j.Field("eof_reads", c.eof_reads);
  j.Field("empty_reads", c.empty_reads);
  j.Field("events", c.events);
  j.Field("idle_ns", c.idle_ns);
  j.Field("cpu_ns", c.cpu_ns);
  j.Field("softirq_cpu_ns", c.softirq_cpu_ns);
  j.Field("net_bytes_in", c.net_bytes_in);
  j.Field("net_bytes_out", c.net_bytes_out);
  j.End();
  return out;
}

std::string InteractionRow(const RowContext& ctx, const InteractionSummary& ia) {
  std::string out;
  JsonRow j(&out);
  j.Field("host", ctx.host);
  j.Field("tgid", ia.tgid);
  j.Field("role", ia.role);
  j.Field("local", ia.local);
  j.Field("remote", ia.remote);
  j.Field("start_ns", ia.start_wall_ns);
  j.Field("latency_ns", ia.latency_ns);
  j.Field("request_bytes", ia.request_bytes);
  j.Field("response_bytes", ia.response_bytes);
  j.End();
  return out;
}

std::string ModelRow(const RowContext& ctx, const std::string& source, uint64_t snapshot_ns,
                     const ModelCluster& c) {
  std::string out;
  JsonRow j(&out);
  j.Field("host", ctx.host);
  j.Field("schema", ctx.schema);
  j.Field("source", source);
  j.Field("snapshot_ns", snapshot_ns);
  j.Signed("cluster", c.cluster);
  j.Field("label", c.label);
  j.Field("requests", c.requests);
  j.Real("mean_cpu_ns", c.mean_cpu_ns);
  j.Real("mean_disk_bytes", c.mean_disk_bytes);
  j.Real("mean_net_bytes", c.mean_net_bytes);
  j.Real("mean_latency_ns", c.mean_latency_ns);
  j.Real("p50_latency_ns", c.p50_latency_ns);
  j.Real("p99_latency_ns", c.p99_latency_ns);
  j.Field("anomalous", c.anomalous ? 1 : 0);
  j.Field("representative", c.representative);
  j.End();
  return out;
}

}  // namespace jackdaw::clickhouse
