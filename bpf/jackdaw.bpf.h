/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Shared by every probe group: the maps all groups write through (created
 * once by maps.bpf.c and handed to each group's skeleton with
 * bpf_map__reuse_fd) and the reserve/submit path.
 */
#ifndef JACKDAW_BPF_H
#define JACKDAW_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "jackdaw/abi.h"

/* Stamped into every object; user space refuses a mismatch. */
const volatile __u32 jdw_abi_version = JDW_ABI_VERSION;

/* Session constants, set by user space before load (rodata): the verifier
 * sees their values and drops the branches they rule out. What can change
 * during a session (enabled groups, the syscall filter) stays in jdw_control.
 * targ_filter_tgid: only processes in the tgid filter are traced.
 * targ_wakeup_bytes: wake the reader once this much is pending (0: never,
 * the reader polls). */
const volatile bool targ_filter_tgid = false;
const volatile __u32 targ_wakeup_bytes = 0;
/* targ_combine_syscalls: a syscall whose enter and exit meet on one CPU
 * with nothing in between is one JDW_WIRE_SYS_CALL record (see
 * jdw_pending below); off, every enter and exit is its own record. */
const volatile bool targ_combine_syscalls = false;
/* targ_batch_records: records are staged per CPU and written to the ring
 * in batches (see "the record stage" below); off, each takes its own ring
 * reserve and submit. */
const volatile bool targ_batch_records = false;
/* targ_sample: head sampling (record --sample): a connection's socket
 * events are recorded whole or not at all, by a hash of the connection
 * against jdw_control.sample_keep (see "head sampling" below). */
const volatile bool targ_sample = false;

/* One BPF ring buffer per CPU so each CPU's stream is time-ordered and
 * producers never contend. Sizes are set by user space before load. */
struct jdw_ringbuf_inner {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct jdw_ringbuf_inner);
} jdw_ringbufs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct jdw_control);
} jdw_control SEC(".maps");

/* Records lost because the CPU's ring buffer was full, per group. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, JDW_GROUP_MAX);
	__type(key, __u32);
	__type(value, __u64);
} jdw_lost SEC(".maps");

/* Traced processes: the fast bucket array, and the full set (tgid -> 1)
 * for buckets that overflowed. Fork of a traced task adds the child; the
 * exit of its last thread removes it (sched.bpf.c). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, JDW_TGID_BUCKETS);
	__type(key, __u32);
	__type(value, struct jdw_tgid_bucket);
} jdw_tgid_buckets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} jdw_tgid_filter SEC(".maps");

/* Processes a traced parent forked that the filter could not take (their
 * bucket and jdw_tgid_filter both full): they go untraced, so user space
 * reports the count. Per CPU, like every drop counter. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} jdw_tgid_full SEC(".maps");

/* Process admission for --cgroup / --comm (see struct jdw_admit). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct jdw_admit);
} jdw_admit SEC(".maps");

/* ---- the pending syscall enter -------------------------------------------
 * With targ_combine_syscalls, sys_enter of a traced task does not emit: it
 * parks its record in this CPU's slot, and the exit emits one combined
 * record (abi.h, JDW_WIRE_SYS_CALL) when the slot still holds that task's
 * enter of that call. Every other record reserved on the CPU flushes the
 * slot first (jdw_reserve_as), as the ordinary sys_enter it is, so each
 * CPU's stream keeps its time order whatever the pairing. An enter is held
 * at most until the next record on its CPU: a task that blocks or is
 * preempted in its call is switched out, and the sched group's switch
 * record flushes it; without that group (or for a call that runs long on
 * the CPU) the reader's periodic flush bounds the wait — user space runs
 * the syscall group's flush_pending program on each CPU — and the
 * session's stop runs it once more after the detach.
 *
 * Programs on one CPU interleave only by nesting (an interrupt's program
 * inside a task's), so the slot changes hands by compare-and-swap on its
 * state: EMPTY -> BUSY by the enter that fills it (BUSY -> FULL when
 * filled), FULL -> BUSY by whoever empties it (a flush, the matching exit;
 * BUSY -> EMPTY when done). A program that finds the slot BUSY leaves it
 * alone (an interrupted owner finishes the job): its own record then comes
 * before, in the ring, an enter stamped a few instructions earlier — the
 * small disorder of any record nested in another's reserve and submit,
 * which user space re-sorts. */
