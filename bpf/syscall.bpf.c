// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* syscall group: raw sys_enter/sys_exit with a per-syscall bitmap, the fd or
 * futex address a call acts on, and a stable identity for the object behind
 * the fd (socket, pipe, file) so that the join can follow one connection
 * across threads. */
#include "jackdaw.bpf.h"
#include "fd_cache.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* x86-64 syscall numbers (stable ABI). */
#define MSG_PEEK 2
#define NR_read 0
#define NR_write 1
#define NR_close 3
#define NR_pread64 17
#define NR_pwrite64 18
#define NR_readv 19
#define NR_writev 20
#define NR_sendfile 40
#define NR_connect 42
#define NR_accept 43
#define NR_sendto 44
#define NR_recvfrom 45
#define NR_sendmsg 46
#define NR_recvmsg 47
#define NR_shutdown 48
#define NR_fsync 74
#define NR_fdatasync 75
#define NR_futex 202
#define NR_epoll_wait 232
#define NR_epoll_ctl 233
#define NR_splice 275
#define NR_epoll_pwait 281
#define NR_accept4 288
#define NR_preadv 295
#define NR_pwritev 296
#define NR_recvmmsg 299
#define NR_sendmmsg 307
#define NR_epoll_pwait2 441

/* Calls that return a new fd (or, for dup2/dup3, replace one). */
#define NR_open 2
#define NR_pipe 22
#define NR_dup 32
#define NR_dup2 33
#define NR_socket 41
#define NR_socketpair 53
#define NR_fcntl 72
#define NR_creat 85
#define NR_epoll_create 213
#define NR_openat 257
#define NR_signalfd 282
#define NR_timerfd_create 283
#define NR_eventfd 284
#define NR_signalfd4 289
#define NR_eventfd2 290
#define NR_epoll_create1 291
#define NR_dup3 292
#define NR_pipe2 293
#define NR_memfd_create 319
#define NR_close_range 436
#define NR_openat2 437
#define NR_pidfd_getfd 438
#define NR_bind 49
#define NR_listen 50

/* Calls with which a thread goes back to waiting for work. */
#define NR_poll 7
#define NR_select 23
#define NR_pselect6 270
#define NR_ppoll 271

#define F_DUPFD 0
#define F_DUPFD_CLOEXEC 1030
#define CLOSE_RANGE_CLOEXEC (1U << 2)

static __always_inline bool syscall_wanted(struct jdw_control *ctl, long nr)
{
	__u32 word;

	if (!(ctl->filter_flags & JDW_FILTER_SYSCALL))
		return true;
	if (nr < 0 || nr >= JDW_MAX_SYSCALLS)
		return false;
	word = (__u32)nr >> 6;
	if (word >= JDW_SYSCALL_BITMAP_WORDS)
		return false;
	/* kept bounded for verifiers that lose nr's bounds through a stack
	 * spill (6.1 does, depending on the register pressure around it) */
	word &= JDW_SYSCALL_BITMAP_WORDS - 1;
	barrier_var(word);
	word &= JDW_SYSCALL_BITMAP_WORDS - 1;
	return ctl->syscall_bitmap[word] & (1ull << (nr & 63));
}

static __always_inline bool first_arg_is_fd(long nr)
{
	switch (nr) {
	case NR_read: case NR_write: case NR_close: case NR_pread64: case NR_pwrite64:
	case NR_readv: case NR_writev: case NR_sendfile: case NR_connect: case NR_accept:
	case NR_sendto: case NR_recvfrom: case NR_sendmsg: case NR_recvmsg: case NR_shutdown:
	case NR_fsync: case NR_fdatasync: case NR_epoll_wait: case NR_epoll_ctl: case NR_splice:
	case NR_epoll_pwait: case NR_accept4: case NR_preadv: case NR_pwritev: case NR_recvmmsg:
	case NR_sendmmsg: case NR_epoll_pwait2:
		return true;
	}
	return false;
}

static __always_inline bool is_socket_read(long nr)
{
	return nr == NR_read || nr == NR_recvfrom || nr == NR_recvmsg || nr == NR_readv;
}

static __always_inline bool is_socket_write(long nr)
{
	return nr == NR_write || nr == NR_writev || nr == NR_sendto || nr == NR_sendmsg ||
	       nr == NR_sendmmsg || nr == NR_sendfile;
}

