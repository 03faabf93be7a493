/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * jackdaw ABI: the one definition of every record that crosses the kernel
 * boundary, shared verbatim by bpf/ (vmlinux.h), kmod/ (kernel headers) and
 * user/ (C++20).
 *
 * Rules (see bpf/ADDING_AN_EVENT.md):
 *  - fixed-width types, explicit padding, every struct a multiple of 8 bytes
 *    and size-checked below;
 *  - every event is listed once in JDW_EVENT_TABLE; its payload once in a
 *    JDW_<NAME>_FIELDS macro. Ids, names, groups, payload structs and the
 *    user-space field decoders are all generated from these two tables;
 *  - ids are never reused: retire an event by leaving a gap;
 *  - any layout change bumps JDW_ABI_VERSION; user space refuses a BPF object
 *    or module built for another version.
 */
#ifndef JACKDAW_ABI_H
#define JACKDAW_ABI_H

#if defined(__BPF__) || defined(__bpf__)
/* vmlinux.h supplies __u8..__u64 / __s32 / __s64 */
#elif defined(__KERNEL__)
#include <linux/types.h>
#else
#include <linux/types.h>
#endif

/* 4: the combined syscall record (JDW_WIRE_SYS_CALL) may appear on the
 * wire and in traces; every event layout is as in 3.
 * 5: sock_info grew the unix-domain fields (peer_sk ... path); a 4 trace's
 * shorter sock_info reads as a 5 one with those fields 0 (the reader widens
 * it, user/trace/record_decoder.h). jdw_control carries the head-sampling
 * rate; the sample_gap event (traces recorded without sampling hold none). */
#define JDW_ABI_VERSION 5

#define JDW_COMM_LEN 16
#define JDW_MAX_CPUS 256
/* x86-64 syscall numbers stay below 512 (highest today ~470). */
#define JDW_SYSCALL_BITMAP_WORDS 8
#define JDW_MAX_SYSCALLS (JDW_SYSCALL_BITMAP_WORDS * 64)
#define JDW_USDT_MAX_ARGS 6
/* Bytes of a unix socket's name a sock_info carries: the common server
 * sockets (/run/php/php8.2-fpm.sock, /run/mysqld/mysqld.sock) fit, and the
 * record stays within JDW_STAGE_REC_MAX. */
#define JDW_UNIX_PATH_LEN 40

/* ---- probe groups ------------------------------------------------------ */
#define JDW_GROUP_TABLE(X)                                                   \
	X(SCHED, 0, "sched")                                                 \
	X(SYSCALL, 1, "syscall")                                             \
	X(BLOCK, 2, "block")                                                 \
	X(NET, 3, "net")                                                     \
	X(INTERACT, 4, "interact")                                           \
	X(APP, 5, "app")

enum jdw_group {
#define JDW_GROUP_ENUM(name, id, str) JDW_GROUP_##name = id,
	JDW_GROUP_TABLE(JDW_GROUP_ENUM)
#undef JDW_GROUP_ENUM
	JDW_GROUP_MAX = 8, /* room to grow without resizing maps */
};

/* ---- the record header --------------------------------------------------
 * ts: for the BPF backend CLOCK_MONOTONIC ns (bpf_ktime_get_ns), for the
 * module TSC cycles; the trace file's header names the timebase and carries
 * the mapping between them. tid/tgid: the task current on the CPU when the
 * event fired (the interrupted task in irq context: check ctx).
 */
enum jdw_ctx {
	JDW_CTX_TASK = 0,
	JDW_CTX_SOFTIRQ = 1,
	JDW_CTX_HARDIRQ = 2,
	JDW_CTX_NMI = 3,
};

struct jdw_record_header {
	__u64 ts;
	__u16 type;  /* enum jdw_event_type */
	__u16 size;  /* whole record, header included, multiple of 8 */
	__u16 cpu;
	__u8 ctx;    /* enum jdw_ctx */
	__u8 flags;  /* reserved, 0 */
	__u32 tgid;
	__u32 tid;
};

/* ---- payload field tables -----------------------------------------------
 * F(type, name)          scalar field
 * A(type, name, count)   fixed array (addresses, comm)
 * Field kinds are interpreted by user space through the "hint" in the name
 * of the type macro only; see user/trace/event_table.cc.
 */

