// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* interact group: SysProf's Local Performance Analyzer on eBPF ("Messages
 * and Interactions"). Per connection it follows messages -- runs of data in
 * one direction with no data in the other -- and emits one summary per
 * completed interaction (request message, then response message), or folds
 * it into per-class sums, instead of shipping every event to user space.
 * The definition is the one in user/schemas/LANGUAGE.md, "Messages and
 * interactions", which the join uses too.
 *
 * Hooks, all tp_btf, all cheap (no packet parsing, no syscall tracing):
 *   sk_data_ready       inbound data queued on a socket: inbound message times
 *   sock_recv_length    the application read from a socket: first read, bytes
 *   sock_send_length    the application wrote to a socket: outbound message
 *   inet_sock_set_state a TCP connection opening (its role: passive or active
 *                       open), our side closing / the socket gone:
 *                       completion, cleanup
 *   block_io_start      disk I/O submitted by a task (optional, rare)
 *   sched_process_fork  a traced process's child joins the pid filter (the
 *                       sched group does this in a full capture; forks are
 *                       rare, so this costs nothing per request)
 *
 * No scheduler hook: a serving thread's on-CPU, run-queue and blocked
 * time come from the scheduler's own per-task counters, read at the
 * thread's touches of a connection (snap_thread), instead of following
 * every context switch and wakeup of the machine.
 *
 * Connection state lives in one bounded hash keyed by the socket; a full
 * table is counted (CONNS_FULL) and user space evicts idle entries. Two
 * directions of one socket can race (full-duplex traffic); a request/response
 * protocol does not do that, and the worst case is a mis-split interaction,
 * never a fault. */
#include "interact_state.bpf.h"
#include "interact_emit.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

static __always_inline bool group_on(void)
{
	return jdw_group_on(jdw_ctl(), JDW_GROUP_INTERACT);
}

/* ---- serving threads --------------------------------------------------- */

/* A task's disk I/O, or NULL when it never submitted any since the group
 * loaded. Most tasks carry no BPF storage at all: testing the pointer first
 * spares them the helper call and its storage lock. */
static __always_inline struct thread_acct *thread_of(struct task_struct *t)
{
	if (!t->bpf_storage)
		return NULL;
	return bpf_task_storage_get(&jdw_ia_threads, t, 0, 0);
}

/* The current thread's counters now (struct thread_snap). se.exec_start is
 * the run queue's task clock (rq->clock_task, which leaves out time stolen
 * by the hypervisor: CPUs drift apart by seconds) when sum_exec_runtime
 * last caught up; rq->clock - rq->clock_task moves it to rq->clock, the
 * clock every CPU shares, so the difference of two snapshots holds across a
 * migration. The run queue is the one the thread runs on, reached through
 * its CFS run queue (CONFIG_FAIR_GROUP_SCHED; the percpu `runqueues` symbol
 * needs CONFIG_KALLSYMS_ALL, which distribution kernels lack); without it
 * the snapshots stay exact on one CPU. While the thread runs,
 * sum_exec_runtime - exec_start stays constant however often the scheduler
 * updates it (a tick adds to both): ts carries the time since the last
 * update. Off CPU, ts runs on and exec_start jumps by the gap when the
 * thread is picked again: the gap drops out. */
static __always_inline void snap_thread(struct task_struct *task, __u64 now, struct thread_snap *s)
{
	struct thread_acct *a = thread_of(task);
	__u64 steal = 0;

	if (bpf_core_field_exists(struct cfs_rq, rq)) {
		struct cfs_rq *cfs = task->se.cfs_rq;
		struct rq *rq = cfs ? cfs->rq : NULL;

		if (rq)
			steal = rq->clock - rq->clock_task;
	}
	s->ts = now;
	s->oncpu = now + task->se.sum_exec_runtime - task->se.exec_start - steal;
	s->runq = bpf_core_field_exists(task->sched_info) ? task->sched_info.run_delay : 0;
	s->nvcsw = task->nvcsw;
	s->disk_bytes = a ? a->disk_bytes : 0;
	s->disk_ios = a ? a->disk_ios : 0;
}

