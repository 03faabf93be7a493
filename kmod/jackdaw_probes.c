// SPDX-License-Identifier: GPL-2.0
/*
 * jackdaw.ko probes: the same events, fields and filters as bpf/ (sched,
 * syscall, block, net), attached to the kernel's tracepoints found by name
 * with for_each_kernel_tracepoint (the sched and syscall ones are not
 * exported to modules). Where bpf/ decides something (which fd is an object,
 * which context a record came from, when a socket's addresses are reported)
 * the code below makes the same decision, so both backends produce the same
 * records except for the timebase: hdr.ts and issue_ts are TSC cycles here.
 */
#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/file.h>
#include <linux/hash.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/net.h>
#include <linux/netdevice.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task_stack.h>
#include <linux/skbuff.h>
#include <linux/tcp.h>
#include <linux/tracepoint.h>
#include <linux/udp.h>
#include <net/sock.h>
#include <asm/msr.h>
#include <asm/syscall.h>
#include <asm/unistd.h>

#include "jackdaw.h"

/* ---- filters (bpf/jackdaw.bpf.h) ---------------------------------------- */

static __always_inline bool jdw_traced(struct jdw_session *s, u32 tgid)
{
	if (!(READ_ONCE(s->filter_flags) & JDW_FILTER_TGID))
		return true;
	return tgid && tgid < PID_MAX_LIMIT && test_bit(tgid, s->tgids);
}

/* bpf/: "ctx outside the task's stack means interrupt". */
static __always_inline u8 jdw_stack_context(u8 irq_kind)
{
	unsigned long here = (unsigned long)&here;

	return here - (unsigned long)current->stack < THREAD_SIZE ? JDW_CTX_TASK : irq_kind;
}

static __always_inline void jdw_fill(void *rec, u16 type, u8 ctx)
{
	struct jdw_record_header *h = rec;

	h->type = type;
	h->ctx = ctx;
	h->flags = 0;
	h->tgid = current->tgid;
	h->tid = current->pid;
}

/* ---- sched -------------------------------------------------------------- */

static void probe_sched_switch(void *data, bool preempt, struct task_struct *prev,
			       struct task_struct *next, unsigned int prev_state)
{
	struct jdw_session *s = data;
	struct jdw_sched_switch_record r;

	if (!jdw_traced(s, prev->tgid) && !jdw_traced(s, next->tgid))
		return;
	jdw_fill(&r, JDW_EVENT_SCHED_SWITCH, JDW_CTX_TASK);
	r.hdr.tid = prev->pid;
	r.hdr.tgid = prev->tgid;
	r.body.prev_tid = prev->pid;
	r.body.prev_tgid = prev->tgid;
	r.body.next_tid = next->pid;
	r.body.next_tgid = next->tgid;
	r.body.prev_state = preempt ? 0 : prev_state;
	jdw_emit(s, JDW_GROUP_SCHED, &r, sizeof(r));
}

static __always_inline void emit_wakeup(struct jdw_session *s, u16 type, struct task_struct *p)
{
	struct jdw_sched_wakeup_record r;

	if (!jdw_traced(s, p->tgid) && !jdw_traced(s, current->tgid))
		return;
	jdw_fill(&r, type, jdw_stack_context(JDW_CTX_SOFTIRQ));
	r.body.wakee_tid = p->pid;
	r.body.wakee_tgid = p->tgid;
	r.body.target_cpu = p->wake_cpu;
	r.body.reserved = 0;
	jdw_emit(s, JDW_GROUP_SCHED, &r, sizeof(r));
}

static void probe_sched_wakeup(void *data, struct task_struct *p)
{
	emit_wakeup(data, JDW_EVENT_SCHED_WAKEUP, p);
}

static void probe_sched_wakeup_new(void *data, struct task_struct *p)
{
	emit_wakeup(data, JDW_EVENT_SCHED_WAKEUP_NEW, p);
}

