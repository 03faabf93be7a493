// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* sched group: context switches, wakeups and task lifecycle.
 * tp_btf programs are preferred; the raw_tp/ programs are the fallback
 * for kernels without BTF-typed tracepoints (user space picks one set with
 * bpf_program__set_autoload). */
#include "jackdaw.bpf.h"
#include "core_fixes.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* A CPU switching to its idle task stages nothing more for a while: its
 * staged records (jackdaw.bpf.h, "the record stage") go now, traced or
 * not, instead of waiting for the reader's periodic flush. */
static __always_inline void flush_if_idle(__u32 next_tid)
{
	if (next_tid == 0)
		jdw_stage_flush_now();
}

static __always_inline void emit_switch(struct jdw_control *ctl, __u32 prev_tid, __u32 prev_tgid,
					__u32 next_tid, __u32 next_tgid, __u64 prev_state, __u8 ck)
{
	struct jdw_sched_switch_record *r;
	void *ring;

	if (!jdw_group_on(ctl, JDW_GROUP_SCHED))
		return;
	if (!jdw_tgid_traced(ctl, prev_tgid) && !jdw_tgid_traced(ctl, next_tgid))
		return;
	r = jdw_reserve(JDW_GROUP_SCHED, JDW_EVENT_SCHED_SWITCH, sizeof(*r), &ring, ck);
	if (!r)
		return;
	/* The header names the task switched out, which may be the idle
	 * task (tid 0) on an otherwise idle CPU. */
	r->hdr.tid = prev_tid;
	r->hdr.tgid = prev_tgid;
	r->body.prev_tid = prev_tid;
	r->body.prev_tgid = prev_tgid;
	r->body.next_tid = next_tid;
	r->body.next_tgid = next_tgid;
	r->body.prev_state = prev_state;
	jdw_submit(r, ring, ctl);
}

static __always_inline void emit_wakeup(struct jdw_control *ctl, __u16 type, __u32 wakee_tid,
					__u32 wakee_tgid, __u32 target_cpu, __u8 ck)
{
	struct jdw_sched_wakeup_record *r;
	__u32 waker_tgid = bpf_get_current_pid_tgid() >> 32;
	void *ring;

	if (!jdw_group_on(ctl, JDW_GROUP_SCHED))
		return;
	if (!jdw_tgid_traced(ctl, wakee_tgid) && !jdw_tgid_traced(ctl, waker_tgid))
		return;
	r = jdw_reserve(JDW_GROUP_SCHED, type, sizeof(*r), &ring, ck);
	if (!r)
		return;
	r->body.wakee_tid = wakee_tid;
	r->body.wakee_tgid = wakee_tgid;
	r->body.target_cpu = target_cpu;
	r->body.reserved = 0;
	jdw_submit(r, ring, ctl);
}

static __always_inline void emit_fork(struct jdw_control *ctl, __u32 parent_tgid, __u32 child_tid,
				      __u32 child_tgid, const char *comm, __u8 ck)
{
	struct jdw_task_fork_record *r;
	void *ring;

	if (!ctl)
		return;
	/* Follow descendants even while the group is disabled, so that
	 * re-enabling it still sees the whole process tree. */
	if (targ_filter_tgid) {
		/* The parent runs here: a match admits its child (same cgroup). */
		if (!jdw_tgid_traced(ctl, parent_tgid) && !jdw_admit_current())
			return;
		if (child_tgid != parent_tgid)
			jdw_tgid_add(child_tgid);
	}
	if (!jdw_group_on(ctl, JDW_GROUP_SCHED))
		return;
	r = jdw_reserve(JDW_GROUP_SCHED, JDW_EVENT_TASK_FORK, sizeof(*r), &ring, ck);
	if (!r)
		return;
	r->body.child_tid = child_tid;
	r->body.child_tgid = child_tgid;
	bpf_probe_read_kernel_str(&r->body.comm, sizeof(r->body.comm), comm);
	jdw_submit(r, ring, ctl);
}

static __always_inline void emit_exec(struct jdw_control *ctl, struct task_struct *p, __u32 old_tid, __u8 ck)
{
	struct jdw_task_exec_record *r;
	void *ring;

	/* A new image: --comm NAME and a process moved into --cgroup before
	 * exec (systemd, container runtimes) are admitted here. */
	jdw_admit_if_match(ctl, BPF_CORE_READ(p, tgid));
	if (!jdw_group_on(ctl, JDW_GROUP_SCHED) || !jdw_tgid_traced(ctl, BPF_CORE_READ(p, tgid)))
		return;
	r = jdw_reserve(JDW_GROUP_SCHED, JDW_EVENT_TASK_EXEC, sizeof(*r), &ring, ck);
	if (!r)
		return;
	r->body.old_tid = old_tid;
	r->body.reserved = 0;
	BPF_CORE_READ_STR_INTO(&r->body.comm, p, comm);
	jdw_submit(r, ring, ctl);
}