enum jdw_pending_state {
	JDW_PENDING_EMPTY = 0,
	JDW_PENDING_BUSY = 1,
	JDW_PENDING_FULL = 2,
};

struct jdw_pending {
	__u32 state; /* enum jdw_pending_state */
	__u32 pad;
	struct jdw_sys_enter_record rec;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct jdw_pending);
} jdw_pending SEC(".maps");

/* ---- head sampling ---------------------------------------------------------
 * A connection is in the sample or not for its whole life: the decision is
 * a hash of what both ends of it share (the address and port pairs, taken
 * in either order, so a packet and its socket agree; a unix socket's kernel
 * address), compared with jdw_control.sample_keep, which user space may
 * lower or raise while recording. Listening and datagram sockets are always
 * recorded: one listener or UDP socket serves every client.
 *
 * A left-out syscall is not recorded, but its thread's time in it is not
 * the next recorded event's: the run of left-out events a task makes on a
 * CPU is kept in that CPU's gap slot and written as one sample_gap record
 * (abi.h), stamped with the last one's time, before the next task-context
 * record reserved there (or by the reader's periodic flush). Only task
 * context writes or empties the slot. */
struct jdw_gap_slot {
	__u32 tid;
	__u32 tgid;
	__u64 from;
	__u64 to;
	__u32 skipped;
	__u32 open; /* the slot holds a run (which may count no call: see jdw_gap_close) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct jdw_gap_slot);
} jdw_gap SEC(".maps");

/* Threads doing the work of a connection left out of the sample (see
 * bpf/syscall.bpf.c): their calls, and their USDT probes, are left out. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} jdw_unsampled SEC(".maps");

/* Interrupt context without preempt_count: the per-CPU __preempt_count is
 * not addressable from BPF on kernels built without CONFIG_KALLSYMS_ALL (as
 * here), so context comes from the stack instead. Hard and soft interrupts
 * run on the per-CPU irq stack, outside the current task's stack. A tp_btf
 * program's ctx is the argument array its kernel trampoline keeps on the
 * real kernel stack (the program's own frame may be a private per-CPU stack),
 * so ctx outside the task's stack means "interrupt"; the hook says which
 * kind it fires in. Softirqs run by ksoftirqd are on that thread's stack and
 * are reported as its task context, which is what they are. Needs
 * CAP_PERFMON (pointer to scalar), which loading requires anyway. */
#define JDW_TASK_STACK_MAX (32 * 1024) /* THREAD_SIZE, doubled under KASAN */

static __always_inline __u8 jdw_btf_context(void *ctx, __u8 irq_kind)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 frame = (__u64)ctx;
	__u64 stack = (__u64)task->stack;
	__u64 end = stack + JDW_TASK_STACK_MAX;

	/* Two comparisons, never ctx - stack: verifiers before 6.2 refuse
	 * arithmetic between the ctx pointer and an unbounded scalar ("math
	 * between ctx pointer and register with unbounded min value"), while
	 * comparing them is allowed to a loader with CAP_PERFMON. barrier_var
	 * keeps clang from folding the pair back into that subtraction. */
	barrier_var(end);
	if (frame < stack || frame >= end)
		return irq_kind;
	return JDW_CTX_TASK;
}

static __always_inline struct jdw_control *jdw_ctl(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&jdw_control, &zero);
}

static __always_inline bool jdw_group_on(struct jdw_control *ctl, __u32 group)
{
	return ctl && (ctl->enabled_groups & (1u << group));
}

static __always_inline bool jdw_tgid_traced(struct jdw_control *ctl, __u32 tgid)
{
	__u32 idx = tgid & (JDW_TGID_BUCKETS - 1);
	struct jdw_tgid_bucket *b;

	if (!targ_filter_tgid)
		return true;
	b = bpf_map_lookup_elem(&jdw_tgid_buckets, &idx);
	if (!b || tgid == 0)
		return false;
	if (b->tgid[0] == tgid || b->tgid[1] == tgid || b->tgid[2] == tgid)
		return true;
	return b->overflow && bpf_map_lookup_elem(&jdw_tgid_filter, &tgid) != NULL;
}

static __always_inline void jdw_count_tgid_full(void)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&jdw_tgid_full, &zero);

	if (n)
		*n += 1;
}

