// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The floor of full capture's cost: programs on exactly the hooks `jackdaw
 * record` attaches by default (sched+syscall+block+net, all tp_btf) that do
 * nothing (targ_check false) or only the first thing every jackdaw program
 * does, the process check (targ_check true: the current tgid against a
 * load-time one), and return. What a workload loses under this object is
 * the kernel's part: the trampoline and program call on each hook, and the
 * syscall slow path that an attached sys_enter/sys_exit forces on every
 * task. What jackdaw costs above it is its program bodies and user space.
 * Loaded by bench_floor (tests/bench/floor_probe.cc) for
 * scripts/capture-cost-nginx.sh; not used by jackdaw itself. block_io_start
 * is optional as in jackdaw (not every kernel has it). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile bool targ_check = false;
const volatile __u32 targ_tgid = 0;
/* Calls that passed the check: keeps the compare from being optimised out. */
__u64 passed = 0;

static __always_inline int floor_body(void)
{
	if (targ_check && (bpf_get_current_pid_tgid() >> 32) == targ_tgid)
		passed++;
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(floor_sys_enter) { return floor_body(); }

SEC("tp_btf/sys_exit")
int BPF_PROG(floor_sys_exit) { return floor_body(); }

SEC("tp_btf/sched_switch")
int BPF_PROG(floor_sched_switch) { return floor_body(); }

SEC("tp_btf/sched_wakeup")
int BPF_PROG(floor_sched_wakeup) { return floor_body(); }

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(floor_sched_wakeup_new) { return floor_body(); }

SEC("tp_btf/sched_process_fork")
int BPF_PROG(floor_sched_process_fork) { return floor_body(); }

SEC("tp_btf/sched_process_exec")
int BPF_PROG(floor_sched_process_exec) { return floor_body(); }

SEC("tp_btf/sched_process_exit")
int BPF_PROG(floor_sched_process_exit) { return floor_body(); }

SEC("tp_btf/block_io_start")
int BPF_PROG(floor_block_io_start) { return floor_body(); }

SEC("tp_btf/block_rq_issue")
int BPF_PROG(floor_block_rq_issue) { return floor_body(); }

SEC("tp_btf/block_rq_complete")
int BPF_PROG(floor_block_rq_complete) { return floor_body(); }

SEC("tp_btf/net_dev_start_xmit")
int BPF_PROG(floor_net_dev_start_xmit) { return floor_body(); }

SEC("tp_btf/netif_receive_skb")
int BPF_PROG(floor_netif_receive_skb) { return floor_body(); }