/* header tid/tgid = prev (the task switched out). */
#define JDW_SCHED_SWITCH_FIELDS(F, A)                                        \
	F(__u32, prev_tid)                                                   \
	F(__u32, prev_tgid)                                                  \
	F(__u32, next_tid)                                                   \
	F(__u32, next_tgid)                                                  \
	F(__u64, prev_state) /* 0 = runnable (preempted), else TASK_* bits */

/* header tid/tgid = waker (may be the interrupted task in irq context). */
#define JDW_SCHED_WAKEUP_FIELDS(F, A)                                        \
	F(__u32, wakee_tid)                                                  \
	F(__u32, wakee_tgid)                                                 \
	F(__u32, target_cpu)                                                 \
	F(__u32, reserved)

/* header tid/tgid = parent. */
#define JDW_TASK_FORK_FIELDS(F, A)                                           \
	F(__u32, child_tid)                                                  \
	F(__u32, child_tgid)                                                 \
	A(char, comm, JDW_COMM_LEN)

#define JDW_TASK_EXEC_FIELDS(F, A)                                           \
	F(__u32, old_tid)                                                    \
	F(__u32, reserved)                                                   \
	A(char, comm, JDW_COMM_LEN)

#define JDW_TASK_EXIT_FIELDS(F, A)                                           \
	F(__s32, exit_code)                                                  \
	F(__u32, reserved)                                                   \
	A(char, comm, JDW_COMM_LEN)

/* obj_kind: what obj identifies; obj: a kernel object address that is
 * stable for the object's life (struct sock * for sockets, struct inode *
 * for pipes/files/epoll, the user address for futexes). Stable identity
 * lets the join follow one connection or pipe across threads. */
enum jdw_obj_kind {
	JDW_OBJ_NONE = 0,
	JDW_OBJ_SOCKET = 1,
	JDW_OBJ_PIPE = 2,
	JDW_OBJ_FILE = 3,
	JDW_OBJ_FUTEX = 4,
	JDW_OBJ_EPOLL = 5,
	JDW_OBJ_OTHER_FD = 6,
};

/* fd: first argument when it is a file descriptor (else -1);
 * arg: byte count for read/write/send/recv, op for futex. */
#define JDW_SYS_ENTER_FIELDS(F, A)                                           \
	F(__u16, nr)                                                         \
	F(__u8, obj_kind)                                                    \
	F(__u8, reserved)                                                    \
	F(__s32, fd)                                                         \
	F(__u64, arg)                                                        \
	F(__u64, obj)

/* obj is resolved at exit only where the call creates it (accept*: the new
 * socket); otherwise pair the exit with its enter on the same tid.
 * peek: what a read of a socket (read, readv, recvfrom, recvmsg) returned
 * begins with, for the join's TLS rule: 0 when not looked at (another call,
 * fewer than 5 bytes, the kernel-module backend, traces before it was
 * filled in); else JDW_PEEK_TLS with the record types the bytes' TLS record
 * headers name (walking at most JDW_PEEK_RECORDS headers, each found from
 * the previous one's length). A TLS record header is a content type 20-24,
 * version 3.x (x <= 4) and a length of at most 2^14 + 2048. */
#define JDW_PEEK_RECORDS 4
#define JDW_PEEK_TLS 0x80u          /* the bytes begin with a TLS record header */
#define JDW_PEEK_FIRST_MASK 0x07u   /* the first record's content type - 20 */
#define JDW_PEEK_APP_SHIFT 3        /* application data (23) records walked, at most 7, */
#define JDW_PEEK_APP_MASK 0x38u     /* one right after a change_cipher_spec left out */
#define JDW_PEEK_LAST_CCS 0x40u     /* the last record walked is a change_cipher_spec */
/* Without JDW_PEEK_TLS: a read with MSG_PEEK, which returned bytes but
 * consumed none (nginx peeks at a connection's first byte to tell TLS
 * from plain HTTP, and at idle keep-alive connections). */
#define JDW_PEEK_MSG_PEEK 0x07u
#define JDW_SYS_EXIT_FIELDS(F, A)                                            \
	F(__u16, nr)                                                         \
	F(__u8, obj_kind)                                                    \
	F(__u8, peek)                                                        \
	F(__s32, fd)                                                         \
	F(__s64, ret)                                                        \
	F(__u64, obj)

