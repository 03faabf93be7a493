// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The comparison point for `make bench`: the least a syscall probe can do.
 * raw_tp sys_enter/sys_exit, one compare against a load-time tgid, a
 * 32-byte record into one ring buffer that never wakes the reader (it
 * polls). Not used by jackdaw itself. */
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
	__u32 nr;
	__u64 arg;
	__u64 ret;
};

static __always_inline void emit(long nr, __u64 arg, __u64 ret)
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
	r->nr = nr;
	r->arg = arg;
	r->ret = ret;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

SEC("raw_tp/sys_enter")
int BPF_PROG(bare_sys_enter, struct pt_regs *regs, long id)
{
	emit(id, 0, 0);
	return 0;
}

SEC("raw_tp/sys_exit")
int BPF_PROG(bare_sys_exit, struct pt_regs *regs, long ret)
{
	emit(-1, 0, ret);
	return 0;
}