static void probe_sched_process_fork(void *data, struct task_struct *parent, struct task_struct *child)
{
	struct jdw_session *s = data;
	struct jdw_task_fork_record r;

	if (READ_ONCE(s->filter_flags) & JDW_FILTER_TGID) {
		if (!jdw_traced(s, parent->tgid))
			return;
		if (child->tgid != parent->tgid && child->tgid < PID_MAX_LIMIT)
			set_bit(child->tgid, s->tgids);
	}
	jdw_fill(&r, JDW_EVENT_TASK_FORK, JDW_CTX_TASK);
	r.body.child_tid = child->pid;
	r.body.child_tgid = child->tgid;
	memcpy(r.body.comm, child->comm, JDW_COMM_LEN);
	r.body.comm[JDW_COMM_LEN - 1] = 0;
	jdw_emit(s, JDW_GROUP_SCHED, &r, sizeof(r));
}

static void probe_sched_process_exec(void *data, struct task_struct *p, pid_t old_pid,
				     struct linux_binprm *bprm)
{
	struct jdw_session *s = data;
	struct jdw_task_exec_record r;

	if (!jdw_traced(s, p->tgid))
		return;
	jdw_fill(&r, JDW_EVENT_TASK_EXEC, JDW_CTX_TASK);
	r.body.old_tid = old_pid;
	r.body.reserved = 0;
	memcpy(r.body.comm, p->comm, JDW_COMM_LEN);
	r.body.comm[JDW_COMM_LEN - 1] = 0;
	jdw_emit(s, JDW_GROUP_SCHED, &r, sizeof(r));
}

static void probe_sched_process_exit(void *data, struct task_struct *p)
{
	struct jdw_session *s = data;
	struct jdw_task_exit_record r;

	if (!jdw_traced(s, p->tgid))
		return;
	jdw_fill(&r, JDW_EVENT_TASK_EXIT, JDW_CTX_TASK);
	r.body.exit_code = p->exit_code;
	r.body.reserved = 0;
	memcpy(r.body.comm, p->comm, JDW_COMM_LEN);
	r.body.comm[JDW_COMM_LEN - 1] = 0;
	jdw_emit(s, JDW_GROUP_SCHED, &r, sizeof(r));
	/* bpf/sched.bpf.c, forget_if_group_dead: the last thread of the group
	 * (signal->live is already decremented here) takes the process out of
	 * the filter, or the next process to get its pid would be traced. */
	if ((READ_ONCE(s->filter_flags) & JDW_FILTER_TGID) && !atomic_read(&p->signal->live) &&
	    p->tgid < PID_MAX_LIMIT)
		clear_bit(p->tgid, s->tgids);
}

/* ---- syscall (bpf/syscall.bpf.c) ---------------------------------------- */

static bool syscall_wanted(struct jdw_session *s, long nr)
{
	if (!(READ_ONCE(s->filter_flags) & JDW_FILTER_SYSCALL))
		return true;
	if (nr < 0 || nr >= JDW_MAX_SYSCALLS)
		return false;
	return READ_ONCE(s->syscall_bitmap[nr >> 6]) & (1ull << (nr & 63));
}

static bool first_arg_is_fd(long nr)
{
	switch (nr) {
	case __NR_read: case __NR_write: case __NR_close: case __NR_pread64: case __NR_pwrite64:
	case __NR_readv: case __NR_writev: case __NR_sendfile: case __NR_connect: case __NR_accept:
	case __NR_sendto: case __NR_recvfrom: case __NR_sendmsg: case __NR_recvmsg: case __NR_shutdown:
	case __NR_fsync: case __NR_fdatasync: case __NR_epoll_wait: case __NR_epoll_ctl: case __NR_splice:
	case __NR_epoll_pwait: case __NR_accept4: case __NR_preadv: case __NR_pwritev: case __NR_recvmmsg:
	case __NR_sendmmsg: case __NR_epoll_pwait2:
		return true;
	}
	return false;
}

static bool is_epoll_call(long nr)
{
	return nr == __NR_epoll_wait || nr == __NR_epoll_ctl || nr == __NR_epoll_pwait ||
	       nr == __NR_epoll_pwait2;
}

