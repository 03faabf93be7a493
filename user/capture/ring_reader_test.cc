#include "capture/ring_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "jackdaw/abi.h"

namespace jackdaw::capture {
namespace {

struct Collect : RecordSink {
  std::vector<std::vector<uint8_t>> got;
  void OnRecord(uint32_t, const uint8_t* data, size_t size) override { got.emplace_back(data, data + size); }
};

// A record of `size` bytes (header included) stamped with ts.
void Append(std::vector<uint8_t>* batch, uint16_t size, uint64_t ts) {
  std::vector<uint8_t> r(size, 0xab);
  jdw_record_header h{};
  h.ts = ts;
  h.type = JDW_EVENT_SYS_ENTER;
  h.size = size;
  memcpy(r.data(), &h, sizeof(h));
  batch->insert(batch->end(), r.begin(), r.end());
}

uint64_t TsOf(const std::vector<uint8_t>& r) {
  jdw_record_header h;
  memcpy(&h, r.data(), sizeof(h));
  return h.ts;
}

TEST(RingReaderSplit, ABatchReachesTheSinkOneRecordAtATimeInOrder) {
  std::vector<uint8_t> batch;
  Append(&batch, 48, 10);
  Append(&batch, 72, 11);
  Append(&batch, 24, 12);
  Collect c;
  EXPECT_EQ(RingReader::SplitBatch(c, 1, batch.data(), static_cast<uint32_t>(batch.size())), 3u);
  ASSERT_EQ(c.got.size(), 3u);
  EXPECT_EQ(c.got[0].size(), 48u);
  EXPECT_EQ(c.got[1].size(), 72u);
  EXPECT_EQ(c.got[2].size(), 24u);
  EXPECT_EQ(TsOf(c.got[0]), 10u);
  EXPECT_EQ(TsOf(c.got[1]), 11u);
  EXPECT_EQ(TsOf(c.got[2]), 12u);
}

TEST(RingReaderSplit, ALoneRecordIsABatchOfOne) {
  std::vector<uint8_t> batch;
  Append(&batch, 64, 7);
  Collect c;
  EXPECT_EQ(RingReader::SplitBatch(c, 0, batch.data(), static_cast<uint32_t>(batch.size())), 1u);
  ASSERT_EQ(c.got.size(), 1u);
  EXPECT_EQ(c.got[0], batch);
}

TEST(RingReaderSplit, ASizeThatDoesNotFitHandsTheRestOverAsOneRecord) {
  std::vector<uint8_t> batch;
  Append(&batch, 48, 1);
  Append(&batch, 48, 2);
  // the second record claims more than is left
  const uint16_t bad = 4000;
  memcpy(batch.data() + 48 + offsetof(jdw_record_header, size), &bad, sizeof(bad));
  Collect c;
  EXPECT_EQ(RingReader::SplitBatch(c, 0, batch.data(), static_cast<uint32_t>(batch.size())), 2u);
  ASSERT_EQ(c.got.size(), 2u);
  EXPECT_EQ(c.got[0].size(), 48u);
  EXPECT_EQ(c.got[1].size(), 48u);  // the rest, whatever its header says
}

TEST(RingReaderSplit, AZeroSizeCannotLoopForever) {
  std::vector<uint8_t> batch(96, 0);  // headers all zero: size 0
  Collect c;
  EXPECT_EQ(RingReader::SplitBatch(c, 0, batch.data(), static_cast<uint32_t>(batch.size())), 1u);
  ASSERT_EQ(c.got.size(), 1u);
  EXPECT_EQ(c.got[0].size(), 96u);
}

TEST(RingReaderSplit, ATailShorterThanAHeaderIsHandedOverAsIs) {
  std::vector<uint8_t> batch;
  Append(&batch, 24, 1);
  batch.resize(batch.size() + 8, 0);
  Collect c;
  EXPECT_EQ(RingReader::SplitBatch(c, 0, batch.data(), static_cast<uint32_t>(batch.size())), 2u);
  ASSERT_EQ(c.got.size(), 2u);
  EXPECT_EQ(c.got[1].size(), 8u);
}

// A ring laid out as the kernel lays it out, in memory: the consumer page,
// then the producer page and the data once.
struct FakeRing {
  static constexpr size_t kPage = 4096;
  static constexpr uint32_t kSize = 4096;
  std::vector<uint8_t> consumer = std::vector<uint8_t>(kPage, 0);
  std::vector<uint8_t> producer = std::vector<uint8_t>(kPage + kSize, 0);
  uint64_t pos = 0;

