#include "join/thread_tracker.h"

#include <algorithm>

namespace jackdaw::join {

Thread* ThreadTracker::LookUp(uint32_t tid, uint32_t tgid, uint64_t ts, bool running_now) {
  CacheEntry& ce = cache_[tid & kCacheMask];
  bool inserted;
  uint32_t* idx = index_.FindOrInsert(tid, &inserted);
  if (inserted) {
    if (!free_.empty()) {
      *idx = free_.back();
      free_.pop_back();
      threads_[*idx] = Thread{};
    } else {
      *idx = static_cast<uint32_t>(threads_.size());
      threads_.emplace_back();
    }
    Thread& t = threads_[*idx];
    t.tid = tid;
    t.tgid = tgid;
    // First sighting: if it emits a task-context record it is running now;
    // run time before that is unknown and never charged.
    t.on_cpu = running_now;
    t.acct_from = ts;
    stats_.peak_threads = std::max<uint64_t>(stats_.peak_threads, index_.size());
  }
  Thread* t = &threads_[*idx];
  if (tgid) t->tgid = tgid;
  t->last_seen = ts;
  ce.tid = tid;
  ce.t = t;
  return t;
}

void ThreadTracker::Remove(uint32_t tid) {
  const uint32_t* idx = index_.Find(tid);
  if (!idx) return;
  const uint32_t slot = *idx;
  free_.push_back(slot);
  index_.Erase(tid);
  cache_[tid & kCacheMask] = CacheEntry{};
  threads_[slot] = Thread{};  // a free slot: not on CPU, charges nothing
}

ProcessAccount& ThreadTracker::AccountSlow(uint32_t tgid) {
  bool inserted;
  uint32_t* idx = account_index_.FindOrInsert(tgid, &inserted);
  if (inserted) {
    *idx = static_cast<uint32_t>(accounts_.size());
    accounts_.emplace_back();
  }
  return accounts_[*idx];
}

uint64_t ThreadTracker::CumCpu(uint32_t tgid, uint64_t now) const {
  const uint32_t* idx = account_index_.Find(tgid);
  uint64_t ns = idx ? accounts_[*idx].cpu_ns : 0;
  for (const CpuState& cs : cpus_) {
    if (!cs.cur_tid) continue;
    const uint32_t* tidx = index_.Find(cs.cur_tid);
    if (!tidx) continue;
    const Thread& t = threads_[*tidx];
    if (t.tgid == tgid && t.on_cpu && now > t.acct_from) ns += now - t.acct_from;
  }
  return ns;
}

uint64_t ThreadTracker::RunningWithoutSwitchIn(Thread* t, uint16_t cpu, uint64_t ts, bool infer) {
  uint64_t from = ts;
  if (t->off != Off::kNone) {
    Account(t).running_inferred++;
    // It was switched in on this CPU after the last record of another task
    // here (the last switch, or a record of the task that ran), and after it
    // became runnable (its wakeup, or its preemption). That bounds the run
    // time the capture lost; how much of it was the thread's is not known:
    // several switches may be missing, the task left on the CPU may have run
    // (untraced tasks leave no records), a vCPU may take milliseconds to
    // wake. Asleep with no wakeup seen while the CPU idled, there is no
    // bound at all.
    const CpuState* cs = FindCpu(cpu);
    const bool runnable = t->off == Off::kRunnable;
    if (cs && cs->last_task_ts && (runnable || cs->cur_tid != 0)) {
      const uint64_t since = std::max(cs->last_task_ts, runnable ? t->wake_ts : t->off_since);
      if (since < ts) {
        Account(t).lost_bound_ns += ts - since;
        if (infer) {
          stats_.cpu_inferred_ns += ts - since;
          from = since;
        }
      }
    }
  }
  return from;
}

void ThreadTracker::SumAccounts(const std::vector<uint32_t>& tgids, uint64_t irq_total_ns) {
  stats_.cpu_observed_ns = 0;
  stats_.cpu_observed_total_ns = 0;
  stats_.cpu_charged_ns = stats_.softirq_charged_ns = stats_.cpu_conn_ns = stats_.softirq_conn_ns = 0;
  stats_.cpu_unattributed_ns = stats_.cpu_outside_ns = 0;
  stats_.cpu_unsampled_ns = 0;
  for (uint32_t tgid : tgids) {
    const ProcessAccount& a = Account(tgid);
    stats_.sched_switches += a.switches;
    stats_.sched_chain_breaks += a.chain_breaks;
    stats_.sched_running_inferred += a.running_inferred;
    stats_.sched_switch_outs_lost += a.switch_outs_lost;
    stats_.cpu_lost_bound_ns += a.lost_bound_ns;
    stats_.cpu_unproven_ns += a.unproven_ns;
    stats_.cpu_unsampled_ns += a.unsampled_ns;
    stats_.cpu_observed_total_ns += a.cpu_ns;
    stats_.cpu_charged_ns += a.req_task_ns;
    stats_.softirq_charged_ns += a.req_irq_ns;
    stats_.cpu_conn_ns += a.conn_task_ns;
    stats_.softirq_conn_ns += a.conn_irq_ns;
    stats_.cpu_unattributed_ns += a.unattr_in_ns;
    stats_.cpu_outside_ns += a.unattr_pre_ns + a.unattr_open_ns;
  }
  stats_.cpu_observed_ns = stats_.cpu_charged_ns + stats_.softirq_charged_ns + stats_.cpu_conn_ns +
                           stats_.softirq_conn_ns + stats_.cpu_unattributed_ns;
  // Interrupt time charged to requests and connections that interrupted
  // other tasks (on loopback, the client's send runs the server's receive).
  const uint64_t own_irq = stats_.softirq_charged_ns + stats_.softirq_conn_ns;
  stats_.softirq_foreign_ns = irq_total_ns > own_irq ? irq_total_ns - own_irq : 0;
}

uint64_t ThreadTracker::TakeIrqCpu(uint16_t cpu, uint32_t tid, uint32_t tgid, uint64_t ts, uint64_t gap_ns) {
  CpuState& cs = Cpu(cpu);
  if (!gap_ns || !cs.irq_run || ts < cs.last_irq_ts || ts - cs.last_irq_ts > gap_ns) return 0;
  const uint64_t ns = ts - cs.last_irq_ts;
  if (tid) {
    Thread* victim = Get(tid, tgid, ts, true);
    if (victim) victim->irq_steal += ns;
  }
  return ns;
}

void ThreadTracker::TakesCpuSlow(Thread* t, uint16_t cpu) {
  t->last_cpu = cpu;
  CpuState& cs = Cpu(cpu);
  if (cs.cur_tid == t->tid) return;
  if (Thread* x = cs.cur_tid ? Find(cs.cur_tid) : nullptr; x && x->on_cpu && x->last_cpu == cpu)
    EndLostRun(x, t->last_seen);
  cs.cur_tid = t->tid;
}

void ThreadTracker::EndLostRun(Thread* t, uint64_t now) {
  ChargeRun(t, t->last_own_ts);
  const uint64_t end = std::max(t->last_own_ts, t->acct_from);
  ProcessAccount& a = Account(t);
  if (now > end) a.unproven_ns += now - end;
  SwitchedOut(t, end, false, 0);
  a.switch_outs_lost++;
}

void ThreadTracker::WokenWhileRunning(Thread* t, uint64_t ts) {
  ChargeRun(t, t->last_own_ts);
  if (ts > t->acct_from) {
    Account(t).unproven_ns += ts - t->acct_from;
    t->acct_from = ts;
  }
}

}  // namespace jackdaw::join