/* The fd's file, with a reference the caller drops with fput() once it
 * has read what it needs from the file, its socket and the sock: a close()
 * of the fd on another thread frees them otherwise, even inside an RCU
 * read section (the socket is released at the file's last fput, and from
 * 6.7 on a struct file may be reused for another file within a grace
 * period). NULL for no file. */
static struct file *hold_file(int fd)
{
	return fd < 0 ? NULL : fget_raw(fd);
}

/* What f is; *obj identifies it (a socket's struct sock). f is held. */
static u8 classify_file(struct file *f, long nr, u64 *obj)
{
	struct inode *inode;

	*obj = 0;
	if (!f)
		return JDW_OBJ_NONE;
	inode = file_inode(f);
	switch (inode->i_mode & S_IFMT) {
	case S_IFSOCK:
		*obj = (u64)((struct socket *)f->private_data)->sk;
		return JDW_OBJ_SOCKET;
	case S_IFIFO:
		*obj = (u64)inode;
		return JDW_OBJ_PIPE;
	case S_IFREG:
		*obj = (u64)inode;
		return JDW_OBJ_FILE;
	default:
		*obj = (u64)inode;
		return is_epoll_call(nr) ? JDW_OBJ_EPOLL : JDW_OBJ_OTHER_FD;
	}
}

static u64 *seen_slot(struct jdw_session *s, u64 sk)
{
	return &s->seen_socks[hash_64(sk, ilog2(JDW_SEEN_SOCK_SLOTS))];
}

/* sk belongs to a file the caller holds (hold_file), so it is not freed
 * while its fields are read. */
static void emit_sock_info(struct jdw_session *s, struct sock *sk, bool force)
{
	struct jdw_sock_info_record r;
	u64 key = (u64)sk;
	u16 family, dport;

	if (!sk)
		return;
	if (!force && READ_ONCE(*seen_slot(s, key)) == key)
		return;
	dport = ntohs(sk->__sk_common.skc_dport);
	family = sk->__sk_common.skc_family;
	if (dport == 0 || (family != AF_INET && family != AF_INET6))
		return;
	memset(&r, 0, sizeof(r));
	jdw_fill(&r, JDW_EVENT_SOCK_INFO, JDW_CTX_TASK);
	r.body.sk = key;
	r.body.family = family;
	r.body.protocol = sk->sk_protocol;
	r.body.sport = sk->__sk_common.skc_num;
	r.body.dport = dport;
	if (family == AF_INET) {
		memcpy(r.body.saddr, &sk->__sk_common.skc_rcv_saddr, 4);
		memcpy(r.body.daddr, &sk->__sk_common.skc_daddr, 4);
	} else {
#if IS_ENABLED(CONFIG_IPV6)
		memcpy(r.body.saddr, &sk->__sk_common.skc_v6_rcv_saddr, 16);
		memcpy(r.body.daddr, &sk->__sk_common.skc_v6_daddr, 16);
#endif
	}
	jdw_emit(s, JDW_GROUP_SYSCALL, &r, sizeof(r));
	WRITE_ONCE(*seen_slot(s, key), key);
}

static void probe_sys_enter(void *data, struct pt_regs *regs, long nr)
{
	struct jdw_session *s = data;
	struct jdw_sys_enter_record r;
	struct file *f = NULL;
	u8 kind = JDW_OBJ_NONE;
	u64 obj = 0, arg = 0;
	s32 fd = -1;

	if (!syscall_wanted(s, nr) || !jdw_traced(s, current->tgid))
		return;
	if (first_arg_is_fd(nr)) {
		fd = (s32)regs->di;
		arg = regs->dx;
		f = hold_file(fd);
		kind = classify_file(f, nr, &obj);
	} else if (nr == __NR_futex) {
		kind = JDW_OBJ_FUTEX;
		obj = regs->di;
		arg = regs->si;
	}
	if (kind == JDW_OBJ_SOCKET) {
		if (nr == __NR_close)
			cmpxchg(seen_slot(s, obj), obj, 0);
		else
			emit_sock_info(s, (struct sock *)obj, false);
	}
	if (f)
		fput(f);
	jdw_fill(&r, JDW_EVENT_SYS_ENTER, JDW_CTX_TASK);
	r.body.nr = nr;
	r.body.obj_kind = kind;
	r.body.reserved = 0;
	r.body.fd = fd;
	r.body.arg = arg;
	r.body.obj = obj;
	jdw_emit(s, JDW_GROUP_SYSCALL, &r, sizeof(r));
}

