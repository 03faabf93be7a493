// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* interact group: what leaves the kernel when an interaction completes --
 * one record (emit_record), or the class sums it folds into (fold_class,
 * with its latency histogram) -- and the serving threads' time it carries
 * (add_thread_time). Included by interact.bpf.c only, after the state. */
#ifndef JACKDAW_INTERACT_EMIT_BPF_H
#define JACKDAW_INTERACT_EMIT_BPF_H

#include "interact_state.bpf.h"
#include "jackdaw/thread_split.h"

static __always_inline __u32 hist_bucket(__u64 ns)
{
	__u64 us = ns / 1000, v;
	__u32 msb = 0;

	if (us < 4)
		return us;
	v = us;
	if (v >> 32) { v >>= 32; msb += 32; }
	if (v >> 16) { v >>= 16; msb += 16; }
	if (v >> 8) { v >>= 8; msb += 8; }
	if (v >> 4) { v >>= 4; msb += 4; }
	if (v >> 2) { v >>= 2; msb += 2; }
	if (v >> 1) { msb += 1; }
	if (msb > 27)
		return JDW_IA_HIST_BUCKETS - 1;
	return 4 * (msb - 1) + ((us >> (msb - 2)) & 3);
}

static __always_inline __u64 span(__u64 from, __u64 to)
{
	return from && to > from ? to - from : 0;
}

static __always_inline void fold_class(struct jdw_ia_control *ctl, struct conn *c,
				       struct thread_time *t)
{
	struct jdw_ia_class_key key = {};
	struct jdw_ia_class_stats *s;
	__u64 kernel, app, send, total;
	__u32 b, i;

	key.family = c->family;
	key.role = c->role;
	key.epoch = ctl->epoch;
	if (ctl->class_flags & JDW_IA_CLASS_BY_PORT)
		key.port = c->role == JDW_ROLE_SERVER ? c->lport : c->rport;
	if (ctl->class_flags & JDW_IA_CLASS_BY_PID)
		key.tgid = c->tgid;
	if (c->family == AF_INET) {
		__u32 bits = ctl->class_prefix4 > 32 ? 32 : ctl->class_prefix4;
		__u32 a, mask = bits ? ~0u << (32 - bits) : 0;

		__builtin_memcpy(&a, c->raddr, 4);
		a = bpf_htonl(bpf_ntohl(a) & mask);
		__builtin_memcpy(key.raddr, &a, 4);
	} else {
		__u32 bits = ctl->class_prefix6 > 128 ? 128 : ctl->class_prefix6;

		for (i = 0; i < 16; i++) {
			__u32 keep = bits >= 8 * (i + 1) ? 8 : (bits > 8 * i ? bits - 8 * i : 0);

			key.raddr[i] = c->raddr[i] & (__u8)(0xff00 >> keep);
		}
	}
	s = bpf_map_lookup_elem(&jdw_ia_classes, &key);
	if (!s) {
		static const struct jdw_ia_class_stats zero;

		bpf_map_update_elem(&jdw_ia_classes, &key, &zero, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&jdw_ia_classes, &key);
		if (!s) {
			stat_inc(JDW_IA_STAT_CLASS_FULL);
			return;
		}
	}
	if (c->role == JDW_ROLE_SERVER) {
		kernel = span(c->req_start, c->in_read);
		app = span(c->in_read, c->resp_start);
		send = span(c->resp_start, c->resp_end);
	} else {
		kernel = span(c->resp_start, c->in_read);
		app = span(c->req_end, c->resp_start);
		send = span(c->resp_start, c->resp_end);
	}
	total = span(c->req_start, c->resp_end);
	s->count += 1;
	s->req_bytes += c->req_bytes;
	s->resp_bytes += c->resp_bytes;
	s->req_packets += c->req_packets;
	s->resp_packets += c->resp_packets;
	s->kernel_ns += kernel;
	s->app_ns += app;
	s->send_ns += send;
	s->total_ns += total;
	s->oncpu_ns += t->oncpu;
	s->runq_ns += t->runq;
	s->blocked_ns += t->blocked;
	s->disk_ios += t->disk_ios;
	s->disk_bytes += t->disk_bytes;
	if (c->flags & ~JDW_IA_CLOSED) /* closing is how most interactions end */
		s->flagged += 1;
	b = hist_bucket(total);
	barrier_var(b); /* keep the bounds check on the register used to index */
	if (b < JDW_IA_HIST_BUCKETS)
		s->hist[b] += 1;
	stat_inc(JDW_IA_STAT_CLASSED);
}

