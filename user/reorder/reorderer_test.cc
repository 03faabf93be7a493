#include "reorder/reorderer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <random>
#include <set>
#include <tuple>
#include <vector>

namespace jackdaw::reorder {
namespace {

// Records with stable addresses.
class Records {
 public:
  const jdw_record_header* Add(uint64_t ts, uint16_t cpu) {
    jdw_record_header h{};
    h.ts = ts;
    h.cpu = cpu;
    h.type = JDW_EVENT_SYS_ENTER;
    h.size = sizeof(jdw_sys_enter_record);
    jdw_sys_enter_record r{};
    r.hdr = h;
    plain_.push_back(r);
    return &plain_.back().hdr;
  }
  const jdw_record_header* AddCompletion(uint64_t ts, uint16_t cpu, uint64_t issue_ts) {
    jdw_block_complete_record r{};
    r.hdr.ts = ts;
    r.hdr.cpu = cpu;
    r.hdr.type = JDW_EVENT_BLOCK_COMPLETE;
    r.hdr.size = sizeof(r);
    r.body.issue_ts = issue_ts;
    r.body.bytes = 4096;
    block_.push_back(r);
    return &block_.back().hdr;
  }

 private:
  std::deque<jdw_sys_enter_record> plain_;
  std::deque<jdw_block_complete_record> block_;
};

std::vector<SortedRecord> Drain(Reorderer& r) {
  std::vector<SortedRecord> out;
  SortedRecord s;
  while (r.Pop(&s)) out.push_back(s);
  return out;
}

TEST(Reorderer, MergesPerCpuStreamsInTimestampOrder) {
  Records recs;
  Reorderer r(Reorderer::Options{100});
  // CPU 0 then CPU 1, each in order, overlapping in time.
  for (uint64_t t : {10, 30, 50}) r.Push(recs.Add(t, 0));
  for (uint64_t t : {20, 40, 60}) r.Push(recs.Add(t, 1));
  EXPECT_TRUE(Drain(r).empty());  // everything is inside the window
  r.Flush();
  std::vector<uint64_t> ts;
  for (const SortedRecord& s : Drain(r)) ts.push_back(s.ts);
  EXPECT_EQ(ts, (std::vector<uint64_t>{10, 20, 30, 40, 50, 60}));
  EXPECT_EQ(r.stats().late_records, 0u);
}

// Records of two CPUs at the same nanosecond come out lower CPU first,
// however they were delivered: a trace's chunks (CPU 1's first here) and a
// live drain give the join one order.
TEST(Reorderer, EqualTimesGoToTheLowerCpuWhateverTheDeliveryOrder) {
  for (bool cpu1_first : {true, false}) {
    Records recs;
    Reorderer r(Reorderer::Options{100});
    const jdw_record_header* a = recs.Add(10, 1);
    const jdw_record_header* b = recs.Add(10, 0);
    const jdw_record_header* c = recs.Add(20, 1);
    const jdw_record_header* d = recs.Add(20, 0);
    if (cpu1_first) {
      r.Push(a), r.Push(b), r.Push(c), r.Push(d);  // interleaved: CPU 1 first at each time
    } else {
      r.Push(b), r.Push(d), r.Push(a), r.Push(c);
    }
    r.Flush();
    std::vector<uint16_t> cpus;
    for (const SortedRecord& s : Drain(r)) cpus.push_back(s.rec->cpu);
    EXPECT_EQ(cpus, (std::vector<uint16_t>{0, 1, 0, 1})) << (cpu1_first ? "CPU 1 delivered first" : "CPU 0 first");
  }
}

TEST(Reorderer, ReleasesOnlyRecordsOlderThanTheWindow) {
  Records recs;
  Reorderer r(Reorderer::Options{100});
  r.Push(recs.Add(1000, 0));
  r.Push(recs.Add(1050, 1));
  EXPECT_TRUE(Drain(r).empty());
  r.Push(recs.Add(1100, 0));  // watermark 1100: 1000 may go
  auto out = Drain(r);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].ts, 1000u);
  r.Push(recs.Add(1160, 1));
  out = Drain(r);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].ts, 1050u);
  EXPECT_EQ(r.queued(), 2u);
}

