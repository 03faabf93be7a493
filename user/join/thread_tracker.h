// Per-thread kernel state, kept for every thread the trace shows regardless
// of the schema: run state from sched_switch (for CPU and off-CPU time), the
// syscall it is in (block reason, sys_exit fallbacks), its last socket, a
// pending wakeup edge, the last values it bound for SYNC attributes. Also
// per-CPU state (who runs there, interrupt bursts) and per-process CPU
// accounts, which compare the CPU charged to requests with the CPU the
// serving processes used while they served them.
//
// Lookups are hot (one or two per record, nearly always of a thread that
// just ran): a 256-entry direct-mapped cache by tid in front of the table,
// inline. Thread* stays valid while others are added (deque); a removed
// thread's slot is reused. Threads silent and off CPU for long are expired.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "jackdaw/abi.h"
#include "join/event_set.h"
#include "join/flat_map.h"
#include "join/stats.h"

namespace jackdaw::join {

enum class Off : uint8_t { kNone, kBlocked, kRunnable };

// The last value a thread bound for a SYNC attribute.
struct SyncVal {
  uint32_t attr;
  uint64_t value;
};

struct ProcessAccount;

struct Thread {
  uint32_t tid = 0, tgid = 0;
  bool on_cpu = false;
  bool last_out_blocked = true;
  Off off = Off::kNone;
  uint8_t block_reason = 0;
  uint64_t acct_from = 0;
  uint64_t cpu_pending = 0;
  uint64_t pending_since = 0;  // start of the run that cpu_pending began with
  uint64_t irq_steal = 0;
  uint64_t off_since = 0, wake_ts = 0;
  bool has_off = false;
  OffCpu pend_off{};
  // syscall in progress
  int32_t sys_nr = -1;
  uint8_t sys_obj_kind = 0;
  int32_t sys_fd = -1;
  uint64_t sys_obj = 0, sys_arg = 0;
  uint64_t sys_ts = 0;  // of the syscall's enter
  // The call the syscall entered on (a connection the process opened), 0
  // if none: a close can return after its socket's memory went to another
  // connection, and still closes this call's (Extractor::Impl::MessageSysExit).
  uint64_t sys_call = 0;
  // A datagram's far end for the call in progress on the unconnected
  // socket dgram_sk (a dgram_peer record): the call belongs to the flow
  // (socket, peer) dgram_flow until its exit.
  uint64_t dgram_sk = 0, dgram_flow = 0;
  uint64_t last_sock = 0;
  uint64_t last_sock_ts = 0;  // when it last used last_sock
  bool sock_used = false;     // socket syscall since it last woke from a sleep
  bool conn_open = false;     // last socket read/write was on a socket it has not closed since
  // It has read or written a socket in the trace: it takes work from
  // connections itself (a worker, an event loop), not only from hand-offs.
  bool serves_conns = false;
  // It has woken, through a condition variable, the thread that last woke
  // it that way while that thread was asleep between reading a request and
  // replying: it hands results back to the requests' threads that hand it
  // work (a helper), as a runtime's own threads (a JIT compiler) and a
  // pool's dispatcher (its workers wait for tasks after their replies) do
  // not.
  bool hands_back = false;
  uint32_t cond_woken_by = 0;  // the thread whose condition-variable wake-up it last woke from
  // The message exchange its last socket read or write belonged to
  // (schemas with `messages`), and that socket: while the exchange is
  // still its connection's current one, the thread serves that request.
  uint64_t serving_conn = 0, serving_msg = 0;
  uint64_t sleep_futex = 0;   // futex address it sleeps on (counted in the FutexTracker)
  // The connection whose life (accept, close, a read returning end-of-file
  // or EAGAIN) the thread last worked on, while it has joined no set since
  // and not slept: its run time until it does goes there (see
  // Extractor::Impl::OnDiscard). life_conn is that connection's id, so a
  // socket whose memory now serves another connection is not charged.
  uint64_t life_sk = 0, life_conn = 0;
  uint32_t acct_tgid = 0;                // cache of Account(tgid): the account of acct_tgid
  ProcessAccount* acct = nullptr;
  bool wake_synth = false;               // woken on its waker's behalf; the kernel's record is still to come
  bool after_sample_gap = false;         // no joined event since a sample gap (Extractor::Impl::LeftOutOfSample)
  // wakeup edge pending for this thread's next joined event
  bool wake_edge = false;
  EdgeCand wake{};
  uint64_t last_joined_seq = 0;
  uint64_t last_seen = 0;
  // Its last task-context record or switch: the sched records prove it ran
  // up to here, not after (a lost switch-out leaves it "on CPU" for ever).
  uint64_t last_own_ts = 0;
  int32_t last_cpu = -1;  // the CPU of its last task-context record or switch-in
  std::vector<SyncVal> sync_vals;
};

struct CpuState {
  uint64_t last_irq_ts = 0;
  bool irq_run = false;       // last record on this CPU was in irq context
  uint32_t cur_tid = 0;       // switched in by the last sched_switch here
  uint64_t last_task_ts = 0;  // last sched_switch or task-context record here
};

// Per process: on-CPU time and scheduling anomalies, and its CPU ledger.
// Every nanosecond ChargeRun() adds to cpu_ns leaves the process' threads
// exactly once: to an emitted request (req_*), to a connection's life
// (conn_*), or to nobody (unattributed: run time dropped at a blocking
// switch-out or a task exit, events of sets discarded without a seed,
// run time still pending at the end of the trace). Interrupt time the
// join charged to a packet or block event is taken from the task it
// interrupted (irq_steal), so it is that task's process' CPU too (*_irq).
// Unattributed time is split by the window of the process' requests (its
// first seed to the end of the last request that finished), by when it was
// given up (the event that held it, the switch-out that dropped it): before
// it (start-up), inside it, after it (shutdown); only the part inside counts
// against the accounted CPU (Stats::cpu_observed_ns).
struct ProcessAccount {
  uint64_t cpu_ns = 0;  // all on-CPU time charged so far (ChargeRun)
  uint64_t switches = 0, chain_breaks = 0, running_inferred = 0, switch_outs_lost = 0;
  uint64_t lost_bound_ns = 0;  // see Stats::cpu_lost_bound_ns
  uint64_t unproven_ns = 0;    // see Stats::cpu_unproven_ns
  uint64_t unsampled_ns = 0;   // see Stats::cpu_unsampled_ns
  bool window_open = false;
  uint64_t window_from_ts = 0;  // the first seed
  uint64_t last_end_ts = 0;     // the end of the last request that finished
  uint64_t req_task_ns = 0, req_irq_ns = 0;    // charged to emitted requests
  uint64_t conn_task_ns = 0, conn_irq_ns = 0;  // charged to connections' life
  uint64_t unattr_pre_ns = 0;   // charged to nobody before the first seed
  uint64_t unattr_in_ns = 0;    // ... between the first seed and the last request's end
  uint64_t unattr_open_ns = 0;  // ... since the last request's end (inside if another ends)
  void OpenWindow(uint64_t ts) {
    if (window_open) return;
    window_open = true;
    window_from_ts = ts;
  }
  void Unattributed(uint64_t ns, uint64_t ts) {
    if (!window_open || ts < window_from_ts) {
      unattr_pre_ns += ns;
    } else {
      (ts <= last_end_ts ? unattr_in_ns : unattr_open_ns) += ns;
    }
  }
  // A request of the process finished at `ts`: what was unattributed since
  // the previous one lies inside the window.
  void RequestEnded(uint64_t ts) {
    last_end_ts = std::max(last_end_ts, ts);
    unattr_in_ns += unattr_open_ns;
    unattr_open_ns = 0;
  }
};

class ThreadTracker {
 public:
  explicit ThreadTracker(Stats& stats) : stats_(stats) {}

