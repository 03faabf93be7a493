// Extractor::Impl: the capture's located losses (see extractor_impl.h).
#include "join/extractor_impl.h"

#include <string>
#include <vector>

namespace jackdaw::join {

uint32_t Extractor::Impl::NeededGroups() const {
  // Run and off-CPU time come from the sched records, whatever the schema
  // matches; the message rule reads syscalls and packets.
  uint32_t groups = 1u << JDW_GROUP_SCHED;
  if (messages_on()) groups |= (1u << JDW_GROUP_SYSCALL) | (1u << JDW_GROUP_NET);
  for (const schema::EventDef& d : schema_.events) {
    switch (d.kind) {
      case schema::EventKind::kSwitchIn:
      case schema::EventKind::kSwitchOut:
        break;
      case schema::EventKind::kIoStart:
        groups |= 1u << JDW_GROUP_BLOCK;
        break;
      case schema::EventKind::kUsdt:
        groups |= 1u << JDW_GROUP_APP;
        break;
      case schema::EventKind::kRecord:
        if (const uint32_t g = GroupOfRecordType(d.record_type); g < 32) groups |= 1u << g;
        break;
    }
  }
  return groups;
}

void Extractor::Impl::MarkIfIncomplete(model::Request& r) const {
  if (needed_loss_.empty()) return;
  uint64_t checked = 0;  // CPUs already asked about (the first 64)
  for (const model::RequestEvent& e : r.events) {
    if (e.cpu < 64) {
      if (checked >> e.cpu & 1) continue;
      checked |= uint64_t{1} << e.cpu;
    }
    if (needed_loss_.Touches(e.cpu, r.start_ns, r.end_ns)) {
      r.incomplete = true;
      r.incomplete_reason = "records lost on cpu " + std::to_string(e.cpu) + " while it ran";
      return;
    }
  }
}

void Extractor::Impl::AddLossIntervals(const std::vector<trace::LossInterval>& add) {
  if (add.empty()) return;
  // Only what a set still open can reach is kept: a live session losing
  // records drain after drain would otherwise rebuild ever larger maps.
  const uint64_t horizon = now_ > max_age_ns_ ? now_ - max_age_ns_ : 0;
  std::erase_if(loss_intervals_, [&](const trace::LossInterval& l) { return l.to_ns < horizon; });
  loss_intervals_.insert(loss_intervals_.end(), add.begin(), add.end());
  needed_loss_ = LossMap(loss_intervals_, NeededGroups());
  sched_loss_ = LossMap(loss_intervals_, 1u << JDW_GROUP_SCHED);
}

void Extractor::Impl::NoteUnlocatedLosses(const trace::TraceMeta& meta) {
  const uint64_t lost = meta.losses.total();
  if (!lost || meta.losses_located) return;
  stats_.warnings.push_back("the trace counts " + std::to_string(lost) +
                            " lost records but not when they were lost (recorded before loss intervals): "
                            "no request can be marked incomplete; record again to locate them");
}

void Extractor::Impl::LeftOutOfSample(Thread* t, uint64_t ts, const jdw_sample_gap& gap) {
  stats_.sample_gaps++;
  stats_.events_unsampled += gap.skipped;
  // Its run up to the last left-out call, and what it waited for in
  // between, were that connection's: never the next recorded request's.
  threads_.ChargeRun(t, ts);
  threads_.Account(t).unsampled_ns += t->cpu_pending;
  t->cpu_pending = 0;
  t->has_off = false;
  t->wake_edge = false;
  t->life_sk = 0;
  // It read or wrote another connection since: it no longer serves the
  // exchange it last served in the trace.
  t->serving_conn = t->serving_msg = 0;
  t->last_sock = 0;
  t->after_sample_gap = true;
}

}  // namespace jackdaw::join