/* Emitted the first time a connected socket is seen (and on accept and
 * connect): maps a socket identity to its addresses. Ports host order;
 * IPv4 addresses in the first 4 bytes of the address arrays.
 * AF_UNIX (family 1; stream and seqpacket sockets once connected): ports
 * and addresses 0; peer_sk is the connected peer socket (unix_sk(sk)->peer,
 * the identity the peer's own sock_info and syscalls carry as sk/obj), so
 * the two ends pair by identity; peer_tgid the process SO_PEERCRED names
 * (sk_peer_pid: for a connecting socket the process that called listen(),
 * for an accepted one the process that called connect()), 0 if none;
 * sock_type SOCK_STREAM 1, SOCK_SEQPACKET 5; path the socket's bound name
 * when it has one (an accepted socket inherits its listener's), else its
 * peer's (unix_flags says which), NUL-padded, an abstract name's leading
 * NUL kept; path_len its length as the kernel keeps it (a path's counts its
 * terminating NUL, an abstract name's does not): longer than the field
 * holds, the name is cut.
 * IP sockets leave these 0. */
#define JDW_UNIX_PATH_OWN (1u << 0)  /* path is this socket's own name */
#define JDW_UNIX_PATH_PEER (1u << 1) /* path is the peer's name */
/* A socket and its two ends: sock_info's first fields, and dgram_peer's. */
#define JDW_SOCK_ENDS_FIELDS(F, A)                                           \
	F(__u64, sk)                                                         \
	F(__u16, family)                                                     \
	F(__u16, protocol)                                                   \
	F(__u16, sport)                                                      \
	F(__u16, dport)                                                      \
	A(__u8, saddr, 16)                                                   \
	A(__u8, daddr, 16)
#define JDW_SOCK_INFO_FIELDS(F, A)                                           \
	JDW_SOCK_ENDS_FIELDS(F, A)                                           \
	F(__u64, peer_sk)                                                    \
	F(__u32, peer_tgid)                                                  \
	F(__u8, sock_type)                                                   \
	F(__u8, unix_flags)                                                  \
	F(__u16, path_len)                                                   \
	A(char, path, JDW_UNIX_PATH_LEN)

/* The sock_info payload of ABI 2-4 traces: its first fields, up to daddr. */
#define JDW_SOCK_INFO_V4_SIZE 48

/* Head sampling (record --sample): a traced thread's syscalls on sockets
 * the sample leaves out are not recorded, and the time it spent in them
 * must not be charged to its next recorded event. One sample_gap record,
 * stamped with the last left-out event's time (`to`), stands for a run of
 * them on one CPU: the thread's CPU up to it belongs to no recorded
 * request. from: the first left-out event's time; skipped: how many. */
#define JDW_SAMPLE_GAP_FIELDS(F, A)                                          \
	F(__u64, from)                                                       \
	F(__u32, skipped)                                                    \
	F(__u32, reserved)

/* A datagram's far end (UDP on an unconnected socket): the address a
 * sendto/sendmsg names (emitted before its sys_enter) or a recvfrom/recvmsg
 * returned (before its sys_exit), on the same thread. One socket serves
 * many peers, so the join keys its messages by (sk, peer): each peer is a
 * flow of its own, with these ends (ports host order; IPv4 addresses in the
 * first 4 bytes, as in sock_info). */
#define JDW_DGRAM_PEER_FIELDS(F, A) JDW_SOCK_ENDS_FIELDS(F, A)

/* rq: the struct request address, the request id shared by issue and
 * completion. op: REQ_OP_* in the low byte, REQ_* flags above.
 * submit_tid: the thread that submitted the I/O (block_io_start), which
 * differs from the header's task when a kworker dispatches it; 0 if the
 * kernel does not report submissions. */
#define JDW_BLOCK_ISSUE_FIELDS(F, A)                                         \
	F(__u32, dev)                                                        \
	F(__u32, op)                                                         \
	F(__u64, sector)                                                     \
	F(__u32, bytes)                                                      \
	F(__u32, submit_tid)                                                 \
	F(__u64, rq)

