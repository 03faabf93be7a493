#include "export/clickhouse/clickhouse_sink.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace jackdaw::clickhouse {
namespace {

http::UrlRole ClickHouseUrlRole() {
  http::UrlRole role;
  role.option = "--clickhouse";
  role.example = "http://127.0.0.1:8123";
  role.https_hint = "reach ClickHouse's HTTP port (8123) over http://, through a local TLS proxy if it is remote";
  return role;
}

// Runs the statements in order; the first failure is the answer.
http::HttpResult RunStatements(const http::HttpUrl& url, const std::vector<std::string>& statements,
                               int timeout_ms) {
  http::PostOptions po;
  po.content_type = "text/plain; charset=UTF-8";
  po.timeout_ms = timeout_ms;
  po.max_body = 4096;
  http::HttpResult r;
  for (const std::string& s : statements) {
    r = http::Post(url, s, po);
    if (r.status < 200 || r.status >= 300) return r;
  }
  return r;
}

}  // namespace

ClickHouseSink::ClickHouseSink(SinkOptions options) : opt_(std::move(options)) {
  layout_.cluster = opt_.cluster;
  requests_batch_.table = "requests";
  connections_batch_.table = "connections";
  interactions_batch_.table = "interactions";
  models_batch_.table = "models";
}

ClickHouseSink::~ClickHouseSink() { Finish(); }

StatusOr<http::HttpUrl> ClickHouseSink::ParseUrl(const std::string& url) {
  return http::ParseHttpUrl(url, ClickHouseUrlRole());
}

StatusOr<std::unique_ptr<ClickHouseSink>> ClickHouseSink::Create(SinkOptions options) {
  auto url = ParseUrl(options.url);
  if (!url.ok()) return url.status();
  std::unique_ptr<ClickHouseSink> s(new ClickHouseSink(std::move(options)));
  http::SenderOptions& so = s->opt_.sender;
  so.url = *url;
  so.content_type = "text/plain; charset=UTF-8";
  const std::vector<std::string> statements = CreateStatements(s->layout_);
  const int timeout_ms = so.timeout_ms;
  const http::HttpUrl target = *url;
  so.prepare = [target, statements, timeout_ms] { return RunStatements(target, statements, timeout_ms); };
  s->sender_ = std::make_unique<http::BatchSender>(so);
  return s;
}

Status ClickHouseSink::CreateTables() {
  const http::HttpResult r = RunStatements(opt_.sender.url, CreateStatements(layout_), opt_.sender.timeout_ms);
  if (r.status >= 200 && r.status < 300) return Status::Ok();
  if (r.status == 0)
    return ErrStatus("--clickhouse %s: %s: start clickhouse-server there (or fix the URL: its HTTP port, 8123 by "
                     "default)",
                     opt_.url.c_str(), r.error.c_str());
  return ErrStatus("--clickhouse %s: creating the jackdaw tables failed: HTTP %d: %s; check the user may create "
                   "databases and tables (or create them as docs/clickhouse.md shows)",
                   opt_.url.c_str(), r.status, http::FirstLine(r.body).c_str());
}

void ClickHouseSink::Append(Batch* b, std::string row, bool is_request) {
  if (b->body.empty()) b->body = InsertHead(layout_, b->table);
  b->body += row;
  b->rows++;
  b->requests += is_request;
  if (b->rows >= opt_.batch_rows) Send(b);
}

void ClickHouseSink::Send(Batch* b) {
  if (b->rows == 0) return;
  sender_->Enqueue(std::move(b->body), b->requests, b->rows);
  b->body.clear();
  b->rows = b->requests = 0;
}

void ClickHouseSink::AddRequest(const model::Request& r) {
  requests_++;
  mono_to_wall_ns_ = static_cast<int64_t>(r.start_wall_ns) - static_cast<int64_t>(r.start_ns);
  last_end_wall_ns_ = std::max(last_end_wall_ns_, r.start_wall_ns + r.latency_ns());
  std::string head = RequestRowHead(opt_.context, r);
  if (r.incomplete) {
    EndRequestRow(&head, -1);
    Append(&requests_batch_, std::move(head), true);
    return;
  }
  if (pending_.size() >= opt_.max_pending) SettlePending([](uint64_t) { return int64_t{-1}; });
  auto [it, fresh] = pending_.try_emplace(r.id, std::move(head));
  if (!fresh) {  // the same id again: the earlier one will not be assigned now
    EndRequestRow(&it->second, -1);
    unassigned_++;
    Append(&requests_batch_, std::move(it->second), true);
    it->second = RequestRowHead(opt_.context, r);
  }
}

void ClickHouseSink::AssignCluster(uint64_t request_id, int64_t cluster) {
  auto it = pending_.find(request_id);
  if (it == pending_.end()) return;
  std::string row = std::move(it->second);
  pending_.erase(it);
  EndRequestRow(&row, cluster);
  Append(&requests_batch_, std::move(row), true);
}

void ClickHouseSink::SettlePending(const std::function<int64_t(uint64_t)>& cluster_of) {
  // In id order: the batches' rows then follow the stream's order.
  std::vector<uint64_t> ids;
  ids.reserve(pending_.size());
  for (const auto& [id, row] : pending_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (uint64_t id : ids) {
    const int64_t c = cluster_of(id);
    unassigned_ += c < 0;
    AssignCluster(id, c);
  }
}

void ClickHouseSink::AddConnection(const model::Connection& c) {
  connections_++;
  Append(&connections_batch_, ConnectionRow(opt_.context, c, mono_to_wall_ns_), false);
}

void ClickHouseSink::AddInteraction(const InteractionSummary& ia) {
  interactions_++;
  Append(&interactions_batch_, InteractionRow(opt_.context, ia), false);
}

void ClickHouseSink::AddModel(const std::string& source, uint64_t snapshot_ns,
                              const std::vector<ModelCluster>& clusters) {
  for (const ModelCluster& c : clusters) {
    model_rows_++;
    Append(&models_batch_, ModelRow(opt_.context, source, snapshot_ns, c), false);
  }
  Send(&models_batch_);  // a snapshot goes out whole, not with the next one
}

void ClickHouseSink::Flush() {
  Send(&requests_batch_);
  Send(&connections_batch_);
  Send(&interactions_batch_);
  Send(&models_batch_);
}

http::SenderStats ClickHouseSink::Finish() {
  if (finished_) return final_;
  finished_ = true;
  SettlePending([](uint64_t) { return int64_t{-1}; });
  Flush();
  final_ = sender_->Finish();
  return final_;
}

std::string ClickHouseSink::Summary(const http::SenderStats& s) const {
  char buf[1024];
  snprintf(buf, sizeof(buf),
           "jackdaw: ClickHouse %s: %" PRIu64 " of %" PRIu64 " requests stored (%" PRIu64 " rows in %" PRIu64
           " inserts, connections and model snapshots included); %" PRIu64 " requests dropped (never sent: the "
           "queue was full while the store was down), %" PRIu64 " failed (sent, not stored: refused, or the store "
           "unreachable through the retries); %" PRIu64 " retries%s%s\n",
           opt_.url.c_str(), s.requests_sent, requests_, s.items_sent, s.batches_sent, s.requests_dropped,
           s.requests_failed, s.retries, s.last_error.empty() ? "" : "; last error: ", s.last_error.c_str());
  std::string out = buf;
  // Complete requests the model never placed (more waiting than
  // max_pending, or an id seen twice): stored, with cluster -1.
  if (unassigned_) out.insert(out.size() - 1, "; " + std::to_string(unassigned_) + " stored without a cluster");
  return out;
}

}  // namespace jackdaw::clickhouse
