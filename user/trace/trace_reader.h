// Reader for .jdw trace files (format: user/trace/trace_format.h).
//
// Open() makes one validating pass over the file, a chunk at a time: the
// header checksum, every chunk header, length and CRC, every record's size
// (compressed chunks are inflated for it, then dropped) and every field of
// the metadata JSON (type and nesting depth) are checked before any record is
// handed out, so later stages can trust record sizes and no input throws.
// What it keeps is an index of the record chunks and the metadata, so its
// memory does not grow with the file: records are read back chunk by chunk
// (RecordCursor, ForEachRecord), never the whole file at once and never
// mapped (a mapping dies with SIGBUS when the file is truncated under it);
// the file stays open while the reader lives. A record handed to a
// ForEach* callback lives only until the callback returns.
// A chunk is checked again when it is read back (CRC, record sizes), so a
// file changed after Open() loses chunks, named by read_error(), rather
// than feeding garbage on.
// A truncated tail (a recording killed before it closed the file) or a
// corrupt chunk is reported with its byte offset; Open() returns that error
// unless allow_truncated is set, in which case reading resumes at the next
// intact chunk and damage() reports the first damage.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/status.h"
#include "jackdaw/abi.h"
#include "trace/clock.h"
#include "trace/loss_intervals.h"
#include "trace/sample_rates.h"

namespace jackdaw::trace {

struct ChunkHeader;

struct TaskInfo {
  uint32_t tgid = 0;
  std::string comm;
  // When the trace last named it (its fork or exec record; 0: the task
  // table at the start). Per-CPU chunks are read in any order: a fork read
  // after its child's exec must not give the child its parent's name back.
  uint64_t named_ts = 0;
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
  // Where the capture lost records (trace/loss_intervals.h), and whether it
  // located its losses at all: older traces only counted them.
  std::vector<LossInterval> loss_intervals;
  bool losses_located = false;
  SampleRates sampling;
  uint64_t records_written = 0;  // as counted by the writer (footer)
  bool complete = false;          // footer present
};

// One chunk, as indexed by Open(): records of one CPU in that CPU's
// timestamp order, packed back to back (jdw_record_header.size apart, 8-byte
// aligned) once read (TraceReader::ReadChunk).
struct RecordChunk {
  uint32_t cpu = 0;
  uint64_t file_offset = 0;  // of the payload (after the chunk header)
  uint32_t payload_len = 0;  // on disk
  uint32_t crc32c = 0;       // of the payload, as validated by Open()
  bool compressed = false;   // kRecordsZstd
  size_t len = 0;            // bytes of records once read (inflated, wire records expanded)
  uint64_t record_count = 0;  // records once read (a wire record counts as its events)
  // As stored: bytes once inflated and records, wire records (abi.h) as
  // one each. Equal to len / record_count when the chunk holds none.
  size_t stored_len = 0;
  uint64_t stored_count = 0;
};

class TraceReader;

// Holds one chunk's records while they are read; reused from chunk to chunk
// so reading a file allocates a few buffers of one chunk's size in all.
struct ChunkBuffer {
  std::vector<uint8_t> disk;  // the payload as read from the file
  std::vector<uint8_t> raw;   // inflated records (compressed chunks)
  std::vector<uint8_t> expanded;  // wire records expanded (trace/record_decoder.h)
};

// Walks one CPU's record chunks in file order, record by record, holding
// one chunk in memory at a time. Peek() stays valid until Advance(), or,
// with `retain`, until ReleaseBefore() passes the record: a reorder window
// keeps pointers to records it has not released yet, so a retaining cursor
// keeps each chunk it has left until the caller says that no record older
// than some timestamp is needed (chunks hold one CPU's records in time
// order, so a chunk goes once its newest record is older than that).
class RecordCursor {
 public:
  RecordCursor(const TraceReader* reader, std::vector<const RecordChunk*> chunks, bool retain)
      : reader_(reader), chunks_(std::move(chunks)), retain_(retain) {}
  const jdw_record_header* Peek() {
    if (off_ < len_) return reinterpret_cast<const jdw_record_header*>(data_ + off_);
    return Load();
  }
  void Advance(const jdw_record_header* h) { off_ += h->size; }
  // Frees the chunks left behind whose records are all older than `ts`.
  void ReleaseBefore(uint64_t ts) {
    while (!held_.empty() && held_.front().max_ts < ts) Recycle();
  }
  // Chunks in memory now (the current one and those retained).
  size_t chunks_held() const { return held_.size() + (cur_ ? 1 : 0); }

