// Streaming writer for .jdw traces (layout: trace/trace_format.h).
//
// Each Write* call appends one complete chunk with a single write(2), so a
// recording that is killed leaves a file whose every chunk but possibly the
// last is whole; the reader salvages up to the last complete chunk. Finish()
// appends the footer that marks a cleanly ended recording.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace jackdaw::trace {

class TraceWriter {
 public:
  static StatusOr<std::unique_ptr<TraceWriter>> Create(const std::string& path,
                                                       const nlohmann::json& header);
  ~TraceWriter();

  // `data` holds `count` records of `cpu`, in that CPU's time order.
  Status WriteRecords(uint32_t cpu, const uint8_t* data, size_t len, uint64_t count);
  Status WriteMeta(const nlohmann::json& meta);
  Status Finish(const nlohmann::json& footer);

  uint64_t bytes_written() const { return offset_; }
  uint64_t records_written() const { return records_; }
  const std::string& path() const { return path_; }

 private:
  TraceWriter() = default;
  Status WriteChunk(uint16_t kind, uint16_t cpu, const void* payload, size_t len, uint64_t count);

  int fd_ = -1;
  uint64_t offset_ = 0;
  uint64_t records_ = 0;
  std::string path_;
};

}  // namespace jackdaw::trace
