#include "cli/record_arena.h"

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

void RecordArena::Trim(uint64_t span_ns, uint64_t newest_ts) {
  while (blocks_.size() > 1 && blocks_.front().max_ts + span_ns < newest_ts) {
    spare_.push_back(std::move(blocks_.front().data));
    blocks_.pop_front();
  }
  // As many spares as blocks in use: enough for the arena to grow back to
  // its size, never more than twice its peak in all.
  if (spare_.size() > blocks_.size()) spare_.resize(blocks_.size());
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
