#include "capture/ring_reader.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <utility>

#include "jackdaw/abi.h"

namespace jackdaw::capture {
namespace {

// include/uapi/linux/bpf.h
constexpr uint32_t kBusyBit = 1u << 31;
constexpr uint32_t kDiscardBit = 1u << 30;
constexpr uint32_t kHeaderSize = 8;

uint64_t LoadAcquire(const uint8_t* p) {
  return __atomic_load_n(reinterpret_cast<const uint64_t*>(p), __ATOMIC_ACQUIRE);
}

}  // namespace

uint64_t RingReader::SplitBatch(RecordSink& sink, uint32_t cpu, const uint8_t* p, uint32_t n) {
  uint64_t records = 0;
  uint32_t off = 0;
  while (off < n) {
    uint32_t size = n - off;
    if (size >= sizeof(jdw_record_header)) {
      uint16_t s;
      memcpy(&s, p + off + offsetof(jdw_record_header, size), sizeof(s));
      if (s >= sizeof(jdw_record_header) && s <= size) size = s;
    }
    sink.OnRecord(cpu, p + off, size);
    ++records;
    off += size;
  }
  return records;
}

RingReader::~RingReader() { Unmap(); }

RingReader::RingReader(RingReader&& o) noexcept { *this = std::move(o); }

RingReader& RingReader::operator=(RingReader&& o) noexcept {
  if (this != &o) {
    Unmap();
    consumer_page_ = std::exchange(o.consumer_page_, nullptr);
    producer_ = std::exchange(o.producer_, nullptr);
    size_ = std::exchange(o.size_, 0);
    page_ = std::exchange(o.page_, 0);
    mapped_ = std::exchange(o.mapped_, false);
  }
  return *this;
}

void RingReader::Unmap() {
  if (!mapped_) return;
  mapped_ = false;
  if (consumer_page_) munmap(consumer_page_, page_);
  if (producer_) munmap(producer_, page_ + size_t{size_});
  consumer_page_ = producer_ = nullptr;
}

StatusOr<RingReader> RingReader::Map(int fd, uint32_t size) {
  RingReader r;
  r.mapped_ = true;
  r.page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  r.size_ = size;
  void* c = mmap(nullptr, r.page_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (c == MAP_FAILED) return ErrStatus("cannot map a ring buffer's consumer page: %s", strerror(errno));
  r.consumer_page_ = static_cast<uint8_t*>(c);
  // The data area once, though the kernel offers it twice back to back (a
  // record wrapping around the end then reads as one span): a second
  // mapping counts the whole ring again as the reader's resident memory,
  // and the few batches that wrap are cheaper copied (Consume()).
  void* p = mmap(nullptr, r.page_ + size_t{size}, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(r.page_));
  if (p == MAP_FAILED) return ErrStatus("cannot map a ring buffer's data: %s", strerror(errno));
  r.producer_ = static_cast<uint8_t*>(p);
  return r;
}

RingReader RingReader::OverMemory(uint8_t* consumer_page, uint8_t* producer, uint32_t size, size_t page) {
  RingReader r;
  r.consumer_page_ = consumer_page;
  r.producer_ = producer;
  r.size_ = size;
  r.page_ = page;
  return r;
}

uint64_t RingReader::Pending() const {
  return LoadAcquire(producer_) - LoadAcquire(consumer_page_);
}

uint64_t RingReader::Consume(RecordSink& sink, uint32_t cpu, uint64_t* records) {
  const uint8_t* data = producer_ + page_;
  const uint64_t mask = size_ - 1;
  const uint64_t start = LoadAcquire(consumer_page_);
  uint64_t cons = start, published = start, n_records = 0;
  auto* cons_pos = reinterpret_cast<uint64_t*>(consumer_page_);
  // At most one ring's worth per call: producers at full speed must not
  // keep the reader here past its flush and clock duties.
  for (;;) {
    const uint64_t prod = LoadAcquire(producer_);
    if (cons >= prod || cons - start >= size_) break;
    while (cons < prod) {
      const uint8_t* hdr = data + (cons & mask);
      const uint32_t len = __atomic_load_n(reinterpret_cast<const uint32_t*>(hdr), __ATOMIC_ACQUIRE);
      if (len & kBusyBit) goto done;  // still being written: the next sweep takes it
      const uint32_t n = len & ~(kBusyBit | kDiscardBit);
      if (!(len & kDiscardBit)) {
        // Records are 8-byte aligned and the ring a power of two, so a
        // header never wraps; its batch may.
        const uint64_t body = (cons + kHeaderSize) & mask;
        if (body + n <= size_) {
          n_records += SplitBatch(sink, cpu, data + body, n);
        } else {
          wrapped_.resize(n);
          const uint64_t first = size_ - body;
          memcpy(wrapped_.data(), data + body, first);
          memcpy(wrapped_.data() + first, data, n - first);
          n_records += SplitBatch(sink, cpu, wrapped_.data(), n);
        }
      }
      cons += (uint64_t{n} + kHeaderSize + 7) & ~uint64_t{7};
      if (cons - published >= kPublishBytes) {
        __atomic_store_n(cons_pos, cons, __ATOMIC_RELEASE);
        published = cons;
      }
    }
  }
done:
  if (cons != published) __atomic_store_n(cons_pos, cons, __ATOMIC_RELEASE);
  if (records) *records = n_records;
  return cons - start;
}

}  // namespace jackdaw::capture