 private:
  struct Held {
    std::unique_ptr<ChunkBuffer> buf;
    uint64_t max_ts;
  };
  const jdw_record_header* Load();
  void Recycle();

  const TraceReader* reader_;
  std::vector<const RecordChunk*> chunks_;
  bool retain_;
  size_t next_ = 0;
  const uint8_t* data_ = nullptr;
  size_t len_ = 0, off_ = 0;
  std::unique_ptr<ChunkBuffer> cur_;  // the chunk Peek() reads from
  uint64_t cur_max_ts_ = 0;
  std::deque<Held> held_;  // retained chunks, oldest first
  std::vector<std::unique_ptr<ChunkBuffer>> spare_;
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
  // Set when a chunk Open() validated no longer reads back the same (the
  // file was changed or truncated since): that chunk's records are skipped.
  const Status& read_error() const { return read_error_; }

  // Reads one chunk's records into `buf`; on success *data/*len point at
  // them (into `buf`, or into the bytes given to FromBytes) until the next
  // ReadChunk into the same buffer. Fails, recording read_error(), when the
  // chunk no longer matches what Open() validated.
  // *max_ts (if given) is the newest record timestamp in the chunk.
  bool ReadChunk(const RecordChunk& c, ChunkBuffer* buf, const uint8_t** data, size_t* len,
                 uint64_t* max_ts = nullptr) const;
  // One cursor per CPU (index = cpu, up to the highest CPU with records),
  // each over that CPU's chunks in file order (see RecordCursor for retain).
  std::vector<RecordCursor> CursorsByCpu(bool retain = false) const;
  // Visits every chunk's records, in file order.
  void ForEachChunk(const std::function<void(const RecordChunk&, const uint8_t* data, size_t len)>& fn) const;
  // Visits every record of every chunk, in file order.
  void ForEachRecord(const std::function<void(const jdw_record_header&)>& fn) const;
  // The same, stopping (and returning false) once `fn` returns false: a
  // question the first records answer need not read the whole file.
  bool ForEachRecordWhile(const std::function<bool(const jdw_record_header&)>& fn) const;

 private:
  TraceReader() = default;
  Status Parse(bool allow_truncated);
  Status ParseCatching(bool allow_truncated);
  // `len` bytes at file offset `off`: a pointer into the bytes given to
  // FromBytes, or read into *scratch; nullptr when the file ends (or fails)
  // before.
  const uint8_t* ReadAt(uint64_t off, size_t len, std::vector<uint8_t>* scratch) const;
  // Offset of the first chunk at or after `from` whose header and checksum
  // hold; the file size if none.
  uint64_t NextValidChunk(uint64_t from) const;
  // Validates `len` bytes of records (a chunk's payload, or what its
  // compressed payload inflated to).
  // *events_len / *events: what the chunk holds once its wire records are
  // expanded.
  Status ValidateRecords(const ChunkHeader& ch, uint64_t body, const uint8_t* payload, size_t len,
                         size_t* events_len, uint64_t* events);
  // Decompresses a kRecordsZstd payload into *out.
  StatusOr<std::pair<const uint8_t*, size_t>> Inflate(uint64_t body, const uint8_t* payload, size_t len,
                                                      std::vector<uint8_t>* out) const;
  void ReadFailed(Status s) const;

  // Compressed traces inflate at most this many times their file size
  // (real traces: 4-8x).
  static constexpr uint64_t kMaxInflateRatio = 64;
  TraceMeta meta_;
  std::vector<RecordChunk> chunks_;
  Status damage_;
  mutable Status read_error_;
  int fd_ = -1;                  // the file (Open)
  std::vector<uint8_t> bytes_;   // or the whole trace (FromBytes)
  uint64_t file_len_ = 0;
  uint64_t inflated_bytes_ = 0;  // Open()'s running total, for the ratio bound
  std::string path_;
};

}  // namespace jackdaw::trace