/* ---- head sampling (jackdaw.bpf.h) ----------------------------------------
 * A thread that made a call on a socket left out of the sample is doing
 * that connection's work until it goes back to waiting for work (an epoll,
 * poll or select call, an accept, a futex: a pool's queue) or touches a
 * socket in the sample: its calls in between (the file it serves, the log
 * it writes) are left out too, or their time and I/O would be charged to
 * the next request it records (jdw_unsampled marks it). */

/* Calls on an fd that the sample decides: every fd call but those that
 * make a connection (accept, connect), whose socket has no peer to hash at
 * their enter, and which a connection makes once. */
static __always_inline bool sampled_call(long nr)
{
	return first_arg_is_fd(nr) && nr != NR_accept && nr != NR_accept4 && nr != NR_connect;
}

static __always_inline bool waits_for_work(long nr)
{
	return nr == NR_epoll_wait || nr == NR_epoll_pwait || nr == NR_epoll_pwait2 || nr == NR_poll ||
	       nr == NR_ppoll || nr == NR_select || nr == NR_pselect6 || nr == NR_accept || nr == NR_accept4 ||
	       nr == NR_futex;
}

/* At a call's enter: whether the thread's call is left out, its mark
 * updated. `sock`: the socket the call acts on, if any. */
static __always_inline bool sample_leaves_out(struct jdw_control *ctl, __u32 tid, long nr, struct sock *sock)
{
	__u8 one = 1;

	if (sock && sampled_call(nr)) {
		if (!jdw_sample_keeps_sock(ctl, sock,
					   is_socket_read(nr)    ? JDW_SAMPLE_BEGINS
					   : is_socket_write(nr) ? JDW_SAMPLE_ANSWERS
								 : JDW_SAMPLE_WITHIN)) {
			bpf_map_update_elem(&jdw_unsampled, &tid, &one, BPF_ANY);
			return true;
		}
	} else if (!waits_for_work(nr)) {
		return bpf_map_lookup_elem(&jdw_unsampled, &tid) != NULL;
	}
	/* back to waiting, or on a socket in the sample */
	if (bpf_map_lookup_elem(&jdw_unsampled, &tid)) {
		bpf_map_delete_elem(&jdw_unsampled, &tid);
		jdw_gap_close(bpf_get_current_pid_tgid());
	}
	return false;
}

/* At an accept's exit: the connection it made is left out of the sample,
 * and the thread marked, so that nothing of it is recorded (its enter, on
 * the listener, was). */
static __always_inline bool accepted_left_out(struct jdw_control *ctl, __u32 tgid, __u32 tid, int fd)
{
	struct jdw_fd_obj o;
	__u8 one = 1;

	if (!jdw_fd_lookup(tgid, fd, &o) || o.kind != JDW_OBJ_SOCKET ||
	    jdw_sample_keeps_sock(ctl, (struct sock *)o.obj, JDW_SAMPLE_BEGINS))
		return false;
	bpf_map_update_elem(&jdw_unsampled, &tid, &one, BPF_ANY);
	return true;
}

/* At its exit: the mark the enter left says (a call left out marked the
 * thread or found it marked; one kept unmarked it). The socket is not
 * hashed again: a close may have freed it. */
static __always_inline bool sample_left_out_at_exit(__u32 tid, long nr)
{
	return !waits_for_work(nr) && bpf_map_lookup_elem(&jdw_unsampled, &tid) != NULL;
}

static __always_inline bool is_epoll_call(long nr)
{
	return nr == NR_epoll_wait || nr == NR_epoll_ctl || nr == NR_epoll_pwait ||
	       nr == NR_epoll_pwait2;
}

/* Calls whose return value is a new fd. */
static __always_inline bool returns_new_fd(long nr, __u64 a1)
{
	switch (nr) {
	case NR_open: case NR_openat: case NR_openat2: case NR_creat: case NR_socket:
	case NR_accept: case NR_accept4: case NR_dup: case NR_dup2: case NR_dup3:
	case NR_epoll_create: case NR_epoll_create1: case NR_eventfd: case NR_eventfd2:
	case NR_signalfd: case NR_signalfd4: case NR_timerfd_create: case NR_memfd_create:
	case NR_pidfd_getfd:
		return true;
	case NR_fcntl:
		return a1 == F_DUPFD || a1 == F_DUPFD_CLOEXEC;
	}
	return false;
}

