// AsyncTraceWriter: a TraceWriter on its own thread, so the thread that
// drains the kernel's rings never waits for compression or the disk.
//
// Chunks, metadata and the footer are queued in call order and written in
// that order by one writer thread, so the file is the same as a synchronous
// TraceWriter's. Record buffers are handed over by move and handed back
// through Recycle(), so a steady recording allocates nothing.
//
// Back-pressure: at most max_queued_bytes of records wait; beyond that
// Submit() blocks until the writer catches up (counted in stalls()), so a
// disk slower than the producers shows up as ring losses the kernel counts,
// never as unbounded memory. The first write error is latched: later calls
// return it and queue nothing.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "trace/trace_writer.h"

namespace jackdaw::trace {

class AsyncTraceWriter {
 public:
  static StatusOr<std::unique_ptr<AsyncTraceWriter>> Create(const std::string& path, const nlohmann::json& header,
                                                            Compression compression,
                                                            size_t max_queued_bytes = 64u << 20);
  // Writes what is queued (without a footer unless Finish() ran) and stops.
  ~AsyncTraceWriter();

  // Queues `records` (count records of cpu, in time order); the buffer
  // comes back, emptied, through TakeBuffer().
  Status Submit(uint32_t cpu, std::vector<uint8_t>&& records, uint64_t count);
  Status SubmitMeta(const nlohmann::json& meta);
  // Queues the footer, waits until everything is on disk, returns the first
  // error of the whole recording.
  Status Finish(const nlohmann::json& footer);

  // An empty buffer with capacity from the free list (or a new one).
  std::vector<uint8_t> TakeBuffer();

  uint64_t bytes_written() const { return bytes_written_.load(); }
  uint64_t records_written() const { return records_written_.load(); }
  uint64_t record_bytes_raw() const { return raw_.load(); }
  uint64_t record_bytes_stored() const { return stored_.load(); }
  uint64_t stalls() const { return stalls_.load(); }

 private:
  struct Item {
    enum Kind { kRecords, kMeta, kFooter } kind = kRecords;
    uint32_t cpu = 0;
    uint64_t count = 0;
    std::vector<uint8_t> data;
    nlohmann::json json;
  };

  AsyncTraceWriter() = default;
  Status Enqueue(Item item);
  void Run();

  std::unique_ptr<TraceWriter> writer_;
  size_t max_queued_bytes_ = 0;
  std::mutex mu_;
  std::condition_variable wake_writer_, wake_submitter_;
  std::deque<Item> queue_;
  size_t queued_bytes_ = 0;
  std::vector<std::vector<uint8_t>> free_;
  bool closing_ = false;
  bool finished_ = false;  // the footer is queued
  bool idle_ = true;
  Status error_;
  std::thread thread_;
  std::atomic<uint64_t> bytes_written_{0}, records_written_{0}, raw_{0}, stored_{0}, stalls_{0};
};

}  // namespace jackdaw::trace
