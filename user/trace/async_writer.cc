#include "trace/async_writer.h"

#include <utility>

namespace jackdaw::trace {
namespace {

// Spare buffers kept for reuse: one per CPU stage in flight is plenty.
constexpr size_t kMaxFreeBuffers = 64;

}  // namespace

StatusOr<std::unique_ptr<AsyncTraceWriter>> AsyncTraceWriter::Create(const std::string& path,
                                                                     const nlohmann::json& header,
                                                                     Compression compression,
                                                                     size_t max_queued_bytes) {
  std::unique_ptr<AsyncTraceWriter> w(new AsyncTraceWriter());
  ASSIGN_OR_RETURN(w->writer_, TraceWriter::Create(path, header, compression));
  w->bytes_written_ = w->writer_->bytes_written();
  w->max_queued_bytes_ = max_queued_bytes;
  w->thread_ = std::thread([p = w.get()] { p->Run(); });
  return w;
}

AsyncTraceWriter::~AsyncTraceWriter() {
  {
    std::lock_guard<std::mutex> l(mu_);
    closing_ = true;
  }
  wake_writer_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::vector<uint8_t> AsyncTraceWriter::TakeBuffer() {
  std::lock_guard<std::mutex> l(mu_);
  if (free_.empty()) return {};
  std::vector<uint8_t> b = std::move(free_.back());
  free_.pop_back();
  return b;
}

Status AsyncTraceWriter::Enqueue(Item item) {
  std::unique_lock<std::mutex> l(mu_);
  if (!error_.ok()) return error_;
  if (closing_ || finished_) return ErrStatus("internal: write to a finished trace");
  const size_t n = item.data.size();
  if (queued_bytes_ > 0 && queued_bytes_ + n > max_queued_bytes_) {
    stalls_++;
    wake_submitter_.wait(l, [&] { return queued_bytes_ + n <= max_queued_bytes_ || !error_.ok(); });
    if (!error_.ok()) return error_;
  }
  queued_bytes_ += n;
  queue_.push_back(std::move(item));
  l.unlock();
  wake_writer_.notify_one();
  return Status::Ok();
}

Status AsyncTraceWriter::Submit(uint32_t cpu, std::vector<uint8_t>&& records, uint64_t count) {
  if (records.empty()) return Status::Ok();
  Item it;
  it.kind = Item::kRecords;
  it.cpu = cpu;
  it.count = count;
  it.data = std::move(records);
  return Enqueue(std::move(it));
}

Status AsyncTraceWriter::SubmitMeta(const nlohmann::json& meta) {
  Item it;
  it.kind = Item::kMeta;
  it.json = meta;
  return Enqueue(std::move(it));
}

Status AsyncTraceWriter::Finish(const nlohmann::json& footer) {
  Item it;
  it.kind = Item::kFooter;
  it.json = footer;
  RETURN_IF_ERROR(Enqueue(std::move(it)));
  std::unique_lock<std::mutex> l(mu_);
  finished_ = true;
  wake_submitter_.wait(l, [&] { return (queue_.empty() && idle_) || !error_.ok(); });
  return error_;
}

void AsyncTraceWriter::Run() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    wake_writer_.wait(l, [&] { return !queue_.empty() || closing_; });
    if (queue_.empty()) return;  // closing and drained
    Item it = std::move(queue_.front());
    queue_.pop_front();
    if (!error_.ok()) {
      // After a failed write the file ends where that write stopped: what
      // was queued behind it is dropped, not appended past a torn chunk
      // (the condition may have cleared — space freed, a limit raised —
      // and a later chunk would land after the tear, unreadable).
      queued_bytes_ -= it.data.size();
      wake_submitter_.notify_all();
      continue;
    }
    idle_ = false;
    l.unlock();
    Status st;
    switch (it.kind) {
      case Item::kRecords: st = writer_->WriteRecords(it.cpu, it.data.data(), it.data.size(), it.count); break;
      case Item::kMeta: st = writer_->WriteMeta(it.json); break;
      case Item::kFooter: st = writer_->Finish(it.json); break;
    }
    bytes_written_ = writer_->bytes_written();
    records_written_ = writer_->records_written();
    raw_ = writer_->record_bytes_raw();
    stored_ = writer_->record_bytes_stored();
    const size_t n = it.data.size();
    it.data.clear();
    l.lock();
    queued_bytes_ -= n;
    if (it.data.capacity() && free_.size() < kMaxFreeBuffers) free_.push_back(std::move(it.data));
    if (!st.ok() && error_.ok()) error_ = st;
    idle_ = true;
    wake_submitter_.notify_all();
  }
}

}  // namespace jackdaw::trace
