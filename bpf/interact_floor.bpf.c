// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The floor of the interact group's cost: EMPTY programs on exactly the
 * hooks the group attaches (interact.bpf.c), so a benchmark can tell the
 * price of being attached at all -- the trampoline, bpf_trace_run*, RCU and
 * migrate_disable around every firing -- from what the group's programs do.
 * scripts/bench-interact.sh loads it with bpftool (mode "floor"); jackdaw
 * itself never does. Keep the list of hooks in step with interact.bpf.c:
 * a hook there without its twin here understates the floor. sched_switch
 * and sched_wakeup are the hooks the group had before it read the
 * scheduler's own counters instead; the loader attaches them only when
 * asked (bench_interact_floor --with-sched), to price what leaving them
 * saved. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tp_btf/sched_switch")
int BPF_PROG(fl_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(fl_sched_wakeup, struct task_struct *p)
{
	return 0;
}

SEC("tp_btf/block_io_start")
int BPF_PROG(fl_block_io_start, struct request *rq)
{
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(fl_sched_process_fork, struct task_struct *parent, struct task_struct *child)
{
	return 0;
}

SEC("tp_btf/sk_data_ready")
int BPF_PROG(fl_sk_data_ready, const struct sock *sk)
{
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(fl_sock_recv_length, struct sock *sk, int ret, int flags)
{
	return 0;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(fl_sock_send_length, struct sock *sk, int ret, int flags)
{
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(fl_inet_sock_set_state, const struct sock *sk, const int oldstate, const int newstate)
{
	return 0;
}

SEC("cgroup/sock_release")
int fl_sock_release(struct bpf_sock *ctx)
{
	return 1;
}