/* The current thread touched the interaction's data: extend its window. */
static __always_inline void touch_thread(struct conn *c, __u32 tid, __u64 now)
{
	struct thread_slot *slot;
	struct thread_snap s;

	if (c->thr[0].tid == tid || c->thr[0].tid == 0)
		slot = &c->thr[0];
	else if (c->thr[1].tid == tid || c->thr[1].tid == 0)
		slot = &c->thr[1];
	else {
		c->flags |= JDW_IA_MANY_THREADS;
		return;
	}
	snap_thread(bpf_get_current_task_btf(), now, &s);
	if (slot->tid == 0) {
		slot->tid = tid;
		slot->start = s;
	}
	slot->end = s;
}

/* Optional (Linux 6.5+): runs in the submitting task, rarely (never per
 * request of a server answering from the page cache), so it may create the
 * task's storage: any task, since which will serve a connection is not
 * known when it submits. */
SEC("tp_btf/block_io_start")
int BPF_PROG(ia_block_io_start, struct request *rq)
{
	struct thread_acct *a;

	if (!group_on())
		return 0;
	a = bpf_task_storage_get(&jdw_ia_threads, bpf_get_current_task_btf(), 0,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!a) {
		stat_inc(JDW_IA_STAT_THREADS_FULL);
		return 0;
	}
	a->disk_ios += 1;
	a->disk_bytes += rq->__data_len;
	return 0;
}

/* Pre-forking servers (apache2 prefork, nginx re-spawning a worker) start
 * serving processes after the session began: follow them as the sched
 * group does, or an interactions-only session filtered by pid loses them. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(ia_sched_process_fork, struct task_struct *parent, struct task_struct *child)
{
	struct jdw_control *ctl;

	/* Without a pid filter (load-time constant) everything is followed
	 * already: the verifier drops the rest, each fork costs an empty run. */
	if (!targ_filter_tgid)
		return 0;
	ctl = jdw_ctl();
	if (!ctl || !(ctl->filter_flags & JDW_FILTER_TGID) || child->tgid == parent->tgid)
		return 0;
	if (jdw_tgid_traced(ctl, parent->tgid) || jdw_admit_current())
		jdw_tgid_add(child->tgid);
	return 0;
}

/* ---- completion -------------------------------------------------------- */

/* The exchange in flight is over: emit or fold it if it is an interaction,
 * then start afresh. As in the join (LANGUAGE.md, "Messages and
 * interactions"), an exchange without bytes both ways (a goodbye, a request
 * the close cut short) and the set-up exchange that answers a greeting are
 * the connection's, counted, not interactions; data the response way before
 * any request (the greeting itself, or the tail of a response whose request
 * came before tracing) belongs to no exchange. */
static __always_inline void complete(struct conn *c, __u64 sk)
{
	struct jdw_ia_control *ictl = ia_ctl();
	struct thread_time t = {};
	__u32 mode;
	int i;

	if (c->req_start && c->owned && !c->ignored && ictl) {
		if (!c->resp_start) {
			stat_inc(JDW_IA_STAT_ONE_WAY);
		} else if (c->opening == OPEN_SETUP) {
			stat_inc(JDW_IA_STAT_SETUP);
		} else {
			for (i = 0; i < 2; i++)
				add_thread_time(&c->thr[i], &t);
			mode = ictl->mode ? ictl->mode : JDW_IA_MODE_RECORDS;
			if (mode & JDW_IA_MODE_RECORDS)
				emit_record(c, sk, &t);
			if (mode & JDW_IA_MODE_CLASSES)
				fold_class(ictl, c, &t);
			c->seq += 1;
		}
	}
	if (c->req_start) {
		if (c->opening == OPEN_SETUP)
			c->opening = OPEN_DONE;
		c->flags = 0;
	} /* else nothing begun: keep the connection's flags (PARTIAL) */
	c->req_start = c->req_end = c->resp_start = c->resp_end = 0;
	c->req_bytes = c->resp_bytes = 0;
	c->req_packets = c->resp_packets = 0;
	c->in_read = 0;
	__builtin_memset(c->thr, 0, sizeof(c->thr));
}

/* ---- messages ---------------------------------------------------------- */

static __always_inline struct tcp_sock *as_tcp(const struct sock *sk)
{
	return bpf_skc_to_tcp_sock((void *)sk);
}

