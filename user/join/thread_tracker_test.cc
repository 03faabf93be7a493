#include "join/thread_tracker.h"

#include <gtest/gtest.h>

namespace jackdaw::join {
namespace {

TEST(ThreadTracker, CreatesOnFirstSightAndUpdatesTgid) {
  Stats st;
  ThreadTracker t(st);
  EXPECT_EQ(t.Get(0, 1, 100, true), nullptr);  // the idle task
  Thread* a = t.Get(42, 0, 100, true);
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->on_cpu);
  EXPECT_EQ(a->acct_from, 100u);
  EXPECT_EQ(a->tgid, 0u);
  EXPECT_EQ(t.Get(42, 7, 200, false), a);  // the cache: same thread
  EXPECT_EQ(a->tgid, 7u);
  EXPECT_EQ(a->last_seen, 200u);
  EXPECT_EQ(t.Get(42 + 256, 7, 200, false)->tid, 42u + 256);  // same cache slot, another thread
  EXPECT_EQ(t.Find(42), a);
  EXPECT_EQ(st.peak_threads, 2u);
  Thread* b = t.Get(43, 7, 300, false);
  EXPECT_FALSE(b->on_cpu);
  EXPECT_EQ(st.peak_threads, 3u);
}

TEST(ThreadTracker, RemovedThreadsSlotIsReusedClean) {
  Stats st;
  ThreadTracker t(st);
  Thread* a = t.Get(42, 7, 100, true);
  a->sys_nr = 3;
  t.Remove(42);
  EXPECT_EQ(t.Find(42), nullptr);
  EXPECT_EQ(a->tid, 0u);  // the slot was reset
  Thread* b = t.Get(43, 7, 200, false);
  EXPECT_EQ(b, a);  // reused
  EXPECT_EQ(b->tid, 43u);
  EXPECT_EQ(b->sys_nr, -1);
  t.Remove(999);  // unknown: nothing
}

TEST(ThreadTracker, RunTimeIsChargedToThreadAndProcessLessIrqSteal) {
  Stats st;
  ThreadTracker t(st);
  Thread* a = t.Get(42, 7, 1000, true);
  a->irq_steal = 30;
  t.ChargeRun(a, 1100);
  EXPECT_EQ(a->cpu_pending, 70u);
  EXPECT_EQ(t.Account(7).cpu_ns, 100u);  // the process saw all of it
  t.ChargeRun(a, 1050);  // not after the last charge: nothing
  EXPECT_EQ(t.Account(7).cpu_ns, 100u);
  a->on_cpu = false;
  t.ChargeRun(a, 2000);  // off CPU: nothing
  EXPECT_EQ(a->cpu_pending, 70u);
  EXPECT_EQ(&t.Account(a), &t.Account(7));
}

TEST(ThreadTracker, CumulativeCpuIncludesSlicesNotChargedYet) {
  Stats st;
  ThreadTracker t(st);
  Thread* a = t.Get(42, 7, 1000, true);
  Thread* other = t.Get(50, 8, 1000, true);
  t.Cpu(0).cur_tid = 42;
  t.Cpu(1).cur_tid = 50;
  t.ChargeRun(a, 1200);
  EXPECT_EQ(t.CumCpu(7, 1500), 200u + 300u);  // charged, and running since 1200
  EXPECT_EQ(t.CumCpu(8, 1500), 500u);
  other->on_cpu = false;
  EXPECT_EQ(t.CumCpu(8, 1500), 0u);
  EXPECT_EQ(t.CumCpu(9, 1500), 0u);
  EXPECT_EQ(t.FindCpu(5), nullptr);
  EXPECT_NE(t.FindCpu(1), nullptr);
}

TEST(ThreadTracker, SilentOffCpuThreadsExpire) {
  Stats st;
  ThreadTracker t(st);
  t.Get(1, 7, 100, true);                      // on CPU: kept however silent
  t.Get(2, 7, 100, false);                     // off CPU, silent
  t.Get(3, 7, 900, false);                     // off CPU, seen recently
  std::vector<uint32_t> expired;
  t.ExpireSilent(500, [&](Thread& th) { expired.push_back(th.tid); });
  EXPECT_EQ(expired, (std::vector<uint32_t>{2}));
  EXPECT_EQ(t.Find(2), nullptr);
  EXPECT_NE(t.Find(1), nullptr);
  EXPECT_NE(t.Find(3), nullptr);
  // Its cache entry is gone too: a new thread 2 starts afresh.
  EXPECT_EQ(t.Get(2, 7, 1000, true)->acct_from, 1000u);
}

TEST(ThreadTracker, StartRunningClosesTheOffCpuPeriodAndFoldsAnUnchargedOne) {
  Stats st;
  ThreadTracker tt(st);
  Thread* t = tt.Get(42, 7, 100, false);
  // Blocked at 100 (reason 2), woken at 150, on CPU at 170.
  t->off = Off::kBlocked;
  t->off_since = 100;
  t->block_reason = 2;
  t->off = Off::kRunnable;
  t->wake_ts = 150;
  tt.StartRunning(t, 170);
  EXPECT_TRUE(t->on_cpu);
  EXPECT_EQ(t->off, Off::kNone);
  EXPECT_EQ(t->acct_from, 170u);
  ASSERT_TRUE(t->has_off);
  EXPECT_EQ(t->pend_off.off_from, 100u);
  EXPECT_EQ(t->pend_off.wake, 150u);
  EXPECT_EQ(t->pend_off.run, 170u);
  EXPECT_EQ(t->pend_off.reason, 2);
  // Off again before any joined event took that period: it folds into the
  // early sums of the next one. Blocked from 200, never woken, on at 260.
  t->on_cpu = false;
  t->off = Off::kBlocked;
  t->off_since = 200;
  t->block_reason = 1;
  tt.StartRunning(t, 260);
  EXPECT_EQ(t->pend_off.off_from, 200u);
  EXPECT_EQ(t->pend_off.wake, 260u);  // never woken: blocked until it ran
  EXPECT_EQ(t->pend_off.early_from, 100u);
  EXPECT_EQ(t->pend_off.early_runq, 20u);
  EXPECT_EQ(t->pend_off.early_blocked[2], 50u);
  // On CPU already (no off period): nothing pending changes.
  t->has_off = false;
  tt.StartRunning(t, 300);
  EXPECT_FALSE(t->has_off);
}

TEST(ThreadTracker, RunningWithoutSwitchInBoundsTheLostRunTime) {
  Stats st;
  ThreadTracker tt(st);
  Thread* t = tt.Get(42, 7, 100, false);
  t->off = Off::kRunnable;
  t->wake_ts = 120;
  CpuState& cpu = tt.Cpu(1);
  cpu.last_task_ts = 150;  // another task's last record on that CPU
  cpu.cur_tid = 9;
  // Not inferred: it runs from the record on, the bound is counted.
  EXPECT_EQ(tt.RunningWithoutSwitchIn(t, 1, 200, /*infer=*/false), 200u);
  EXPECT_EQ(tt.Account(7).running_inferred, 1u);
  EXPECT_EQ(tt.Account(7).lost_bound_ns, 50u);
  EXPECT_EQ(st.cpu_inferred_ns, 0u);
  // Inferred: from the earliest time it can have started.
  EXPECT_EQ(tt.RunningWithoutSwitchIn(t, 1, 200, /*infer=*/true), 150u);
  EXPECT_EQ(st.cpu_inferred_ns, 50u);
  // Asleep, the CPU idle: no bound.
  t->off = Off::kBlocked;
  t->off_since = 100;
  cpu.cur_tid = 0;
  EXPECT_EQ(tt.RunningWithoutSwitchIn(t, 1, 300, /*infer=*/true), 300u);
  EXPECT_EQ(tt.Account(7).lost_bound_ns, 100u);
  EXPECT_EQ(tt.Account(7).running_inferred, 3u);
  // Not off CPU by the sched records: nothing to infer.
  t->off = Off::kNone;
  EXPECT_EQ(tt.RunningWithoutSwitchIn(t, 1, 400, true), 400u);
  EXPECT_EQ(tt.Account(7).running_inferred, 3u);
}

TEST(ThreadTracker, SyscallStateAndLastSocket) {
  Thread t;
  jdw_sys_enter in{};
  in.nr = 45;
  in.obj_kind = JDW_OBJ_SOCKET;
  in.fd = 5;
  in.arg = 9;
  in.obj = 0xabc;
  ThreadTracker::EnterSyscall(&t, in, 100);
  EXPECT_EQ(t.sys_nr, 45);
  EXPECT_EQ(t.sys_fd, 5);
  EXPECT_EQ(t.sys_arg, 9u);
  EXPECT_EQ(t.sys_obj, 0xabcu);
  EXPECT_EQ(t.sys_ts, 100u);
  EXPECT_EQ(t.last_sock, 0xabcu);
  EXPECT_TRUE(t.sock_used);
  // accept: the new socket is known at the exit only.
  jdw_sys_exit out{};
  out.nr = 43;
  out.obj_kind = JDW_OBJ_SOCKET;
  out.obj = 0xdef;
  ThreadTracker::ExitSyscall(&t, out, 150);
  EXPECT_EQ(t.sys_nr, -1);
  EXPECT_EQ(t.sys_obj, 0u);
  EXPECT_EQ(t.sys_fd, -1);
  EXPECT_EQ(t.last_sock, 0xdefu);
  EXPECT_EQ(t.last_sock_ts, 150u);
  // Not a socket: the last socket stays.
  in.obj_kind = 0;
  in.obj = 0x111;
  ThreadTracker::EnterSyscall(&t, in, 200);
  EXPECT_EQ(t.sys_obj, 0x111u);
  EXPECT_EQ(t.last_sock, 0xdefu);
}

TEST(ThreadTracker, SumAccountsOverTheRequestProcessesOnly) {
  Stats st;
  ThreadTracker tt(st);
  ProcessAccount& a = tt.Account(7);
  a.switches = 10;
  a.chain_breaks = 1;
  a.cpu_ns = 1000;
  a.req_task_ns = 600;
  a.req_irq_ns = 20;
  a.conn_task_ns = 100;
  a.unattr_pre_ns = 50;
  a.OpenWindow(100);
  a.Unattributed(30, 150);  // since the last request's end: inside once another ends
  a.RequestEnded(400);
  a.Unattributed(200, 500);  // after the last one: outside
  ProcessAccount& b = tt.Account(8);
  b.switches = 5;
  b.cpu_ns = 300;
  b.req_task_ns = 290;
  b.conn_irq_ns = 10;
  tt.Account(9).switches = 1000;  // served no request
  tt.Account(9).req_task_ns = 1000;
  tt.SumAccounts({7, 8}, /*irq_total_ns=*/45);
  EXPECT_EQ(st.sched_switches, 15u);
  EXPECT_EQ(st.sched_chain_breaks, 1u);
  EXPECT_EQ(st.cpu_observed_total_ns, 1300u);
  EXPECT_EQ(st.cpu_charged_ns, 890u);
  EXPECT_EQ(st.softirq_charged_ns, 20u);
  EXPECT_EQ(st.cpu_conn_ns, 100u);
  EXPECT_EQ(st.softirq_conn_ns, 10u);
  EXPECT_EQ(st.cpu_unattributed_ns, 30u);
  EXPECT_EQ(st.cpu_outside_ns, 250u);
  EXPECT_EQ(st.cpu_observed_ns, 890u + 20u + 100u + 10u + 30u);
  EXPECT_EQ(st.softirq_foreign_ns, 15u);  // 45 charged, 30 of it the request processes'
}

TEST(ThreadTracker, IrqCpuIsTheGapWithinABurstTakenFromTheInterruptedTask) {
  Stats st;
  ThreadTracker tt(st);
  Thread* victim = tt.Get(42, 7, 0, true);
  EXPECT_EQ(tt.TakeIrqCpu(2, 42, 7, 1000, 500), 0u);  // no interrupt ran on the CPU: first of a burst
  CpuState& cs = tt.Cpu(2);
  cs.irq_run = true;
  cs.last_irq_ts = 1000;
  EXPECT_EQ(tt.TakeIrqCpu(2, 42, 7, 1300, 500), 300u);
  EXPECT_EQ(victim->irq_steal, 300u);
  EXPECT_EQ(tt.TakeIrqCpu(2, 42, 7, 1600, 500), 0u);  // beyond the gap: a new burst
  EXPECT_EQ(tt.TakeIrqCpu(2, 42, 7, 1300, 0), 0u);    // disabled
  EXPECT_EQ(tt.TakeIrqCpu(2, 0, 0, 1200, 500), 200u);  // interrupted the idle task: nobody's
  EXPECT_EQ(victim->irq_steal, 300u);
}

TEST(ThreadTracker, SwitchOutAndWakeupSetTheOffCpuState) {
  Thread t;
  t.on_cpu = true;
  ThreadTracker::SwitchedOut(&t, 100, /*blocked=*/true, 3);
  EXPECT_FALSE(t.on_cpu);
  EXPECT_TRUE(t.last_out_blocked);
  EXPECT_EQ(t.off, Off::kBlocked);
  EXPECT_EQ(t.off_since, 100u);
  EXPECT_EQ(t.block_reason, 3);
  ThreadTracker::Woken(&t, 150);
  EXPECT_EQ(t.off, Off::kRunnable);
  EXPECT_EQ(t.off_since, 100u);
  EXPECT_EQ(t.wake_ts, 150u);
  ThreadTracker::Woken(&t, 170);  // runnable already: the first wakeup counts
  EXPECT_EQ(t.wake_ts, 150u);
  ThreadTracker::SwitchedOut(&t, 200, /*blocked=*/false, 0);  // preempted
  EXPECT_EQ(t.off, Off::kRunnable);
  EXPECT_EQ(t.wake_ts, 200u);
  EXPECT_FALSE(t.last_out_blocked);
  Thread fresh;  // never seen switching out: the run queue only
  ThreadTracker::Woken(&fresh, 300);
  EXPECT_EQ(fresh.off, Off::kRunnable);
  EXPECT_EQ(fresh.off_since, 300u);
  EXPECT_EQ(fresh.wake_ts, 300u);
}

}  // namespace
}  // namespace jackdaw::join