/* The fd cache's bookkeeping at a call's exit (see fd_cache.bpf.h): runs
 * for every call of a traced process, whatever the syscall filter, so the
 * cache never misses a close. */
static __always_inline void track_fds(__u32 tgid, long nr, __u64 a0, __u64 a1, __u64 a3, long ret)
{
	if (ret < 0 && nr != NR_close)
		return;
	if (returns_new_fd(nr, a1)) {
		jdw_fd_created(tgid, ret);
		return;
	}
	switch (nr) {
	case NR_close:
		/* the fd is released even when close reports an error */
		jdw_fd_closed(tgid, a0);
		break;
	case NR_close_range:
		if (!(a3 & CLOSE_RANGE_CLOEXEC))
			jdw_fd_closed_range(tgid, a0, a1);
		break;
	case NR_pipe: case NR_pipe2:
		jdw_fd_created_pair(tgid, a0);
		break;
	case NR_socketpair:
		jdw_fd_created_pair(tgid, a3);
		break;
	}
}

/* What emit_sock_info() did: a socket that can never have anything to
 * report (neither IP nor a connection-oriented unix socket, or a unix
 * listener) is settled like one whose description was sent, so its reads
 * and writes stop reading the socket every time. */
enum sock_info_result {
	SOCK_INFO_NOT_YET = 0, /* not connected (yet) */
	SOCK_INFO_SENT = 1,
	SOCK_INFO_NEVER = 2,   /* nothing to report, ever */
};

#define AF_UNIX 1
#define SOCK_STREAM 1
#define SOCK_SEQPACKET 5

/* A connected unix stream or seqpacket socket: its peer socket, the peer
 * process SO_PEERCRED names, and the connection's name (its own bound
 * name, which an accepted socket inherits from its listener, else the
 * peer's), so user space can pair the two ends and name the peer.
 * Datagram sockets have no one peer to report. */
static __always_inline enum sock_info_result emit_unix_sock_info(struct jdw_control *ctl, struct sock *sk,
								  __u8 ck)
{
	struct unix_sock *u = (struct unix_sock *)sk;
	struct jdw_sock_info_record *r;
	struct unix_address *addr;
	struct sock *peer;
	struct pid *peer_pid;
	__u16 type;
	__u8 flags = JDW_UNIX_PATH_OWN;
	__u32 n;
	int len;
	void *ring;

	type = BPF_CORE_READ(sk, sk_type);
	if (type != SOCK_STREAM && type != SOCK_SEQPACKET)
		return SOCK_INFO_NEVER;
	if (BPF_CORE_READ(sk, __sk_common.skc_state) == TCP_LISTEN)
		return SOCK_INFO_NEVER;
	peer = BPF_CORE_READ(u, peer);
	if (!peer)
		return SOCK_INFO_NOT_YET;
	r = jdw_reserve(JDW_GROUP_SYSCALL, JDW_EVENT_SOCK_INFO, sizeof(*r), &ring, ck);
	if (!r)
		return SOCK_INFO_NOT_YET; /* counted lost; retried on the next call */
	__builtin_memset(&r->body, 0, sizeof(r->body));
	r->body.sk = (__u64)sk;
	r->body.family = AF_UNIX;
	r->body.peer_sk = (__u64)peer;
	r->body.sock_type = type;
	peer_pid = BPF_CORE_READ(sk, sk_peer_pid);
	if (peer_pid)
		r->body.peer_tgid = BPF_CORE_READ(peer_pid, numbers[0].nr);
	addr = BPF_CORE_READ(u, addr);
	if (!addr) {
		addr = BPF_CORE_READ((struct unix_sock *)peer, addr);
		flags = JDW_UNIX_PATH_PEER;
	}
	if (addr) {
		/* len counts sun_family before the name */
		len = BPF_CORE_READ(addr, len) - (int)sizeof(__u16);
		if (len > 0) {
			r->body.unix_flags = flags;
			r->body.path_len = len;
			n = len > JDW_UNIX_PATH_LEN ? JDW_UNIX_PATH_LEN : len;
			barrier_var(n);
			if (n > 0 && n <= JDW_UNIX_PATH_LEN)
				bpf_core_read(r->body.path, n, &addr->name[0].sun_path);
		}
	}
	jdw_submit(r, ring, ctl);
	return SOCK_INFO_SENT;
}