/* Adds tgid to the filter from BPF (fork of a traced task). */
static __always_inline void jdw_tgid_add(__u32 tgid)
{
	__u32 idx = tgid & (JDW_TGID_BUCKETS - 1);
	struct jdw_tgid_bucket *b;
	__u8 one = 1;
	long full;
	int i;

	full = bpf_map_update_elem(&jdw_tgid_filter, &tgid, &one, BPF_ANY);
	b = bpf_map_lookup_elem(&jdw_tgid_buckets, &idx);
	if (!b)
		return;
	for (i = 0; i < JDW_TGID_WAYS; i++) {
		if (b->tgid[i] == tgid)
			return;
		if (b->tgid[i] == 0 && __sync_val_compare_and_swap(&b->tgid[i], 0, tgid) == 0)
			return;
	}
	b->overflow = 1;
	/* no way in the bucket and no room in the full set: not traced */
	if (full)
		jdw_count_tgid_full();
}

/* Takes tgid out of the filter (its last thread exited). The bucket's
 * overflow flag stays: other tgids of the bucket may be in the full set. */
static __always_inline void jdw_tgid_forget(__u32 tgid)
{
	__u32 idx = tgid & (JDW_TGID_BUCKETS - 1);
	struct jdw_tgid_bucket *b;
	int i;

	b = bpf_map_lookup_elem(&jdw_tgid_buckets, &idx);
	if (b)
		for (i = 0; i < JDW_TGID_WAYS; i++)
			if (b->tgid[i] == tgid)
				__sync_val_compare_and_swap(&b->tgid[i], tgid, 0);
	bpf_map_delete_elem(&jdw_tgid_filter, &tgid);
}

/* ---- process admission: --cgroup and --comm -----------------------------
 * Called only where a process is born or changes image (fork, exec), never
 * per event: a match puts the tgid in the filter, and from then on the
 * ordinary tgid check lets its events through. */
static __always_inline bool jdw_admit_current(void)
{
	char comm[JDW_COMM_LEN] = {};
	struct jdw_admit *a;
	__u32 zero = 0;
	int i;

	a = bpf_map_lookup_elem(&jdw_admit, &zero);
	if (!a || !a->flags)
		return false;
	if ((a->flags & JDW_ADMIT_CGROUP) &&
	    bpf_get_current_ancestor_cgroup_id(a->cgroup_level) == a->cgroup_id)
		return true;
	if (!(a->flags & JDW_ADMIT_COMM) || bpf_get_current_comm(comm, sizeof(comm)) != 0)
		return false;
	for (i = 0; i < JDW_COMM_LEN; i++) {
		if (comm[i] != a->comm[i])
			return false;
		if (!comm[i])
			break;
	}
	return true;
}

/* Admits the current process if it is not traced yet and matches. */
static __always_inline void jdw_admit_if_match(struct jdw_control *ctl, __u32 tgid)
{
	if (targ_filter_tgid && !jdw_tgid_traced(ctl, tgid) &&
	    jdw_admit_current())
		jdw_tgid_add(tgid);
}

static __always_inline void jdw_count_lost(__u32 group)
{
	__u64 *lost = bpf_map_lookup_elem(&jdw_lost, &group);

	if (lost)
		*lost += 1;
}

/* ---- the record stage -----------------------------------------------------
 * With targ_batch_records, a record is written into this CPU's stage, not
 * reserved on the ring: the stage goes to the ring as one ring record (the
 * records back to back, each with its own header and size) by one
 * bpf_ringbuf_output when it holds JDW_STAGE_BYTES, when the CPU switches
 * to its idle task (nothing else would come to push it out), and when user
 * space runs the syscall group's flush_pending program on the CPU (the
 * reader does for a stage that has not moved for a period, and at the
 * session's stop, after the detach). One ring write per batch instead of a
 * reserve and submit per record: reserving takes the ring's lock and
 * writes the ring's cache lines one record at a time, about 35 ns a record
 * above staging it (bench_batch).
 *
 * Nesting: a program that interrupts another on the CPU between its
 * reserve and commit (an interrupt's inside a task's) writes its record
 * into a slot of its own, one per depth (`depth` counts the programs
 * between reserve and commit; each restores the depth it found), and
 * writes that one record to the ring at its commit. It reaches the reader
 * before the staged records older than it; user space re-sorts each CPU's
 * records (the same small disorder as any nested record, held longer).
 * With batching on, no path holds a ring reservation (a verifier
 * reference) except records larger than JDW_STAGE_REC_MAX, whose size says
 * so at compile time; with it off every record does (jdw_commit()).
 * Losses: a failed batch output loses every event in it, counted per
 * group; a record nested deeper than JDW_STAGE_NEST is lost, counted. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct jdw_stage);
} jdw_stage SEC(".maps");

static __always_inline struct jdw_stage *jdw_stage_of_cpu(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&jdw_stage, &zero);
}

static __always_inline void jdw_count_lost_n(__u32 group, __u64 n)
{
	__u64 *lost = bpf_map_lookup_elem(&jdw_lost, &group);

	if (lost)
		*lost += n;
}

static __always_inline void *jdw_this_ring(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&jdw_ringbufs, &cpu);
}

/* Writes the staged records to this CPU's ring as one ring record. The
 * caller owns the stage (depth 1). */
