// RingReader: consumes one BPF ring buffer (BPF_MAP_TYPE_RINGBUF) in place.
//
// Same protocol as libbpf's ring_buffer__consume (the kernel's
// kernel/bpf/ringbuf.c): a record is an 8-byte header (length with BUSY and
// DISCARD bits, page offset) and its payload, 8-byte aligned; the reader
// walks from consumer_pos to producer_pos and stops at the first record
// still being written (BUSY). The difference is batching: libbpf publishes
// consumer_pos after every record, a store to a cache line every producer
// on that CPU reads, so at millions of records per second the reader and
// the producers bounce that line per record. Here it is published once per
// kPublishBytes and at the end of a sweep, which frees the space just as
// surely (producers only need it before the ring is full) at a fraction of
// the cost.
//
// A ring record may hold several jackdaw records back to back (a batch
// from a CPU's record stage, abi.h): each reaches the sink on its own.
// Records are handed to the sink where they lie in the mapping; the sink
// copies what it keeps before Consume() returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "capture/backend.h"
#include "common/status.h"

namespace jackdaw::capture {

class RingReader {
 public:
  RingReader() = default;
  ~RingReader();
  RingReader(const RingReader&) = delete;
  RingReader& operator=(const RingReader&) = delete;
  RingReader(RingReader&& o) noexcept;
  RingReader& operator=(RingReader&& o) noexcept;

  // Maps the ring `fd` of `size` bytes (a power of two).
  static StatusOr<RingReader> Map(int fd, uint32_t size);
  // A reader of a ring laid out in memory the caller owns, as the kernel
  // lays it out (consumer_pos at `consumer_page`; producer_pos at
  // `producer`, the data `page` bytes after it): for tests of the protocol.
  static RingReader OverMemory(uint8_t* consumer_page, uint8_t* producer, uint32_t size, size_t page);

  // Hands every complete record to sink (as `cpu`'s) and frees its space.
  // Returns the bytes consumed, headers included; *records (if given)
  // receives how many records reached the sink.
  uint64_t Consume(RecordSink& sink, uint32_t cpu, uint64_t* records = nullptr);
  // Hands the jackdaw records of one ring record (a batch from a CPU's
  // record stage, or a lone record) to sink one by one, by their headers'
  // sizes; a size that does not fit what is left (no jackdaw producer
  // writes one) hands the rest over as one record, for the sink's own
  // checks to refuse. Returns how many reached the sink.
  static uint64_t SplitBatch(RecordSink& sink, uint32_t cpu, const uint8_t* data, uint32_t size);
  // Bytes written by producers and not yet consumed.
  uint64_t Pending() const;
  uint32_t size() const { return size_; }

 private:
  // Publishing consumer_pos this often inside a long sweep lets producers
  // reuse space before the sweep ends.
  static constexpr uint64_t kPublishBytes = 256 << 10;

  void Unmap();

  uint8_t* consumer_page_ = nullptr;  // read-write: consumer_pos
  uint8_t* producer_ = nullptr;       // read-only: producer_pos page, then the data once
  uint32_t size_ = 0;
  size_t page_ = 0;
  bool mapped_ = false;  // Unmap() has mappings to undo
  std::vector<uint8_t> wrapped_;  // a batch that wraps around the end, made whole
};

}  // namespace jackdaw::capture
