// WalkRing against rings laid out the way jackdaw.ko writes them
// (include/jackdaw/kmod.h): records, wrap padding with and without a
// header, and the malformed rings it must refuse.
#include "capture/kmod_ring.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "jackdaw/abi.h"

namespace jackdaw::capture {
namespace {

constexpr uint32_t kRing = 256;

// A producer with the module's rules (jdw_emit in kmod/jackdaw_main.c).
struct FakeProducer {
  std::vector<uint8_t> ring = std::vector<uint8_t>(kRing, 0xee);
  uint64_t head = 0;
  uint64_t tail = 0;
  bool Emit(uint16_t type, uint16_t size, uint32_t tid) {
    uint64_t off = head & (kRing - 1), need = size;
    if (off + size > kRing) need += kRing - off;
    if (head + need - tail > kRing) return false;
    if (need != size) {
      if (kRing - off >= sizeof(jdw_record_header)) {
        jdw_record_header pad{};
        pad.size = static_cast<uint16_t>(kRing - off);
        memcpy(&ring[off], &pad, sizeof(pad));
      }
      off = 0;
    }
    std::vector<uint8_t> rec(size, 0);
    jdw_record_header h{};
    h.type = type;
    h.size = size;
    h.tid = tid;
    memcpy(rec.data(), &h, sizeof(h));
    memcpy(&ring[off], rec.data(), size);
    head += need;
    return true;
  }
};

std::vector<uint32_t> Walk(FakeProducer& p) {
  std::vector<uint32_t> tids;
  auto w = WalkRing(p.ring.data(), kRing, p.tail, p.head, [&](const uint8_t* r, size_t size) {
    jdw_record_header h;
    memcpy(&h, r, sizeof(h));
    EXPECT_EQ(h.size, size);
    tids.push_back(h.tid);
  });
  EXPECT_TRUE(w.ok()) << w.status().message();
  if (w.ok()) {
    EXPECT_EQ(w->records, tids.size());
    p.tail = w->tail;
  }
  return tids;
}

TEST(KmodRing, WalksRecordsInOrder) {
  FakeProducer p;
  ASSERT_TRUE(p.Emit(JDW_EVENT_SYS_ENTER, 48, 1));
  ASSERT_TRUE(p.Emit(JDW_EVENT_SYS_EXIT, 48, 2));
  EXPECT_EQ(Walk(p), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(p.tail, 96u);
  EXPECT_TRUE(Walk(p).empty());
}

TEST(KmodRing, SkipsPaddingWithHeaderAtWrap) {
  FakeProducer p;
  for (uint32_t i = 0; i < 5; ++i) ASSERT_TRUE(p.Emit(JDW_EVENT_SYS_ENTER, 48, i));  // 240 bytes
  Walk(p);
  // 16 bytes left before the end: too small for a header, skipped blind.
  ASSERT_TRUE(p.Emit(JDW_EVENT_SCHED_WAKEUP, 40, 7));
  EXPECT_EQ(p.head, 240u + 16 + 40);
  EXPECT_EQ(Walk(p), (std::vector<uint32_t>{7}));
  // Now at offset 40: fill to 224 (32 left, room for a padding header).
  for (uint32_t i = 0; i < 4; ++i) ASSERT_TRUE(p.Emit(JDW_EVENT_SYS_ENTER, 48, 10 + i));
  for (uint32_t i = 0; i < 2; ++i) Walk(p);
  ASSERT_TRUE(p.Emit(JDW_EVENT_NET_XMIT, 96, 20));
  EXPECT_EQ(Walk(p), (std::vector<uint32_t>{20}));
  EXPECT_EQ(p.tail, p.head);
}

TEST(KmodRing, FullRingDropsInsteadOfOverwriting) {
  FakeProducer p;
  int accepted = 0;
  for (uint32_t i = 0; i < 10; ++i) accepted += p.Emit(JDW_EVENT_SYS_ENTER, 48, i);
  EXPECT_EQ(accepted, 5);
  EXPECT_EQ(Walk(p), (std::vector<uint32_t>{0, 1, 2, 3, 4}));
}

TEST(KmodRing, RefusesMalformedRecords) {
  FakeProducer p;
  ASSERT_TRUE(p.Emit(JDW_EVENT_SYS_ENTER, 48, 1));
  auto noop = [](const uint8_t*, size_t) {};
  // head inside a record: the record would be torn.
  EXPECT_FALSE(WalkRing(p.ring.data(), kRing, 0, 40, noop).ok());
  // a size that is not a multiple of 8
  p.ring[10] = 47;
  EXPECT_FALSE(WalkRing(p.ring.data(), kRing, 0, 48, noop).ok());
  // positions that cannot come from the module
  EXPECT_FALSE(WalkRing(p.ring.data(), kRing, 48, 0, noop).ok());
  EXPECT_FALSE(WalkRing(p.ring.data(), kRing, 0, kRing + 8, noop).ok());
}

TEST(KmodRing, TimesMappedToMonotonicIncludingBlockIssue) {
  trace::ClockMapping m;
  m.tsc_per_ns = 2.5;
  m.ref_tsc = 1'000'000;
  m.ref_mono_ns = 5'000'000'000ull;
  jdw_block_complete_record b{};
  b.hdr.type = JDW_EVENT_BLOCK_COMPLETE;
  b.hdr.size = sizeof(b);
  b.hdr.ts = 1'000'000 + 2'500;  // 1000 ns after the reference
  b.body.issue_ts = 1'000'000 - 25'000;  // 10 us before it
  RecordTimesToMono(reinterpret_cast<uint8_t*>(&b), sizeof(b), m);
  EXPECT_EQ(b.hdr.ts, 5'000'001'000ull);
  EXPECT_EQ(b.body.issue_ts, 4'999'990'000ull);

  b.hdr.ts = 1'000'000;
  b.body.issue_ts = 0;  // the issue was not seen: stays "unknown"
  RecordTimesToMono(reinterpret_cast<uint8_t*>(&b), sizeof(b), m);
  EXPECT_EQ(b.hdr.ts, 5'000'000'000ull);
  EXPECT_EQ(b.body.issue_ts, 0u);

  jdw_sys_enter_record s{};  // any other record: only its header time
  s.hdr.type = JDW_EVENT_SYS_ENTER;
  s.hdr.size = sizeof(s);
  s.hdr.ts = 1'000'000 + 25;
  s.body.arg = 1'000'000;
  RecordTimesToMono(reinterpret_cast<uint8_t*>(&s), sizeof(s), m);
  EXPECT_EQ(s.hdr.ts, 5'000'000'010ull);
  EXPECT_EQ(s.body.arg, 1'000'000u);
}

}  // namespace
}  // namespace jackdaw::capture