  explicit FakeRing(uint64_t start) : pos(start) {
    memcpy(consumer.data(), &pos, sizeof(pos));
    memcpy(producer.data(), &pos, sizeof(pos));
  }
  // One ring record (8-byte header, then `body`, padded to 8), written
  // where the producer stands, wrapping as the kernel's ring does.
  void Produce(const std::vector<uint8_t>& body) {
    uint8_t* data = producer.data() + kPage;
    const uint32_t len = static_cast<uint32_t>(body.size());
    memcpy(data + (pos & (kSize - 1)), &len, sizeof(len));
    for (size_t i = 0; i < body.size(); ++i) data[(pos + 8 + i) & (kSize - 1)] = body[i];
    pos += (8 + body.size() + 7) & ~size_t{7};
    memcpy(producer.data(), &pos, sizeof(pos));
  }
  uint64_t ConsumerPos() const {
    uint64_t c;
    memcpy(&c, consumer.data(), sizeof(c));
    return c;
  }
};

TEST(RingReaderConsume, ABatchThatWrapsAroundTheEndReachesTheSinkWhole) {
  // The header in the ring's last 16 bytes: 8 bytes of the batch before the
  // end, the rest from the start.
  FakeRing ring(3 * FakeRing::kSize - 16);
  std::vector<uint8_t> batch;
  Append(&batch, 24, 7);
  Append(&batch, 32, 8);
  Append(&batch, 24, 9);
  ring.Produce(batch);
  std::vector<uint8_t> after;
  Append(&after, 40, 10);
  ring.Produce(after);
  RingReader r = RingReader::OverMemory(ring.consumer.data(), ring.producer.data(), FakeRing::kSize, FakeRing::kPage);
  Collect c;
  uint64_t records = 0;
  EXPECT_EQ(r.Consume(c, 0, &records), 8 + 80 + 8 + 40u);
  EXPECT_EQ(records, 4u);
  ASSERT_EQ(c.got.size(), 4u);
  EXPECT_EQ(TsOf(c.got[0]), 7u);
  EXPECT_EQ(TsOf(c.got[1]), 8u);
  EXPECT_EQ(c.got[1].size(), 32u);
  EXPECT_EQ(TsOf(c.got[2]), 9u);
  EXPECT_EQ(c.got[2], std::vector<uint8_t>(batch.begin() + 56, batch.end()));
  EXPECT_EQ(TsOf(c.got[3]), 10u);
  EXPECT_EQ(ring.ConsumerPos(), ring.pos);
}

TEST(RingReaderConsume, ARecordStillBeingWrittenStopsTheSweep) {
  FakeRing ring(0);
  std::vector<uint8_t> one;
  Append(&one, 24, 1);
  ring.Produce(one);
  const uint64_t busy_at = ring.pos;
  ring.Produce(one);
  const uint32_t busy = 24u | (1u << 31);
  memcpy(ring.producer.data() + FakeRing::kPage + busy_at, &busy, sizeof(busy));
  RingReader r = RingReader::OverMemory(ring.consumer.data(), ring.producer.data(), FakeRing::kSize, FakeRing::kPage);
  Collect c;
  EXPECT_EQ(r.Consume(c, 0), 32u);
  EXPECT_EQ(c.got.size(), 1u);
  EXPECT_EQ(ring.ConsumerPos(), busy_at);
}

}  // namespace
}  // namespace jackdaw::capture
