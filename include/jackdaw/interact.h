/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The interact group's control and aggregation structures, shared by
 * bpf/interact.bpf.c and user/capture/interact.cc. Part of the jackdaw ABI:
 * a layout change bumps JDW_ABI_VERSION (abi.h). The per-interaction record
 * itself is struct jdw_interaction in abi.h, like every other record.
 */
#ifndef JACKDAW_INTERACT_H
#define JACKDAW_INTERACT_H

#include "jackdaw/abi.h"

/* ---- granularity (jdw_ia_control.mode) ---------------------------------
 * Written by user space at any time; every program reads it per event, so a
 * switch takes effect at the next completed interaction. */
#define JDW_IA_MODE_RECORDS (1u << 0) /* one jdw_interaction record each */
#define JDW_IA_MODE_CLASSES (1u << 1) /* fold into per-class sums */

/* What a class key keeps (jdw_ia_control.class_flags); the remote address
 * is always kept, masked to class_prefix4 / class_prefix6 bits. */
#define JDW_IA_CLASS_BY_PORT (1u << 0) /* local port (server) / remote port (client) */
#define JDW_IA_CLASS_BY_PID (1u << 1)  /* owning process */

struct jdw_ia_control {
	__u32 mode;          /* JDW_IA_MODE_*; 0 = records */
	__u32 class_flags;   /* JDW_IA_CLASS_* */
	__u8 class_prefix4;  /* remote IPv4 prefix kept in a class key, 0..32 */
	__u8 class_prefix6;  /* remote IPv6 prefix, 0..128 */
	__u8 epoch;          /* window parity: class keys carry it */
	__u8 reserved;
	__u32 reserved2;
	__u64 cgroup_id;     /* only connections owned by this cgroup (0: any) */
};

/* Latency histogram of classes: microseconds on a log-linear scale, four
 * buckets per power of two: bucket 0..3 hold 0..3 us, then bucket
 * 4*(msb-1) + next two bits below the msb. 27 octaves reach 2^27 us
 * (134 s); longer latencies land in the last bucket. */
#define JDW_IA_HIST_BUCKETS 108

struct jdw_ia_class_key {
	__u8 raddr[16];  /* masked remote address */
	__u16 family;
	__u16 port;      /* JDW_IA_CLASS_BY_PORT, else 0 */
	__u32 tgid;      /* JDW_IA_CLASS_BY_PID, else 0 */
	__u8 role;
	__u8 epoch;
	__u16 reserved;
	__u32 reserved2;
};

/* Sums over the class's interactions in one window (one per CPU; user space
 * adds the CPUs). The latency split is SysProf's: kernel = the inbound
 * message waited in the kernel before the application's first read of it;
 * app = from that read to the first outbound bytes of the response (client:
 * the remote side's time); send = the response leaving (server: first to
 * last send; client: first to last arrival). total = req_start to resp_end. */
struct jdw_ia_class_stats {
	__u64 count;
	__u64 req_bytes;
	__u64 resp_bytes;
	__u64 req_packets;
	__u64 resp_packets;
	__u64 kernel_ns;
	__u64 app_ns;
	__u64 send_ns;
	__u64 total_ns;
	__u64 oncpu_ns;
	__u64 runq_ns;
	__u64 blocked_ns;
	__u64 disk_ios;
	__u64 disk_bytes;
	__u64 flagged;   /* interactions with a JDW_IA_* flag other than CLOSED */
	__u64 reserved;
	__u32 hist[JDW_IA_HIST_BUCKETS];
};

/* Per-CPU counters of the group (jdw_ia_stats, a per-CPU array). Every
 * connection or interaction the group could not follow is counted here. */
#define JDW_IA_STAT_TABLE(X)                                                  \
	X(CONNS, 0, "connections tracked")                                   \
	X(CONNS_FULL, 1, "connections not tracked: table full")              \
	X(EMITTED, 2, "interaction records emitted")                         \
	X(CLASSED, 3, "interactions folded into classes")                    \
	X(CLASS_FULL, 4, "interactions lost: class table full")              \
	X(RING_LOST, 5, "interaction records lost: ring buffer full")        \
	X(FILTERED, 6, "connections ignored by the pid/cgroup filter")       \
	X(CLOSED, 7, "connections closed")                                   \
	X(THREADS_FULL, 8, "serving threads not tracked: no task storage")  \
	X(REUSED, 9, "stale entries of freed sockets replaced (their interaction in flight lost)") \
	X(SETUP, 10, "set-up exchanges (the answer to a server's greeting): the connection's, not interactions") \
	X(ONE_WAY, 11, "one-way exchanges (no response before the close): the connection's, not interactions") \
	X(ROLE_GUESSED, 12, "traced TCP connections whose open was not seen (older than the session): role from the first message, flagged partial")

enum jdw_ia_stat {
#define JDW_IA_STAT_ENUM(name, id, desc) JDW_IA_STAT_##name = id,
	JDW_IA_STAT_TABLE(JDW_IA_STAT_ENUM)
#undef JDW_IA_STAT_ENUM
	JDW_IA_STAT_MAX = 16,
};

JDW_STATIC_ASSERT(sizeof(struct jdw_ia_control) == 24, "jdw_ia_control size changed: bump JDW_ABI_VERSION");
JDW_STATIC_ASSERT(sizeof(struct jdw_ia_class_key) == 32, "jdw_ia_class_key size changed: bump JDW_ABI_VERSION");
JDW_STATIC_ASSERT(sizeof(struct jdw_ia_class_stats) == 128 + 4 * JDW_IA_HIST_BUCKETS,
		  "jdw_ia_class_stats size changed: bump JDW_ABI_VERSION");

#endif /* JACKDAW_INTERACT_H */