static void probe_sys_exit(void *data, struct pt_regs *regs, long ret)
{
	struct jdw_session *s = data;
	struct jdw_sys_exit_record r;
	long nr = regs->orig_ax;
	struct file *f;
	u8 kind = JDW_OBJ_NONE;
	u64 obj = 0;
	s32 fd = -1;

	if (!syscall_wanted(s, nr) || !jdw_traced(s, current->tgid))
		return;
	if (((nr == __NR_accept || nr == __NR_accept4) && ret >= 0) ||
	    (nr == __NR_connect && (ret == 0 || ret == -EINPROGRESS))) {
		fd = nr == __NR_connect ? (s32)regs->di : ret;
		f = hold_file(fd);
		kind = classify_file(f, nr, &obj);
		if (kind == JDW_OBJ_SOCKET)
			emit_sock_info(s, (struct sock *)obj, true);
		if (f)
			fput(f);
	}
	jdw_fill(&r, JDW_EVENT_SYS_EXIT, JDW_CTX_TASK);
	r.body.nr = nr;
	r.body.obj_kind = kind;
	r.body.peek = 0; /* not looked at: the join's TLS rule reads it as unknown */
	r.body.fd = fd;
	r.body.ret = ret;
	r.body.obj = obj;
	jdw_emit(s, JDW_GROUP_SYSCALL, &r, sizeof(r));
}

/* ---- block (bpf/block.bpf.c; block_io_start is 6.5+ and not used) ------- */

static u32 rq_dev(struct request *rq)
{
	struct gendisk *disk = rq->q->disk;

	return disk ? ((u32)disk->major << MINORBITS) | disk->first_minor : 0;
}

static void probe_block_rq_issue(void *data, struct request *rq)
{
	struct jdw_session *s = data;
	struct jdw_block_issue_record r;
	struct jdw_rq_slot *slot = &s->rqs[hash_64((u64)rq, ilog2(JDW_RQ_SLOTS))];
	u32 submit_tid = current->pid;
	unsigned long flags;

	jdw_fill(&r, JDW_EVENT_BLOCK_ISSUE, jdw_stack_context(JDW_CTX_HARDIRQ));
	raw_spin_lock_irqsave(&s->rq_lock, flags);
	if (!jdw_traced(s, current->tgid)) {
		/* bpf/block.bpf.c: with a process filter, the requests of traced
		 * tasks only, also when another task issues one again (kblockd,
		 * a request the device sent back): it stays its submitter's */
		if (slot->rq != (u64)rq) {
			raw_spin_unlock_irqrestore(&s->rq_lock, flags);
			return;
		}
		submit_tid = slot->tid;
		slot->ts = rdtsc_ordered();
	} else {
		slot->rq = (u64)rq;
		slot->ts = rdtsc_ordered();
		slot->tid = current->pid;
		slot->tgid = current->tgid;
	}
	raw_spin_unlock_irqrestore(&s->rq_lock, flags);
	r.body.dev = rq_dev(rq);
	r.body.op = rq->cmd_flags;
	r.body.sector = blk_rq_pos(rq);
	r.body.bytes = blk_rq_bytes(rq);
	r.body.submit_tid = submit_tid;
	r.body.rq = (u64)rq;
	jdw_emit(s, JDW_GROUP_BLOCK, &r, sizeof(r));
}

