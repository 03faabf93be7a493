/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The net group's process filter: with a process filter set, a packet is
 * recorded only when it belongs to a socket of a traced process.
 *
 * A transmitted packet names its socket (skb->sk); a received one does not
 * yet (netif_receive_skb runs before the socket lookup). So the filter keeps
 * two sets, both filled from the syscall group as traced processes touch
 * their sockets:
 *  - jdw_traced_socks: struct sock addresses of traced processes' sockets;
 *  - jdw_traced_flows: (local port, remote port, remote address) of their
 *    connections, learned from each transmitted packet of a traced socket
 *    whose local port is not in jdw_traced_ports (one that is needs no
 *    flow: the replies arrive on that port);
 *  - jdw_traced_ports: the local ports they bind, so a connection to a
 *    traced listener is seen from its first SYN, before accept() returns.
 *    Listeners bound before the session started are added by user space
 *    when their process is selected (CaptureSession::AddTgid). An array
 *    indexed by port, checked first: most packets of a server are decided
 *    by it without a hash lookup.
 * A received packet is traced when its destination port is in
 * jdw_traced_ports or its reversed tuple in jdw_traced_flows; a sent one
 * when its socket is in jdw_traced_socks, its source port in
 * jdw_traced_ports or its tuple in jdw_traced_flows. A socket leaves
 * jdw_traced_socks when a traced process closes it (its struct sock may be
 * reused by anyone); flows stay until the LRU ages them out and ports for
 * the session, so the filter can keep a little too much.
 * In front of the two hashes, jdw_net_hints answers "certainly not" for
 * most packets of untraced processes (a load generator on the same
 * machine sends and receives half of all packets), so that they are
 * rejected without a hash lookup — each a hash of the key and a bucket in
 * a 1 MB table, a cache miss more often than not:
 *  - flow_lport[port] is set before any flow with that local port enters
 *    jdw_traced_flows: a packet whose local port has it clear matches no
 *    learned flow;
 *  - sock_bloom has one bit per traced socket (a hash of its address), set
 *    before the socket enters jdw_traced_socks: a socket whose bit is
 *    clear is not in it.
 * Both only grow for the session: a stale bit costs the lookup it guards,
 * never a wrong answer.
 * Without a process filter (targ_filter_tgid false) every packet is kept and
 * the verifier drops this code.
 */
#ifndef JACKDAW_NET_FILTER_BPF_H
#define JACKDAW_NET_FILTER_BPF_H

#include "jackdaw.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u8);
} jdw_traced_socks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct jdw_flow_key);
	__type(value, __u8);
} jdw_traced_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct jdw_traced_ports);
} jdw_traced_ports SEC(".maps");

#define JDW_SOCK_BLOOM_WORDS 1024 /* 65536 bits: 8 KB, cache-resident */

struct jdw_net_hints {
	__u8 flow_lport[JDW_PORTS];
	__u64 sock_bloom[JDW_SOCK_BLOOM_WORDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct jdw_net_hints);
} jdw_net_hints SEC(".maps");

static __always_inline struct jdw_net_hints *jdw_net_hints_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&jdw_net_hints, &zero);
}

/* A port's index into a JDW_PORTS-byte table. The mask is kept
 * (barrier_var) so that verifiers that lose a u16's bounds through the byte
 * swaps and stack spills (6.1 does: "R0 unbounded memory access") see the
 * index bounded; inlined, it is the same instructions at each table. */
static __always_inline __u32 jdw_port_index(__u16 port)
{
	__u32 idx = port;

	idx &= JDW_PORTS - 1;
	barrier_var(idx);
	idx &= JDW_PORTS - 1;
	return idx;
}

/* sk's bit in the bloom: a multiplicative hash of the address (slab
 * objects share their low bits). */
static __always_inline __u32 jdw_sock_bit(__u64 sk)
{
	return (__u32)((sk * 0x9E3779B97F4A7C15ull) >> 48);
}

/* sk's word of the bloom, bounded as jdw_net_port_slot (6.1's verifier
 * loses the mask's bounds otherwise). */
static __always_inline __u64 *jdw_sock_bloom_word(struct jdw_net_hints *h, __u64 sk)
{
	__u32 idx = jdw_sock_bit(sk) >> 6;

	idx &= JDW_SOCK_BLOOM_WORDS - 1;
	barrier_var(idx);
	idx &= JDW_SOCK_BLOOM_WORDS - 1;
	return &h->sock_bloom[idx];
}

static __always_inline bool jdw_sock_maybe_traced(struct jdw_net_hints *h, __u64 sk)
{
	return *jdw_sock_bloom_word(h, sk) & (1ull << (jdw_sock_bit(sk) & 63));
}