static __always_inline void jdw_stage_flush(struct jdw_stage *s)
{
	__u32 len = s->len, g;
	void *rb;

	/* never above the data area: bounded for the verifier, which on 6.1
	 * loses a map value's range unless it is checked where it is used */
	barrier_var(len);
	if (len == 0 || len > JDW_STAGE_BYTES + JDW_STAGE_REC_MAX)
		return;
	rb = jdw_this_ring();
	if (!rb || bpf_ringbuf_output(rb, s->data, len, BPF_RB_NO_WAKEUP) != 0) {
		for (g = 0; g < JDW_GROUP_MAX; g++)
			if (s->count[g])
				jdw_count_lost_n(g, s->count[g]);
	}
	for (g = 0; g < JDW_GROUP_MAX; g++)
		s->count[g] = 0;
	s->len = 0;
}

/* Flushes this CPU's stage unless a program it interrupted is writing. */
static __always_inline void jdw_stage_flush_now(void)
{
	struct jdw_stage *s;

	if (!targ_batch_records)
		return;
	s = jdw_stage_of_cpu();
	if (!s || s->depth || __sync_val_compare_and_swap(&s->depth, 0, 1) != 0)
		return;
	jdw_stage_flush(s);
	barrier();
	s->depth = 0;
}

/* `size` bytes for a record of `group`: in this CPU's stage, or a nested
 * program's slot (*ring = NULL: jdw_commit() finishes either), or, with
 * batching off or a record too large to stage, on the ring (*ring: the
 * ring). Header left to the caller, without the pending flush
 * jdw_reserve_as() does first: for the records that empty the slot
 * themselves. NULL when there is no room (not counted). */
static __always_inline void *jdw_ring_reserve_raw(__u32 group, __u32 size, void **ring)
{
	struct jdw_stage *s;
	__u32 d, off;
	void *rb;

	*ring = NULL;
	if (targ_batch_records && size <= JDW_STAGE_REC_MAX) {
		s = jdw_stage_of_cpu();
		if (!s)
			return NULL;
		/* Claimed in one instruction: a program that interrupted a plain
		 * read and write of depth would see the stage free, and the two
		 * would write the same bytes (an interrupt's program runs to its
		 * end before the interrupted one goes on, so the depth it finds
		 * is back to what it was: the exchange fails only for that). */
		d = s->depth;
		if (d == 0 && __sync_val_compare_and_swap(&s->depth, 0, 1) == 0) {
			off = s->len;
			if (off >= JDW_STAGE_BYTES) {
				s->depth = 0;
				return NULL; /* never: a full stage is flushed at its commit */
			}
			off &= JDW_STAGE_BYTES - 1; /* the same, for the verifier */
			barrier_var(off);
			s->group[0] = group;
			return s->data + off;
		}
		if (d == 0 || d > JDW_STAGE_NEST || __sync_val_compare_and_swap(&s->depth, d, d + 1) != d)
			return NULL;
		s->group[d & (JDW_STAGE_GROUP_SLOTS - 1)] = group;
		return s->nested[(d - 1) & (JDW_STAGE_NEST - 1)]; /* this program's slot */
	}
	rb = jdw_this_ring();
	if (!rb)
		return NULL;
	*ring = rb;
	return bpf_ringbuf_reserve(rb, size, 0);
}

/* Finishes a record: submits it to its ring (ring set), or adds it to the
 * stage, flushing a full one (the stage's writer, depth 1), or writes a
 * nested program's record to the ring on its own (depth above 1). */