static void probe_block_rq_complete(void *data, struct request *rq, blk_status_t error,
				    unsigned int nr_bytes)
{
	struct jdw_session *s = data;
	struct jdw_block_complete_record r;
	struct jdw_rq_slot *slot = &s->rqs[hash_64((u64)rq, ilog2(JDW_RQ_SLOTS))];
	unsigned long flags;
	bool issued = false;

	memset(&r.body, 0, sizeof(r.body));
	jdw_fill(&r, JDW_EVENT_BLOCK_COMPLETE, jdw_stack_context(JDW_CTX_HARDIRQ));
	raw_spin_lock_irqsave(&s->rq_lock, flags);
	if (slot->rq == (u64)rq) {
		r.body.issue_ts = slot->ts;
		r.body.issue_tid = slot->tid;
		r.body.issue_tgid = slot->tgid;
		slot->rq = 0;
		issued = true;
	}
	raw_spin_unlock_irqrestore(&s->rq_lock, flags);
	/* with a process filter, only requests whose issue was kept */
	if (!issued && (READ_ONCE(s->filter_flags) & JDW_FILTER_TGID))
		return;
	r.body.dev = rq_dev(rq);
	r.body.op = rq->cmd_flags;
	r.body.sector = blk_rq_pos(rq);
	r.body.bytes = nr_bytes;
	r.body.error = error;
	r.body.rq = (u64)rq;
	jdw_emit(s, JDW_GROUP_BLOCK, &r, sizeof(r));
}

/* ---- net (bpf/net.bpf.c) ------------------------------------------------ */

/* Headers are read with copy_from_kernel_nofault, as bpf/ reads them with
 * bpf_probe_read_kernel: a packet whose header pointer is not valid yet is
 * skipped, never dereferenced. */
static bool parse_ip(struct jdw_net_packet *p, const unsigned char *l3, __be16 proto)
{
	u32 l4_off, ip_len;
	u8 l4proto;

	if (proto == htons(ETH_P_IP)) {
		struct iphdr ip;

		if (copy_from_kernel_nofault(&ip, l3, sizeof(ip)))
			return false;
		p->family = AF_INET;
		l4proto = ip.protocol;
		l4_off = ip.ihl * 4;
		ip_len = ntohs(ip.tot_len);
		memcpy(&p->saddr[0], &ip.saddr, 4);
		memcpy(&p->daddr[0], &ip.daddr, 4);
	} else if (proto == htons(ETH_P_IPV6)) {
		struct ipv6hdr ip6;

		if (copy_from_kernel_nofault(&ip6, l3, sizeof(ip6)))
			return false;
		p->family = AF_INET6;
		l4proto = ip6.nexthdr;
		l4_off = sizeof(ip6);
		ip_len = ntohs(ip6.payload_len) + sizeof(ip6);
		memcpy(p->saddr, &ip6.saddr, 16);
		memcpy(p->daddr, &ip6.daddr, 16);
	} else {
		return false;
	}
	p->protocol = l4proto;
	if (l4proto == IPPROTO_TCP) {
		struct tcphdr th;
		u32 hdr_len;

		if (copy_from_kernel_nofault(&th, l3 + l4_off, sizeof(th)))
			return true;
		p->sport = ntohs(th.source);
		p->dport = ntohs(th.dest);
		p->seq = ntohl(th.seq);
		p->ack = ntohl(th.ack_seq);
		p->tcp_flags = ((u8 *)&th)[13];
		hdr_len = l4_off + th.doff * 4;
		p->payload_len = ip_len > hdr_len ? ip_len - hdr_len : 0;
	} else if (l4proto == IPPROTO_UDP) {
		struct udphdr uh;

		if (copy_from_kernel_nofault(&uh, l3 + l4_off, sizeof(uh)))
			return true;
		p->sport = ntohs(uh.source);
		p->dport = ntohs(uh.dest);
		p->payload_len = ntohs(uh.len) > 8 ? ntohs(uh.len) - 8 : 0;
	}
	return true;
}