/* issue_ts: when the request was issued to the device; issue_tid/tgid: the
 * thread that submitted it (block_io_start where the kernel has it, else
 * the task current at issue). 0 if the issue was not seen. They let a
 * completion be placed back at its start and charged to its submitter. */
#define JDW_BLOCK_COMPLETE_FIELDS(F, A)                                      \
	F(__u32, dev)                                                        \
	F(__u32, op)                                                         \
	F(__u64, sector)                                                     \
	F(__u32, bytes)                                                      \
	F(__s32, error)                                                      \
	F(__u64, rq)                                                         \
	F(__u64, issue_ts)                                                   \
	F(__u32, issue_tid)                                                  \
	F(__u32, issue_tgid)

/* One packet leaving (NET_XMIT) or arriving (NET_RECV) at a device.
 * sk: owning socket where the kernel knows it (xmit), else 0.
 * Ports host order; seq/ack host order; tcp_flags FIN=1 SYN=2 RST=4 PSH=8
 * ACK=16; payload_len: transport payload bytes (TCP/UDP data). */
#define JDW_NET_PACKET_FIELDS(F, A)                                          \
	F(__u32, ifindex)                                                    \
	F(__u32, len)                                                        \
	F(__u64, sk)                                                         \
	F(__u16, family)                                                     \
	F(__u8, protocol)                                                    \
	F(__u8, tcp_flags)                                                   \
	F(__u16, sport)                                                      \
	F(__u16, dport)                                                      \
	F(__u32, seq)                                                        \
	F(__u32, ack)                                                        \
	F(__u32, payload_len)                                                \
	F(__u32, reserved)                                                   \
	A(__u8, saddr, 16)                                                   \
	A(__u8, daddr, 16)

/* probe_id: index into the trace's app-probe table (provider:name). */
#define JDW_USDT_FIELDS(F, A)                                                \
	F(__u32, probe_id)                                                   \
	F(__u32, nargs)                                                      \
	A(__u64, args, JDW_USDT_MAX_ARGS)

/* SysProf interaction summary (interact group), one per completed
 * interaction; the message and interaction definition is the one in
 * user/schemas/LANGUAGE.md, "Messages and interactions". Header tgid/tid: the
 * owning process and the thread that wrote the last outbound bytes; header
 * ts: when the interaction completed (the next request began, or close).
 * Times are the BPF clock (ns). Request/response are in role terms: for a
 * server the request is inbound, for a client outbound. Inbound message
 * times are arrivals in the kernel (sk_data_ready), outbound ones are the
 * application's send calls returning. in_read: the application's first read
 * of the inbound message (server: of the request). Bytes are TCP payload
 * bytes (UDP: datagram bytes); packets TCP data segments (UDP: datagrams).
 * Thread time, disk I/O: the serving threads (req_tid, resp_tid) between
 * their first and last touch of the interaction's data. laddr/raddr: local
 * and remote address (IPv4 in the first 4 bytes), ports host order. */
#define JDW_INTERACTION_FIELDS(F, A)                                         \
	F(__u64, sk)                                                         \
	F(__u64, cgroup)                                                     \
	F(__u64, req_start)                                                  \
	F(__u64, req_end)                                                    \
	F(__u64, resp_start)                                                 \
	F(__u64, resp_end)                                                   \
	F(__u64, in_read)                                                    \
	F(__u64, req_bytes)                                                  \
	F(__u64, resp_bytes)                                                 \
	F(__u32, req_packets)                                                \
	F(__u32, resp_packets)                                               \
	F(__u64, oncpu_ns)                                                   \
	F(__u64, runq_ns)                                                    \
	F(__u64, blocked_ns)                                                 \
	F(__u64, disk_bytes)                                                 \
	F(__u32, disk_ios)                                                   \
	F(__u32, req_tid)                                                    \
	F(__u32, resp_tid)                                                   \
	F(__u32, seq)                                                        \
	F(__u16, family)                                                     \
	F(__u16, protocol)                                                   \
	F(__u16, lport)                                                      \
	F(__u16, rport)                                                      \
	A(__u8, laddr, 16)                                                   \
	A(__u8, raddr, 16)                                                   \
	F(__u8, role)                                                        \
	F(__u8, flags)                                                       \
	F(__u16, reserved)                                                   \
	F(__u32, reserved2)

