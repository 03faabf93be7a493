#include "reorder/reorderer.h"

#include <algorithm>

namespace jackdaw::reorder {
void Reorderer::Fifo::Grow() {
  std::vector<RunEntry> bigger(buf_.empty() ? 64 : buf_.size() * 2);
  for (size_t i = 0; i < size_; i++) bigger[i] = buf_[(head_ + i) & (buf_.size() - 1)];
  buf_.swap(bigger);
  head_ = 0;
}

Reorderer::Reorderer() : Reorderer(Options{}) {}
Reorderer::Reorderer(Options opts) : opts_(opts) {}

bool Reorderer::MiscLater(const Entry& a, const Entry& b) { return a.ts != b.ts ? a.ts > b.ts : a.order > b.order; }

void Reorderer::PushMisc(const Entry& e) {
  misc_.push_back(e);
  std::push_heap(misc_.begin(), misc_.end(), MiscLater);
}

uint32_t Reorderer::MinFifo(uint64_t* second_ts) const {
  // A scan of the active run heads (there are few: one per interleaved
  // source). Also returns the smallest head ts among the other runs.
  uint32_t best = UINT32_MAX;
  uint64_t best_ts = 0;
  uint64_t second = UINT64_MAX;
  // Equal times go to the lower CPU: the order then depends on the records,
  // not on how they were delivered (a trace's chunks, live's drains), so
  // analyze and live join the same records the same way.
  for (uint32_t src : active_) {
    const uint64_t ts = fifos_[src].front().ts;
    if (best == UINT32_MAX || ts < best_ts ||
        (ts == best_ts && fifos_[src].front().rec->cpu < fifos_[best].front().rec->cpu)) {
      if (best != UINT32_MAX) second = std::min(second, best_ts);
      best = src;
      best_ts = ts;
    } else {
      second = std::min(second, ts);
    }
  }
  *second_ts = second;
  return best;
}

void Reorderer::Insert(const Entry& e) {
  queued_++;
  if (e.ts < min_queued_ts_) min_queued_ts_ = e.ts;
  stats_.max_queued = std::max<uint64_t>(stats_.max_queued, queued_);
  if (e.tag) {
    PushMisc(e);
    return;
  }
  // A run stays in (ts, cpu) order: a record at its tail's time but of a
  // lower CPU starts or joins another run (MinFifo breaks the tie).
  const auto fits = [&](const RunEntry& tail) {
    return tail.ts < e.ts || (tail.ts == e.ts && tail.rec->cpu <= e.rec->cpu);
  };
  // Sorted input (the common case) keeps extending the run it extended last.
  if (last_run_ != UINT32_MAX && !fifos_[last_run_].empty() && fits(fifos_[last_run_].back())) {
    fifos_[last_run_].push_back(RunEntry{e.ts, e.rec});
    return;
  }
  // Otherwise the run whose tail is the latest one not after e (patience
  // sorting), so interleaved sorted sources (CPUs drained chunk by chunk)
  // each keep a run of their own.
  uint32_t best = UINT32_MAX;
  for (uint32_t r : active_) {
    const uint64_t tail = fifos_[r].back().ts;
    if (fits(fifos_[r].back()) && (best == UINT32_MAX || tail > fifos_[best].back().ts)) best = r;
  }
  if (best == UINT32_MAX) {
    if (active_.size() >= kMaxRuns) {
      // Too disordered for runs: the heap places it.
      stats_.out_of_order_in_cpu++;
      PushMisc(e);
      return;
    }
    if (free_runs_.empty()) {
      free_runs_.push_back(static_cast<uint32_t>(fifos_.size()));
      fifos_.emplace_back();
    }
    best = free_runs_.back();
    free_runs_.pop_back();
    active_.push_back(best);
  }
  fifos_[best].push_back(RunEntry{e.ts, e.rec});
  last_run_ = best;
}

bool Reorderer::PushSlow(uint64_t ts, const jdw_record_header* rec, uint8_t tag) {
  stats_.pushed++;
  if (emitted_any_ && ts < last_emitted_) {
    (tag ? stats_.late_derived : stats_.late_records)++;
    return false;
  }
  watermark_ = std::max(watermark_, ts);
  if (tag) stats_.derived++;
  Insert(Entry{ts, rec, order_++, tag});
  return true;
}

bool Reorderer::PopReady(SortedRecord* out) {
  // One run is the common case (sorted input: a trace's CPUs merged by
  // timestamp, a live drain merged likewise; the heap holds the few
  // derived entries): no scan of run heads.
  uint64_t other_run_ts = UINT64_MAX;  // smallest head of the other runs
  const uint32_t run = active_.size() == 1 ? active_[0] : MinFifo(&other_run_ts);
  const uint64_t run_ts = run != UINT32_MAX ? fifos_[run].front().ts : 0;
  // At equal ts the misc entry (a derived one, or a straggler) goes first:
  // a derived entry precedes whatever else happened at its time.
  const bool from_misc = run == UINT32_MAX || (!misc_.empty() && misc_.front().ts <= run_ts);
  const uint64_t ts = from_misc ? misc_.front().ts : run_ts;
  if (!flushing_ && (watermark_ < opts_.window || ts > watermark_ - opts_.window)) {
    min_queued_ts_ = ts;  // the exact minimum: a tighter bound for next time
    return false;
  }
  if (from_misc) {
    const Entry e = misc_.front();
    std::pop_heap(misc_.begin(), misc_.end(), MiscLater);
    misc_.pop_back();
    *out = SortedRecord{e.ts, e.rec, e.tag};
    uint64_t m = run != UINT32_MAX ? run_ts : UINT64_MAX;
    if (!misc_.empty()) m = std::min(m, misc_.front().ts);
    min_queued_ts_ = m;
  } else {
    Fifo& f = fifos_[run];
    const RunEntry e = f.front();
    f.pop_front();
    *out = SortedRecord{e.ts, e.rec, 0};
    if (f.empty()) {
      active_.erase(std::find(active_.begin(), active_.end(), run));
      free_runs_.push_back(run);
      if (last_run_ == run) last_run_ = UINT32_MAX;
    }
    // Exact minimum of what is left, so the next Pop() can refuse without
    // scanning.
    uint64_t m = other_run_ts;
    if (!f.empty()) m = std::min(m, f.front().ts);
    if (!misc_.empty()) m = std::min(m, misc_.front().ts);
    min_queued_ts_ = m;
  }
  queued_--;
  stats_.emitted++;
  last_emitted_ = out->ts;
  emitted_any_ = true;
  return true;
}

}  // namespace jackdaw::reorder