/* The port's byte in the hints' flow table. */
static __always_inline __u8 *jdw_flow_lport_slot(struct jdw_net_hints *h, __u16 port)
{
	return &h->flow_lport[jdw_port_index(port)];
}

static __always_inline struct jdw_traced_ports *jdw_net_ports(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&jdw_traced_ports, &zero);
}

/* The port's byte in the table. */
static __always_inline __u8 *jdw_net_port_slot(struct jdw_traced_ports *ports, __u16 port)
{
	return &ports->traced[jdw_port_index(port)];
}

/* A socket of a traced process (called from the syscall group). */
static __always_inline void jdw_net_mark_sock(__u64 sk)
{
	__u8 one = 1;

	struct jdw_net_hints *h;

	if (!targ_filter_tgid || !sk)
		return;
	h = jdw_net_hints_get();
	if (h && !jdw_sock_maybe_traced(h, sk))
		__sync_fetch_and_or(jdw_sock_bloom_word(h, sk), 1ull << (jdw_sock_bit(sk) & 63));
	if (!bpf_map_lookup_elem(&jdw_traced_socks, &sk))
		bpf_map_update_elem(&jdw_traced_socks, &sk, &one, BPF_ANY);
}

/* A traced process closed an fd of sk: a later socket at the same address
 * may belong to anyone. */
static __always_inline void jdw_net_forget_sock(__u64 sk)
{
	if (targ_filter_tgid && sk)
		bpf_map_delete_elem(&jdw_traced_socks, &sk);
}

/* A traced process bound sk's local port (bind, listen). */
static __always_inline void jdw_net_mark_port(struct sock *sk)
{
	struct jdw_traced_ports *ports;
	__u16 lport;

	if (!targ_filter_tgid || !sk)
		return;
	lport = BPF_CORE_READ(sk, __sk_common.skc_num);
	ports = jdw_net_ports();
	if (lport && ports)
		*jdw_net_port_slot(ports, lport) = 1;
}

/* A flow learned from a traced socket: the port's hint first, the hash
 * only when a flow was ever learned on that local port. */
static __always_inline bool jdw_net_flow_learned(struct jdw_net_hints *h, const struct jdw_flow_key *key)
{
	if (h && !*jdw_flow_lport_slot(h, key->lport))
		return false;
	return bpf_map_lookup_elem(&jdw_traced_flows, key) != NULL;
}

/* A connection on a traced local port, or a learned flow of a traced
 * socket: the array first, the hash only when it says no. */
static __always_inline bool jdw_net_flow_traced(__u16 lport, __u16 rport, const __u8 *raddr)
{
	struct jdw_traced_ports *ports = jdw_net_ports();
	struct jdw_flow_key key = { .lport = lport, .rport = rport };

	if (ports && *jdw_net_port_slot(ports, lport))
		return true;
	__builtin_memcpy(key.raddr, raddr, 16);
	return jdw_net_flow_learned(jdw_net_hints_get(), &key);
}

/* Whether a parsed packet is to be recorded. xmit: sport/saddr are local. */
static __always_inline bool jdw_net_packet_traced(const struct jdw_net_packet *p, bool xmit)
{
	struct jdw_traced_ports *ports;
	struct jdw_net_hints *h;
	struct jdw_flow_key key = {};
	__u64 sk = 0;
	__u8 one = 1;

	if (!targ_filter_tgid)
		return true;
	if (!xmit)
		return jdw_net_flow_traced(p->dport, p->sport, p->saddr);
	/* A traced local port decides without a hash lookup (a server's
	 * replies: every packet it sends). Its flow need not be learned:
	 * the replies to it arrive on that port, which the receive side
	 * checks first, and ports stay traced for the session. */
	ports = jdw_net_ports();
	if (ports && *jdw_net_port_slot(ports, p->sport))
		return true;
	h = jdw_net_hints_get();
	if (!h)
		return false;
	key.lport = p->sport;
	key.rport = p->dport;
	__builtin_memcpy(key.raddr, p->daddr, 16);
	if (p->sk)
		/* a scalar copy of the address to hash: on tp_btf p->sk holds
		 * the typed pointer, on which the verifier allows no arithmetic */
		bpf_probe_read_kernel(&sk, sizeof(sk), &p->sk);
	if (sk && jdw_sock_maybe_traced(h, sk) && bpf_map_lookup_elem(&jdw_traced_socks, &p->sk)) {
		/* learn the flow so the replies are kept too; the port's
		 * hint first, so no reader can find the flow without it */
		*jdw_flow_lport_slot(h, p->sport) = 1;
		if (!bpf_map_lookup_elem(&jdw_traced_flows, &key))
			bpf_map_update_elem(&jdw_traced_flows, &key, &one, BPF_ANY);
		return true;
	}
	return jdw_net_flow_learned(h, &key);
}

#endif /* JACKDAW_NET_FILTER_BPF_H */