/* role: who spoke first on the connection. */
enum jdw_interact_role {
	JDW_ROLE_SERVER = 1, /* request inbound, response outbound */
	JDW_ROLE_CLIENT = 2, /* request outbound, response inbound */
};

/* flags of an interaction record. */
#define JDW_IA_PIPELINED (1u << 0) /* request data was waiting unread when the
				    * response began: requests overlapped */
#define JDW_IA_PARTIAL (1u << 1)   /* first interaction of a connection seen
				    * mid-stream: its first message may be cut */
#define JDW_IA_CLOSED (1u << 2)    /* completed by the connection closing */
#define JDW_IA_NO_RESPONSE (1u << 3) /* the connection closed before any response */
#define JDW_IA_MANY_THREADS (1u << 4) /* more than two threads served it: thread
				       * time covers the first two */

/* ---- the event table ----------------------------------------------------
 * X(NAME, id, group, "name", payload_fields_macro, payload_struct)
 */
#define JDW_EVENT_TABLE(X)                                                   \
	X(SCHED_SWITCH, 1, SCHED, "sched_switch", JDW_SCHED_SWITCH_FIELDS, jdw_sched_switch) \
	X(SCHED_WAKEUP, 2, SCHED, "sched_wakeup", JDW_SCHED_WAKEUP_FIELDS, jdw_sched_wakeup) \
	X(SCHED_WAKEUP_NEW, 3, SCHED, "sched_wakeup_new", JDW_SCHED_WAKEUP_FIELDS, jdw_sched_wakeup) \
	X(TASK_FORK, 4, SCHED, "task_fork", JDW_TASK_FORK_FIELDS, jdw_task_fork) \
	X(TASK_EXEC, 5, SCHED, "task_exec", JDW_TASK_EXEC_FIELDS, jdw_task_exec) \
	X(TASK_EXIT, 6, SCHED, "task_exit", JDW_TASK_EXIT_FIELDS, jdw_task_exit) \
	X(SYS_ENTER, 10, SYSCALL, "sys_enter", JDW_SYS_ENTER_FIELDS, jdw_sys_enter) \
	X(SYS_EXIT, 11, SYSCALL, "sys_exit", JDW_SYS_EXIT_FIELDS, jdw_sys_exit) \
	X(SOCK_INFO, 12, SYSCALL, "sock_info", JDW_SOCK_INFO_FIELDS, jdw_sock_info) \
	/* 13: JDW_WIRE_SYS_CALL (below), a record but never an event */     \
	X(SAMPLE_GAP, 14, SYSCALL, "sample_gap", JDW_SAMPLE_GAP_FIELDS, jdw_sample_gap) \
	X(DGRAM_PEER, 15, SYSCALL, "dgram_peer", JDW_DGRAM_PEER_FIELDS, jdw_dgram_peer) \
	X(BLOCK_ISSUE, 20, BLOCK, "block_issue", JDW_BLOCK_ISSUE_FIELDS, jdw_block_issue) \
	X(BLOCK_COMPLETE, 21, BLOCK, "block_complete", JDW_BLOCK_COMPLETE_FIELDS, jdw_block_complete) \
	X(NET_XMIT, 30, NET, "net_xmit", JDW_NET_PACKET_FIELDS, jdw_net_packet) \
	X(NET_RECV, 31, NET, "net_recv", JDW_NET_PACKET_FIELDS, jdw_net_packet) \
	X(USDT, 40, APP, "usdt", JDW_USDT_FIELDS, jdw_usdt)                  \
	X(INTERACTION, 50, INTERACT, "interaction", JDW_INTERACTION_FIELDS, jdw_interaction)

enum jdw_event_type {
	JDW_EVENT_NONE = 0,
#define JDW_EVENT_ENUM(name, id, group, str, fields, st) JDW_EVENT_##name = id,
	JDW_EVENT_TABLE(JDW_EVENT_ENUM)
#undef JDW_EVENT_ENUM
	JDW_EVENT_MAX = 64,
};

/* Payload structs, generated from the field tables (a struct used by two
 * events is generated once, from its first use below). */
