#include "cli/record_arena.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace jackdaw::cli {
namespace {

// A record of `size` bytes (header included) whose payload bytes count up
// from `seed`.
std::vector<uint8_t> MakeRecord(uint16_t type, uint16_t size, uint64_t ts, uint8_t seed) {
  std::vector<uint8_t> r(size);
  for (size_t i = 0; i < r.size(); ++i) r[i] = static_cast<uint8_t>(seed + i);
  jdw_record_header h{};
  h.type = type;
  h.size = size;
  h.ts = ts;
  memcpy(r.data(), &h, sizeof(h));
  return r;
}

// Appends `n` records of 1 KiB, 1 ms apart from *ts on.
void AppendKiBRecords(RecordArena* a, size_t n, uint64_t* ts) {
  for (size_t i = 0; i < n; ++i) {
    auto r = MakeRecord(1, 1024, *ts, 0);
    a->AppendStreaming(r.data(), r.size(), *ts);
    *ts += 1'000'000;
  }
}

TEST(RecordArena, StreamedRecordsReadBackIntactAndPadded) {
  RecordArena a;
  // Sizes that are and are not multiples of 8.
  const std::vector<uint16_t> sizes = {24, 29, 64, 40, 31};
  std::vector<std::vector<uint8_t>> in;
  for (size_t i = 0; i < sizes.size(); ++i) {
    in.push_back(MakeRecord(static_cast<uint16_t>(i + 1), sizes[i], 1000 + i, static_cast<uint8_t>(i * 17)));
    a.AppendStreaming(in.back().data(), in.back().size(), 1000 + i);
  }
  const auto out = a.Records();
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(out[i]->size, sizes[i]);
    EXPECT_EQ(memcmp(out[i], in[i].data(), sizes[i]), 0) << i;
    // The padding up to the next record is zero.
    const auto* p = reinterpret_cast<const uint8_t*>(out[i]);
    for (size_t k = sizes[i]; k < ((sizes[i] + 7u) & ~7u); ++k) EXPECT_EQ(p[k], 0) << i << " byte " << k;
  }
}

TEST(RecordArena, TrimReleasesOnlyBlocksOlderThanTheSpan) {
  RecordArena a;
  // Three full blocks of records 1 ms apart, 1 KiB each.
  const size_t per_block = RecordArena::kBlockBytes / 1024;
  uint64_t ts = 0;
  AppendKiBRecords(&a, 3 * per_block, &ts);
  ASSERT_EQ(a.bytes(), 3 * RecordArena::kBlockBytes);
  const uint64_t newest = ts - 1'000'000;
  // A span covering everything keeps every block.
  a.Trim(newest + 1, newest);
  EXPECT_EQ(a.bytes(), 3 * RecordArena::kBlockBytes);
  // A span shorter than one block's worth: only the newest block stays
  // (its records are all within the span of the newest).
  a.Trim(1'000'000, newest);
  EXPECT_EQ(a.bytes(), RecordArena::kBlockBytes);
  const auto out = a.Records();
  ASSERT_EQ(out.size(), per_block);
  EXPECT_EQ(out.front()->ts, 2 * per_block * 1'000'000);
  // The released blocks' memory is reused: the arena grows back to its
  // size and its records are the new ones.
  for (size_t i = 0; i < 2 * per_block; ++i) {
    auto r = MakeRecord(2, 1024, ts, 1);
    a.AppendStreaming(r.data(), r.size(), ts);
    ts += 1'000'000;
  }
  EXPECT_EQ(a.bytes(), 3 * RecordArena::kBlockBytes);
  EXPECT_EQ(a.Records().size(), 3 * per_block);
}

// Issue 30: the flight recorder grew with the event rate (470 MB at 2 M
// events/s). A byte cap keeps the newest blocks and says how far it cut.
TEST(RecordArena, AByteCapKeepsTheNewestBlocks) {
  RecordArena a;
  const size_t per_block = RecordArena::kBlockBytes / 1024;
  uint64_t ts = 0;
  AppendKiBRecords(&a, 5 * per_block, &ts);
  const uint64_t newest = ts - 1'000'000;
  // The span would keep all five blocks; the cap keeps two.
  const uint64_t cut = a.Trim(newest + 1, newest, 2 * RecordArena::kBlockBytes);
  EXPECT_EQ(a.bytes(), 2 * RecordArena::kBlockBytes);
  EXPECT_EQ(cut, (3 * per_block - 1) * 1'000'000);  // the newest record the cap dropped
  EXPECT_EQ(a.oldest_ts(), 3 * per_block * 1'000'000);
  const auto out = a.Records();
  ASSERT_EQ(out.size(), 2 * per_block);
  EXPECT_EQ(out.back()->ts, newest);
  // Growing on under the cap: never more than the cap once trimmed, and
  // no cut reported while the span alone keeps the arena under it.
  AppendKiBRecords(&a, 3 * per_block, &ts);
  EXPECT_NE(a.Trim(newest + 1, ts, 2 * RecordArena::kBlockBytes), 0u);
  EXPECT_EQ(a.bytes(), 2 * RecordArena::kBlockBytes);
  EXPECT_EQ(a.Trim(1'000'000, ts, 2 * RecordArena::kBlockBytes), 0u);
  EXPECT_EQ(a.bytes(), RecordArena::kBlockBytes);
}

TEST(RecordArena, AllocatedRecordsKeepTheirAddresses) {
  RecordArena a;
  std::vector<uint8_t*> at;
  for (int i = 0; i < 3000; ++i) {
    uint8_t* p = a.Allocate(1024);
    jdw_record_header h{};
    h.size = 1024;
    h.ts = static_cast<uint64_t>(i);
    memcpy(p, &h, sizeof(h));
    a.Took(h.ts);
    at.push_back(p);
  }
  for (int i = 0; i < 3000; ++i) {
    jdw_record_header h;
    memcpy(&h, at[i], sizeof(h));
    EXPECT_EQ(h.ts, static_cast<uint64_t>(i));
  }
}

}  // namespace
}  // namespace jackdaw::cli
