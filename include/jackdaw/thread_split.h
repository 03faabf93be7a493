/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * How the interact group splits a serving thread's time between its first
 * and last touch of an interaction (bpf/interact_emit.bpf.h) into on-CPU,
 * run-queue and blocked time. Plain arithmetic on the two snapshots'
 * differences, here so user space can test it (the BPF side cannot be
 * driven into a steal-time race at will). The includer defines __u64 and
 * __s64.
 */
#ifndef JACKDAW_THREAD_SPLIT_H
#define JACKDAW_THREAD_SPLIT_H

struct jdw_thread_split {
	__u64 oncpu, runq, blocked;
};

/* span     time between the two touches (bpf_ktime_get_ns)
 * runq     growth of sched_info.run_delay: waits for a CPU, exact
 * oncpu    growth of the on-CPU clock (sum_exec_runtime extrapolated to
 *          the touch, less the run queue's accounted steal), as unsigned
 *          wrap-around difference: it can be "negative"
 * slept    whether the thread blocked in between (its voluntary context
 *          switch count moved)
 *
 * A thread that never slept spent the span on a CPU or waiting for one:
 * its on-CPU time is the span less its run-queue waits, whatever the
 * on-CPU clock says. That clock cannot be trusted over a short span: a
 * hypervisor's steal time reaches clock_task only at the run queue's next
 * clock update, so steal from before the first touch can be taken off
 * between the two (a wakeup the answer's send makes on the same CPU is such
 * an update), which drove the clock's difference below zero -- an
 * interaction served on CPU throughout reported 0 ns on CPU. Steal while
 * the thread runs counts as on-CPU here, as any tracer that follows
 * context switches would count it. Only a thread that slept needs the
 * clock, to tell its sleep from its running; clamped to what the span and
 * the run-queue waits leave. */
static inline void jdw_split_thread_time(__u64 span, __u64 runq, __u64 oncpu, int slept,
					 struct jdw_thread_split *out)
{
	if (runq > span)
		runq = span;
	if (slept && (__s64)oncpu < 0)
		oncpu = 0;
	if (!slept || oncpu > span - runq)
		oncpu = span - runq;
	out->oncpu = oncpu;
	out->runq = runq;
	out->blocked = span - runq - oncpu;
}

#endif /* JACKDAW_THREAD_SPLIT_H */
