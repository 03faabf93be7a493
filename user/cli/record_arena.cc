#include "cli/record_arena.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace jackdaw::cli {

uint8_t* RecordArena::AllocateInNewBlock(size_t bytes) {
  Block b;
  if (spare_.empty()) {
    b.data.reset(new uint8_t[kBlockBytes]);
  } else {
    b.data = std::move(spare_.back());
    spare_.pop_back();
  }
  blocks_.push_back(std::move(b));
  last_ = &blocks_.back();
  last_->used = bytes;
  return last_->data.get();
}

void RecordArena::AppendStreaming(const uint8_t* data, size_t size, uint64_t ts) {
  const size_t padded = (size + 7) & ~size_t{7};
  uint8_t* dst = Allocate(padded);
#if defined(__x86_64__)
  // Blocks start 16-byte aligned and every record is a multiple of 8, so
  // dst is 8-byte aligned: 8-byte streaming stores, the tail zero-padded.
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    long long v;
    memcpy(&v, data + i, 8);
    _mm_stream_si64(reinterpret_cast<long long*>(dst + i), v);
  }
  if (i < padded) {
    long long v = 0;
    memcpy(&v, data + i, size - i);
    _mm_stream_si64(reinterpret_cast<long long*>(dst + i), v);
  }
#else
  memcpy(dst, data, size);
  memset(dst + size, 0, padded - size);
#endif
  Took(ts);
}

uint64_t RecordArena::Trim(uint64_t span_ns, uint64_t newest_ts, size_t max_bytes) {
  while (blocks_.size() > 1 && blocks_.front().max_ts + span_ns < newest_ts) Release();
  const size_t max_blocks = std::max<size_t>(1, max_bytes / kBlockBytes);
  uint64_t capped_ts = 0;
  while (blocks_.size() > max_blocks) {
    capped_ts = std::max(capped_ts, blocks_.front().max_ts);
    Release();
  }
  // As many spares as blocks in use: enough for the arena to grow back to
  // its size, never more than twice its peak in all; under a cap, no more
  // than the cap has room for (one at least, for the next block).
  size_t spares = blocks_.size();
  if (max_bytes != SIZE_MAX) spares = std::min(spares, std::max<size_t>(1, max_blocks - blocks_.size()));
  if (spare_.size() > spares) spare_.resize(spares);
  return capped_ts;
}

void RecordArena::Release() {
  spare_.push_back(std::move(blocks_.front().data));
  blocks_.pop_front();
}

std::vector<const jdw_record_header*> RecordArena::Records() const {
  std::vector<const jdw_record_header*> out;
  for (const Block& b : blocks_) {
    for (size_t off = 0; off + sizeof(jdw_record_header) <= b.used;) {
      const auto* h = reinterpret_cast<const jdw_record_header*>(b.data.get() + off);
      if (h->size < sizeof(jdw_record_header)) break;
      out.push_back(h);
      off += (size_t{h->size} + 7) & ~size_t{7};
    }
  }
  return out;
}

}  // namespace jackdaw::cli
