// Windowed merge of per-CPU record streams into one global timestamp order
// (Magpie §3.4: "reorderings are performed using a priority queue, and add
// approximately 1 second of pipeline delay"; perfetto's TraceSorter).
//
// Algorithm. Records are kept in a few sorted runs (FIFOs), patience-sorting
// style: a record extends the run whose tail is the latest one not after it;
// if none fits it starts a new run. Globally sorted input (a trace file's
// per-CPU chunks merged by timestamp) is one run, so push and pop are O(1);
// per-CPU streams drained buffer by buffer give one run per CPU. The global
// order is a merge of the run heads (a scan: there are few). Derived entries
// (pushed with a tag, at a timestamp of the caller's choosing: the join
// places a block request's start back at its issue time, earlier than the
// completion record it comes from), and records once there are more than
// kMaxRuns runs, go to a min-heap that takes part in the merge. The sorter
// never looks inside a record: it orders (ts, record, tag) entries.
//
// Window. The watermark is the largest timestamp pushed so far. A record is
// released by Pop() only once watermark - ts >= window: anything that arrives
// later can still be placed before it as long as it is no more than `window`
// older than the newest record. Flush() (end of input) releases everything.
//
// Invariants.
//  - Pop() returns records in non-decreasing ts; records of one source keep
//    their arrival order; ties between sources break deterministically for
//    a given input.
//  - An entry whose ts is below the last ts already returned is "late": it is
//    counted (stats().late_records / late_derived), refused (Push() returns
//    false) and dropped, never emitted out of order, because the join
//    downstream assumes order.
//  - At equal ts a derived entry comes before a record: it stands for
//    something that began then.
//  - Pointers are not copied: a record passed to Push() must stay valid until
//    Pop() has returned it (trace files are mmap-ed; the live path keeps its
//    buffers until the window has passed).
//  - Memory is O(records inside the window), independent of trace length.
#pragma once

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <vector>

#include "jackdaw/abi.h"

namespace jackdaw::reorder {

struct SortedRecord {
  uint64_t ts = 0;  // record timebase: the record's own, or a derived entry's
  const jdw_record_header* rec = nullptr;
  // 0: the record itself. Otherwise the caller's tag of an entry it derived
  // from `rec`; the sorter does not interpret it.
  uint8_t tag = 0;
};

struct ReorderStats {
  uint64_t pushed = 0;
  uint64_t emitted = 0;
  uint64_t late_records = 0;     // arrived after their place was passed: dropped
  uint64_t late_derived = 0;     // derived entries whose ts was already passed: dropped
  uint64_t derived = 0;          // derived entries queued
  uint64_t out_of_order_in_cpu = 0;  // not late, but too disordered for the runs: heap-placed
  uint64_t max_queued = 0;
};

class Reorderer {
 public:
  struct Options {
    uint64_t window = 1'000'000'000;  // in record timebase units (ns for BPF traces)
  };

  Reorderer();
  explicit Reorderer(Options opts);

