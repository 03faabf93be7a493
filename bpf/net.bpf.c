// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* net group: every IP packet leaving (net_dev_xmit) or arriving
 * (netif_receive_skb) at a device, with its 5-tuple and TCP header, so the
 * join can attribute softirq work to the connection it served. With a
 * process filter, only packets of traced processes' sockets
 * (net_filter.bpf.h). */
#include "jackdaw.bpf.h"
#include "net_filter.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17

/* The network and transport headers of the common case, read with one
 * bpf_probe_read_kernel (each read is a helper call with its own fault
 * handling; two per packet were a fifth of the packet hooks' time). */
struct ip4_tcp {
	struct iphdr ip;
	struct tcphdr th; /* valid when ip.ihl == 5 */
};

struct ip6_tcp {
	struct ipv6hdr ip6;
	struct tcphdr th; /* the bytes after the fixed header */
};

union l3_l4 {
	struct ip4_tcp v4;
	struct ip6_tcp v6;
};

/* Fills the packet fields from the IP header at `l3` (kernel memory).
 * Returns false for packets that are not IPv4/IPv6. The first read takes
 * the IP header and a TCP header's worth of what follows; only an IPv4
 * header with options, or a short packet at the end of readable memory,
 * needs a second read. */
static __always_inline bool parse_ip(struct jdw_net_packet *p, const unsigned char *l3, __u16 proto_be)
{
	union l3_l4 h;
	struct tcphdr th;
	bool have_l4;
	__u32 l4_off, ip_len;
	__u8 l4proto;

	if (proto_be == bpf_htons(ETH_P_IP)) {
		have_l4 = bpf_probe_read_kernel(&h.v4, sizeof(h.v4), l3) == 0;
		if (!have_l4 && bpf_probe_read_kernel(&h.v4.ip, sizeof(h.v4.ip), l3))
			return false;
		p->family = 2;
		l4proto = h.v4.ip.protocol;
		l4_off = h.v4.ip.ihl * 4;
		have_l4 = have_l4 && l4_off == sizeof(h.v4.ip);
		ip_len = bpf_ntohs(h.v4.ip.tot_len);
		__builtin_memcpy(&p->saddr[0], &h.v4.ip.saddr, 4);
		__builtin_memcpy(&p->daddr[0], &h.v4.ip.daddr, 4);
		th = h.v4.th;
	} else if (proto_be == bpf_htons(ETH_P_IPV6)) {
		have_l4 = bpf_probe_read_kernel(&h.v6, sizeof(h.v6), l3) == 0;
		if (!have_l4 && bpf_probe_read_kernel(&h.v6.ip6, sizeof(h.v6.ip6), l3))
			return false;
		p->family = 10;
		l4proto = h.v6.ip6.nexthdr; /* extension headers are not followed */
		l4_off = sizeof(h.v6.ip6);
		ip_len = bpf_ntohs(h.v6.ip6.payload_len) + sizeof(h.v6.ip6);
		__builtin_memcpy(p->saddr, &h.v6.ip6.saddr, 16);
		__builtin_memcpy(p->daddr, &h.v6.ip6.daddr, 16);
		th = h.v6.th;
	} else {
		return false;
	}
	p->protocol = l4proto;
	if (l4proto == IPPROTO_TCP) {
		__u32 hdr_len;

		if (!have_l4 && bpf_probe_read_kernel(&th, sizeof(th), l3 + l4_off))
			return true;
		p->sport = bpf_ntohs(th.source);
		p->dport = bpf_ntohs(th.dest);
		p->seq = bpf_ntohl(th.seq);
		p->ack = bpf_ntohl(th.ack_seq);
		p->tcp_flags = ((__u8 *)&th)[13];
		hdr_len = l4_off + th.doff * 4;
		p->payload_len = ip_len > hdr_len ? ip_len - hdr_len : 0;
	} else if (l4proto == IPPROTO_UDP) {
		struct udphdr uh;

		/* the UDP header is the first 8 bytes of what was read as TCP's */
		if (have_l4)
			__builtin_memcpy(&uh, &th, sizeof(uh));
		else if (bpf_probe_read_kernel(&uh, sizeof(uh), l3 + l4_off))
			return true;
		p->sport = bpf_ntohs(uh.source);
		p->dport = bpf_ntohs(uh.dest);
		p->payload_len = bpf_ntohs(uh.len) > 8 ? bpf_ntohs(uh.len) - 8 : 0;
	}
	return true;
}

/* The packet's connection against the head sample, with the ends its
 * socket hashes (jdw_sample_keeps_sock). */
static __always_inline bool packet_in_sample(struct jdw_control *ctl, const struct jdw_net_packet *p)
{
	__u32 s4, d4;
	int at = p->family == 10 ? 12 : 0;

	if (!ctl || ctl->sample_keep >= JDW_SAMPLE_ALL)
		return true;
	__builtin_memcpy(&s4, p->saddr + at, 4);
	__builtin_memcpy(&d4, p->daddr + at, 4);
	return jdw_sample_keeps_key(ctl, jdw_sample_key(s4, p->sport, d4, p->dport));
}

