// Reader for .jdw trace files (format: user/trace/trace_format.h).
//
// The file is read into memory (never mapped: a mapping dies with SIGBUS
// when the file is truncated under it) and validated chunk by chunk on
// Open(): the header checksum, every chunk header, length and CRC, and every
// field of the metadata JSON (type and nesting depth) are checked before any
// record is handed out, so later stages can trust record sizes and no input
// throws. A truncated tail (a recording killed before it closed the file) or
// a corrupt chunk is reported with its byte offset; Open() returns that error
// unless allow_truncated is set, in which case reading resumes at the next
// intact chunk and damage() reports the first damage.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/status.h"
#include "jackdaw/abi.h"
#include "trace/clock.h"

namespace jackdaw::trace {

struct ChunkHeader;

struct TaskInfo {
  uint32_t tgid = 0;
  std::string comm;
};

struct LossCounters {
  // lost[cpu][group]: records the kernel could not reserve.
  std::vector<std::vector<uint64_t>> lost;
  uint64_t total() const {
    uint64_t t = 0;
    for (auto& c : lost)
      for (auto v : c) t += v;
    return t;
  }
};

struct TraceMeta {
  uint32_t abi_version = 0;
  uint32_t ncpus = 0;
  std::string host, kernel, backend;  // backend: "bpf" | "kmod"
  std::vector<std::string> probe_groups;  // enabled at start
  std::string header_json;                // the full self-describing header
  TimeConverter time;                     // record ts -> mono ns / tsc
  std::vector<std::string> syscall_names;  // index = syscall nr ("" unknown)
  std::vector<std::string> app_probes;     // USDT probe_id -> "provider:name"
  std::unordered_map<uint32_t, TaskInfo> tasks;  // tid -> task, from /proc at start + fork/exec records
  LossCounters losses;
  uint64_t records_written = 0;  // as counted by the writer (footer)
  bool complete = false;          // footer present
};

// One chunk: records of one CPU in that CPU's timestamp order, packed
// back to back (jdw_record_header.size apart, 8-byte aligned).
struct RecordChunk {
  uint32_t cpu = 0;
  uint64_t file_offset = 0;
  const uint8_t* data = nullptr;
  size_t len = 0;
};

class TraceReader {
 public:
  struct Options {
    bool allow_truncated = false;  // keep complete chunks before a bad tail
  };
  static StatusOr<std::unique_ptr<TraceReader>> Open(const std::string& path, Options opts);
  static StatusOr<std::unique_ptr<TraceReader>> Open(const std::string& path) { return Open(path, Options{}); }
  // Open() for a command: on failure, the error names --salvage only when
  // salvaging would actually read something (a damaged or unfinished trace,
  // not a missing file, a foreign file or a bad header).
  static StatusOr<std::unique_ptr<TraceReader>> OpenForCli(const std::string& path, bool salvage);
  // A trace already in memory (fuzzing, tests); `name` labels messages.
  static StatusOr<std::unique_ptr<TraceReader>> FromBytes(const std::string& name, const uint8_t* data,
                                                          size_t len, Options opts);
  ~TraceReader();

  const TraceMeta& meta() const { return meta_; }
  // Record chunks in file order.
  const std::vector<RecordChunk>& chunks() const { return chunks_; }
  // Set when Open() salvaged a damaged file (allow_truncated).
  const Status& damage() const { return damage_; }

  // Visits every record of every chunk, in file order.
  void ForEachRecord(const std::function<void(const jdw_record_header&)>& fn) const;

 private:
  TraceReader() = default;
  Status Parse(bool allow_truncated);
  Status ParseCatching(bool allow_truncated);
  // Offset of the first chunk at or after `from` whose header and checksum
  // hold; the file size if none.
  uint64_t NextValidChunk(uint64_t from) const;
  // Validates `len` bytes of records (a chunk's payload, or what its
  // compressed payload inflated to).
  Status ValidateRecords(const ChunkHeader& ch, uint64_t body, const uint8_t* payload, size_t len);
  // Decompresses a kRecordsZstd payload into memory the reader keeps.
  StatusOr<std::pair<const uint8_t*, size_t>> Inflate(uint64_t body, const uint8_t* payload, size_t len);

  // Compressed traces inflate at most this many times their file size
  // (real traces: 4-8x).
  static constexpr uint64_t kMaxInflateRatio = 64;
  TraceMeta meta_;
  std::vector<RecordChunk> chunks_;
  Status damage_;
  std::unique_ptr<uint8_t[]> buf_;
  std::vector<std::unique_ptr<uint8_t[]>> inflated_;  // decompressed record chunks
  uint64_t inflated_bytes_ = 0;
  const uint8_t* map_ = nullptr;
  size_t map_len_ = 0;
  std::string path_;
};

}  // namespace jackdaw::trace
