// jackdaw's requests, connections and model snapshots into ClickHouse over
// its HTTP interface (--clickhouse URL; docs/clickhouse.md).
//
// Rows are gathered per table into batches of `batch_rows` and each batch
// is one `INSERT INTO jackdaw.TABLE FORMAT JSONEachRow` POST, queued for
// the exporters' sender thread (export/http/batch_sender.h): bounded
// queue, retries with backoff, batches dropped and counted rather than the
// producer blocked when the store is down. The tables are created (if
// absent) before the first insert, by the sender thread, and again until
// that succeeds: a store that comes up after a live session started still
// gets its tables.
//
// A request's row waits for its cluster: the model assigns it when it
// takes the request (at once past its warm-up; the warm-up's requests all
// at its end), so at most a warm-up's worth of rows wait. An incomplete
// request is kept out of the model and goes out at once with cluster -1.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "export/clickhouse/rows.h"
#include "export/clickhouse/tables.h"
#include "export/http/batch_sender.h"

namespace jackdaw::clickhouse {

struct SinkOptions {
  std::string url;      // --clickhouse: http://HOST:PORT[/?user=U&password=P]
  std::string cluster;  // --clickhouse-cluster: Distributed tables over this cluster's shards
  RowContext context;
  size_t batch_rows = 4096;
  // Requests waiting for their cluster beyond this go out without one (-1):
  // the wait stays bounded whatever the model does.
  size_t max_pending = 1 << 16;
  http::SenderOptions sender;  // its url, content type and prepare are filled in
};

class ClickHouseSink {
 public:
  // Checks the URL (one line naming --clickhouse and a good URL when it is
  // bad) and starts the sender thread; nothing is sent yet.
  static StatusOr<std::unique_ptr<ClickHouseSink>> Create(SinkOptions options);
  // The URL check alone (Create() makes it too): for a command to refuse a
  // bad URL before any work.
  static StatusOr<http::HttpUrl> ParseUrl(const std::string& url);
  ~ClickHouseSink();

  // Creates the database and tables now, on the caller's thread within the
  // sender's timeout: how a command learns at start that the store is not
  // there (one line: the URL, the cause, what to do).
  Status CreateTables();

  void AddRequest(const model::Request& r);
  // The model put request `request_id` in cluster `cluster`.
  void AssignCluster(uint64_t request_id, int64_t cluster);
  // Requests still waiting (a stream that ended within the model's
  // warm-up): their cluster from `cluster_of` (-1 for none).
  void SettlePending(const std::function<int64_t(uint64_t request_id)>& cluster_of);
  void AddConnection(const model::Connection& c);
  void AddInteraction(const InteractionSummary& ia);
  // One snapshot of the model: a `models` row per cluster.
  void AddModel(const std::string& source, uint64_t snapshot_ns, const std::vector<ModelCluster>& clusters);

  // Queues the part-filled batches (live: once per refresh, so a quiet
  // service's rows do not wait for a full batch).
  void Flush();
  // Flushes, settles what still waits (cluster -1), waits for the sender
  // (bounded by its drain timeout) and stops it.
  http::SenderStats Finish();

  http::SenderStats stats() const { return sender_->stats(); }
  uint64_t requests() const { return requests_; }
  uint64_t interactions() const { return interactions_; }
  // The latest wall-clock end of the requests added: an offline model
  // snapshot's time.
  uint64_t last_end_wall_ns() const { return last_end_wall_ns_; }
  size_t pending() const { return pending_.size(); }
  // "jackdaw: ClickHouse http://...: 640 requests stored in 1 batch, ..."
  std::string Summary(const http::SenderStats& s) const;

 private:
  struct Batch {
    std::string table;
    std::string body;
    size_t rows = 0;
    size_t requests = 0;
  };
  explicit ClickHouseSink(SinkOptions options);
  void Append(Batch* b, std::string row, bool is_request);
  void Send(Batch* b);

  SinkOptions opt_;
  TableLayout layout_;
  Batch requests_batch_, connections_batch_, interactions_batch_, models_batch_;
  std::unordered_map<uint64_t, std::string> pending_;  // request id -> its row's head
  int64_t mono_to_wall_ns_ = 0;  // from the latest request: for connection rows
  uint64_t last_end_wall_ns_ = 0;
  uint64_t requests_ = 0, connections_ = 0, interactions_ = 0, model_rows_ = 0, unassigned_ = 0;
  std::unique_ptr<http::BatchSender> sender_;
  bool finished_ = false;
  http::SenderStats final_;
};

}  // namespace jackdaw::clickhouse