static __always_inline void jdw_commit(void *rec, void *ring, __u64 flags)
{
	struct jdw_record_header *h = rec;
	struct jdw_stage *s;
	__u32 d, g, n, size;
	void *rb;

	/* Without batching every record is on the ring: said with the constant
	 * first, because a 6.1 verifier does not hold an inner map's pointer
	 * (`ring`) non-null and would follow the stage path with the ring's
	 * reservation still held ("Unreleased reference"). */
	if (!targ_batch_records || ring) {
		bpf_ringbuf_submit(rec, flags);
		return;
	}
	s = jdw_stage_of_cpu();
	if (!s)
		return; /* never: the reserve found it */
	/* losses count events: a combined syscall record stands for two */
	n = h->type == JDW_WIRE_SYS_CALL ? 2 : 1;
	d = s->depth;
	if (d > 1) {
		/* a nested program's record: its own slot, to the ring alone */
		g = s->group[(d - 1) & (JDW_STAGE_GROUP_SLOTS - 1)];
		size = h->size;
		barrier_var(size);
		if (size > JDW_STAGE_REC_MAX)
			size = JDW_STAGE_REC_MAX;
		rb = jdw_this_ring();
		if (!rb || bpf_ringbuf_output(rb, s->nested[(d - 2) & (JDW_STAGE_NEST - 1)], size, flags) != 0)
			jdw_count_lost_n(g < JDW_GROUP_MAX ? g : 0, n);
		s->depth = d - 1;
		return;
	}
	if (s->len == 0)
		s->first_ts = h->ts;
	s->len += h->size;
	g = s->group[0];
	if (g < JDW_GROUP_MAX)
		s->count[g] += n;
	if (s->len >= JDW_STAGE_BYTES)
		jdw_stage_flush(s);
	barrier();
	s->depth = 0;
}

/* Emits the parked enter as an ordinary sys_enter record; the caller owns
 * the slot (BUSY). A full ring loses it, counted. */
static __always_inline void jdw_emit_pending(struct jdw_pending *p)
{
	struct jdw_sys_enter_record *r;
	void *rb;

	r = jdw_ring_reserve_raw(JDW_GROUP_SYSCALL, sizeof(*r), &rb);
	if (!r) {
		jdw_count_lost(JDW_GROUP_SYSCALL);
		return;
	}
	__builtin_memcpy(r, &p->rec, sizeof(*r));
	jdw_commit(r, rb, BPF_RB_NO_WAKEUP);
}

/* Empties the slot if it holds an enter: emits it, then frees the slot. */
static __always_inline void jdw_pending_flush_slot(struct jdw_pending *p)
{
	if (p->state != JDW_PENDING_FULL ||
	    __sync_val_compare_and_swap(&p->state, JDW_PENDING_FULL, JDW_PENDING_BUSY) != JDW_PENDING_FULL)
		return;
	jdw_emit_pending(p);
	barrier(); /* the copy above reads the slot before it is released */
	p->state = JDW_PENDING_EMPTY;
}

static __always_inline struct jdw_pending *jdw_pending_slot(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&jdw_pending, &zero);
}

/* Called before every record reserved on this CPU (and by the flush
 * program): a parked enter goes first, so time order holds. */
static __always_inline void jdw_flush_pending(void)
{
	struct jdw_pending *p;

	if (!targ_combine_syscalls)
		return;
	p = jdw_pending_slot();
	if (p)
		jdw_pending_flush_slot(p);
}

static __always_inline struct jdw_gap_slot *jdw_gap_slot(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&jdw_gap, &zero);
}

/* Writes the slot's run of left-out events as one sample_gap record and
 * empties it. A full ring loses it, counted. */
static __always_inline void jdw_gap_emit(struct jdw_gap_slot *g)
{
	struct jdw_sample_gap_record *r;
	void *rb;

	__u32 skipped = g->skipped;

	g->skipped = 0;
	g->open = 0;
	r = jdw_ring_reserve_raw(JDW_GROUP_SYSCALL, sizeof(*r), &rb);
	if (!r) {
		jdw_count_lost(JDW_GROUP_SYSCALL);
		return;
	}
	r->hdr.ts = g->to;
	r->hdr.type = JDW_EVENT_SAMPLE_GAP;
	r->hdr.size = sizeof(*r);
	r->hdr.cpu = bpf_get_smp_processor_id();
	r->hdr.ctx = JDW_CTX_TASK;
	r->hdr.flags = 0;
	r->hdr.tgid = g->tgid;
	r->hdr.tid = g->tid;
	r->body.from = g->from;
	r->body.skipped = skipped;
	r->body.reserved = 0;
	jdw_commit(r, rb, BPF_RB_NO_WAKEUP);
}

