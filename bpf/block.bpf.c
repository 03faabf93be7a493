// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* block group: request issue and completion. The completion carries the
 * issue time and issuing task, so user space can place the request's start
 * where it happened even though it is reported at the end.
 * With a process filter, a request is kept when the task that submitted it
 * is traced: the issuing context is often a kworker or an irq, so the
 * submitter is taken from block_io_start where the kernel has it (6.5+),
 * else from the issuing task; its completion is kept when its issue was. */
#include "jackdaw.bpf.h"
#include "core_fixes.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define REQ_OP_MASK 0xff
#define MINORBITS 20

struct issue_info {
	__u64 ts;
	__u32 tid;
	__u32 tgid;
};

/* rq -> submitter, set in the submitting task (block_io_start), consumed
 * at issue. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct issue_info);
} jdw_rq_submit SEC(".maps");

/* rq -> issue, removed at completion (and by LRU for lost completions). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct issue_info);
} jdw_rq_issue SEC(".maps");

static __always_inline void emit_issue(__u64 rq, __u32 dev, __u32 op, __u64 sector, __u32 bytes, __u8 ck)
{
	struct jdw_control *ctl = jdw_ctl();
	struct jdw_block_issue_record *r;
	struct issue_info info;
	__u64 id = bpf_get_current_pid_tgid();
	void *ring;

	struct issue_info *sub;

	if (!jdw_group_on(ctl, JDW_GROUP_BLOCK))
		return;
	info.ts = bpf_ktime_get_ns();
	info.tid = (__u32)id;
	info.tgid = id >> 32;
	sub = bpf_map_lookup_elem(&jdw_rq_submit, &rq);
	if (sub) {
		info.tid = sub->tid;
		info.tgid = sub->tgid;
		bpf_map_delete_elem(&jdw_rq_submit, &rq);
	} else if (targ_filter_tgid && (sub = bpf_map_lookup_elem(&jdw_rq_issue, &rq))) {
		/* issued again (a request the device sent back, re-issued by
		 * kblockd): still the submitter's, or its completion is lost */
		info.tid = sub->tid;
		info.tgid = sub->tgid;
	}
	if (!jdw_tgid_traced(ctl, info.tgid)) {
		/* an earlier request at this address is over */
		bpf_map_delete_elem(&jdw_rq_issue, &rq);
		return;
	}
	bpf_map_update_elem(&jdw_rq_issue, &rq, &info, BPF_ANY);
	r = jdw_reserve(JDW_GROUP_BLOCK, JDW_EVENT_BLOCK_ISSUE, sizeof(*r), &ring, ck);
	if (!r)
		return;
	r->body.dev = dev;
	r->body.op = op;
	r->body.sector = sector;
	r->body.bytes = bytes;
	r->body.submit_tid = info.tid;
	r->body.rq = rq;
	jdw_submit(r, ring, ctl);
}

static __always_inline void emit_complete(__u64 rq, __u32 dev, __u32 op, __u64 sector, __u32 bytes,
					  int error, __u8 ck)
{
	struct jdw_control *ctl = jdw_ctl();
	struct jdw_block_complete_record *r;
	struct issue_info *info;
	void *ring;

	info = bpf_map_lookup_elem(&jdw_rq_issue, &rq);
	if (!jdw_group_on(ctl, JDW_GROUP_BLOCK)) {
		if (info)
			bpf_map_delete_elem(&jdw_rq_issue, &rq);
		return;
	}
	/* with a process filter, only requests whose issue was kept */
	if (targ_filter_tgid && !info)
		return;
	r = jdw_reserve(JDW_GROUP_BLOCK, JDW_EVENT_BLOCK_COMPLETE, sizeof(*r), &ring, ck);
	if (!r) {
		if (info)
			bpf_map_delete_elem(&jdw_rq_issue, &rq);
		return;
	}
	r->body.dev = dev;
	r->body.op = op;
	r->body.sector = sector;
	r->body.bytes = bytes;
	r->body.error = error;
	r->body.rq = rq;
	if (info) {
		r->body.issue_ts = info->ts;
		r->body.issue_tid = info->tid;
		r->body.issue_tgid = info->tgid;
	} else {
		r->body.issue_ts = 0;
		r->body.issue_tid = 0;
		r->body.issue_tgid = 0;
	}
	jdw_submit(r, ring, ctl);
	if (info)
		bpf_map_delete_elem(&jdw_rq_issue, &rq);
}

static __always_inline __u32 rq_dev(struct request *rq)
{
	struct gendisk *disk = jdw_rq_disk(rq);

	if (!disk)
		return 0;
	return ((__u32)BPF_CORE_READ(disk, major) << MINORBITS) | BPF_CORE_READ(disk, first_minor);
}

/* Optional (Linux 6.5+): user space disables it where the kernel lacks it. */
SEC("tp_btf/block_io_start")
int BPF_PROG(block_io_start_btf, struct request *rq)
{
	struct jdw_control *ctl = jdw_ctl();
	__u64 id = bpf_get_current_pid_tgid();
	struct issue_info info;
	__u64 key = (__u64)rq;

	if (!jdw_group_on(ctl, JDW_GROUP_BLOCK))
		return 0;
	info.ts = 0;
	info.tid = (__u32)id;
	info.tgid = id >> 32;
	bpf_map_update_elem(&jdw_rq_submit, &key, &info, BPF_ANY);
	return 0;
}

SEC("tp_btf/block_rq_issue")
int block_rq_issue_btf(unsigned long long *ctx)
{
	struct request *rq = jdw_block_rq_issue_rq(ctx);

	emit_issue((__u64)rq, rq_dev(rq), BPF_CORE_READ(rq, cmd_flags), BPF_CORE_READ(rq, __sector),
		   BPF_CORE_READ(rq, __data_len), jdw_btf_context(ctx, JDW_CTX_HARDIRQ));
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(block_rq_complete_btf, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	emit_complete((__u64)rq, rq_dev(rq), rq->cmd_flags, rq->__sector, nr_bytes, error, jdw_btf_context(ctx, JDW_CTX_HARDIRQ));
	return 0;
}

/* Fallback without BTF-typed tracepoints: the same arguments, untyped. */
SEC("raw_tp/block_rq_issue")
int block_rq_issue_raw(unsigned long long *ctx)
{
	struct request *rq = jdw_block_rq_issue_rq(ctx);

	emit_issue((__u64)rq, rq_dev(rq), BPF_CORE_READ(rq, cmd_flags), BPF_CORE_READ(rq, __sector),
		   BPF_CORE_READ(rq, __data_len), jdw_btf_context(ctx, JDW_CTX_HARDIRQ));
	return 0;
}

SEC("raw_tp/block_rq_complete")
int BPF_PROG(block_rq_complete_raw, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	emit_complete((__u64)rq, rq_dev(rq), BPF_CORE_READ(rq, cmd_flags), BPF_CORE_READ(rq, __sector), nr_bytes,
		      error, jdw_btf_context(ctx, JDW_CTX_HARDIRQ));
	return 0;
}
