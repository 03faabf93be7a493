// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* interact group: its state -- constants, the per-connection and
 * per-thread records, the maps that hold them -- apart from the hooks
 * (interact.bpf.c, the only includer) so each reads on its own. */
#ifndef JACKDAW_INTERACT_STATE_BPF_H
#define JACKDAW_INTERACT_STATE_BPF_H

#include "jackdaw.bpf.h"
#include "jackdaw/interact.h"

#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define MSG_PEEK 2
#define RCV_SHUTDOWN 1
/* include/net/tcp_states.h */
#define TCP_ESTABLISHED 1
#define TCP_SYN_SENT 2
#define TCP_SYN_RECV 3
#define TCP_FIN_WAIT1 4
#define TCP_CLOSE 7
#define TCP_CLOSE_WAIT 8
#define TCP_LAST_ACK 9
#define TCP_LISTEN 10

#define DIR_NONE 0
#define DIR_IN 1
#define DIR_OUT 2

#define EEXIST 17

/* Where a connection stands in its opening (struct conn.opening): a
 * server-first protocol's greeting and the exchange that answers it are
 * the connection's set-up, not interactions (LANGUAGE.md, "Connection
 * set-up"; the join's rule). Only a connection whose open was seen can
 * tell a greeting: the role must be known before the first message. */
#define OPEN_FRESH 0    /* opened while traced, no message yet */
#define OPEN_GREETED 1  /* its first message went the response way: a greeting */
#define OPEN_SETUP 2    /* the exchange in flight answers the greeting */
#define OPEN_DONE 3     /* past the opening (or role guessed: unknown) */

/* Disk I/O a task submitted, kept only for tasks that submitted any (the
 * block_io_start hook creates it); the serving threads' times need no
 * state of ours (see struct thread_snap). */
struct thread_acct {
	__u64 disk_bytes;
	__u32 disk_ios;
	__u32 reserved;
};

/* A serving thread's counters at one touch of a connection, read from the
 * scheduler's own per-task accounting while the thread runs (the touch is
 * in its context), so no scheduler hook has to follow it:
 *   ts      bpf_ktime_get_ns() at the touch
 *   oncpu   a clock that advances only while the thread runs: ts +
 *           se.sum_exec_runtime - se.exec_start, exec_start moved to the
 *           run queue's steal-inclusive clock. Between two touches it grows
 *           by the time on CPU (see complete()).
 *   runq    sched_info.run_delay: time spent runnable but waiting, which the
 *           scheduler adds when the thread next gets a CPU -- always before
 *           a touch, so exact at every touch.
 *   nvcsw   voluntary context switches: unchanged between two touches, the
 *           thread never slept in between (jdw_split_thread_time).
 * Blocked time is the rest of the span between two touches. */
struct thread_snap {
	__u64 ts, oncpu, runq, nvcsw, disk_bytes, disk_ios;
};

/* The serving threads' time during one interaction, summed. */
struct thread_time {
	__u64 oncpu, runq, blocked, disk_bytes, disk_ios;
};

struct thread_slot {
	__u32 tid;
	__u32 reserved;
	struct thread_snap start, end;
};

/* A message direction's running totals. */
struct msg_acc {
	__u64 start, end;  /* first / last event of the message */
	__u64 bytes;
	__u32 packets;
	__u32 seg_mark;    /* TCP data_segs_{in,out} when the last message this
			    * way ended: a message's segments are the rest */
};

struct conn {
	__u64 last_ts;     /* read by user space's idle sweep: keep first */
	__u64 cgroup;
	__u32 tgid;
	__u32 seq;         /* interactions completed on this connection */
	__u8 role;
	__u8 dir;          /* direction of the current message */
	__u8 flags;        /* JDW_IA_* of the current interaction */
	__u8 ignored;      /* owner filtered out */
	__u8 owned;        /* tgid/cgroup known (an application touched it) */
	__u8 protocol;
	__u8 opening;      /* OPEN_* */
	__u8 guessed;      /* role from the first message: its open not seen */
	__u16 family;
	__u16 lport, rport;
	__u32 last_rx;     /* TCP bytes_received (minus FIN) at the last arrival */
	__u32 out_seq;     /* TCP write_seq when the inbound message began */
	__u32 in_segs;     /* TCP data_segs_in through the inbound message's
			    * last arrival */
	__u64 early_in;    /* arrival of inbound data that came after an
			    * outbound message began unseen (see ia_sk_data_ready) */
	__u8 laddr[16], raddr[16];
	__u64 in_read;     /* first application read of the inbound message */
	struct msg_acc msg[2]; /* [0] inbound, [1] outbound */
	__u64 req_start, req_end, resp_start, resp_end;
	__u64 req_bytes, resp_bytes;
	__u32 req_packets, resp_packets;
	struct thread_slot thr[2];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768); /* set by user space before load */
	__type(key, __u64);
	__type(value, struct conn);
} jdw_ia_conns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_acct);
} jdw_ia_threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct jdw_ia_class_key);
	__type(value, struct jdw_ia_class_stats);
} jdw_ia_classes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct jdw_ia_control);
} jdw_ia_control SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, JDW_IA_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} jdw_ia_stats SEC(".maps");

/* Sockets of processes the filter leaves out, marked on their first
 * application touch: every hook tests this before anything else, a pointer
 * load when the socket carries no BPF storage at all (most sockets), so an
 * untraced peer on the same host (a load generator, a proxy) costs neither
 * a table lookup nor a slot in the connection table. Freed with the socket,
 * so a reused address never inherits it. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u8);
} jdw_ia_skip SEC(".maps");

/* Zeroed scratch for a new connection (too big for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct conn);
} jdw_ia_scratch SEC(".maps");

static __always_inline void stat_inc(__u32 id)
{
	__u64 *v = bpf_map_lookup_elem(&jdw_ia_stats, &id);

	if (v)
		*v += 1;
}

static __always_inline struct jdw_ia_control *ia_ctl(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&jdw_ia_control, &zero);
}

#endif /* JACKDAW_INTERACT_STATE_BPF_H */