  // A record at its own timestamp. False if it is late (dropped).
  bool Push(const jdw_record_header* rec) { return Push(rec->ts, rec, 0); }
  // An entry at `ts` for `rec`, tagged (tag != 0: derived from `rec`, goes
  // before records of the same ts). False if it is late (dropped).
  bool Push(uint64_t ts, const jdw_record_header* rec, uint8_t tag) {
    // Inline: a record that extends the run the previous one extended, what
    // sorted input does every time. It cannot be late (the run's tail is
    // queued, so not before the last record returned) and cannot lower the
    // queued minimum (the tail is at or above it).
    if (tag == 0 && last_run_ != UINT32_MAX) {
      Fifo& f = fifos_[last_run_];
      // (At its tail's time only from the same or a higher CPU: a run
      // stays in (ts, cpu) order, see Insert().)
      if (!f.empty() && (f.back().ts < ts || (f.back().ts == ts && f.back().rec->cpu <= rec->cpu))) {
        stats_.pushed++;
        watermark_ = std::max(watermark_, ts);
        order_++;
        if (++queued_ > stats_.max_queued) stats_.max_queued = queued_;
        f.push_back(RunEntry{ts, rec});
        return true;
      }
    }
    return PushSlow(ts, rec, tag);
  }
  // Next record in global order, if one is ready (see Window above).
  bool Pop(SortedRecord* out) {
    // The refusal is inline: callers drain after every push, so every other
    // call ends here (min_queued_ts_ is a lower bound of every queued ts: if
    // even it is inside the window, nothing is ready).
    if (queued_ == 0) return false;
    if (!flushing_ && (watermark_ < opts_.window || min_queued_ts_ > watermark_ - opts_.window)) return false;
    // One run whose head comes before every derived entry (sorted input;
    // a derived entry waits in the heap for the window like the records):
    // the head is the minimum, and it is ready (min_queued_ts_ is exact
    // whenever the refusal above does not refuse: PopReady() and the
    // inline Push() keep it so).
    if (active_.size() == 1) {
      Fifo& f = fifos_[active_[0]];
      if (f.size() > 1 && f.front().ts == min_queued_ts_ && (misc_.empty() || misc_.front().ts > min_queued_ts_)) {
        const RunEntry e = f.front();
        f.pop_front();
        *out = SortedRecord{e.ts, e.rec, 0};
        min_queued_ts_ = misc_.empty() ? f.front().ts : std::min(f.front().ts, misc_.front().ts);
        queued_--;
        stats_.emitted++;
        last_emitted_ = e.ts;
        emitted_any_ = true;
        return true;
      }
    }
    return PopReady(out);
  }
  // End of input: every queued record becomes ready.
  void Flush() { flushing_ = true; }
  // No record older than `ts` is still to come (a live source's clock has
  // passed it): records a window older become ready though no newer record
  // arrived, as when the traced processes fall idle.
  void AdvanceTo(uint64_t ts) { watermark_ = std::max(watermark_, ts); }

  size_t queued() const { return queued_; }
  const ReorderStats& stats() const { return stats_; }

 private:
  struct Entry {
    uint64_t ts;
    const jdw_record_header* rec;
    uint64_t order;  // arrival sequence (tie-break within the misc heap)
    uint8_t tag;
  };
  // A run's entry: runs hold real records only (derived entries and
  // stragglers go to the misc heap), and in arrival order, so neither the
  // tag nor the sequence number is needed. Half an Entry: the runs hold a
  // whole window of records, and are streamed through the cache.
  struct RunEntry {
    uint64_t ts;
    const jdw_record_header* rec;
  };
  // FIFO of one CPU's records; power-of-two ring.
  class Fifo {
   public:
    bool empty() const { return size_ == 0; }
    size_t size() const { return size_; }
    const RunEntry& front() const { return buf_[head_]; }
    const RunEntry& back() const { return buf_[(head_ + size_ - 1) & (buf_.size() - 1)]; }
    // Inline: once per record; growing is the rare case.
    void push_back(const RunEntry& e) {
      if (size_ == buf_.size()) Grow();
      buf_[(head_ + size_) & (buf_.size() - 1)] = e;
      size_++;
    }
    void pop_front() {
      head_ = (head_ + 1) & (buf_.size() - 1);
      size_--;
    }

   private:
    void Grow();
    std::vector<RunEntry> buf_;
    size_t head_ = 0, size_ = 0;
  };
  static bool MiscLater(const Entry& a, const Entry& b);
  bool PushSlow(uint64_t ts, const jdw_record_header* rec, uint8_t tag);
  void Insert(const Entry& e);
  void PushMisc(const Entry& e);
  uint32_t MinFifo(uint64_t* second_ts) const;
  // Pop() once the cheap refusal has not refused.
  bool PopReady(SortedRecord* out);

  Options opts_;
  static constexpr size_t kMaxRuns = 64;
  std::vector<Fifo> fifos_;       // runs, reused
  std::vector<uint32_t> active_;  // non-empty runs
  std::vector<uint32_t> free_runs_;
  uint32_t last_run_ = UINT32_MAX;  // the run the previous record extended
  std::vector<Entry> misc_;       // min-heap of derived and straggler entries
  uint64_t watermark_ = 0;
  uint64_t min_queued_ts_ = UINT64_MAX;  // lower bound of queued timestamps
  uint64_t last_emitted_ = 0;
  bool emitted_any_ = false;
  bool flushing_ = false;
  uint64_t order_ = 0;
  size_t queued_ = 0;
  ReorderStats stats_;
};

}  // namespace jackdaw::reorder