  // The thread `tid` (created on first sight: running from `ts` if
  // running_now, its earlier run time unknown), with its tgid updated where
  // `tgid` is known and last seen at `ts`. nullptr for tid 0, the idle task.
  Thread* Get(uint32_t tid, uint32_t tgid, uint64_t ts, bool running_now) {
    if (tid == 0) return nullptr;  // the idle task: never a request thread
    const CacheEntry& ce = cache_[tid & kCacheMask];
    if (ce.tid != tid) return LookUp(tid, tgid, ts, running_now);
    Thread* t = ce.t;
    if (tgid) t->tgid = tgid;
    t->last_seen = ts;
    return t;
  }
  // The thread if known; never creates one.
  Thread* Find(uint32_t tid) {
    const CacheEntry& ce = cache_[tid & kCacheMask];
    if (ce.tid == tid) return ce.t;
    const uint32_t* idx = index_.Find(tid);
    return idx ? &threads_[*idx] : nullptr;
  }
  const Thread* Find(uint32_t tid) const { return const_cast<ThreadTracker*>(this)->Find(tid); }
  // task_exit: forgets the thread; its slot is reset and reused.
  void Remove(uint32_t tid);
  // Forgets threads off CPU and silent since before `horizon`;
  // `on_expire(Thread&)` runs first for each.
  template <typename OnExpire>
  void ExpireSilent(uint64_t horizon, OnExpire&& on_expire) {
    index_.EraseIf([&](const uint64_t&, uint32_t& idx) {
      Thread& t = threads_[idx];
      if (t.on_cpu || t.last_seen >= horizon) return false;
      on_expire(t);
      free_.push_back(idx);
      cache_[t.tid & kCacheMask] = CacheEntry{};
      return true;
    });
  }
  // Every thread slot, forgotten ones included (reset or off CPU).
  template <typename Fn>
  void ForEachSlot(Fn&& fn) {
    for (Thread& t : threads_) fn(t);
  }