static __always_inline void emit_packet(__u16 type, __u16 proto_be, const unsigned char *l3,
					__u32 len, __u32 ifindex, __u64 sk, __u8 ck)
{
	struct jdw_control *ctl = jdw_ctl();
	struct jdw_net_packet_record *r;
	struct jdw_net_packet p = {};
	void *ring;

	if (!jdw_group_on(ctl, JDW_GROUP_NET))
		return;
	p.ifindex = ifindex;
	p.len = len;
	p.sk = sk;
	if (!parse_ip(&p, l3, proto_be))
		return;
	if (!jdw_net_packet_traced(&p, type == JDW_EVENT_NET_XMIT))
		return;
	if (targ_sample && p.protocol == IPPROTO_TCP && !packet_in_sample(ctl, &p))
		return;
	r = jdw_reserve(JDW_GROUP_NET, type, sizeof(*r), &ring, ck);
	if (!r)
		return;
	r->body = p;
	jdw_submit(r, ring, ctl);
}

/* start_xmit rather than net_dev_xmit: the skb still has its socket here
 * (loopback and many drivers orphan it during transmit). */
SEC("tp_btf/net_dev_start_xmit")
int BPF_PROG(net_dev_start_xmit_btf, struct sk_buff *skb, struct net_device *dev)
{
	emit_packet(JDW_EVENT_NET_XMIT, skb->protocol, skb->head + skb->network_header, skb->len, dev->ifindex,
		    (__u64)skb->sk, jdw_btf_context(ctx, JDW_CTX_SOFTIRQ));
	return 0;
}

SEC("tp_btf/netif_receive_skb")
int BPF_PROG(netif_receive_skb_btf, struct sk_buff *skb)
{
	/* the link header is already pulled: data points at the IP header */
	emit_packet(JDW_EVENT_NET_RECV, skb->protocol, skb->data, skb->len, skb->dev->ifindex, 0,
		    jdw_btf_context(ctx, JDW_CTX_SOFTIRQ));
	return 0;
}

/* The filter learns a traced process's TCP sockets here as well as from
 * its syscalls, so the net group keeps their packets without the syscall
 * group: connect() moves the socket to SYN_SENT and listen() to LISTEN in
 * the calling task, before the first packet. A connection accepted from a
 * traced listener needs nothing more (its port is traced). UDP has no
 * state to watch: its flows are learned only with the syscall group. */
static __always_inline void learn_tcp_sock(const struct sock *sk, int newstate)
{
	__u64 key = 0;

	if (!targ_filter_tgid || (newstate != TCP_SYN_SENT && newstate != TCP_LISTEN))
		return;
	if (!jdw_tgid_traced(jdw_ctl(), bpf_get_current_pid_tgid() >> 32))
		return;
	/* a scalar copy of the address to hash (see jdw_net_packet_traced) */
	bpf_probe_read_kernel(&key, sizeof(key), &sk);
	if (newstate == TCP_SYN_SENT)
		jdw_net_mark_sock(key);
	else
		jdw_net_mark_port((struct sock *)key);
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(inet_sock_set_state_btf, const struct sock *sk, const int oldstate, const int newstate)
{
	learn_tcp_sock(sk, newstate);
	return 0;
}

/* Fallback without BTF-typed tracepoints: the same arguments, untyped. */
SEC("raw_tp/inet_sock_set_state")
int BPF_PROG(inet_sock_set_state_raw, const struct sock *sk, const int oldstate, const int newstate)
{
	learn_tcp_sock(sk, newstate);
	return 0;
}

SEC("raw_tp/net_dev_start_xmit")
int BPF_PROG(net_dev_start_xmit_raw, struct sk_buff *skb, struct net_device *dev)
{
	emit_packet(JDW_EVENT_NET_XMIT, BPF_CORE_READ(skb, protocol), BPF_CORE_READ(skb, head) + BPF_CORE_READ(skb, network_header),
		    BPF_CORE_READ(skb, len), BPF_CORE_READ(dev, ifindex), (__u64)BPF_CORE_READ(skb, sk),
		    jdw_btf_context(ctx, JDW_CTX_SOFTIRQ));
	return 0;
}

SEC("raw_tp/netif_receive_skb")
int BPF_PROG(netif_receive_skb_raw, struct sk_buff *skb)
{
	emit_packet(JDW_EVENT_NET_RECV, BPF_CORE_READ(skb, protocol), BPF_CORE_READ(skb, data), BPF_CORE_READ(skb, len),
		    BPF_CORE_READ(skb, dev, ifindex), 0, jdw_btf_context(ctx, JDW_CTX_SOFTIRQ));
	return 0;
}
