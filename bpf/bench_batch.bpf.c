// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The question behind batching records per ring reserve, priced alone:
 * what a syscall probe's record costs when each record takes its own ring
 * reserve and submit (targ_stage false: bench_bare's path) against one
 * staged in a per-CPU buffer that goes to the ring with one
 * bpf_ringbuf_output when full (targ_stage true). Both write the same
 * 48-byte record with its own clock read, on tp_btf sys_enter/sys_exit,
 * for one load-time tgid. The staging path keeps what a real one needs on
 * the hot path: a busy flag (a program nested in another on the CPU, as a
 * softirq's inside a syscall's, reserves directly instead of writing into
 * a half-written stage) and loss accounting by records (a failed output
 * loses every record of the batch). What it leaves out, because this loop
 * never needs it, is the flush on sched_switch and the time bound: it
 * measures the hot path's best case. Loaded by bench_batch
 * (tests/bench/batch_probe.cc); not used by jackdaw itself. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 targ_tgid = 0;
const volatile bool targ_stage = false;
__u64 lost = 0;   /* records, not batches */
__u64 nested = 0; /* records that found the stage busy and went direct */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} batch_ring SEC(".maps");

struct batch_record {
	__u64 ts;
	__u32 tid;
	__u32 tgid;
	__u64 nr;
	__u64 arg0;
	__u64 arg;
	__u64 ret;
};

#define STAGE_BYTES 4096

struct stage {
	__u32 len;
	__u32 busy;
	__u8 data[STAGE_BYTES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stage);
} batch_stage SEC(".maps");

static __always_inline void fill(struct batch_record *r, __u64 id, long nr, __u64 arg0, __u64 arg, __u64 ret)
{
	r->ts = bpf_ktime_get_ns();
	r->tid = (__u32)id;
	r->tgid = id >> 32;
	r->nr = nr;
	r->arg0 = arg0;
	r->arg = arg;
	r->ret = ret;
}

static __always_inline void emit_direct(__u64 id, long nr, __u64 arg0, __u64 arg, __u64 ret)
{
	struct batch_record *r = bpf_ringbuf_reserve(&batch_ring, sizeof(*r), 0);

	if (!r) {
		__sync_fetch_and_add(&lost, 1);
		return;
	}
	fill(r, id, nr, arg0, arg, ret);
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

static __always_inline void emit_staged(__u64 id, long nr, __u64 arg0, __u64 arg, __u64 ret)
{
	struct stage *s;
	__u32 zero = 0, off;

	s = bpf_map_lookup_elem(&batch_stage, &zero);
	if (!s)
		return;
	if (s->busy) {
		__sync_fetch_and_add(&nested, 1);
		emit_direct(id, nr, arg0, arg, ret);
		return;
	}
	s->busy = 1;
	barrier();
	off = s->len;
	if (off > STAGE_BYTES - sizeof(struct batch_record))
		off = 0; /* never: a full stage is flushed below */
	fill((struct batch_record *)(s->data + off), id, nr, arg0, arg, ret);
	off += sizeof(struct batch_record);
	if (off > STAGE_BYTES - sizeof(struct batch_record)) {
		if (bpf_ringbuf_output(&batch_ring, s->data, off, BPF_RB_NO_WAKEUP) != 0)
			__sync_fetch_and_add(&lost, off / sizeof(struct batch_record));
		off = 0;
	}
	s->len = off;
	barrier();
	s->busy = 0;
}

static __always_inline void emit(long nr, __u64 arg0, __u64 arg, __u64 ret)
{
	__u64 id = bpf_get_current_pid_tgid();

	if ((id >> 32) != targ_tgid)
		return;
	if (targ_stage)
		emit_staged(id, nr, arg0, arg, ret);
	else
		emit_direct(id, nr, arg0, arg, ret);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(batch_sys_enter, struct pt_regs *regs, long id)
{
	emit(id, regs->di, regs->dx, 0);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(batch_sys_exit, struct pt_regs *regs, long ret)
{
	emit(regs->orig_ax, regs->di, 0, ret);
	return 0;
}