/* Reports a connected socket's addresses. */
static __always_inline enum sock_info_result emit_sock_info(struct jdw_control *ctl, struct sock *sk,
							     __u8 ck)
{
	struct jdw_sock_info_record *r;
	__u16 family, dport;
	void *ring;

	if (!sk)
		return SOCK_INFO_NEVER;
	family = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (family == AF_UNIX)
		return emit_unix_sock_info(ctl, sk, ck);
	/* Other non-IP sockets have no 5-tuple to report; they still join by
	 * identity. Unconnected IP sockets may connect later. */
	if (family != 2 /* AF_INET */ && family != 10 /* AF_INET6 */)
		return SOCK_INFO_NEVER;
	dport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (dport == 0)
		return SOCK_INFO_NOT_YET;
	r = jdw_reserve(JDW_GROUP_SYSCALL, JDW_EVENT_SOCK_INFO, sizeof(*r), &ring, ck);
	if (!r)
		return SOCK_INFO_NOT_YET; /* counted lost; retried on the next call */
	__builtin_memset(&r->body, 0, sizeof(r->body));
	r->body.sk = (__u64)sk;
	r->body.family = family;
	r->body.protocol = BPF_CORE_READ(sk, sk_protocol);
	r->body.sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	r->body.dport = dport;
	if (family == 2) {
		bpf_core_read(&r->body.saddr, 4, &sk->__sk_common.skc_rcv_saddr);
		bpf_core_read(&r->body.daddr, 4, &sk->__sk_common.skc_daddr);
	} else {
		bpf_core_read(&r->body.saddr, 16, &sk->__sk_common.skc_v6_rcv_saddr);
		bpf_core_read(&r->body.daddr, 16, &sk->__sk_common.skc_v6_daddr);
	}
	jdw_submit(r, ring, ctl);
	return SOCK_INFO_SENT;
}

/* A datagram's far end on an unconnected UDP socket (abi.h, dgram_peer):
 * `uaddr` is the sockaddr the call names or filled in, in the caller's
 * memory. Connected sockets are described by sock_info instead. */
static __always_inline void emit_dgram_peer(struct sock *sk, const void *uaddr, __u8 ck)
{
	struct jdw_dgram_peer_record *r;
	__u16 family, sa_family;
	__be16 port;
	void *ring;

	if (!sk || !uaddr || BPF_CORE_READ(sk, sk_type) != 2 /* SOCK_DGRAM */ ||
	    BPF_CORE_READ(sk, __sk_common.skc_dport) != 0)
		return;
	family = BPF_CORE_READ(sk, __sk_common.skc_family);
	if ((family != 2 && family != 10) || bpf_probe_read_user(&sa_family, sizeof(sa_family), uaddr) ||
	    (sa_family != 2 && sa_family != 10) || bpf_probe_read_user(&port, sizeof(port), uaddr + 2))
		return;
	r = jdw_reserve(JDW_GROUP_SYSCALL, JDW_EVENT_DGRAM_PEER, sizeof(*r), &ring, ck);
	if (!r)
		return;
	__builtin_memset(&r->body, 0, sizeof(r->body));
	r->body.sk = (__u64)sk;
	r->body.family = sa_family;
	r->body.protocol = BPF_CORE_READ(sk, sk_protocol);
	r->body.sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	r->body.dport = bpf_ntohs(port);
	if (sa_family == 2) {
		bpf_core_read(&r->body.saddr, 4, &sk->__sk_common.skc_rcv_saddr);
		bpf_probe_read_user(&r->body.daddr, 4, uaddr + 4);   /* sockaddr_in.sin_addr */
	} else {
		bpf_core_read(&r->body.saddr, 16, &sk->__sk_common.skc_v6_rcv_saddr);
		bpf_probe_read_user(&r->body.daddr, 16, uaddr + 8);  /* sockaddr_in6.sin6_addr */
	}
	jdw_submit(r, ring, jdw_ctl());
}

