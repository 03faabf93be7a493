// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* syscall group: raw sys_enter/sys_exit with a per-syscall bitmap, the fd or
 * futex address a call acts on, and a stable identity for the object behind
 * the fd (socket, pipe, file) so that the join can follow one connection
 * across threads. */
#include "jackdaw.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* x86-64 syscall numbers (stable ABI). */
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

#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define S_IFREG 0100000
#define S_IFIFO 0010000

/* Sockets whose addresses were already reported (sock -> 1). Cleared on
 * close so a reused struct sock address is reported again. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u8);
} jdw_seen_socks SEC(".maps");

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

static __always_inline bool is_epoll_call(long nr)
{
	return nr == NR_epoll_wait || nr == NR_epoll_ctl || nr == NR_epoll_pwait ||
	       nr == NR_epoll_pwait2;
}

/* fd -> struct file of the current task, or NULL. */
static __always_inline struct file *fd_to_file(int fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct fdtable *fdt;
	struct file **fds;
	struct file *f = NULL;

	if (fd < 0)
		return NULL;
	fdt = BPF_CORE_READ(task, files, fdt);
	if (!fdt || (unsigned int)fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	return f;
}

static __always_inline __u8 classify_fd(int fd, long nr, __u64 *obj)
{
	struct file *f = fd_to_file(fd);
	struct inode *inode;
	struct socket *sock;
	umode_t mode;

	*obj = 0;
	if (!f)
		return JDW_OBJ_NONE;
	inode = BPF_CORE_READ(f, f_inode);
	mode = BPF_CORE_READ(inode, i_mode);
	switch (mode & S_IFMT) {
	case S_IFSOCK:
		sock = BPF_CORE_READ(f, private_data);
		*obj = (__u64)BPF_CORE_READ(sock, sk);
		return JDW_OBJ_SOCKET;
	case S_IFIFO:
		*obj = (__u64)inode;
		return JDW_OBJ_PIPE;
	case S_IFREG:
		*obj = (__u64)inode;
		return JDW_OBJ_FILE;
	}
	*obj = (__u64)inode;
	return is_epoll_call(nr) ? JDW_OBJ_EPOLL : JDW_OBJ_OTHER_FD;
}

/* Reports a connected socket's addresses once (or again when force). */
static __always_inline void emit_sock_info(struct jdw_control *ctl, struct sock *sk, bool force, __u8 ck)
{
	struct jdw_sock_info_record *r;
	__u64 key = (__u64)sk;
	__u16 family, dport;
	__u8 one = 1;
	void *ring;

	if (!sk)
		return;
	if (!force && bpf_map_lookup_elem(&jdw_seen_socks, &key))
		return;
	dport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	family = BPF_CORE_READ(sk, __sk_common.skc_family);
	/* Unconnected or non-IP sockets have no 5-tuple to report; they still
	 * join by identity. */
	if (dport == 0 || (family != 2 /* AF_INET */ && family != 10 /* AF_INET6 */))
		return;
	r = jdw_reserve(JDW_GROUP_SYSCALL, JDW_EVENT_SOCK_INFO, sizeof(*r), &ring, ck);
	if (!r)
		return;
	__builtin_memset(&r->body, 0, sizeof(r->body));
	r->body.sk = key;
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
	bpf_map_update_elem(&jdw_seen_socks, &key, &one, BPF_ANY);
}

static __always_inline void handle_enter(long nr, __u64 a0, __u64 a1, __u64 a2, __u8 ck)
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
		kind = classify_fd(fd, nr, &obj);
	} else if (nr == NR_futex) {
		kind = JDW_OBJ_FUTEX;
		obj = a0;
		arg = a1; /* futex op */
	}
	if (kind == JDW_OBJ_SOCKET) {
		if (nr == NR_close) {
			/* a later socket may reuse this address */
			bpf_map_delete_elem(&jdw_seen_socks, &obj);
		} else {
			emit_sock_info(ctl, (struct sock *)obj, false, ck);
		}
	}
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

static __always_inline void handle_exit(long nr, __u64 a0, long ret, __u8 ck)
{
	struct jdw_control *ctl = jdw_ctl();
	struct jdw_sys_exit_record *r;
	__u64 id = bpf_get_current_pid_tgid();
	__u64 obj = 0;
	__u8 kind = JDW_OBJ_NONE;
	__s32 fd = -1;
	void *ring;

	if (!jdw_group_on(ctl, JDW_GROUP_SYSCALL) || !syscall_wanted(ctl, nr) ||
	    !jdw_tgid_traced(ctl, id >> 32))
		return;
	/* Calls that create the object they return: identify it now. */
	if ((nr == NR_accept || nr == NR_accept4) && ret >= 0) {
		fd = ret;
		kind = classify_fd(fd, nr, &obj);
		if (kind == JDW_OBJ_SOCKET)
			emit_sock_info(ctl, (struct sock *)obj, true, ck);
	} else if (nr == NR_connect && (ret == 0 || ret == -115 /* EINPROGRESS */)) {
		fd = (__s32)a0;
		kind = classify_fd(fd, nr, &obj);
		if (kind == JDW_OBJ_SOCKET)
			emit_sock_info(ctl, (struct sock *)obj, true, ck);
	}
	r = jdw_reserve_as(JDW_GROUP_SYSCALL, JDW_EVENT_SYS_EXIT, sizeof(*r), &ring, ck, id);
	if (!r)
		return;
	r->body.nr = nr;
	r->body.obj_kind = kind;
	r->body.reserved = 0;
	r->body.fd = fd;
	r->body.ret = ret;
	r->body.obj = obj;
	jdw_submit(r, ring, ctl);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter_btf, struct pt_regs *regs, long id)
{
	handle_enter(id, regs->di, regs->si, regs->dx, JDW_CTX_TASK /* syscalls run in task context */);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit_btf, struct pt_regs *regs, long ret)
{
	/* the syscall number survives in orig_ax, the first argument in di */
	handle_exit(regs->orig_ax, regs->di, ret, JDW_CTX_TASK /* syscalls run in task context */);
	return 0;
}

SEC("tracepoint/raw_syscalls/sys_enter")
int sys_enter_tp(struct trace_event_raw_sys_enter *ctx)
{
	handle_enter(ctx->id, ctx->args[0], ctx->args[1], ctx->args[2], JDW_CTX_TASK);
	return 0;
}

SEC("tracepoint/raw_syscalls/sys_exit")
int sys_exit_tp(struct trace_event_raw_sys_exit *ctx)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

	handle_exit(ctx->id, BPF_CORE_READ(regs, di), ctx->ret, JDW_CTX_TASK);
	return 0;
}