TEST(Reorderer, LateRecordsAreCountedAndDropped) {
  Records recs;
  Reorderer r(Reorderer::Options{100});
  r.Push(recs.Add(1000, 0));
  r.Push(recs.Add(2000, 0));
  auto out = Drain(r);
  ASSERT_EQ(out.size(), 1u);                // 1000 released
  r.Push(recs.Add(999, 1));                 // behind what was released: late
  r.Push(recs.Add(1950, 1));                // within the window: fine
  r.Flush();
  out = Drain(r);
  std::vector<uint64_t> ts;
  for (const SortedRecord& s : out) ts.push_back(s.ts);
  EXPECT_EQ(ts, (std::vector<uint64_t>{1950, 2000}));
  EXPECT_EQ(r.stats().late_records, 1u);
}

TEST(Reorderer, OutOfOrderWithinOneSourceIsPlacedCorrectly) {
  Records recs;
  Reorderer r(Reorderer::Options{1000});
  r.Push(recs.Add(100, 0));
  r.Push(recs.Add(300, 0));
  r.Push(recs.Add(200, 0));  // breaks CPU 0's order
  r.Flush();
  std::vector<uint64_t> ts;
  for (const SortedRecord& s : Drain(r)) ts.push_back(s.ts);
  EXPECT_EQ(ts, (std::vector<uint64_t>{100, 200, 300}));
}

TEST(Reorderer, HeavilyShuffledInputStillComesOutSorted) {
  // Random order inside the window: more disorder than runs can absorb,
  // the rest is placed by the heap.
  std::mt19937_64 rng(3);
  Records recs;
  Reorderer r(Reorderer::Options{1'000'000});
  std::vector<uint64_t> in;
  for (uint64_t i = 0; i < 5000; i++) in.push_back(1000 + i * 7);
  std::shuffle(in.begin(), in.end(), rng);
  for (uint64_t t : in) r.Push(recs.Add(t, static_cast<uint16_t>(t % 3)));
  r.Flush();
  auto out = Drain(r);
  ASSERT_EQ(out.size(), in.size());
  EXPECT_TRUE(std::is_sorted(out.begin(), out.end(),
                             [](const SortedRecord& a, const SortedRecord& b) { return a.ts < b.ts; }));
  EXPECT_GT(r.stats().out_of_order_in_cpu, 0u);
}