static __always_inline void emit_record(struct conn *c, __u64 sk, struct thread_time *t)
{
	struct jdw_control *ctl = jdw_ctl();
	struct jdw_interaction_record *r;
	__u64 id = ((__u64)c->tgid << 32) | c->thr[1].tid;
	void *ring;

	if (!ctl)
		return;
	if (!c->thr[1].tid)
		id = ((__u64)c->tgid << 32) | c->thr[0].tid;
	r = jdw_reserve_as(JDW_GROUP_INTERACT, JDW_EVENT_INTERACTION, sizeof(*r), &ring, JDW_CTX_TASK, id);
	if (!r) {
		stat_inc(JDW_IA_STAT_RING_LOST);
		return;
	}
	r->body.sk = sk;
	r->body.cgroup = c->cgroup;
	r->body.req_start = c->req_start;
	r->body.req_end = c->req_end;
	r->body.resp_start = c->resp_start;
	r->body.resp_end = c->resp_end;
	r->body.in_read = c->in_read;
	r->body.req_bytes = c->req_bytes;
	r->body.resp_bytes = c->resp_bytes;
	r->body.req_packets = c->req_packets;
	r->body.resp_packets = c->resp_packets;
	r->body.oncpu_ns = t->oncpu;
	r->body.runq_ns = t->runq;
	r->body.blocked_ns = t->blocked;
	r->body.disk_bytes = t->disk_bytes;
	r->body.disk_ios = t->disk_ios;
	/* server: the reader of the request, then the writer of the response;
	 * client: the writer of the request, then the reader. */
	r->body.req_tid = c->thr[0].tid;
	r->body.resp_tid = c->thr[1].tid ? c->thr[1].tid : c->thr[0].tid;
	r->body.seq = c->seq;
	r->body.family = c->family;
	r->body.protocol = c->protocol;
	r->body.lport = c->lport;
	r->body.rport = c->rport;
	__builtin_memcpy(r->body.laddr, c->laddr, 16);
	__builtin_memcpy(r->body.raddr, c->raddr, 16);
	r->body.role = c->role;
	r->body.flags = c->flags;
	r->body.reserved = 0;
	r->body.reserved2 = 0;
	jdw_submit(r, ring, ctl);
	stat_inc(JDW_IA_STAT_EMITTED);
}

/* A serving thread's share between its first and last touch
 * (jdw_split_thread_time): the run-queue wait is exact (run_delay); a
 * thread that never slept was on CPU for the rest; one that slept is on CPU
 * for what its on-CPU clock says (exact up to when the clocks of the two
 * snapshots' run queues were last updated: steal time not yet accounted,
 * or a tick across a migration), clamped to the span; blocked time is the
 * rest. */
static __always_inline void add_thread_time(const struct thread_slot *th, struct thread_time *t)
{
	struct jdw_thread_split sp;

	if (!th->tid)
		return;
	jdw_split_thread_time(th->end.ts - th->start.ts, th->end.runq - th->start.runq,
			      th->end.oncpu - th->start.oncpu, th->end.nvcsw != th->start.nvcsw, &sp);
	t->oncpu += sp.oncpu;
	t->runq += sp.runq;
	t->blocked += sp.blocked;
	t->disk_bytes += th->end.disk_bytes - th->start.disk_bytes;
	t->disk_ios += th->end.disk_ios - th->start.disk_ios;
}

#endif /* JACKDAW_INTERACT_EMIT_BPF_H */