/* The sockaddr a sendto/recvfrom (its fifth argument) or a
 * sendmsg/recvmsg (its msghdr's msg_name) names, 0 for other calls. */
static __always_inline const void *dgram_sockaddr(long nr, __u64 a1, __u64 a4)
{
	const void *name = NULL;

	if (nr == NR_sendto || nr == NR_recvfrom)
		return (const void *)a4;
	if ((nr == NR_sendmsg || nr == NR_recvmsg) &&
	    bpf_probe_read_user(&name, sizeof(name), &((struct user_msghdr *)a1)->msg_name))
		return NULL;
	return name;
}

/* The object behind fd, reporting a socket's addresses the first time this
 * fd is seen connected (or again when force: accept, connect). */
static __always_inline __u8 fd_object(struct jdw_control *ctl, __u32 tgid, int fd, long nr,
				      bool force, __u64 *obj, __u8 ck)
{
	struct jdw_fd_obj o;

	*obj = 0;
	if (!jdw_fd_lookup(tgid, fd, &o))
		return JDW_OBJ_NONE;
	*obj = o.obj;
	if (o.kind == JDW_OBJ_SOCKET && nr != NR_close && (force || !o.sock_info_sent) &&
	    emit_sock_info(ctl, (struct sock *)o.obj, ck) != SOCK_INFO_NOT_YET && !o.sock_info_sent)
		jdw_fd_set_sock_info_sent(tgid, fd, &o);
	if (o.kind == JDW_OBJ_OTHER_FD && is_epoll_call(nr))
		return JDW_OBJ_EPOLL;
	return o.kind;
}

/* Parks the enter in this CPU's slot (jackdaw.bpf.h, "the pending syscall
 * enter") instead of emitting it. False when the slot is held by a program
 * this one interrupted: the caller emits the enter as a record then. */
static __always_inline bool park_enter(long nr, __u8 kind, __s32 fd, __u64 arg, __u64 obj, __u8 ck, __u64 id)
{
	struct jdw_pending *p = jdw_pending_slot();

	if (!p)
		return false;
	jdw_pending_flush_slot(p); /* an enter whose exit went elsewhere */
	if (__sync_val_compare_and_swap(&p->state, JDW_PENDING_EMPTY, JDW_PENDING_BUSY) != JDW_PENDING_EMPTY)
		return false;
	p->rec.hdr.ts = bpf_ktime_get_ns();
	p->rec.hdr.type = JDW_EVENT_SYS_ENTER;
	p->rec.hdr.size = sizeof(p->rec);
	p->rec.hdr.cpu = bpf_get_smp_processor_id();
	p->rec.hdr.ctx = ck;
	p->rec.hdr.flags = 0;
	p->rec.hdr.tgid = id >> 32;
	p->rec.hdr.tid = (__u32)id;
	p->rec.body.nr = nr;
	p->rec.body.obj_kind = kind;
	p->rec.body.reserved = 0;
	p->rec.body.fd = fd;
	p->rec.body.arg = arg;
	p->rec.body.obj = obj;
	barrier(); /* filled before it is published */
	p->state = JDW_PENDING_FULL;
	return true;
}

/* At the exit of a call whose exit record names no object: when the slot
 * still holds this task's enter of this call, emits the two as one
 * JDW_WIRE_SYS_CALL record and returns true. Otherwise the caller emits
 * the ordinary exit, whose reserve flushes whatever the slot holds. */
