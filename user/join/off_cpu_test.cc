#include "join/off_cpu.h"

#include <random>

#include <gtest/gtest.h>

#include "jackdaw/abi.h"
#include "join/request_builder.h"

namespace jackdaw::join {
namespace {

// Sets built as the extractor builds them (events in timestamp order, one
// off-CPU period per event that had one), turned into requests with and
// without settling: the totals must be the same.
class OffCpuTest : public ::testing::Test {
 protected:
  std::vector<std::string> syscalls_{"read"};
  std::vector<std::string> probes_{"app:a"};
  SymbolTable symbols_{syscalls_, probes_};
  trace::ClockMapping clock_{};
  RequestBuilder builder_{symbols_, clock_};
  uint64_t seq_ = 0;
  std::mt19937_64 rng_{42};

  uint64_t Rand(uint64_t n) { return rng_() % n; }

  // Appends an event at `ts` to `s`; with an off-CPU period ending before
  // it (some reaching back `reach` before it, some with early periods).
  void Append(Set& s, uint64_t ts, uint64_t reach) {
    Ev e{};
    e.seq = ++seq_;
    e.ts = ts;
    e.tid = 1 + static_cast<uint32_t>(Rand(3));
    e.tgid = 100;
    e.record_type = JDW_EVENT_USDT;
    jdw_usdt u{};
    e.symbol = symbols_.Of(schema::EventKind::kUsdt, JDW_EVENT_USDT, reinterpret_cast<const uint8_t*>(&u), false);
    if (Rand(4) != 0) {
      OffCpu o{};
      const uint64_t len = 1 + Rand(reach);
      o.off_from = ts > len ? ts - len : 0;
      o.wake = o.off_from + Rand(len);
      o.run = ts;
      o.reason = static_cast<uint8_t>(Rand(kBlockReasons));
      if (Rand(3) == 0) {
        o.early_from = o.off_from > 50 ? o.off_from - Rand(50) : 1;
        o.early_runq = Rand(10);
        for (auto& b : o.early_blocked) b = Rand(10);
      }
      s.offs.push_back(o);
      e.off = static_cast<uint32_t>(s.offs.size());
    }
    s.events.push_back(e);
    s.first_ts = s.first_ts ? std::min(s.first_ts, ts) : ts;
    s.last_ts = std::max(s.last_ts, ts);
  }

  model::ResourceTotals Totals(Set s) {
    s.seed = true;
    s.seed_tgid = 100;
    RequestBuilder::Charged ch;
    return builder_.Build(s, false, 1, nullptr, &ch).totals;
  }

  static void ExpectSameOffCpu(const model::ResourceTotals& a, const model::ResourceTotals& b) {
    EXPECT_EQ(a.runq_wait_ns, b.runq_wait_ns);
    EXPECT_EQ(a.blocked_ns, b.blocked_ns);
    EXPECT_EQ(a.blocked_disk_ns, b.blocked_disk_ns);
    EXPECT_EQ(a.blocked_net_ns, b.blocked_net_ns);
    EXPECT_EQ(a.blocked_futex_ns, b.blocked_futex_ns);
    EXPECT_EQ(a.blocked_pipe_ns, b.blocked_pipe_ns);
    EXPECT_EQ(a.blocked_other_ns, b.blocked_other_ns);
  }
};

TEST_F(OffCpuTest, SettlingKeepsTheTotalsAndBoundsTheList) {
  Set plain;
  uint64_t ts = 1000;
  for (int i = 0; i < 20000; i++) Append(plain, ts += 1 + Rand(100), 400);
  // The same events arriving one by one, settled as the extractor does.
  Set settled;
  size_t max_offs = 0;
  for (const Ev& pe : plain.events) {
    Ev e = pe;
    if (e.off) {
      settled.offs.push_back(plain.offs[e.off - 1]);
      e.off = static_cast<uint32_t>(settled.offs.size());
    }
    settled.events.push_back(e);
    if (settled.offs.size() >= std::max<size_t>(settled.settle_at, 64)) SettleOffCpu(settled, 64);
    max_offs = std::max(max_offs, settled.offs.size());
  }
  settled.first_ts = plain.first_ts;
  settled.last_ts = plain.last_ts;
  EXPECT_GT(plain.offs.size(), 10000u);
  // Only the periods reaching before the first event stay unsettled.
  EXPECT_LE(max_offs, 64u);
  ExpectSameOffCpu(Totals(plain), Totals(settled));
}

TEST_F(OffCpuTest, AUnionWithAnEarlierSetClipsAlike) {
  // A long set settled while open, then merged (as IntervalJoin::Union
  // does) with a set that began earlier: the request starts earlier, and
  // periods that reached before the long set's first event now count more.
  Set early, plain, settled;
  seq_ = 0;
  for (uint64_t ts = 100; ts < 900; ts += 37) Append(early, ts, 300);
  for (uint64_t ts = 1000; ts < 60000; ts += 7) Append(plain, ts, 3000);
  settled = plain;
  SettleOffCpu(settled, 16);
  EXPECT_LT(settled.offs.size(), plain.offs.size() / 10);
  auto merge = [&](Set big, const Set& small) {
    const auto base = static_cast<uint32_t>(big.offs.size());
    for (Ev e : small.events) {
      if (e.off) e.off += base;
      big.events.push_back(e);
    }
    big.offs.insert(big.offs.end(), small.offs.begin(), small.offs.end());
    big.settled.Add(small.settled);
    big.first_ts = std::min(big.first_ts, small.first_ts);
    return big;
  };
  ExpectSameOffCpu(Totals(plain), Totals(settled));
  ExpectSameOffCpu(Totals(merge(plain, early)), Totals(merge(settled, early)));
  // The clipped part did change with the earlier start (the test means
  // something): the long set alone charges less than merged.
  EXPECT_LT(Totals(plain).blocked_ns + Totals(early).blocked_ns, Totals(merge(plain, early)).blocked_ns);
}

TEST_F(OffCpuTest, PeriodsBeforeTheFirstEventStay) {
  OffCpu o{};
  o.off_from = 90;
  o.wake = 95;
  o.run = 100;
  EXPECT_FALSE(OffCpuSettled(o, 100));  // reaches before the set's first event
  o.off_from = 100;
  o.wake = 100;
  o.run = 120;
  EXPECT_TRUE(OffCpuSettled(o, 100));
  o.early_from = 50;
  EXPECT_FALSE(OffCpuSettled(o, 100));  // its early periods would count after a union
  o.early_from = 0;
  o.reason = kBlockReasons;
  EXPECT_FALSE(OffCpuSettled(o, 100));  // a reason the sums do not index
  OffCpuSums sums;
  o.reason = 2;
  o.off_from = 100;
  o.wake = 110;
  o.run = 130;
  AddClippedOffCpu(o, 105, &sums);
  EXPECT_EQ(sums.blocked[2], 5u);
  EXPECT_EQ(sums.runq, 20u);
}

}  // namespace
}  // namespace jackdaw::join