  // A task-context record of `t` on `cpu` (or its switch-in there): t is
  // the task on that CPU. A thread the tracker still has running there lost
  // its switch-out (the capture dropped it, or tracing stopped before it
  // came): its run ends at its last record, not whenever it is next seen,
  // nor at the end of the trace.
  void TakesCpu(Thread* t, uint16_t cpu) {
    // Inline: the thread already current there, what nearly every task
    // record of a running thread finds.
    if (cpu < cpus_.size() && cpus_[cpu].cur_tid == t->tid) {
      t->last_cpu = cpu;
      return;
    }
    TakesCpuSlow(t, cpu);
  }

  // Evidence at `now` that `t` left its CPU after its last own record (a
  // task-context record of it elsewhere, another task switched out or
  // running there): its switch-out was lost. Its run ends at that record;
  // the rest is unproven and charged to none (ProcessAccount::unproven_ns).
  void EndLostRun(Thread* t, uint64_t now);
  // `t`, on CPU by the sched records, is woken at `ts`: it had stopped
  // running before (or was about to, a race that costs microseconds). Its
  // run is proven to its last own record, and taken up again from `ts`.
  void WokenWhileRunning(Thread* t, uint64_t ts);

  // Per-CPU state; Cpu() grows the table, FindCpu() does not.
  CpuState& Cpu(uint16_t cpu) {
    if (cpu >= cpus_.size()) cpus_.resize(size_t{cpu} + 1);
    return cpus_[cpu];
  }
  CpuState* FindCpu(uint16_t cpu) { return cpu < cpus_.size() ? &cpus_[cpu] : nullptr; }

  // The process' account (created on first use; references stay valid).
  // The last one asked for is kept: a request's events, charged one after
  // the other when it is emitted, are mostly one process'.
  ProcessAccount& Account(uint32_t tgid) {
    if (tgid != last_acct_tgid_ || !last_acct_) {
      last_acct_ = &AccountSlow(tgid);
      last_acct_tgid_ = tgid;
    }
    return *last_acct_;
  }
  // The thread's process' account, without the hash lookup (hot: every
  // sched_switch).
  ProcessAccount& Account(Thread* t) {
    if (t->acct && t->acct_tgid == t->tgid) return *t->acct;
    t->acct = &Account(t->tgid);  // accounts are never removed: the address holds
    t->acct_tgid = t->tgid;
    return *t->acct;
  }

  // The thread is on CPU from `ts` (a switch-in, or an inferred one): its
  // off-CPU period closes and becomes its pending one, folding in an earlier
  // pending period no joined event has taken yet.
  // Inline (every switch-in), and in place: the new period is written over
  // the pending one it folds in.
  void StartRunning(Thread* t, uint64_t ts) {
    if (t->off != Off::kNone) {
      OffCpu& o = t->pend_off;
      if (t->has_off) {
        // fold the previous, never-charged period into the early sums
        o.early_from = o.early_from ? std::min(o.early_from, o.off_from) : o.off_from;
        o.early_runq += o.run - o.wake;
        o.early_blocked[o.reason % kBlockReasons] += o.wake - o.off_from;
      } else {
        o.early_from = 0;
        o.early_runq = 0;
        for (int r = 0; r < kBlockReasons; r++) o.early_blocked[r] = 0;
      }
      o.off_from = t->off_since;
      o.wake = t->off == Off::kBlocked ? ts : std::min(t->wake_ts, ts);  // never woken: blocked until now
      o.run = ts;
      o.reason = t->block_reason;
      t->has_off = true;
    }
    t->off = Off::kNone;
    t->on_cpu = true;
    t->acct_from = ts;
    t->wake_synth = false;
  }
  // A record of `t` on `cpu` at `ts` while the sched records have it off
  // CPU: its switch-in was lost. Counts it and bounds the run time lost;
  // returns when it is taken to have started running: `ts`, or with `infer`
  // the earliest time it can have (counted as cpu_inferred_ns).
  uint64_t RunningWithoutSwitchIn(Thread* t, uint16_t cpu, uint64_t ts, bool infer);

