/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Kernel differences absorbed in one place (CO-RE shims). Each names the
 * kernel change that forced it. The verifier sees LINUX_KERNEL_VERSION and
 * bpf_core_* results as constants and drops the branch that does not apply,
 * so one object loads on kernels before and after each change.
 */
#ifndef JACKDAW_CORE_FIXES_BPF_H
#define JACKDAW_CORE_FIXES_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

extern int LINUX_KERNEL_VERSION __kconfig;

#ifndef KERNEL_VERSION
#define KERNEL_VERSION(a, b, c) (((a) << 16) + ((b) << 8) + ((c) > 255 ? 255 : (c)))
#endif

/*
 * commit d152c682f03c ("block: add an explicit ->disk backpointer to the
 * request_queue", v5.15) and commit f3fa33acca9f ("block: remove the
 * ->rq_disk field in struct request", v5.17): the request's disk is
 * rq->rq_disk before, rq->q->disk after.
 */
struct request_queue___jdw {
	struct gendisk *disk;
} __attribute__((preserve_access_index));

struct request___jdw {
	struct request_queue___jdw *q;
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

static __always_inline struct gendisk *jdw_rq_disk(void *request)
{
	struct request___jdw *r = request;

	if (bpf_core_field_exists(r->rq_disk))
		return BPF_CORE_READ(r, rq_disk);
	return BPF_CORE_READ(r, q, disk);
}

/*
 * commit a54895fa057c ("block: remove the request_queue to argument request
 * based tracepoints", v5.11): block_rq_issue (and block_rq_insert) took
 * (struct request_queue *q, struct request *rq) before, (struct request *rq)
 * after. ctx is the raw argument array of a tp_btf or raw_tp program.
 */
static __always_inline struct request *jdw_block_rq_issue_rq(unsigned long long *ctx)
{
	if (LINUX_KERNEL_VERSION >= KERNEL_VERSION(5, 11, 0))
		return (struct request *)ctx[0];
	return (struct request *)ctx[1];
}

/*
 * commit 2f064a59a11f ("sched: Change task_struct::state", v5.14): the
 * task's state field was renamed from state to __state.
 */
struct task_struct___jdw_old {
	long state;
} __attribute__((preserve_access_index));

static __always_inline __u64 jdw_task_state(struct task_struct *p)
{
	struct task_struct___jdw_old *old = (void *)p;

	if (bpf_core_field_exists(old->state))
		return BPF_CORE_READ(old, state);
	return BPF_CORE_READ(p, __state);
}

#endif /* JACKDAW_CORE_FIXES_BPF_H */
