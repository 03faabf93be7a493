#include "fleet/store_query.h"

#include <map>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "export/clickhouse/clickhouse_sink.h"
#include "export/http/http_post.h"

namespace jackdaw::fleet {
namespace {

using nlohmann::json;

std::string Where(const StoreQuery& q, const char* time_column) {
  std::string w;
  if (q.from_ns && time_column) w += std::string(" AND ") + time_column + " >= " + std::to_string(q.from_ns);
  if (!q.hosts.empty()) {
    w += " AND host IN (";
    for (size_t i = 0; i < q.hosts.size(); ++i) w += (i ? ", " : "") + SqlString(q.hosts[i]);
    w += ")";
  }
  return w;
}

// ClickHouse quotes 64-bit integers in JSON (output_format_json_quote_64bit_integers);
// floats come as numbers. Either is read; anything else is 0.
double Number(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return 0;
  if (it->is_number()) return it->get<double>();
  if (it->is_string()) {
    try {
      return std::stod(it->get<std::string>());
    } catch (...) {
      return 0;
    }
  }
  return 0;
}

std::string Text(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Each non-empty line of a JSONEachRow answer as an object.
StatusOr<std::vector<json>> Lines(const std::string& body, const char* what) {
  std::vector<json> out;
  std::istringstream in(body);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return ErrStatus("the store's answer for %s is not JSONEachRow at line %zu (cut short?): %.120s", what, n,
                       line.c_str());
    out.push_back(std::move(j));
  }
  return out;
}

using Key = std::tuple<std::string, std::string, int64_t>;  // host, schema, cluster

StatusOr<std::string> Run(const StoreQuery& q, const http::HttpUrl& url, const std::string& sql) {
  http::PostOptions po;
  po.content_type = "text/plain; charset=UTF-8";
  po.timeout_ms = q.timeout_ms;
  po.max_body = size_t{256} << 20;  // one row per host and cluster: far below this
  const http::HttpResult r = http::Post(url, sql, po);
  if (r.status == 0)
    return ErrStatus("--clickhouse %s: %s: start clickhouse-server there (or fix the URL: its HTTP port, 8123 by "
                     "default)",
                     q.url.c_str(), r.error.c_str());
  if (r.status >= 200 && r.status < 300) return r.body;
  const std::string why = http::FirstLine(r.body);
  // 81: unknown database, 60: unknown table.
  if (why.find("Code: 81") != std::string::npos || why.find("Code: 60") != std::string::npos)
    return ErrStatus("--clickhouse %s: no jackdaw tables there (%s): store requests first with jackdaw analyze "
                     "TRACE --schema S --clickhouse %s (or jackdaw live ... --clickhouse), or point at the store "
                     "that has them",
                     q.url.c_str(), why.c_str(), q.url.c_str());
  return ErrStatus("--clickhouse %s: the query was refused: HTTP %d: %s (check the URL's user and password)",
                   q.url.c_str(), r.status, why.c_str());
}

}  // namespace

std::string SqlString(const std::string& text) {
  std::string s = "'";
  for (char c : text) {
    if (c == '\'' || c == '\\') s += '\\';
    s += c;
  }
  return s + "'";
}

std::string RequestsSql(const StoreQuery& q) {
  return "SELECT host, schema, cluster, count() AS requests, quantile(0.5)(latency_ns) AS p50_latency_ns, "
         "quantile(0.95)(latency_ns) AS p95_latency_ns, avg(cpu_ns) AS mean_cpu_ns, "
         "avg(disk_bytes) AS mean_disk_bytes, avg(net_bytes_in + net_bytes_out) AS mean_net_bytes, "
         "min(start_ns) AS first_start_ns, max(end_ns) AS last_end_ns "
         "FROM jackdaw.requests WHERE incomplete = 0 AND cluster >= 0" +
         Where(q, "start_ns") + " GROUP BY host, schema, cluster ORDER BY host, schema, cluster FORMAT JSONEachRow";
}

std::string ModelsSql(const StoreQuery& q) {
  const std::string hosts = Where(q, nullptr);
  return "SELECT host, schema, cluster, label, representative FROM jackdaw.models "
         "WHERE (host, snapshot_ns) IN (SELECT host, max(snapshot_ns) FROM jackdaw.models WHERE 1" +
         hosts + " GROUP BY host)" + hosts + " ORDER BY host, schema, cluster FORMAT JSONEachRow";
}

StatusOr<std::vector<HostCluster>> JoinAnswers(const std::string& requests_body, const std::string& models_body) {
  auto models = Lines(models_body, "jackdaw.models");
  if (!models.ok()) return models.status();
  auto requests = Lines(requests_body, "jackdaw.requests");
  if (!requests.ok()) return requests.status();
  std::map<Key, const json*> model_of;
  for (const json& m : *models)
    model_of.try_emplace(Key{Text(m, "host"), Text(m, "schema"), static_cast<int64_t>(Number(m, "cluster"))}, &m);
  std::vector<HostCluster> out;
  for (const json& r : *requests) {
    HostCluster c;
    c.host = Text(r, "host");
    c.schema = Text(r, "schema");
    c.cluster = static_cast<int64_t>(Number(r, "cluster"));
    c.requests = static_cast<uint64_t>(Number(r, "requests"));
    c.p50_latency_ns = Number(r, "p50_latency_ns");
    c.p95_latency_ns = Number(r, "p95_latency_ns");
    c.mean_cpu_ns = Number(r, "mean_cpu_ns");
    c.mean_disk_bytes = Number(r, "mean_disk_bytes");
    c.mean_net_bytes = Number(r, "mean_net_bytes");
    c.first_start_ns = static_cast<uint64_t>(Number(r, "first_start_ns"));
    c.last_end_ns = static_cast<uint64_t>(Number(r, "last_end_ns"));
    if (auto it = model_of.find(Key{c.host, c.schema, c.cluster}); it != model_of.end()) {
      c.label = Text(*it->second, "label");
      c.representative = Text(*it->second, "representative");
    }
    if (c.requests) out.push_back(std::move(c));
  }
  return out;
}

StatusOr<std::vector<HostCluster>> ReadFleet(const StoreQuery& q) {
  auto url = clickhouse::ClickHouseSink::ParseUrl(q.url);
  if (!url.ok()) return url.status();
  auto requests = Run(q, *url, RequestsSql(q));
  if (!requests.ok()) return requests.status();
  auto models = Run(q, *url, ModelsSql(q));
  if (!models.ok()) return models.status();
  auto joined = JoinAnswers(*requests, *models);
  if (!joined.ok()) return ErrStatus("--clickhouse %s: %s", q.url.c_str(), joined.status().message().c_str());
  return joined;
}

}  // namespace jackdaw::fleet
