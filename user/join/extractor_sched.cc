// Extractor::Impl: context switches and wakeups (the scheduling state
// machine, see the class comment in extractor_impl.h).
#include "join/extractor_impl.h"

namespace jackdaw::join {
namespace {
// The futex op a condition variable's (and a semaphore's) waiters sleep
// in, flags masked off (op & 127).
constexpr uint64_t kFutexWaitBitset = 9;
}  // namespace

void Extractor::Impl::LeaveFutexSleep(Thread* t) {
  if (!t->sleep_futex) return;
  futex_.Leave(t->sleep_futex);
  t->sleep_futex = 0;
}

void Extractor::Impl::Wakeup(Ctx& c, Thread* wakee) {
  Thread* waker = c.thread;
  // Two threads each serving a request of its own: contention, not a
  // handoff (CausalityTracker::IsContention); the schema does not see it.
  const bool contention = messages_on() && !c.irq && waker && wakee && !wakee->on_cpu &&
                          CausalityTracker::IsContention(*waker, *wakee, msgs_);
  if (contention) stats_.wakeups_contention++;
  const uint64_t before = seq_;
  // The thread the record's wakee_tid names (Process() and FutexWoke()
  // looked it up): the schema's wakee_* fields need not look again.
  c.wakee_known = true;
  c.wakee = wakee;
  if (!contention) RunEvent(c, &cs_.ForType(c.rec->type));
  const bool joined = seq_ != before;
  if (!wakee) return;
  if (wakee->on_cpu) {
    threads_.WokenWhileRunning(wakee, c.ts);
    return;
  }
  // A condition-variable wake-up (waker inside futex, wakee asleep in a
  // condition wait). Of the thread that handed the waker its last work,
  // asleep between reading a request and replying to it (its connection's
  // last bytes came in): the waker hands the result back. A pool thread
  // asleep after its reply waits for its next task, not for a result.
  const bool cond = !c.irq && waker && waker != wakee && cs_.futex_nr() >= 0 && c.in_syscall == cs_.futex_nr() &&
                    wakee->sys_nr == cs_.futex_nr() && (wakee->sys_arg & 127) == kFutexWaitBitset;
  if (cond && waker->cond_woken_by == wakee->tid && wakee->conn_open && wakee->last_sock &&
      socks_.LastDirection(wakee->last_sock) == CompiledSchema::kDirIn)
    waker->hands_back = true;
  if (cond) wakee->cond_woken_by = waker->tid;
  ThreadTracker::Woken(wakee, c.ts);
  LeaveFutexSleep(wakee);
  wakee->wake_edge = false;
  if (!c.irq && waker && !contention) {
    const uint64_t from = joined ? seq_ : waker->last_joined_seq;
    if (from) {
      wakee->wake_edge = true;
      wakee->wake = EdgeCand{from, 0, c.ts, waker->tid, c.rec->cpu, 0};
    }
  }
}

void Extractor::Impl::FutexWoke(const Ctx& c, Thread* waker, uint64_t uaddr) {
  const uint32_t sleeper = futex_.SoleSleeper(uaddr);
  if (!sleeper || sleeper == waker->tid) return;  // several: the kernel's record says which
  Thread* wakee = threads_.Find(sleeper);
  if (!wakee) return;
  if (wakee->on_cpu || wakee->off != Off::kBlocked) return;  // its record came already (a local wakeup)
  struct {
    jdw_record_header h;
    jdw_sched_wakeup b;
  } rec{};
  rec.h = *c.rec;
  rec.h.type = JDW_EVENT_SCHED_WAKEUP;
  rec.h.size = sizeof(rec);
  rec.b.wakee_tid = wakee->tid;
  rec.b.wakee_tgid = wakee->tgid;
  rec.b.target_cpu = c.rec->cpu;
  Ctx w{.rec = &rec.h,
        .payload = reinterpret_cast<const uint8_t*>(&rec.b),
        .payload_len = sizeof(rec.b),
        .ts = c.ts,
        .kind = schema::EventKind::kRecord,
        .thread = waker,
        .tid = waker->tid,
        .tgid = waker->tgid,
        .irq = false,
        .after_block = false,
        .in_syscall = cs_.futex_nr()};  // still inside futex() as it asks
  stats_.wakeups_attributed++;
  Wakeup(w, wakee);
  wakee->wake_synth = true;
}

void Extractor::Impl::AttributeRemoteWakeup(Ctx& c, Thread* wakee) {
  // A wakeup of a thread whose CPU is idle is queued to that CPU and runs
  // there in the IPI handler (ttwu_queue): the record names the idle task,
  // not the waker. For a futex sleeper the futex address names it: the last
  // thread that woke that address, after the wakee went to sleep on it and
  // shortly before (the IPI is quick; a vCPU can take milliseconds to wake).
  static constexpr uint64_t kWindowNs = 10'000'000;
  if (cs_.futex_nr() < 0 || wakee->on_cpu || wakee->off != Off::kBlocked || wakee->sys_nr != cs_.futex_nr() ||
      !wakee->sys_obj)
    return;
  const FutexTracker::Wake* fw = futex_.LastWake(wakee->sys_obj);
  if (!fw || fw->ts < wakee->off_since || fw->ts > c.ts || c.ts - fw->ts > kWindowNs || fw->tid == wakee->tid)
    return;
  Thread* waker = threads_.Get(fw->tid, fw->tgid, c.ts, true);
  if (!waker) return;
  stats_.wakeups_attributed++;
  c.irq = false;
  c.ctx = JDW_CTX_TASK;
  c.thread = waker;
  c.tid = waker->tid;
  c.tgid = waker->tgid;
  c.in_syscall = cs_.futex_nr();  // it was inside futex() when it asked
}

void Extractor::Impl::HandleSwitch(const reorder::SortedRecord& sr, uint64_t ts) {
  const jdw_record_header* rec = sr.rec;
  const auto* sw = reinterpret_cast<const jdw_sched_switch*>(rec + 1);
  const bool blocked = sw->prev_state != 0;

  // Another task still on this CPU by the sched records: its switch-out
  // was lost.
  if (CpuState* cpu = threads_.FindCpu(rec->cpu); cpu && cpu->cur_tid && cpu->cur_tid != sw->prev_tid) {
    if (Thread* x = threads_.Find(cpu->cur_tid); x && x->on_cpu && x->last_cpu == rec->cpu)
      threads_.EndLostRun(x, ts);
  }

  // prev: charge its run time, then the switch_out event takes it if joined.
  Thread* prev = threads_.Get(sw->prev_tid, sw->prev_tgid, ts, true);
  if (prev) {
    // On CPU elsewhere by the sched records: it moved, and its switch-out
    // there and switch-in here were lost; or sched records of this CPU were
    // lost since its last record.
    if (prev->on_cpu && ((prev->last_cpu >= 0 && prev->last_cpu != rec->cpu) || SchedLostSince(prev, rec->cpu, ts)))
      threads_.EndLostRun(prev, ts);
    // Switched out while we had it off CPU, with no record of it running
    // since: its switch-in is missing from the trace.
    const bool chain_break = !prev->on_cpu;
    const bool seen_leaving = prev->off != Off::kNone;
    if (chain_break && seen_leaving) RunningWithoutSwitchIn(prev, rec->cpu, ts);
    ProcessAccount& acct = threads_.Account(prev);
    acct.switches++;
    if (chain_break) {
      acct.chain_breaks++;
      if (seen_leaving) acct.running_inferred--;  // counted as a chain break instead
    }
    threads_.ChargeRun(prev, ts);
    Ctx c = SwitchCtx(rec, ts, schema::EventKind::kSwitchOut, prev, blocked);
    RunEvent(c, &cs_.ForSwitchOut());
    if (blocked && prev->cpu_pending && !ChargeLifeTail(prev, ts) && !ChargeSampleGapTail(prev)) {
      stats_.cpu_dropped_ns += prev->cpu_pending;
      threads_.Account(prev).Unattributed(prev->cpu_pending, ts);
      prev->cpu_pending = 0;
    }
    // Asleep: whatever it does when it wakes is a new interval.
    if (blocked) prev->life_sk = 0;
    ThreadTracker::SwitchedOut(prev, ts, blocked, blocked ? reader_.BlockReasonOf(prev) : 0);
    prev->last_own_ts = ts;
    prev->last_cpu = rec->cpu;
    LeaveFutexSleep(prev);
    if (blocked && prev->sys_nr == cs_.futex_nr() && prev->sys_obj && cs_.futex_nr() >= 0) {
      futex_.Sleep(prev->sys_obj, prev->tid);
      prev->sleep_futex = prev->sys_obj;
    }
  }

  if (CpuState* cpu = threads_.FindCpu(rec->cpu)) {
    cpu->cur_tid = sw->next_tid;
    cpu->last_task_ts = ts;
  }
  Thread* next = threads_.Get(sw->next_tid, sw->next_tgid, ts, false);
  if (next) {
    next->last_cpu = rec->cpu;
    next->last_own_ts = ts;
    const bool after_block = next->last_out_blocked;
    StartRunning(next, ts);
    if (after_block) next->sock_used = false;
    Ctx c = SwitchCtx(rec, ts, schema::EventKind::kSwitchIn, next, after_block);
    RunEvent(c, &cs_.ForSwitchIn());
  }
}

}  // namespace jackdaw::join