static __always_inline bool emit_combined(struct jdw_control *ctl, long nr, long ret, __u64 id, __u8 peek)
{
	struct jdw_pending *p = jdw_pending_slot();
	struct jdw_sys_call_record *r;
	void *rb;

	if (!p || p->state != JDW_PENDING_FULL || p->rec.hdr.tid != (__u32)id || p->rec.body.nr != (__u16)nr)
		return false;
	/* Only an enter parks the slot, and only in task context: if the claim
	 * succeeds, the slot still holds what was just checked. */
	if (__sync_val_compare_and_swap(&p->state, JDW_PENDING_FULL, JDW_PENDING_BUSY) != JDW_PENDING_FULL)
		return false;
	r = jdw_ring_reserve_raw(JDW_GROUP_SYSCALL, sizeof(*r), &rb);
	if (!r) {
		p->state = JDW_PENDING_EMPTY;
		/* both events are gone: count both */
		jdw_count_lost(JDW_GROUP_SYSCALL);
		jdw_count_lost(JDW_GROUP_SYSCALL);
		return true;
	}
	__builtin_memcpy(&r->hdr, &p->rec.hdr, sizeof(r->hdr));
	__builtin_memcpy(&r->body.enter, &p->rec.body, sizeof(r->body.enter));
	barrier(); /* copied before the slot is released */
	p->state = JDW_PENDING_EMPTY;
	r->hdr.type = JDW_WIRE_SYS_CALL;
	r->hdr.size = sizeof(*r);
	r->body.exit_ts = bpf_ktime_get_ns();
	r->body.ret = ret;
	r->body.enter.reserved = peek; /* the exit's, carried (abi.h, jdw_sys_call) */
	jdw_submit(r, rb, ctl);
	return true;
}

/* The TLS record headers that the bytes a read returned begin with, each
 * found from the previous one's length (abi.h, "peek"): a handshake is a
 * connection's set-up, not a request, and only the first bytes of what the
 * server read say which it is. Returns 0 when they are not a TLS record. */
static __always_inline __u8 peek_tls_records(const __u8 *buf, __u64 len)
{
	__u8 h[5], peek = 0, apps = 0;
	bool after_ccs = false;
	__u64 off = 0;

	for (int i = 0; i < JDW_PEEK_RECORDS; i++) {
		__u16 rlen;

		if (off + sizeof(h) > len || bpf_probe_read_user(h, sizeof(h), buf + off))
			break;
		rlen = (__u16)h[3] << 8 | h[4];
		if (h[0] < 20 || h[0] > 24 || h[1] != 3 || h[2] > 4 || rlen > 16384 + 2048)
			break;
		if (i == 0)
			peek = JDW_PEEK_TLS | (h[0] - 20);
		/* TLS 1.3 encrypts the client's Finished as application data right
		 * after its change_cipher_spec: that one is the handshake's */
		if (h[0] == 23 && !after_ccs && apps < 7)
			apps++;
		after_ccs = h[0] == 20;
		off += sizeof(h) + rlen;
	}
	if (!peek)
		return 0;
	return peek | apps << JDW_PEEK_APP_SHIFT | (after_ccs ? JDW_PEEK_LAST_CCS : 0);
}

/* The first buffer a read filled: read and recvfrom name it, readv and
 * recvmsg through their first iovec (the walk stops at its end). */
static __always_inline __u8 peek_socket_read(long nr, __u64 a1, long ret)
{
	const struct iovec *vec = (const struct iovec *)a1;
	const __u8 *buf = (const __u8 *)a1;
	__u64 len = ret;
	struct iovec iov;

	if (nr == NR_recvmsg || nr == NR_readv) {
		if (nr == NR_recvmsg &&
		    bpf_probe_read_user(&vec, sizeof(vec), &((struct user_msghdr *)a1)->msg_iov))
			return 0;
		if (bpf_probe_read_user(&iov, sizeof(iov), vec))
			return 0;
		buf = iov.iov_base;
		if (iov.iov_len < len)
			len = iov.iov_len;
	}
	return peek_tls_records(buf, len);
}

/* ---- what the sample left out, counted ------------------------------------
 * The model scales the recorded requests back up to those served. A share
 * taken from the hash of a few long-lived connections is far from the rate
 * asked for (one connection of ten is a tenth of the work, whatever the
 * rate), so the exchanges of the connections left out are counted here:
 * an exchange begins at a read that returns bytes after the socket last
 * wrote (or at its first read), the message rule the join applies to
 * recorded connections. Reads that carry only TLS handshake records are
 * the connection's set-up, not an exchange, as the join has it. */