static __always_inline __u32 tcp_segs(const struct tcp_sock *tp, __u8 dir)
{
	if (!tp)
		return 0;
	return dir == DIR_IN ? tp->data_segs_in : tp->data_segs_out;
}

/* The message in direction `d` ended with `packets` packets: hand its
 * totals to the interaction. */
static __always_inline void end_message_n(struct conn *c, __u8 d, __u32 packets)
{
	struct msg_acc *m = &c->msg[d == DIR_IN ? 0 : 1];
	__u8 req_dir = c->role == JDW_ROLE_SERVER ? DIR_IN : DIR_OUT;

	if (d == req_dir) {
		c->req_end = m->end;
		c->req_bytes += m->bytes;
		c->req_packets += packets;
	} else {
		c->resp_end = m->end;
		c->resp_bytes += m->bytes;
		c->resp_packets += packets;
	}
	m->bytes = 0;
	m->packets = 0;
}

/* Datagrams are counted as they pass; a TCP message's packets are the
 * data segments since the last message this way ended. `tp` is the
 * socket as TCP (NULL for UDP), looked up once per hook by the caller. */
static __always_inline void end_message(struct conn *c, const struct tcp_sock *tp, __u8 d)
{
	struct msg_acc *m = &c->msg[d == DIR_IN ? 0 : 1];
	__u32 packets = m->packets;

	if (c->protocol == IPPROTO_TCP) {
		__u32 segs = tcp_segs(tp, d);

		/* Segments that arrived after the outbound turn belong to the
		 * next inbound message, not this one. */
		if (d == DIR_IN && c->early_in && (__s32)(c->in_segs - m->seg_mark) >= 0)
			segs = c->in_segs;
		packets = segs - m->seg_mark;
		m->seg_mark = segs;
	}
	end_message_n(c, d, packets);
}

/* An event in direction `d` at `now`: a new message if the last data went
 * the other way. A new message in the request direction completes the
 * interaction before it (SysProf: the response ends when the next request
 * begins). */
static __always_inline void on_data(struct conn *c, const struct sock *sk, const struct tcp_sock *tp,
				     __u64 skp, __u8 d, __u64 now)
{
	__u8 req_dir = c->role == JDW_ROLE_SERVER ? DIR_IN : DIR_OUT;
	struct msg_acc *m = &c->msg[d == DIR_IN ? 0 : 1];
	__u64 start;
	bool early;

	c->last_ts = now;
	if (c->dir == d) {
		m->end = now;
		return;
	}
	if (c->dir != DIR_NONE)
		end_message(c, tp, c->dir);
	/* Inbound data arrived after this outbound message had begun (its
	 * bytes were queued before the arrival, the hook after it): the
	 * message began no later than that arrival, and the inbound message
	 * after it begins at it. */
	start = now;
	early = c->early_in != 0;
	if (early) {
		if (c->early_in < now)
			start = c->early_in;
		if (d == DIR_IN)
			c->early_in = 0;
	}
	if (d == DIR_IN && tp)
		c->out_seq = tp->write_seq;
	if (d == req_dir) {
		complete(c, skp);
		if (c->opening == OPEN_GREETED)
			c->opening = OPEN_SETUP;
		else if (c->opening == OPEN_FRESH)
			c->opening = OPEN_DONE;
		c->req_start = start;
	} else {
		/* The connection's first message goes the response way: the
		 * server spoke first. */
		if (c->opening == OPEN_FRESH)
			c->opening = OPEN_GREETED;
		c->resp_start = start;
		/* Request bytes still unread when the response begins belong to
		 * the next request: the requests were pipelined -- unless they
		 * arrived after it began. */
		if (tp && d == DIR_OUT && !early) {
			if (tp->rcv_nxt - tp->copied_seq > (sk->sk_shutdown & RCV_SHUTDOWN ? 1 : 0))
				c->flags |= JDW_IA_PIPELINED;
		}
	}
	c->dir = d;
	m->start = start;
	m->end = now;
	m->bytes = 0;
	m->packets = 0;
	if (d == DIR_IN)
		c->in_read = 0;
}

/* ---- connection table ---------------------------------------------------- */