TEST(Reorderer, DerivedEntryIsPlacedAtItsOwnTimeAndKeepsItsTag) {
  Records recs;
  Reorderer r(Reorderer::Options{10'000});
  constexpr uint8_t kTag = 7;
  r.Push(recs.Add(100, 0));
  r.Push(recs.Add(300, 1));
  const jdw_record_header* bc = recs.AddCompletion(900, 0, 300);
  EXPECT_TRUE(r.Push(bc));
  EXPECT_TRUE(r.Push(300, bc, kTag));  // e.g. a block request's start, at its issue time
  r.Flush();
  auto out = Drain(r);
  ASSERT_EQ(out.size(), 4u);
  // At equal ts the derived entry goes before the record.
  EXPECT_EQ(out[1].ts, 300u);
  EXPECT_EQ(out[1].tag, kTag);
  EXPECT_EQ(out[1].rec, bc);
  EXPECT_EQ(out[2].ts, 300u);
  EXPECT_EQ(out[2].tag, 0);
  EXPECT_EQ(out[3].ts, 900u);
  EXPECT_EQ(out[3].tag, 0);
  EXPECT_EQ(out[3].rec, bc);
  EXPECT_EQ(r.stats().derived, 1u);
}

TEST(Reorderer, LateEntriesAreRefusedAndCountedByKind) {
  Records recs;
  Reorderer r(Reorderer::Options{100});
  r.Push(recs.Add(100, 0));
  r.Push(recs.Add(1000, 0));
  Drain(r);                                           // 100 released
  const jdw_record_header* bc = recs.AddCompletion(1001, 0, 50);
  EXPECT_TRUE(r.Push(bc));
  EXPECT_FALSE(r.Push(50, bc, 1));                    // before 100: late
  EXPECT_FALSE(r.Push(recs.Add(99, 1)));              // late too
  r.Flush();
  auto out = Drain(r);
  EXPECT_EQ(out.size(), 2u);
  EXPECT_EQ(r.stats().late_derived, 1u);
  EXPECT_EQ(r.stats().late_records, 1u);
  EXPECT_EQ(r.stats().derived, 0u);
}

TEST(Reorderer, SeededStressJitterWithinWindowLosesNothing) {
  std::mt19937_64 rng(7);
  Records recs;
  constexpr uint64_t kWindow = 5000;
  Reorderer r(Reorderer::Options{kWindow});
  // 8 CPUs, each in order; delivery interleaves them with a lag < window.
  constexpr int kCpus = 8, kPerCpu = 20000;
  std::vector<std::vector<const jdw_record_header*>> per_cpu(kCpus);
  for (int c = 0; c < kCpus; c++) {
    uint64_t t = rng() % 100;
    for (int i = 0; i < kPerCpu; i++) {
      t += 1 + rng() % 50;
      per_cpu[c].push_back(recs.Add(t, static_cast<uint16_t>(c)));
    }
  }
  std::vector<size_t> pos(kCpus, 0);
  std::vector<SortedRecord> out;
  size_t remaining = kCpus * kPerCpu;
  while (remaining) {
    // Deliver from the CPU whose next record is oldest, but sometimes hold a
    // CPU back (a buffer drained late), bounded so the lag stays < window.
    int best = -1;
    for (int c = 0; c < kCpus; c++) {
      if (pos[c] == per_cpu[c].size()) continue;
      if (best < 0 || per_cpu[c][pos[c]]->ts < per_cpu[best][pos[best]]->ts) best = c;
    }
    int pick = best;
    const int alt = static_cast<int>(rng() % kCpus);
    if (pos[alt] < per_cpu[alt].size() && per_cpu[alt][pos[alt]]->ts < per_cpu[best][pos[best]]->ts + kWindow / 2)
      pick = alt;
    r.Push(per_cpu[pick][pos[pick]++]);
    remaining--;
    SortedRecord s;
    while (r.Pop(&s)) out.push_back(s);
  }
  r.Flush();
  SortedRecord s;
  while (r.Pop(&s)) out.push_back(s);
  EXPECT_EQ(r.stats().late_records, 0u);
  ASSERT_EQ(out.size(), size_t{kCpus} * kPerCpu);
  EXPECT_TRUE(std::is_sorted(out.begin(), out.end(),
                             [](const SortedRecord& a, const SortedRecord& b) { return a.ts < b.ts; }));
  EXPECT_LT(r.stats().max_queued, size_t{kCpus} * kPerCpu / 4);  // bounded by the window, not the input
}

// Sorted records (the inline push and pop) with derived entries and small
// stragglers mixed in (the general path): every entry comes out once, in
// timestamp order, and the stats add up (analyze's output on real
// recordings, compared byte for byte, checks the exact order).
TEST(Reorderer, SortedRunWithDerivedEntriesAndStragglersKeepsOrder) {
  std::mt19937_64 rng(11);
  Records recs;
  constexpr uint64_t kWindow = 1000;
  Reorderer r(Reorderer::Options{kWindow});
  std::multiset<std::tuple<uint64_t, const jdw_record_header*, uint8_t>> pushed;
  std::vector<SortedRecord> out;
  uint64_t t = 5000;
  for (size_t i = 0; i < 20000; i++) {
    t += rng() % 4;  // equal timestamps are common
    uint64_t ts = t;
    if (rng() % 50 == 0) ts -= rng() % (kWindow / 2);  // a straggler, inside the window
    const jdw_record_header* h = recs.Add(ts, 0);
    ASSERT_TRUE(r.Push(h));
    pushed.emplace(ts, h, 0);
    if (rng() % 20 == 0) {
      const uint64_t d = t - rng() % (kWindow / 2);
      ASSERT_TRUE(r.Push(d, h, 3));
      pushed.emplace(d, h, 3);
    }
    SortedRecord s;
    while (r.Pop(&s)) out.push_back(s);
  }
  r.Flush();
  SortedRecord s;
  while (r.Pop(&s)) out.push_back(s);
  ASSERT_EQ(out.size(), pushed.size());
  EXPECT_TRUE(std::is_sorted(out.begin(), out.end(),
                             [](const SortedRecord& a, const SortedRecord& b) { return a.ts < b.ts; }));
  std::multiset<std::tuple<uint64_t, const jdw_record_header*, uint8_t>> got;
  for (const SortedRecord& o : out) got.emplace(o.ts, o.rec, o.tag);
  EXPECT_TRUE(got == pushed);
  EXPECT_EQ(r.stats().pushed, pushed.size());
  EXPECT_EQ(r.stats().emitted, pushed.size());
  EXPECT_EQ(r.stats().late_records + r.stats().late_derived, 0u);
  EXPECT_EQ(r.queued(), 0u);
}

}  // namespace
}  // namespace jackdaw::reorder
