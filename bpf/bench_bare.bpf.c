// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The comparison point for `make bench`: the least a syscall probe can do
 * on jackdaw's hooks. tp_btf sys_enter/sys_exit (the hooks jackdaw attaches
 * first), one compare against a load-time tgid, a record of the size of
 * jackdaw's sys_enter/sys_exit record (48 bytes) into one ring buffer that
 * never wakes the reader (it polls). It reads the registers jackdaw reads
 * (the first argument, the byte count) but resolves nothing: the difference
 * to jackdaw is jackdaw's own logic. Not used by jackdaw itself. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 targ_tgid = 0;
__u64 lost = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} bare_ring SEC(".maps");

struct bare_record {
	__u64 ts;
	__u32 tid;
	__u32 tgid;
	__u64 nr;
	__u64 arg0;
	__u64 arg;
	__u64 ret;
};

_Static_assert(sizeof(struct bare_record) == 48, "the bare record matches jackdaw's syscall record");

static __always_inline void emit(long nr, __u64 arg0, __u64 arg, __u64 ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct bare_record *r;

	if ((id >> 32) != targ_tgid)
		return;
	r = bpf_ringbuf_reserve(&bare_ring, sizeof(*r), 0);
	if (!r) {
		__sync_fetch_and_add(&lost, 1);
		return;
	}
	r->ts = bpf_ktime_get_ns();
	r->tid = (__u32)id;
	r->tgid = id >> 32;
	r->nr = nr;
	r->arg0 = arg0;
	r->arg = arg;
	r->ret = ret;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(bare_sys_enter, struct pt_regs *regs, long id)
{
	emit(id, regs->di, regs->dx, 0);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(bare_sys_exit, struct pt_regs *regs, long ret)
{
	emit(regs->orig_ax, regs->di, 0, ret);
	return 0;
}