#define JDW_STRUCT_FIELD(type, name) type name;
#define JDW_STRUCT_ARRAY(type, name, n) type name[n];
#define JDW_DEFINE_PAYLOAD(st, fields)                                       \
	struct st {                                                          \
		fields(JDW_STRUCT_FIELD, JDW_STRUCT_ARRAY)                   \
	};
JDW_DEFINE_PAYLOAD(jdw_sched_switch, JDW_SCHED_SWITCH_FIELDS)
JDW_DEFINE_PAYLOAD(jdw_sched_wakeup, JDW_SCHED_WAKEUP_FIELDS)
JDW_DEFINE_PAYLOAD(jdw_task_fork, JDW_TASK_FORK_FIELDS)
JDW_DEFINE_PAYLOAD(jdw_task_exec, JDW_TASK_EXEC_FIELDS)
JDW_DEFINE_PAYLOAD(jdw_task_exit, JDW_TASK_EXIT_FIELDS)
JDW_DEFINE_PAYLOAD(jdw_sys_enter, JDW_SYS_ENTER_FIELDS)
JDW_DEFINE_PAYLOAD(jdw_sys_exit, JDW_SYS_EXIT_FIELDS)
JDW_DEFINE_PAYLOAD(jdw_sock_info, JDW_SOCK_INFO_FIELDS)
JDW_DEFINE_PAYLOAD(jdw_sample_gap, JDW_SAMPLE_GAP_FIELDS)
JDW_DEFINE_PAYLOAD(jdw_dgram_peer, JDW_DGRAM_PEER_FIELDS)
JDW_DEFINE_PAYLOAD(jdw_block_issue, JDW_BLOCK_ISSUE_FIELDS)
JDW_DEFINE_PAYLOAD(jdw_block_complete, JDW_BLOCK_COMPLETE_FIELDS)
JDW_DEFINE_PAYLOAD(jdw_net_packet, JDW_NET_PACKET_FIELDS)
JDW_DEFINE_PAYLOAD(jdw_usdt, JDW_USDT_FIELDS)
JDW_DEFINE_PAYLOAD(jdw_interaction, JDW_INTERACTION_FIELDS)
#undef JDW_DEFINE_PAYLOAD
#undef JDW_STRUCT_FIELD
#undef JDW_STRUCT_ARRAY

/* Full records: header + payload, what the ring buffers carry. */
#define JDW_DEFINE_RECORD(name, id, group, str, fields, st)                  \
	struct st##_record {                                                 \
		struct jdw_record_header hdr;                                \
		struct st body;                                              \
	};
JDW_DEFINE_RECORD(x, 0, x, x, x, jdw_sched_switch)
JDW_DEFINE_RECORD(x, 0, x, x, x, jdw_sched_wakeup)
JDW_DEFINE_RECORD(x, 0, x, x, x, jdw_task_fork)
JDW_DEFINE_RECORD(x, 0, x, x, x, jdw_task_exec)
JDW_DEFINE_RECORD(x, 0, x, x, x, jdw_task_exit)
JDW_DEFINE_RECORD(x, 0, x, x, x, jdw_sys_enter)
JDW_DEFINE_RECORD(x, 0, x, x, x, jdw_sys_exit)
JDW_DEFINE_RECORD(x, 0, x, x, x, jdw_sock_info)
JDW_DEFINE_RECORD(x, 0, x, x, x, jdw_sample_gap)
JDW_DEFINE_RECORD(x, 0, x, x, x, jdw_dgram_peer)
JDW_DEFINE_RECORD(x, 0, x, x, x, jdw_block_issue)
JDW_DEFINE_RECORD(x, 0, x, x, x, jdw_block_complete)
JDW_DEFINE_RECORD(x, 0, x, x, x, jdw_net_packet)
JDW_DEFINE_RECORD(x, 0, x, x, x, jdw_usdt)
JDW_DEFINE_RECORD(x, 0, x, x, x, jdw_interaction)
#undef JDW_DEFINE_RECORD