static __always_inline bool tracked_sock(const struct sock *sk)
{
	__u16 family = sk->__sk_common.skc_family;
	__u16 proto = sk->sk_protocol;

	if (family != AF_INET && family != AF_INET6)
		return false;
	if (proto == IPPROTO_TCP)
		return sk->__sk_common.skc_state != TCP_LISTEN;
	return proto == IPPROTO_UDP && sk->sk_type == 2 /* SOCK_DGRAM */;
}

/* The table is keyed by the socket's address, which the kernel reuses once
 * a socket is freed. A TCP socket's entry goes when it reaches CLOSE, but a
 * UDP socket has no close event here: its entry stays until the idle sweep,
 * and a new socket at the same address must not inherit it. The ports and
 * protocol tell them apart (a socket's own never change once it carries
 * data). */
static __always_inline bool same_sock(const struct conn *c, const struct sock *sk)
{
	return c->protocol == sk->sk_protocol && c->lport == sk->__sk_common.skc_num &&
	       c->rport == bpf_ntohs(sk->__sk_common.skc_dport);
}

/* A new connection's state in the per-CPU scratch, from the socket. */
static __always_inline struct conn *new_conn(const struct sock *sk, __u8 role, __u64 now)
{
	__u32 zero = 0;
	struct conn *n = bpf_map_lookup_elem(&jdw_ia_scratch, &zero);

	if (!n)
		return NULL;
	__builtin_memset(n, 0, sizeof(*n));
	n->last_ts = now;
	n->role = role;
	n->family = sk->__sk_common.skc_family;
	n->protocol = sk->sk_protocol;
	n->lport = sk->__sk_common.skc_num;
	n->rport = bpf_ntohs(sk->__sk_common.skc_dport);
	if (n->family == AF_INET) {
		__builtin_memcpy(n->laddr, &sk->__sk_common.skc_rcv_saddr, 4);
		__builtin_memcpy(n->raddr, &sk->__sk_common.skc_daddr, 4);
	} else {
		BPF_CORE_READ_INTO(n->laddr, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);
		BPF_CORE_READ_INTO(n->raddr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
	}
	return n;
}

/* Finds the socket's state, creating it when `create` (an event of
 * direction `d`). A TCP connection's entry is made when it opens
 * (ia_inet_sock_set_state), with the role of how it opened; one found
 * without is older than the session (or its entry was evicted, or the table
 * was full then). Its role then comes from the direction of the first
 * message we see, as SysProf defines it -- right for client-first protocols,
 * wrong for a server-first one whose greeting we saw -- and its first
 * interaction is flagged PARTIAL. Data on a socket not yet ESTABLISHED (TCP
 * Fast Open) says how it opened by the state itself. UDP has no open: the
 * first datagram's direction decides. */
static __always_inline struct conn *get_conn(const struct sock *sk, __u64 key, __u8 d, bool create,
					     __u64 now)
{
	struct conn *c = bpf_map_lookup_elem(&jdw_ia_conns, &key);
	__u8 role = d == DIR_IN ? JDW_ROLE_SERVER : JDW_ROLE_CLIENT;
	struct tcp_sock *tp = NULL;
	__u64 update = BPF_NOEXIST;
	struct conn *n;

	if (c && same_sock(c, sk))
		return c;
	if (!create)
		return NULL;
	if (c) {
		/* A stale entry of a freed socket: its interaction in flight
		 * can never complete. Replace it, counted. */
		stat_inc(JDW_IA_STAT_REUSED);
		update = BPF_ANY;
	}
	if (sk->sk_protocol == IPPROTO_TCP) {
		__u8 state = sk->__sk_common.skc_state;

		if (state == TCP_SYN_RECV)
			role = JDW_ROLE_SERVER;
		else if (state == TCP_SYN_SENT)
			role = JDW_ROLE_CLIENT;
		else
			tp = as_tcp(sk);
	}
	n = new_conn(sk, role, now);
	if (!n)
		return NULL;
	n->opening = OPEN_DONE;
	if (tp) {
		n->flags |= JDW_IA_PARTIAL;
		n->guessed = 1; /* counted once its owner is known (owner_ok) */
		/* Traffic before this first message belongs to no interaction
		 * we saw begin: count segments from here. */
		if (d == DIR_IN ? (tp->data_segs_out > 0 || tp->data_segs_in > 1) : tp->data_segs_in > 0) {
			n->msg[0].seg_mark = tp->data_segs_in - (d == DIR_IN ? 1 : 0);
			n->msg[1].seg_mark = tp->data_segs_out;
		}
		n->last_rx = (__u32)tp->bytes_received;
	} else if (n->protocol == IPPROTO_TCP) {
		n->opening = OPEN_FRESH;
	}
	if (bpf_map_update_elem(&jdw_ia_conns, &key, n, update) != 0) {
		stat_inc(JDW_IA_STAT_CONNS_FULL);
		return bpf_map_lookup_elem(&jdw_ia_conns, &key); /* lost a race? */
	}
	stat_inc(JDW_IA_STAT_CONNS);
	return bpf_map_lookup_elem(&jdw_ia_conns, &key);
}

/* A socket without any BPF storage (every traced one, as a rule) is told
 * by a pointer test, without the helper call. */
static __always_inline bool skipped(const struct sock *sk)
{
	if (!sk->sk_bpf_storage)
		return false;
	return bpf_sk_storage_get(&jdw_ia_skip, (struct sock *)sk, 0, 0) != NULL;
}

/* The first application touch names the owner; the filters apply here. A
 * socket left out is marked (jdw_ia_skip) and leaves the table; should the
 * mark fail, its entry stays, flagged ignored. */
static __always_inline bool owner_ok(struct conn *c, struct sock *sk, __u64 key, __u64 pid_tgid)
{
	struct jdw_ia_control *ictl;
	struct jdw_control *ctl;

	if (c->owned)
		return !c->ignored;
	c->owned = 1;
	c->tgid = pid_tgid >> 32;
	c->cgroup = bpf_get_current_cgroup_id();
	ctl = jdw_ctl();
	ictl = ia_ctl();
	if (!ctl || !ictl || !jdw_tgid_traced(ctl, c->tgid) ||
	    (ictl->cgroup_id && ictl->cgroup_id != c->cgroup)) {
		c->ignored = 1;
		stat_inc(JDW_IA_STAT_FILTERED);
		if (bpf_sk_storage_get(&jdw_ia_skip, sk, 0, BPF_SK_STORAGE_GET_F_CREATE))
			bpf_map_delete_elem(&jdw_ia_conns, &key);
		return false;
	}
	if (c->guessed)
		stat_inc(JDW_IA_STAT_ROLE_GUESSED);
	return true;
}

/* ---- hooks --------------------------------------------------------------- */

SEC("tp_btf/sk_data_ready")
int BPF_PROG(ia_sk_data_ready, const struct sock *sk)
{
	__u64 key = (__u64)sk, now = 0;
	struct tcp_sock *tp = NULL;
	struct conn *c;

	if (!group_on() || !tracked_sock(sk) || skipped(sk))
		return 0;
	c = get_conn(sk, key, DIR_IN, true, 0); /* on_data stamps it */
	if (!c || c->ignored)
		return 0;
	if (c->protocol == IPPROTO_TCP) {
		__u32 rx;

		tp = as_tcp(sk);
		if (!tp)
			return 0;
		/* bytes_received counts the FIN's sequence number too: a FIN
		 * alone is no data. */
		rx = (__u32)tp->bytes_received - (sk->sk_shutdown & RCV_SHUTDOWN ? 1 : 0);

		if (rx == c->last_rx && c->dir != DIR_NONE)
			return 0;
		c->last_rx = rx;
		/* An ESTABLISHED socket's segment went through
		 * tcp_rcv_established(), which read CLOCK_MONOTONIC into
		 * tcp_clock_cache (tcp_mstamp_refresh) before queueing it: the
		 * arrival time, without a clock read of our own (a paravirtual
		 * clock read is among the dearest things a hook does). Other
		 * states reach here through paths that may not refresh it, and
		 * so may a socket's first data (data riding on the handshake's
		 * last ACK is queued by tcp_rcv_state_process, the clock then
		 * the one cloned from the listener): only a connection seen
		 * before takes it, and only when not older than our last
		 * event on it. */
		if (c->last_ts && sk->__sk_common.skc_state == TCP_ESTABLISHED &&
		    bpf_core_field_exists(tp->tcp_clock_cache)) {
			now = tp->tcp_clock_cache;
			if (now < c->last_ts)
				now = 0;
		}
	}
	if (!now)
		now = bpf_ktime_get_ns();
	/* The socket queued outbound bytes since this inbound message began,
	 * yet no send hook has turned the direction: the sender is between
	 * queueing them (which, on loopback, delivers them) and the hook at
	 * its return, and the peer has answered already. This data begins
	 * the next inbound message, not more of this one: keep its arrival
	 * for the turn to come. */
	if (tp && c->dir == DIR_IN && tp->write_seq != c->out_seq) {
		if (!c->early_in)
			c->early_in = now;
		return 0;
	}
	on_data(c, sk, tp, key, DIR_IN, now);
	if (tp)
		c->in_segs = tp->data_segs_in;
	if (c->protocol != IPPROTO_TCP)
		c->msg[0].packets += 1; /* a datagram; after on_data, which resets a new message */
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(ia_sock_recv_length, struct sock *sk, int ret, int flags)
{
	__u64 key = (__u64)sk, now, id;
	struct conn *c;

	if (ret <= 0 || (flags & MSG_PEEK) || !group_on() || !tracked_sock(sk) || skipped(sk))
		return 0;
	now = bpf_ktime_get_ns();
	c = get_conn(sk, key, DIR_IN, true, now);
	if (!c)
		return 0;
	id = bpf_get_current_pid_tgid();
	if (!owner_ok(c, sk, key, id))
		return 0;
	/* Data read after our last outbound bytes arrived before them (the
	 * arrival was folded into the earlier inbound message): a pipelined
	 * next message, which begins here. */
	if (c->dir != DIR_IN) {
		/* Data that arrived after our outbound message began (early_in)
		 * is the next message, not one the peer sent ahead. */
		bool after_out = c->dir == DIR_OUT, early = c->early_in != 0;

		on_data(c, sk, c->protocol == IPPROTO_TCP ? as_tcp(sk) : NULL, key, DIR_IN, now);
		if (!after_out)
			c->flags |= JDW_IA_PARTIAL; /* its arrival was not seen */
		else if (c->role == JDW_ROLE_SERVER && !early)
			c->flags |= JDW_IA_PIPELINED;
	}
	if (!c->in_read)
		c->in_read = now;
	c->msg[0].bytes += ret;
	touch_thread(c, (__u32)id, now);
	return 0;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(ia_sock_send_length, struct sock *sk, int ret, int flags)
{
	__u64 key = (__u64)sk, now, id;
	struct conn *c;

	if (ret <= 0 || !group_on() || !tracked_sock(sk) || skipped(sk))
		return 0;
	now = bpf_ktime_get_ns();
	c = get_conn(sk, key, DIR_OUT, true, now);
	if (!c)
		return 0;
	id = bpf_get_current_pid_tgid();
	if (!owner_ok(c, sk, key, id))
		return 0;
	/* Only a new message (the direction turns) needs the TCP view. */
	on_data(c, sk, c->dir != DIR_OUT && c->protocol == IPPROTO_TCP ? as_tcp(sk) : NULL, key, DIR_OUT,
		now);
	c->msg[1].bytes += ret;
	if (c->protocol != IPPROTO_TCP)
		c->msg[1].packets += 1;
	touch_thread(c, (__u32)id, now);
	return 0;
}

/* A TCP connection opening: its entry, made here rather than at its first
 * data, carries the role of how it opened -- a passive open (the accepted
 * child's SYN_RECV -> ESTABLISHED) is the server, an active one (SYN_SENT
 * -> ESTABLISHED) the client -- because the first message's direction is
 * wrong whenever the server speaks first (a MySQL/MariaDB handshake, an
 * SMTP, FTP, POP3 or IMAP banner, SSH's version string). Once per
 * connection of the machine, as the entry made at the first arrival was;
 * the filters apply at the first application touch, as before. */
static __always_inline void on_open(const struct sock *sk, __u64 key, int oldstate)
{
	struct conn *n, *c;
	long err;

	if (sk->sk_protocol != IPPROTO_TCP || !tracked_sock(sk) || !group_on())
		return;
	n = new_conn(sk, oldstate == TCP_SYN_RECV ? JDW_ROLE_SERVER : JDW_ROLE_CLIENT, bpf_ktime_get_ns());
	if (!n)
		return;
	n->opening = OPEN_FRESH;
	err = bpf_map_update_elem(&jdw_ia_conns, &key, n, BPF_NOEXIST);
	if (err == -EEXIST) {
		c = bpf_map_lookup_elem(&jdw_ia_conns, &key);
		if (c && same_sock(c, sk))
			return; /* data came first (TCP Fast Open): made then, role known */
		stat_inc(JDW_IA_STAT_REUSED);
		err = bpf_map_update_elem(&jdw_ia_conns, &key, n, BPF_ANY);
	}
	if (err) {
		stat_inc(JDW_IA_STAT_CONNS_FULL);
		return;
	}
	stat_inc(JDW_IA_STAT_CONNS);
}

/* A connection opening makes its entry (on_open). Our side closing
 * (FIN_WAIT1 / LAST_ACK) completes the interaction in flight; the socket
 * reaching CLOSE drops its state. The peer's FIN alone (CLOSE_WAIT) does
 * not: a client may half-close before the response. */
SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(ia_inet_sock_set_state, const struct sock *sk, const int oldstate, const int newstate)
{
	__u64 key = (__u64)sk;
	struct conn *c;

	if (newstate == TCP_ESTABLISHED) {
		if (oldstate == TCP_SYN_SENT || oldstate == TCP_SYN_RECV)
			on_open(sk, key, oldstate);
		return 0;
	}
	if (newstate != TCP_FIN_WAIT1 && newstate != TCP_LAST_ACK && newstate != TCP_CLOSE)
		return 0;
	c = bpf_map_lookup_elem(&jdw_ia_conns, &key);
	if (!c)
		return 0;
	if (!same_sock(c, sk)) {
		/* A stale entry at this address, not this socket's. */
		if (newstate == TCP_CLOSE && bpf_map_delete_elem(&jdw_ia_conns, &key) == 0)
			stat_inc(JDW_IA_STAT_REUSED);
		return 0;
	}
	if (c->dir != DIR_NONE && !c->ignored) {
		end_message(c, c->protocol == IPPROTO_TCP ? as_tcp(sk) : NULL, c->dir);
		c->flags |= JDW_IA_CLOSED;
		complete(c, key);
		c->dir = DIR_NONE;
	}
	if (newstate == TCP_CLOSE) {
		bpf_map_delete_elem(&jdw_ia_conns, &key);
		stat_inc(JDW_IA_STAT_CLOSED);
	}
	return 0;
}

/* A UDP socket has no state change to watch: its last interaction would
 * wait for the next request forever. Releasing the socket (close of its
 * last reference) ends it. cgroup/sock_release runs in inet_release for
 * every inet socket of the cgroup tree it is attached to (the root, by
 * user space), once per socket and never per packet. Its context is the
 * struct sock itself, so its address is the table's key (reading it needs
 * CAP_PERFMON, which loading needs anyway); the ports tell a stale entry at
 * that address from this socket's, as in same_sock(). TCP
 * is left to inet_sock_set_state, which sees the FIN go out. Optional: when
 * it cannot attach, the idle sweep frees the entry and the interaction in
 * flight is lost, as before. */
SEC("cgroup/sock_release")
int ia_sock_release(struct bpf_sock *ctx)
{
	__u64 key = (__u64)ctx;
	struct sock *sk = (struct sock *)key;
	struct conn *c;

	if (ctx->protocol != IPPROTO_UDP)
		return 1;
	c = bpf_map_lookup_elem(&jdw_ia_conns, &key);
	if (!c)
		return 1;
	/* The release context exposes no ports: read them from the socket. */
	if (c->protocol != IPPROTO_UDP || c->lport != BPF_CORE_READ(sk, __sk_common.skc_num) ||
	    c->rport != bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport))) {
		if (bpf_map_delete_elem(&jdw_ia_conns, &key) == 0)
			stat_inc(JDW_IA_STAT_REUSED);
		return 1;
	}
	if (c->dir != DIR_NONE && !c->ignored) {
		__u8 d = c->dir;

		end_message_n(c, d, c->msg[d == DIR_IN ? 0 : 1].packets);
		c->flags |= JDW_IA_CLOSED;
		complete(c, key);
		c->dir = DIR_NONE;
	}
	bpf_map_delete_elem(&jdw_ia_conns, &key);
	stat_inc(JDW_IA_STAT_CLOSED);
	return 1;
}
