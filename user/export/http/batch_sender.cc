#include "export/http/batch_sender.h"

#include <algorithm>
#include <chrono>

namespace jackdaw::http {

BatchSender::BatchSender(SenderOptions options) : opt_(std::move(options)) {
  thread_ = std::thread([this] { Run(); });
}

BatchSender::~BatchSender() { Finish(); }

bool BatchSender::Enqueue(std::string body, size_t requests, size_t items) {
  std::unique_lock<std::mutex> lock(mu_);
  if (opt_.wait_when_full)
    cv_.wait(lock, [&] { return queue_.size() < opt_.max_queued_batches || receiver_down_ || stopping_; });
  if (queue_.size() >= opt_.max_queued_batches || stopping_) {
    stats_.requests_dropped += requests;
    stats_.items_dropped += items;
    stats_.batches_dropped++;
    return false;
  }
  queue_.push_back({std::move(body), requests, items});
  cv_.notify_all();
  return true;
}

SenderStats BatchSender::Finish() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!finished_) {
    finished_ = true;
    // Let the thread drain the queue, up to the deadline.
    const bool drained = cv_.wait_for(lock, std::chrono::milliseconds(opt_.drain_timeout_ms),
                                      [&] { return queue_.empty(); });
    if (!drained) drain_expired_ = true;
    stopping_ = true;
    cv_.notify_all();
    lock.unlock();
    thread_.join();
    lock.lock();
    for (const Batch& b : queue_) {
      stats_.requests_dropped += b.requests;
      stats_.items_dropped += b.items;
      stats_.batches_dropped++;
    }
    queue_.clear();
  }
  return stats_;
}

SenderStats BatchSender::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void BatchSender::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
    if (queue_.empty() || drain_expired_) return;
    // The batch stays at the queue's head while it is sent: Finish() sees
    // the queue empty only once it is done.
    const Batch& b = queue_.front();
    lock.unlock();
    const bool ok = Send(b);
    lock.lock();
    if (ok) {
      stats_.requests_sent += b.requests;
      stats_.items_sent += b.items;
      stats_.batches_sent++;
    } else {
      stats_.requests_failed += b.requests;
      stats_.items_failed += b.items;
      stats_.batches_failed++;
    }
    queue_.pop_front();
    cv_.notify_all();
  }
}

bool BatchSender::Backoff(int ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return drain_expired_ || stopping_; });
}

bool BatchSender::Send(const Batch& b) {
  int backoff = opt_.initial_backoff_ms;
  bool down;
  {
    std::lock_guard<std::mutex> lock(mu_);
    down = receiver_down_;
  }
  const int attempts = down ? 1 : std::max(1, opt_.max_attempts);
  for (int attempt = 1;; ++attempt) {
    HttpResult r;
    if (!prepared_ && opt_.prepare) {
      r = opt_.prepare();
      prepared_ = r.status >= 200 && r.status < 300;
    }
    if (prepared_ || !opt_.prepare) {
      PostOptions po;
      po.content_type = opt_.content_type;
      po.timeout_ms = opt_.timeout_ms;
      po.max_body = 4096;  // a refusal's explanation, for last_error
      r = Post(opt_.url, b.body, po);
    }
    const bool ok = r.status >= 200 && r.status < 300;
    const bool retryable = r.status == 429 || r.status == 502 || r.status == 503 || r.status == 504 ||
                           (r.status == 0 && (r.unreachable || !r.error.empty()));
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ok || r.status != 0) receiver_down_ = false;
      if (!ok) {
        stats_.last_error = r.status ? "HTTP " + std::to_string(r.status) : r.error;
        if (r.status && !FirstLine(r.body).empty()) stats_.last_error += ": " + FirstLine(r.body);
      }
      if (!ok && r.status == 0 && attempt >= attempts) receiver_down_ = true;
      if (receiver_down_) cv_.notify_all();  // a producer waiting for room drops instead
    }
    if (ok) return true;
    if (!retryable || attempt >= attempts) return false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.retries++;
    }
    if (!Backoff(backoff)) return false;
    backoff = std::min(backoff * 2, opt_.max_backoff_ms);
  }
}

}  // namespace jackdaw::http