/* ---- wire-only records --------------------------------------------------
 * Records that exist only between the probes and the trace decoder: the
 * decoder (user/trace/record_decoder.h) expands each into the events it
 * stands for before any later stage sees it, so they are in no event table
 * and no schema can name them. Their ids share the event id space.
 *
 * JDW_WIRE_SYS_CALL: one syscall of a traced task whose enter and exit
 * happened on the same CPU with no other record of that CPU between them.
 * The probe holds the enter in a per-CPU slot instead of emitting it; every
 * other emission on the CPU first flushes the slot as an ordinary
 * sys_enter (so each CPU's stream stays in time order), and the exit, when
 * the slot still holds this task's enter of this call, emits this one
 * record instead of two. It expands to exactly the sys_enter the slot held
 * (header: this record's header with type SYS_ENTER, ts = hdr.ts) and the
 * sys_exit the exit would have emitted (ts = exit_ts, ret; obj_kind NONE,
 * fd -1, obj 0: an exit that names an object, accept or connect, is never
 * combined). */
#define JDW_WIRE_SYS_CALL 13

/* The wire record carries the exit's peek in enter.reserved (the enter's
 * own is 0); the decoder hands it to the sys_exit it expands to. */
struct jdw_sys_call {
	struct jdw_sys_enter enter;
	__u64 exit_ts;
	__s64 ret;
};

struct jdw_sys_call_record {
	struct jdw_record_header hdr;
	struct jdw_sys_call body;
};

/* ---- control ------------------------------------------------------------
 * One element of the "jdw_control" array map, written by user space and read
 * by every program. Disabling a group also detaches its links; the flag makes
 * the switch atomic for programs still attached during the detach. */
#define JDW_FILTER_TGID (1u << 0) /* only tgids in jdw_tgid_filter */
#define JDW_FILTER_SYSCALL (1u << 1) /* only syscalls set in the bitmap */

struct jdw_control {
	__u32 abi_version;
	__u32 enabled_groups;  /* bit per enum jdw_group */
	__u32 filter_flags;    /* JDW_FILTER_* */
	__u32 wakeup_bytes;    /* wake the reader once this much is pending */
	__u64 syscall_bitmap[JDW_SYSCALL_BITMAP_WORDS];
	/* Head sampling: a connection's socket events are recorded when its
	 * socket hashes below sample_keep (of JDW_SAMPLE_ALL); listening
	 * sockets always. Read only by objects loaded with sampling on. */
	__u32 sample_keep;
	__u32 reserved;
};
#define JDW_SAMPLE_ALL 65536u

/* ---- process admission (record --cgroup / --comm) -----------------------
 * With JDW_FILTER_TGID set, a process joins the tgid set when it exists at
 * start and matches (user space scans /proc), when a traced process forks
 * it, and — this element of the "jdw_admit" array map — when a process
 * that matches forks or execs (BPF checks the current task there only, so
 * the per-event hot path stays one tgid lookup). A cgroup matches itself
 * and every cgroup below it (the ancestor id at the target's level). */
#define JDW_ADMIT_CGROUP (1u << 0)
#define JDW_ADMIT_COMM (1u << 1)

struct jdw_admit {
	__u64 cgroup_id;    /* cgroup v2 id: the inode number of its directory */
	__u32 cgroup_level; /* its depth below the cgroup v2 root (root = 0) */
	__u32 flags;        /* JDW_ADMIT_* */
	char comm[JDW_COMM_LEN]; /* NUL-padded, as the kernel keeps task->comm */
};

/* ---- the record stage ----------------------------------------------------
 * One element per CPU of the "jdw_stage" per-CPU array: records staged on
 * that CPU before they go to its ring as one batch (bpf/jackdaw.bpf.h, "the
 * record stage"). A batch in the ring is the records back to back, each
 * with its header and size, so a reader splits every ring record by the
 * headers' sizes; a lone record is a batch of one. User space reads the
 * stage only to find one that has not moved (first_ts) and to count what a
 * stop leaves in it. */
#define JDW_STAGE_BYTES 4096
#define JDW_STAGE_REC_MAX 128 /* larger records go to the ring directly */
#define JDW_STAGE_NEST 4      /* programs nested in the stage's writer (softirq, hardirq, NMI: 3 needed); a power of two */
#define JDW_STAGE_GROUP_SLOTS 8 /* >= JDW_STAGE_NEST + 1, a power of two */

