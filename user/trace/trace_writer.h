// Streaming writer for .jdw traces (layout: trace/trace_format.h).
//
// Each Write* call appends one complete chunk with a single write(2), so a
// recording that is killed leaves a file whose every chunk but possibly the
// last is whole; the reader salvages up to the last complete chunk. Finish()
// appends the footer that marks a cleanly ended recording.
//
// With Compression::kZstd each record chunk is compressed on its own (one
// zstd frame per chunk, so damage stays local to the chunk and salvage
// works as for plain chunks) on the calling thread; the file then carries
// format version 3. A chunk that zstd cannot shrink is stored plain.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace jackdaw::trace {

enum class Compression { kNone, kZstd };

// "none" | "zstd" -> Compression; an error naming the valid values.
StatusOr<Compression> ParseCompression(const std::string& name);

class TraceWriter {
 public:
  static StatusOr<std::unique_ptr<TraceWriter>> Create(const std::string& path, const nlohmann::json& header,
                                                       Compression compression = Compression::kNone);
  ~TraceWriter();

  // `data` holds `count` records of `cpu`, in that CPU's time order.
  Status WriteRecords(uint32_t cpu, const uint8_t* data, size_t len, uint64_t count);
  Status WriteMeta(const nlohmann::json& meta);
  Status Finish(const nlohmann::json& footer);

  uint64_t bytes_written() const { return offset_; }
  uint64_t records_written() const { return records_; }
  // Bytes of record payload before and after compression (equal when none).
  uint64_t record_bytes_raw() const { return raw_bytes_; }
  uint64_t record_bytes_stored() const { return stored_bytes_; }
  const std::string& path() const { return path_; }

 private:
  TraceWriter() = default;
  Status WriteChunk(uint16_t kind, uint16_t cpu, const void* payload, size_t len, uint64_t count);

  int fd_ = -1;
  Compression compression_ = Compression::kNone;
  void* zctx_ = nullptr;  // ZSTD_CCtx, reused across chunks
  std::vector<uint8_t> zbuf_;
  uint64_t offset_ = 0;
  uint64_t records_ = 0;
  uint64_t raw_bytes_ = 0, stored_bytes_ = 0;
  std::string path_;
};

}  // namespace jackdaw::trace