static __always_inline void emit_packet(struct jdw_session *s, u16 type, const struct sk_buff *skb,
					const unsigned char *l3, u32 ifindex, u64 sk)
{
	struct jdw_net_packet_record r;

	memset(&r.body, 0, sizeof(r.body));
	jdw_fill(&r, type, jdw_stack_context(JDW_CTX_SOFTIRQ));
	r.body.ifindex = ifindex;
	r.body.len = skb->len;
	r.body.sk = sk;
	if (!parse_ip(&r.body, l3, skb->protocol))
		return;
	jdw_emit(s, JDW_GROUP_NET, &r, sizeof(r));
}

static void probe_net_dev_start_xmit(void *data, const struct sk_buff *skb, const struct net_device *dev)
{
	emit_packet(data, JDW_EVENT_NET_XMIT, skb, skb->head + skb->network_header, dev->ifindex,
		    (u64)skb->sk);
}

static void probe_netif_receive_skb(void *data, struct sk_buff *skb)
{
	emit_packet(data, JDW_EVENT_NET_RECV, skb, skb->data, skb->dev ? skb->dev->ifindex : 0, 0);
}

/* ---- registration ------------------------------------------------------- */

struct jdw_probe {
	const char *name;
	u32 group;
	void *fn;
	struct tracepoint *tp;
};

static struct jdw_probe jdw_probes[] = {
	{"sched_switch", JDW_GROUP_SCHED, probe_sched_switch},
	{"sched_wakeup", JDW_GROUP_SCHED, probe_sched_wakeup},
	{"sched_wakeup_new", JDW_GROUP_SCHED, probe_sched_wakeup_new},
	{"sched_process_fork", JDW_GROUP_SCHED, probe_sched_process_fork},
	{"sched_process_exec", JDW_GROUP_SCHED, probe_sched_process_exec},
	{"sched_process_exit", JDW_GROUP_SCHED, probe_sched_process_exit},
	{"sys_enter", JDW_GROUP_SYSCALL, probe_sys_enter},
	{"sys_exit", JDW_GROUP_SYSCALL, probe_sys_exit},
	{"block_rq_issue", JDW_GROUP_BLOCK, probe_block_rq_issue},
	{"block_rq_complete", JDW_GROUP_BLOCK, probe_block_rq_complete},
	{"net_dev_start_xmit", JDW_GROUP_NET, probe_net_dev_start_xmit},
	{"netif_receive_skb", JDW_GROUP_NET, probe_netif_receive_skb},
};

static void find_tp(struct tracepoint *tp, void *priv)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(jdw_probes); i++)
		if (!strcmp(tp->name, jdw_probes[i].name))
			jdw_probes[i].tp = tp;
}

int jdw_probes_init(void)
{
	size_t i;

	for_each_kernel_tracepoint(find_tp, NULL);
	for (i = 0; i < ARRAY_SIZE(jdw_probes); i++) {
		if (!jdw_probes[i].tp) {
			pr_err("jackdaw: kernel tracepoint %s not found\n", jdw_probes[i].name);
			return -ENOENT;
		}
	}
	return 0;
}

void jdw_probes_unregister(struct jdw_session *s, u32 group)
{
	size_t i;

	/* Stop emitting first: probes still running during the unregister
	 * see the group off. */
	WRITE_ONCE(s->enabled, s->enabled & ~(1u << group));
	for (i = 0; i < ARRAY_SIZE(jdw_probes); i++)
		if (jdw_probes[i].group == group)
			WARN_ON_ONCE(tracepoint_probe_unregister(jdw_probes[i].tp, jdw_probes[i].fn, s));
}

int jdw_probes_register(struct jdw_session *s, u32 group)
{
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(jdw_probes); i++) {
		if (jdw_probes[i].group != group)
			continue;
		ret = tracepoint_probe_register(jdw_probes[i].tp, jdw_probes[i].fn, s);
		if (ret) {
			while (i-- > 0)
				if (jdw_probes[i].group == group)
					tracepoint_probe_unregister(jdw_probes[i].tp, jdw_probes[i].fn, s);
			tracepoint_synchronize_unregister();
			return ret;
		}
	}
	return 0;
}