static __always_inline void emit_exit(struct jdw_control *ctl, struct task_struct *p, __u8 ck)
{
	struct jdw_task_exit_record *r;
	void *ring;

	if (!jdw_group_on(ctl, JDW_GROUP_SCHED) || !jdw_tgid_traced(ctl, BPF_CORE_READ(p, tgid)))
		return;
	r = jdw_reserve(JDW_GROUP_SCHED, JDW_EVENT_TASK_EXIT, sizeof(*r), &ring, ck);
	if (!r)
		return;
	r->body.exit_code = BPF_CORE_READ(p, exit_code);
	r->body.reserved = 0;
	BPF_CORE_READ_STR_INTO(&r->body.comm, p, comm);
	jdw_submit(r, ring, ctl);
}

/* The filter forgets a process once its last thread exits, or an
 * unrelated process that later gets the same pid would be traced. Here
 * signal->live already counts this thread out (do_exit), so 0 means the
 * whole group is gone, whichever thread is last: not the leader's exit,
 * since a leader that ends first (pthread_exit in main) leaves its
 * threads running. The pid stays taken until the leader is reaped, so no
 * new process can hold it yet. After emit_exit: the exit record is the
 * process's last. */
static __always_inline void forget_if_group_dead(struct task_struct *p)
{
	if (targ_filter_tgid && BPF_CORE_READ(p, signal, live.counter) == 0)
		jdw_tgid_forget(BPF_CORE_READ(p, tgid));
}

/* ---- tp_btf ------------------------------------------------------------ */

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	/* A preempted task is still runnable whatever prev_state says. */
	emit_switch(jdw_ctl(), prev->pid, prev->tgid, next->pid, next->tgid,
		    preempt ? 0 : prev_state, JDW_CTX_TASK);
	flush_if_idle(next->pid);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wakeup_btf, struct task_struct *p)
{
	emit_wakeup(jdw_ctl(), JDW_EVENT_SCHED_WAKEUP, p->pid, p->tgid, p->wake_cpu, jdw_btf_context(ctx, JDW_CTX_SOFTIRQ));
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new_btf, struct task_struct *p)
{
	emit_wakeup(jdw_ctl(), JDW_EVENT_SCHED_WAKEUP_NEW, p->pid, p->tgid, p->wake_cpu, jdw_btf_context(ctx, JDW_CTX_SOFTIRQ));
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(sched_process_fork_btf, struct task_struct *parent, struct task_struct *child)
{
	emit_fork(jdw_ctl(), parent->tgid, child->pid, child->tgid, child->comm, JDW_CTX_TASK);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(sched_process_exec_btf, struct task_struct *p, pid_t old_pid)
{
	emit_exec(jdw_ctl(), p, old_pid, JDW_CTX_TASK);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(sched_process_exit_btf, struct task_struct *p)
{
	emit_exit(jdw_ctl(), p, JDW_CTX_TASK);
	forget_if_group_dead(p);
	return 0;
}

/* ---- raw_tp (fallback) ---------------------------------------------------
 * For kernels without BTF-typed tracepoints: the same arguments, untyped,
 * read with CO-RE; unlike classic tracepoints they still carry the tasks,
 * so next_tgid and the child's tgid are known. */

SEC("raw_tp/sched_switch")
int BPF_PROG(sched_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	/* prev_state is the 4th argument since commit fa2c3254d7cf
	 * ("sched/tracing: Don't re-read p->state when emitting sched_switch
	 * event", v5.18); before, the task's own state is what was traced. */
	__u64 state = LINUX_KERNEL_VERSION >= KERNEL_VERSION(5, 18, 0) ? (unsigned int)ctx[3] :
									jdw_task_state(prev);

	emit_switch(jdw_ctl(), BPF_CORE_READ(prev, pid), BPF_CORE_READ(prev, tgid), BPF_CORE_READ(next, pid),
		    BPF_CORE_READ(next, tgid), preempt ? 0 : state, JDW_CTX_TASK);
	flush_if_idle(BPF_CORE_READ(next, pid));
	return 0;
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(sched_wakeup_raw, struct task_struct *p)
{
	emit_wakeup(jdw_ctl(), JDW_EVENT_SCHED_WAKEUP, BPF_CORE_READ(p, pid), BPF_CORE_READ(p, tgid),
		    BPF_CORE_READ(p, wake_cpu), jdw_btf_context(ctx, JDW_CTX_SOFTIRQ));
	return 0;
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new_raw, struct task_struct *p)
{
	emit_wakeup(jdw_ctl(), JDW_EVENT_SCHED_WAKEUP_NEW, BPF_CORE_READ(p, pid), BPF_CORE_READ(p, tgid),
		    BPF_CORE_READ(p, wake_cpu), jdw_btf_context(ctx, JDW_CTX_SOFTIRQ));
	return 0;
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(sched_process_fork_raw, struct task_struct *parent, struct task_struct *child)
{
	emit_fork(jdw_ctl(), BPF_CORE_READ(parent, tgid), BPF_CORE_READ(child, pid), BPF_CORE_READ(child, tgid),
		  child->comm, JDW_CTX_TASK);
	return 0;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(sched_process_exec_raw, struct task_struct *p, pid_t old_pid)
{
	emit_exec(jdw_ctl(), p, old_pid, JDW_CTX_TASK);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(sched_process_exit_raw, struct task_struct *p)
{
	emit_exit(jdw_ctl(), p, JDW_CTX_TASK);
	forget_if_group_dead(p);
	return 0;
}
