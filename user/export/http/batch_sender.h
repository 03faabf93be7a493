// Sends batches (OTLP/JSON requests, ClickHouse inserts) to an HTTP
// receiver from a thread of its own, through a bounded queue. A batch
// counts the requests it carries and its items (OTLP spans, ClickHouse
// rows), so what was lost is reported in the user's terms.
//
// The producer (the join's request sink) never waits on a receiver that is
// down: when the queue is full and the receiver is down (its last batch
// ran out of retries without an answer), a new batch is dropped and
// counted. While the receiver answers, a full queue makes the producer
// wait for room when `wait_when_full` is set (offline analysis: losing
// traces to a busy but healthy Collector helps nobody) and drops otherwise
// (a live session, which must never stall its capture).
//
// Retries: 429, 502, 503, 504, a timeout and an unreachable receiver
// (refused, no route) are retried with exponential backoff, as the OTLP
// specification asks; any other status is final (a 400 would fail again;
// ClickHouse answers a bad insert 500, and it would fail again too).
// Once a batch has used all its attempts on an unreachable receiver, later
// batches get one attempt each until one gets through, so a receiver that
// is gone costs one connect per batch, not the whole backoff schedule.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "export/http/http_post.h"

namespace jackdaw::http {

struct SenderOptions {
  HttpUrl url;
  size_t max_queued_batches = 16;
  int max_attempts = 5;
  int initial_backoff_ms = 100;
  int max_backoff_ms = 5000;
  int timeout_ms = 10000;     // one POST, connect to status line
  int drain_timeout_ms = 15000;  // Finish(): what is still queued after this is dropped
  bool wait_when_full = false;
  std::string content_type = "application/json";
  // Run on the sender's thread before the first batch is sent, and again
  // before each later batch until it once succeeds (2xx): what the
  // receiver needs first (ClickHouse: its tables). A failure counts as
  // that batch's attempt failing the same way.
  std::function<HttpResult()> prepare;
};

// Items are the batch's unit below requests: OTLP spans, ClickHouse rows.
struct SenderStats {
  uint64_t requests_sent = 0, items_sent = 0, batches_sent = 0;
  // Never sent: the queue was full while the receiver was down, or
  // Finish() ran out of time.
  uint64_t requests_dropped = 0, items_dropped = 0, batches_dropped = 0;
  // Sent and refused for good (a non-retryable status, or retries used up).
  uint64_t requests_failed = 0, items_failed = 0, batches_failed = 0;
  uint64_t retries = 0;
  // "HTTP 503", "connection refused", "HTTP 500: Code: 60, ... Table
  // jackdaw.requests doesn't exist"
  std::string last_error;
};

class BatchSender {
 public:
  explicit BatchSender(SenderOptions options);
  ~BatchSender();  // Finish()es if not done
  BatchSender(const BatchSender&) = delete;
  BatchSender& operator=(const BatchSender&) = delete;

  // Queues one batch (its whole POST body); false if it was dropped.
  bool Enqueue(std::string body, size_t requests, size_t items);
  // Sends what is queued (up to drain_timeout_ms), stops the thread.
  SenderStats Finish();
  SenderStats stats() const;

 private:
  struct Batch {
    std::string body;
    size_t requests = 0, items = 0;
  };
  void Run();
  // Sends one batch with its retries; true once a 2xx came back.
  bool Send(const Batch& b);
  // Sleeps `ms` unless Finish() passed its drain deadline; false then.
  bool Backoff(int ms);

  SenderOptions opt_;
  mutable std::mutex mu_;
  std::condition_variable cv_;  // queue changed, or stopping
  std::deque<Batch> queue_;
  bool stopping_ = false;
  bool drain_expired_ = false;
  bool receiver_down_ = false;
  bool finished_ = false;
  bool prepared_ = false;  // the prepare hook succeeded (sender thread only)
  SenderStats stats_;
  std::thread thread_;
};

}  // namespace jackdaw::http