/* At the exit of a left-out call that moved bytes on a socket. */
static __always_inline void count_left_out_exchange(__u32 tgid, long nr, __u64 a0, __u64 a1, long ret)
{
	struct jdw_fd_obj o;
	__u32 zero = 0;
	__u64 *n;
	__u8 one = 1;

	if (ret <= 0 || !(is_socket_read(nr) || is_socket_write(nr)) || !jdw_fd_lookup(tgid, (int)a0, &o) ||
	    o.kind != JDW_OBJ_SOCKET)
		return;
	if (is_socket_write(nr)) {
		bpf_map_delete_elem(&jdw_left_out_reading, &o.obj);
		return;
	}
	if (bpf_map_lookup_elem(&jdw_left_out_reading, &o.obj))
		return;
	if (ret >= 5) {
		__u8 peek = peek_socket_read(nr, a1, ret);

		if ((peek & JDW_PEEK_TLS) && (peek & JDW_PEEK_FIRST_MASK) == 22 - 20 && !(peek & JDW_PEEK_APP_MASK))
			return;
	}
	bpf_map_update_elem(&jdw_left_out_reading, &o.obj, &one, BPF_ANY);
	n = bpf_map_lookup_elem(&jdw_left_out_exchanges, &zero);
	if (n)
		*n += 1;
}

static __always_inline void handle_enter(long nr, __u64 a0, __u64 a1, __u64 a2, __u64 a4, __u8 ck)
{
	struct jdw_control *ctl = jdw_ctl();
	struct jdw_sys_enter_record *r;
	__u64 id = bpf_get_current_pid_tgid();
	__u64 obj = 0;
	__u8 kind = JDW_OBJ_NONE;
	__s32 fd = -1;
	__u64 arg = 0;
	void *ring;

	if (!jdw_group_on(ctl, JDW_GROUP_SYSCALL) || !syscall_wanted(ctl, nr) ||
	    !jdw_tgid_traced(ctl, id >> 32))
		return;
	if (first_arg_is_fd(nr)) {
		fd = (__s32)a0;
		arg = a2; /* count / len for read/write/send/recv */
		kind = fd_object(ctl, id >> 32, fd, nr, false, &obj, ck);
	} else if (nr == NR_futex) {
		kind = JDW_OBJ_FUTEX;
		obj = a0;
		arg = a1; /* futex op */
	}
	if (targ_sample && ctl->sample_keep < JDW_SAMPLE_ALL &&
	    sample_leaves_out(ctl, (__u32)id, nr, kind == JDW_OBJ_SOCKET ? (struct sock *)obj : NULL)) {
		if (nr == NR_close && kind == JDW_OBJ_SOCKET) /* its address may serve another socket */
			bpf_map_delete_elem(&jdw_left_out_reading, &obj);
		jdw_gap_note(id);
		return;
	}
	/* a parked enter is stamped now: the gap before it goes first */
	jdw_gap_flush();
	if (kind == JDW_OBJ_SOCKET && (nr == NR_sendto || nr == NR_sendmsg))
		emit_dgram_peer((struct sock *)obj, dgram_sockaddr(nr, a1, a4), ck);
	if (targ_combine_syscalls && park_enter(nr, kind, fd, arg, obj, ck, id))
		return;
	r = jdw_reserve_as(JDW_GROUP_SYSCALL, JDW_EVENT_SYS_ENTER, sizeof(*r), &ring, ck, id);
	if (!r)
		return;
	r->body.nr = nr;
	r->body.obj_kind = kind;
	r->body.reserved = 0;
	r->body.fd = fd;
	r->body.arg = arg;
	r->body.obj = obj;
	jdw_submit(r, ring, ctl);
}