struct jdw_stage {
	__u32 len;      /* bytes staged */
	__u32 depth;    /* programs on this CPU between their reserve and commit */
	__u64 first_ts; /* of the oldest staged record */
	__u32 count[JDW_GROUP_MAX]; /* staged events per group, for loss accounting (a
				     * combined syscall record counts two) */
	__u8 group[JDW_STAGE_GROUP_SLOTS]; /* of the record being written at each depth */
	__u8 data[JDW_STAGE_BYTES + JDW_STAGE_REC_MAX];
	__u8 nested[JDW_STAGE_NEST][JDW_STAGE_REC_MAX]; /* a nested program's record */
};

#ifdef __cplusplus
#define JDW_STATIC_ASSERT static_assert
#else
#define JDW_STATIC_ASSERT _Static_assert
#endif
/* The tgid filter's fast path: an array of small buckets indexed by the low
 * bits of the tgid, checked with one inlined array lookup instead of a hash
 * lookup per event. A bucket that ever fills sets `overflow`, and its
 * tgids beyond the ways live in the jdw_tgid_filter hash (the full set). */
#define JDW_TGID_BUCKETS 4096
#define JDW_TGID_WAYS 3

struct jdw_tgid_bucket {
	__u32 tgid[JDW_TGID_WAYS]; /* 0 = empty */
	__u32 overflow;
};

/* Key of jdw_traced_flows, the net group's process filter: a connection
 * of a traced process. The kernel side learns them from the packets the
 * process's sockets send. */
struct jdw_flow_key {
	__u16 lport; /* host order */
	__u16 rport;
	__u8 raddr[16];
};

/* The one value of jdw_traced_ports: every connection to a local port a
 * traced process has bound (bind, listen) is traced. A byte per port
 * (host order), so the check is an array load, not a hash lookup; the map
 * is mmapable, and user space sets the ports of the listeners that exist
 * when a process is selected with a plain store into its mapping (a byte
 * of its own: no read-modify-write racing the kernel's). */
#define JDW_PORTS 65536
struct jdw_traced_ports {
	__u8 traced[JDW_PORTS];
};

#define JDW_ABI_ASSERT_SIZE(st, n) JDW_STATIC_ASSERT(sizeof(struct st) == (n), #st " size changed: bump JDW_ABI_VERSION")
JDW_ABI_ASSERT_SIZE(jdw_record_header, 24);
JDW_ABI_ASSERT_SIZE(jdw_flow_key, 20);
JDW_ABI_ASSERT_SIZE(jdw_sched_switch, 24);
JDW_ABI_ASSERT_SIZE(jdw_sched_wakeup, 16);
JDW_ABI_ASSERT_SIZE(jdw_task_fork, 24);
JDW_ABI_ASSERT_SIZE(jdw_task_exec, 24);
JDW_ABI_ASSERT_SIZE(jdw_task_exit, 24);
JDW_ABI_ASSERT_SIZE(jdw_sys_enter, 24);
JDW_ABI_ASSERT_SIZE(jdw_sys_exit, 24);
JDW_ABI_ASSERT_SIZE(jdw_sample_gap, 16);
JDW_ABI_ASSERT_SIZE(jdw_sys_call, 40);
#define JDW_ASSERT_NOT_WIRE(name, id, group, str, fields, st)                \
	JDW_STATIC_ASSERT(id != JDW_WIRE_SYS_CALL, "event " str " takes a wire-only record's id");
JDW_EVENT_TABLE(JDW_ASSERT_NOT_WIRE)
#undef JDW_ASSERT_NOT_WIRE
JDW_ABI_ASSERT_SIZE(jdw_sock_info, 104);
JDW_ABI_ASSERT_SIZE(jdw_dgram_peer, 48);
JDW_ABI_ASSERT_SIZE(jdw_block_issue, 32);
JDW_ABI_ASSERT_SIZE(jdw_block_complete, 48);
JDW_ABI_ASSERT_SIZE(jdw_net_packet, 72);
JDW_ABI_ASSERT_SIZE(jdw_usdt, 56);
JDW_ABI_ASSERT_SIZE(jdw_interaction, 176);
JDW_ABI_ASSERT_SIZE(jdw_control, 88);
JDW_ABI_ASSERT_SIZE(jdw_tgid_bucket, 16);
JDW_ABI_ASSERT_SIZE(jdw_admit, 32);

#endif /* JACKDAW_ABI_H */
