#include "cli/clickhouse_args.h"

#include <time.h>

#include <fmt/format.h>

#include "export/clickhouse/model_rows.h"
#include "join/endpoint_format.h"

namespace jackdaw::cli {

void AddClickHouseOptions(CLI::App* sub, ClickHouseArgs* args) {
  sub->add_option("--clickhouse", args->url,
                  "insert the requests (summary rows), connections and model snapshots into ClickHouse over its\n"
                  "HTTP interface, into database jackdaw (tables created if absent), e.g. http://127.0.0.1:8123;\n"
                  "user and password as URL parameters (/?user=U&password=P); docs/clickhouse.md")
      ->option_text("URL");
  sub->add_option("--clickhouse-cluster", args->cluster,
                  "with --clickhouse: tables TABLE_local under Distributed tables over this cluster of the\n"
                  "server's <remote_servers> (each shard's server once pointed at by a jackdaw)")
      ->option_text("NAME");
  sub->add_option("--host-id", args->host_id,
                  "the host column of the ClickHouse rows (default: the traced machine's hostname)")
      ->option_text("NAME");
}

Status CheckClickHouseUrl(const ClickHouseArgs& args) {
  if (args.url.empty()) {
    if (!args.cluster.empty()) return ErrStatus("--clickhouse-cluster needs --clickhouse URL (the server to insert into)");
    return Status::Ok();
  }
  auto url = clickhouse::ClickHouseSink::ParseUrl(args.url);
  return url.ok() ? Status::Ok() : url.status();
}

StatusOr<std::unique_ptr<clickhouse::ClickHouseSink>> OpenClickHouse(const ClickHouseArgs& args,
                                                                     const std::string& host,
                                                                     const std::string& schema, bool offline) {
  clickhouse::SinkOptions o;
  o.url = args.url;
  o.cluster = args.cluster;
  o.context.host = !args.host_id.empty() ? args.host_id : host.empty() ? "unknown" : host;
  o.context.schema = schema;
  o.sender.wait_when_full = offline;
  if (!offline) {
    // A live session's sender gives up on a batch sooner: the store's
    // backlog must not grow the session's memory.
    o.sender.max_attempts = 3;
    o.sender.timeout_ms = 5000;
    o.sender.drain_timeout_ms = 5000;
  }
  return clickhouse::ClickHouseSink::Create(std::move(o));
}

void SendFinalModel(clickhouse::ClickHouseSink* sink, const model::StreamingModel& sm,
                    const model::WorkloadModel* built, const std::string& source, uint64_t snapshot_ns) {
  if (sm.warmed_up()) {
    sink->AddModel(source, snapshot_ns, clickhouse::ClustersOf(sm.Running()));
    return;
  }
  StatusOr<model::WorkloadModel> made = model::WorkloadModel{};
  if (!built) {
    made = sm.Snapshot();
    if (!made.ok()) return;  // no model (no request): the waiting rows go out with cluster -1
    built = &*made;
  }
  const auto cluster_of = clickhouse::ClusterOfRequests(*built);
  sink->SettlePending([&](uint64_t id) {
    auto it = cluster_of.find(id);
    return it == cluster_of.end() ? int64_t{-1} : it->second;
  });
  sink->AddModel(source, snapshot_ns, clickhouse::ClustersOf(*built));
}

clickhouse::InteractionSummary InteractionOf(uint32_t tgid, const jdw_interaction& ia,
                                            const trace::TimeConverter& time) {
  clickhouse::InteractionSummary out;
  out.tgid = tgid;
  out.role = ia.role == JDW_ROLE_SERVER ? "server" : "client";
  out.local = join::FormatAddr(ia.family, ia.laddr, ia.lport);
  out.remote = join::FormatAddr(ia.family, ia.raddr, ia.rport);
  const uint64_t start = time.ToMonoNs(ia.req_start), end = time.ToMonoNs(ia.resp_end);
  out.start_wall_ns = time.clock.MonoToWall(start);
  out.latency_ns = end > start ? end - start : 0;
  out.request_bytes = ia.req_bytes;
  out.response_bytes = ia.resp_bytes;
  return out;
}

nlohmann::json SinkStatsJson(const http::SenderStats& s, size_t pending) {
  return {{"sent", s.requests_sent},     {"dropped", s.requests_dropped}, {"failed", s.requests_failed},
          {"pending", pending},          {"rows_sent", s.items_sent},     {"retries", s.retries},
          {"last_error", s.last_error}};
}

std::string SinkStatsText(const http::SenderStats& s) {
  return fmt::format("ClickHouse: {} requests stored, {} dropped, {} failed{}{}", s.requests_sent,
                     s.requests_dropped, s.requests_failed, s.last_error.empty() ? "" : " (last error: ",
                     s.last_error.empty() ? "" : s.last_error + ")");
}

uint64_t WallNowNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace jackdaw::cli