static __always_inline void handle_exit(long nr, __u64 a0, __u64 a1, __u64 a2, __u64 a3, __u64 a4, long ret, __u8 ck)
{
	struct jdw_control *ctl = jdw_ctl();
	struct jdw_sys_exit_record *r;
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct jdw_fd_obj o;
	__u64 obj = 0;
	__u8 kind = JDW_OBJ_NONE;
	__s32 fd = -1;
	__u8 peek = 0;
	void *ring;

	bool left_out = false;

	if (!jdw_group_on(ctl, JDW_GROUP_SYSCALL) || !jdw_tgid_traced(ctl, tgid))
		return;
	if (targ_sample && ctl->sample_keep < JDW_SAMPLE_ALL)
		left_out = sample_left_out_at_exit((__u32)id, nr);
	track_fds(tgid, nr, a0, a1, a3, ret);
	if ((nr == NR_bind && ret == 0) || (nr == NR_listen && ret == 0)) {
		if (jdw_fd_lookup(tgid, a0, &o) && o.kind == JDW_OBJ_SOCKET)
			jdw_net_mark_port((struct sock *)o.obj);
	}
	if (!syscall_wanted(ctl, nr))
		return;
	if (left_out) {
		count_left_out_exchange(tgid, nr, a0, a1, ret);
		jdw_gap_note(id);
		return;
	}
	/* Calls that create the object they return: identify it now. */
	if ((nr == NR_accept || nr == NR_accept4) && ret >= 0) {
		fd = ret;
		if (targ_sample && ctl->sample_keep < JDW_SAMPLE_ALL && accepted_left_out(ctl, tgid, (__u32)id, fd)) {
			jdw_gap_note(id);
			return;
		}
		kind = fd_object(ctl, tgid, fd, nr, true, &obj, ck);
	} else if (nr == NR_connect && (ret == 0 || ret == -115 /* EINPROGRESS */)) {
		fd = (__s32)a0;
		kind = fd_object(ctl, tgid, fd, nr, true, &obj, ck);
	}
	if (ret > 0 && is_socket_read(nr) && jdw_fd_lookup(tgid, (int)a0, &o) && o.kind == JDW_OBJ_SOCKET) {
		/* flags: recvfrom's fourth argument, recvmsg's third */
		if ((nr == NR_recvfrom && (a3 & MSG_PEEK)) || (nr == NR_recvmsg && (a2 & MSG_PEEK)))
			peek = JDW_PEEK_MSG_PEEK;
		else if (ret >= 5)
			peek = peek_socket_read(nr, a1, ret);
		if (nr == NR_recvfrom || nr == NR_recvmsg)
			emit_dgram_peer((struct sock *)o.obj, dgram_sockaddr(nr, a1, a4), ck);
	}
	if (targ_combine_syscalls && kind == JDW_OBJ_NONE && emit_combined(ctl, nr, ret, id, peek))
		return;
	r = jdw_reserve_as(JDW_GROUP_SYSCALL, JDW_EVENT_SYS_EXIT, sizeof(*r), &ring, ck, id);
	if (!r)
		return;
	r->body.nr = nr;
	r->body.obj_kind = kind;
	r->body.peek = peek;
	r->body.fd = fd;
	r->body.ret = ret;
	r->body.obj = obj;
	jdw_submit(r, ring, ctl);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter_btf, struct pt_regs *regs, long id)
{
	handle_enter(id, regs->di, regs->si, regs->dx, regs->r8, JDW_CTX_TASK /* syscalls run in task context */);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit_btf, struct pt_regs *regs, long ret)
{
	/* the syscall number survives in orig_ax, the arguments in di, si, r10 */
	handle_exit(regs->orig_ax, regs->di, regs->si, regs->dx, regs->r10, regs->r8, ret,
		    JDW_CTX_TASK /* syscalls run in task context */);
	return 0;
}

/* Fallback without BTF-typed tracepoints: the same arguments, untyped. */
SEC("raw_tp/sys_enter")
int BPF_PROG(sys_enter_raw, struct pt_regs *regs, long id)
{
	handle_enter(id, BPF_CORE_READ(regs, di), BPF_CORE_READ(regs, si), BPF_CORE_READ(regs, dx),
		     BPF_CORE_READ(regs, r8), JDW_CTX_TASK);
	return 0;
}

SEC("raw_tp/sys_exit")
int BPF_PROG(sys_exit_raw, struct pt_regs *regs, long ret)
{
	handle_exit(BPF_CORE_READ(regs, orig_ax), BPF_CORE_READ(regs, di), BPF_CORE_READ(regs, si), BPF_CORE_READ(regs, dx),
		    BPF_CORE_READ(regs, r10), BPF_CORE_READ(regs, r8), ret, JDW_CTX_TASK);
	return 0;
}

/* Never attached: user space runs it on each CPU (BPF_PROG_TEST_RUN with
 * BPF_F_TEST_RUN_ON_CPU) to flush an enter parked there, periodically and
 * at the session's stop (see "the pending syscall enter" in jackdaw.bpf.h). */
SEC("raw_tp")
int flush_pending(void *ctx)
{
	jdw_flush_pending();
	jdw_gap_flush();
	jdw_stage_flush_now();
	return 0;
}
