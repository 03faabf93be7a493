// RecordArena: records kept at stable addresses in fixed 1 MiB blocks,
// released whole once every record in a block is older than a span.
//
// `jackdaw live` keeps two: the join's (expanded records, the reorder
// window's span, so it stays small and warm in the cache) and the flight
// recorder's (records as the rings delivered them, combined syscalls
// whole, --flight seconds). The flight recorder's is written with
// non-temporal stores: it is read back only by a snapshot, and seconds of
// records streamed through the cache would evict the join's and the
// model's state between two drains (measured: live's CPU per request 11 %
// lower with a flight recorder of 0.5 s than of 5 s before the split).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "jackdaw/abi.h"

namespace jackdaw::cli {

class RecordArena {
 public:
  static constexpr size_t kBlockBytes = 1u << 20;

  // `bytes` (a multiple of 8, at most kBlockBytes) of the arena, in one
  // block; the record written there must be announced with Took(). Inline:
  // once or twice per record.
  uint8_t* Allocate(size_t bytes) {
    if (last_ && last_->used + bytes <= kBlockBytes) {
      uint8_t* dst = last_->data.get() + last_->used;
      last_->used += bytes;
      return dst;
    }
    return AllocateInNewBlock(bytes);
  }
  // The record last allocated has timestamp `ts`.
  void Took(uint64_t ts) {
    if (ts > last_->max_ts) last_->max_ts = ts;
    if (ts < last_->min_ts) last_->min_ts = ts;
  }
  // Appends a copy of a record of `size` bytes (padded to 8 with zeros)
  // through non-temporal stores, bypassing the cache.
  void AppendStreaming(const uint8_t* data, size_t size, uint64_t ts);

  // Releases the blocks whose records are all more than `span_ns` older
  // than `newest_ts`, then the oldest while more than `max_bytes` are held
  // (the newest block is always kept); their memory is kept for reuse, up
  // to as many blocks as are in use and, with a cap, as the cap leaves room
  // for. Returns the newest timestamp of the blocks the cap released (0:
  // none), which says how far the cap cut into the span.
  uint64_t Trim(uint64_t span_ns, uint64_t newest_ts, size_t max_bytes = SIZE_MAX);

  size_t bytes() const { return blocks_.size() * kBlockBytes; }
  // The oldest timestamp held (0: empty).
  uint64_t oldest_ts() const { return blocks_.empty() ? 0 : blocks_.front().min_ts; }
  // Every record held, block by block in the order they were added.
  std::vector<const jdw_record_header*> Records() const;

 private:
  struct Block {
    std::unique_ptr<uint8_t[]> data;
    size_t used = 0;
    uint64_t max_ts = 0;
    uint64_t min_ts = UINT64_MAX;
  };
  uint8_t* AllocateInNewBlock(size_t bytes);
  void Release();  // the oldest block, its memory to the spares

  // A fresh 1 MiB block is an mmap and 256 page faults; a recycled one
  // neither.
  std::deque<Block> blocks_;
  // blocks_.back(), the one being filled (Trim() never frees it; a deque's
  // elements stay where they are as others come and go at either end).
  Block* last_ = nullptr;
  std::vector<std::unique_ptr<uint8_t[]>> spare_;
};

}  // namespace jackdaw::cli