/* Before a task-context record on this CPU: the gap it follows goes first. */
static __always_inline void jdw_gap_flush(void)
{
	struct jdw_gap_slot *g;

	if (!targ_sample)
		return;
	g = jdw_gap_slot();
	if (g && g->open)
		jdw_gap_emit(g);
}

/* The current task's run of left-out work reaches `now`, counting
 * `skipped` more left-out calls: jdw_gap_note for a call left out,
 * jdw_gap_close when the task leaves that work (it goes back to waiting, or
 * takes up a connection in the sample), so its time up to here was that
 * work too, whatever came between. */
static __always_inline void jdw_gap_extend(__u64 pid_tgid, __u32 skipped)
{
	struct jdw_gap_slot *g = jdw_gap_slot();
	__u64 now = bpf_ktime_get_ns();

	if (!g)
		return;
	if (g->open && g->tid != (__u32)pid_tgid)
		jdw_gap_emit(g);
	if (!g->open) {
		g->tid = (__u32)pid_tgid;
		g->tgid = pid_tgid >> 32;
		g->from = now;
		g->open = 1;
	}
	g->to = now;
	g->skipped += skipped;
}

static __always_inline void jdw_gap_note(__u64 pid_tgid) { jdw_gap_extend(pid_tgid, 1); }
static __always_inline void jdw_gap_close(__u64 pid_tgid) { jdw_gap_extend(pid_tgid, 0); }

#include "sample.bpf.h"

/* Reserves a record of `size` bytes on this CPU's ring and fills the header
 * (tid/tgid of the current task; ctx_kind from jdw_btf_context()). Returns NULL, having counted the loss, when
 * the ring is full. *ring receives the ring for jdw_submit(). jdw_reserve_as
 * takes the caller's bpf_get_current_pid_tgid() to save a helper call. */
static __always_inline void *jdw_reserve_as(__u32 group, __u16 type, __u32 size, void **ring,
					    __u8 ctx_kind, __u64 pid_tgid)
{
	struct jdw_record_header *hdr;
	__u32 cpu = bpf_get_smp_processor_id();
	void *rb;

	jdw_flush_pending();
	if (ctx_kind == JDW_CTX_TASK)
		jdw_gap_flush();
	hdr = jdw_ring_reserve_raw(group, size, &rb);
	if (!hdr) {
		jdw_count_lost(group);
		return NULL;
	}
	/* Stamp after the reserve so that, within one CPU, ring order and time
	 * order agree except for a record nested inside another's reserve and
	 * submit (an interrupt); user space re-sorts that small window. */
	hdr->ts = bpf_ktime_get_ns();
	hdr->type = type;
	hdr->size = size;
	hdr->cpu = cpu;
	hdr->ctx = ctx_kind;
	hdr->flags = 0;
	hdr->tgid = pid_tgid >> 32;
	hdr->tid = (__u32)pid_tgid;
	*ring = rb;
	return hdr;
}

static __always_inline void *jdw_reserve(__u32 group, __u16 type, __u32 size, void **ring,
					 __u8 ctx_kind)
{
	return jdw_reserve_as(group, type, size, ring, ctx_kind, bpf_get_current_pid_tgid());
}

/* Never wakes the reader per record: on a VM a wakeup costs microseconds.
 * With wakeup_bytes 0 (the default) the reader polls on a short timer and
 * the ring is never queried; otherwise the reader is woken once that much
 * is pending (for low-latency consumers). */
static __always_inline void jdw_submit(void *rec, void *ring, struct jdw_control *ctl)
{
	__u64 flags = BPF_RB_NO_WAKEUP;
	void *rb;

	/* a staged record has no ring of its own yet: ask this CPU's */
	rb = ring ? ring : (targ_wakeup_bytes ? jdw_this_ring() : NULL);
	if (targ_wakeup_bytes && rb && bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA) >= targ_wakeup_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	jdw_commit(rec, ring, flags);
}

#endif /* JACKDAW_BPF_H */