  // The syscall the thread is in (its block reason if it sleeps, the
  // object of events at its exit); a socket it names is its last socket.
  static void EnterSyscall(Thread* t, const jdw_sys_enter& e, uint64_t ts) {
    t->sys_nr = e.nr;
    t->sys_ts = ts;
    t->sys_obj_kind = e.obj_kind;
    t->sys_obj = e.obj;
    t->sys_fd = e.fd;
    t->sys_arg = e.arg;
    UseSocket(t, e.obj_kind, e.obj, ts);
  }
  static void ExitSyscall(Thread* t, const jdw_sys_exit& e, uint64_t ts) {
    UseSocket(t, e.obj_kind, e.obj, ts);
    t->sys_nr = -1;
    t->sys_obj_kind = 0;
    t->sys_obj = 0;
    t->sys_call = 0;
    t->sys_fd = -1;
    t->dgram_sk = t->dgram_flow = 0;
  }

  // Sets the scheduling and CPU counters of Stats to the sums over the
  // accounts of `tgids` (the processes that served requests);
  // `irq_total_ns`: all interrupt time charged to requests and connections,
  // whichever task it interrupted.
  void SumAccounts(const std::vector<uint32_t>& tgids, uint64_t irq_total_ns);

  // Interrupt work charged to an interrupt-context event on `cpu` at `ts`:
  // the time since the previous interrupt record of the same burst (no more
  // than `gap_ns` before; 0 disables) on this CPU. The first of a burst is
  // charged nothing: its start is unknown. Taken from the interrupted task
  // `tid` (its irq_steal), which the header names.
  uint64_t TakeIrqCpu(uint16_t cpu, uint32_t tid, uint32_t tgid, uint64_t ts, uint64_t gap_ns);

  // A thread off CPU is woken at `ts`: runnable from then (one never seen
  // switching out: only the run-queue part is known).
  static void Woken(Thread* t, uint64_t ts) {
    if (t->off == Off::kBlocked) {
      t->off = Off::kRunnable;
      t->wake_ts = ts;
    } else if (t->off == Off::kNone) {
      t->off = Off::kRunnable;
      t->off_since = ts;
      t->wake_ts = ts;
    }
  }
  // `t` switches out at `ts`: blocked (in `block_reason`) or preempted,
  // runnable from now on.
  static void SwitchedOut(Thread* t, uint64_t ts, bool blocked, uint8_t block_reason) {
    t->on_cpu = false;
    t->last_out_blocked = blocked;
    t->off = blocked ? Off::kBlocked : Off::kRunnable;
    t->off_since = ts;
    t->wake_ts = ts;
    t->block_reason = block_reason;
  }

  // Charges the thread's run time up to `ts` (if on CPU) to its process and
  // to its pending CPU, less interrupt time already charged elsewhere.
  void ChargeRun(Thread* t, uint64_t ts) {
    if (!t->on_cpu || ts <= t->acct_from) return;
    const uint64_t d = ts - t->acct_from;
    t->acct_from = ts;
    Account(t).cpu_ns += d;
    // Interrupt work already charged as softirq CPU elsewhere is not the task's.
    const uint64_t steal = std::min(d, t->irq_steal);
    t->irq_steal -= steal;
    if (!t->cpu_pending) t->pending_since = ts - d;
    t->cpu_pending += d - steal;
  }
  // On-CPU time of `tgid` up to `now`, including the current slices of its
  // threads on CPU, which ChargeRun has not charged yet.
  uint64_t CumCpu(uint32_t tgid, uint64_t now) const;

 private:
  static constexpr uint32_t kCacheMask = 255;
  // A syscall's socket (enter or exit) is the thread's last one.
  static void UseSocket(Thread* t, uint8_t obj_kind, uint64_t obj, uint64_t ts) {
    if (obj_kind != JDW_OBJ_SOCKET || !obj) return;
    t->last_sock = obj;
    t->last_sock_ts = ts;
    t->sock_used = true;
  }
  struct CacheEntry {
    uint32_t tid = 0;
    Thread* t = nullptr;
  };
  Thread* LookUp(uint32_t tid, uint32_t tgid, uint64_t ts, bool running_now);
  ProcessAccount& AccountSlow(uint32_t tgid);
  void TakesCpuSlow(Thread* t, uint16_t cpu);

  Stats& stats_;
  FlatMap<uint64_t, uint32_t, U64Hash> index_;  // tid -> threads_ slot
  std::array<CacheEntry, kCacheMask + 1> cache_{};
  std::deque<Thread> threads_;  // deque: Thread* stays valid while others are added
  std::vector<uint32_t> free_;
  std::vector<CpuState> cpus_;
  FlatMap<uint64_t, uint32_t, U64Hash> account_index_;  // tgid -> accounts_ index
  std::deque<ProcessAccount> accounts_;  // deque: references stay valid as processes are added
  uint32_t last_acct_tgid_ = 0;
  ProcessAccount* last_acct_ = nullptr;  // Account(last_acct_tgid_); accounts are never removed
};

}  // namespace jackdaw::join
