#include "capture/kmod_ring.h"

#include "jackdaw/abi.h"

namespace jackdaw::capture {

StatusOr<RingWalk> WalkRing(const uint8_t* ring, uint32_t ring_bytes, uint64_t tail, uint64_t head,
                            const std::function<void(const uint8_t*, size_t)>& on_record) {
  RingWalk w{tail, 0};
  if (head < tail || head - tail > ring_bytes)
    return ErrStatus("jackdaw.ko ring positions out of range (tail %llu, head %llu, size %u): "
                     "module and jackdaw disagree on the layout; rebuild both",
                     (unsigned long long)tail, (unsigned long long)head, ring_bytes);
  while (w.tail < head) {
    const uint64_t off = w.tail & (ring_bytes - 1);
    const uint64_t to_end = ring_bytes - off;
    if (to_end < sizeof(jdw_record_header)) {
      w.tail += to_end;
      continue;
    }
    const auto* h = reinterpret_cast<const jdw_record_header*>(ring + off);
    if (h->size < sizeof(jdw_record_header) || (h->size & 7) || h->size > to_end ||
        w.tail + h->size > head)
      return ErrStatus("jackdaw.ko ring holds a malformed record at position %llu (size %u, type %u)",
                       (unsigned long long)w.tail, h->size, h->type);
    if (h->type == JDW_EVENT_NONE) {
      if (h->size != to_end)
        return ErrStatus("jackdaw.ko ring padding at position %llu does not reach the ring's end",
                         (unsigned long long)w.tail);
    } else {
      on_record(ring + off, h->size);
      ++w.records;
    }
    w.tail += h->size;
  }
  return w;
}

void RecordTimesToMono(uint8_t* rec, size_t size, const trace::ClockMapping& clock) {
  if (size < sizeof(jdw_record_header)) return;
  auto* h = reinterpret_cast<jdw_record_header*>(rec);
  h->ts = clock.TscToMono(h->ts);
  if (h->type == JDW_EVENT_BLOCK_COMPLETE && size >= sizeof(jdw_block_complete_record)) {
    auto* b = reinterpret_cast<jdw_block_complete_record*>(rec);
    if (b->body.issue_ts) b->body.issue_ts = clock.TscToMono(b->body.issue_ts);
  }
}

}  // namespace jackdaw::capture
