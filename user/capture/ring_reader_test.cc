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

}  // namespace
}  // namespace jackdaw::capture
