// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Head sampling's decision (see "head sampling" in jackdaw.bpf.h): which
 * connections' exchanges are recorded, decided per connection when an
 * exchange begins, and the count of the exchanges left out. Included by
 * jackdaw.bpf.h after the control map and the gap slot it builds on. */
#ifndef JDW_SAMPLE_BPF_H
#define JDW_SAMPLE_BPF_H

/* The exchanges of connections left out of the sample, counted so that the
 * model can scale the recorded requests back up (bpf/syscall.bpf.c): per
 * socket whether its last call with bytes was a read, and the count. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);  /* struct sock * */
	__type(value, __u8); /* 1: the socket's last call with bytes was a read */
} jdw_left_out_reading SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} jdw_left_out_exchanges SEC(".maps");

/* Per connection (jdw_sample_key): the decision for its exchange in
 * progress, so that the sample changes only between exchanges (see
 * jdw_sample_keeps_sock). */
struct jdw_sample_state {
	__u8 keep;
	__u8 answered; /* it wrote since the exchange began: its next read begins another */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct jdw_sample_state);
} jdw_sample_states SEC(".maps");

static __always_inline __u32 jdw_sample_mix(__u32 addr, __u16 port)
{
	__u64 x = ((__u64)addr << 16 | port) * 0x9E3779B97F4A7C15ull;

	return (__u32)(x >> 32) ^ (__u32)x;
}

/* A connection's key: the mix of its two ends, the same whichever end is
 * named first. Addresses: the IPv4 address, or an IPv6 address's last four
 * bytes (where a v4-mapped address keeps its IPv4 one), as they lie in
 * memory; ports host order. */
static __always_inline __u64 jdw_sample_key(__u32 a1, __u16 p1, __u32 a2, __u16 p2)
{
	return jdw_sample_mix(a1, p1) ^ jdw_sample_mix(a2, p2);
}

static __always_inline bool jdw_sample_hash_keeps(struct jdw_control *ctl, __u64 k)
{
	return ((k * 0xC2B2AE3D27D4EB4Full) >> 48) < ctl->sample_keep;
}

/* Whether the packets of a connection with this key are in the sample:
 * as its exchange in progress was decided, else as its hash decides. */
static __always_inline bool jdw_sample_keeps_key(struct jdw_control *ctl, __u64 k)
{
	struct jdw_sample_state *st = bpf_map_lookup_elem(&jdw_sample_states, &k);

	return st ? st->keep : jdw_sample_hash_keeps(ctl, k);
}

/* How a socket call stands to its connection's exchanges. */
enum jdw_sample_role {
	JDW_SAMPLE_WITHIN = 0,  /* neither begins nor answers one */
	JDW_SAMPLE_BEGINS = 1,  /* a read: after an answer, it begins the next exchange */
	JDW_SAMPLE_ANSWERS = 2, /* a write: the next read begins a new exchange */
};

/* Whether the socket's events are recorded: decided when an exchange begins
 * and kept until the next one begins, so that a rate changed mid-exchange
 * cuts no exchange in two. A connection first met mid-exchange (the rate
 * just fell below all) is recorded until its next exchange. */
static __always_inline bool jdw_sample_keeps_sock(struct jdw_control *ctl, struct sock *sk, enum jdw_sample_role role)
{
	struct jdw_sample_state *st, fresh = {};
	__u16 family, lport, rport;
	__u32 laddr, raddr;
	__u64 k;

	if (!sk || ctl->sample_keep >= JDW_SAMPLE_ALL)
		return true;
	if (BPF_CORE_READ(sk, sk_type) != 1 /* SOCK_STREAM */ ||
	    BPF_CORE_READ(sk, __sk_common.skc_state) == 10 /* TCP_LISTEN */)
		return true;
	family = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (family == 2 /* AF_INET */) {
		laddr = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
		raddr = BPF_CORE_READ(sk, __sk_common.skc_daddr);
		lport = BPF_CORE_READ(sk, __sk_common.skc_num);
		rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
		k = jdw_sample_key(laddr, lport, raddr, rport);
	} else if (family == 10 /* AF_INET6 */) {
		laddr = BPF_CORE_READ(sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr32[3]);
		raddr = BPF_CORE_READ(sk, __sk_common.skc_v6_daddr.in6_u.u6_addr32[3]);
		lport = BPF_CORE_READ(sk, __sk_common.skc_num);
		rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
		k = jdw_sample_key(laddr, lport, raddr, rport);
	} else {
		/* a unix socket: the lower of its and its peer's kernel address,
		 * so both ends of one connection decide alike */
		__u64 a = (__u64)sk, b = (__u64)BPF_CORE_READ((struct unix_sock *)sk, peer);

		if (b && b < a)
			a = b;
		k = jdw_sample_key((__u32)(a >> 6), 0, (__u32)(a >> 38), 0);
	}
	st = bpf_map_lookup_elem(&jdw_sample_states, &k);
	if (!st) {
		fresh.keep = role == JDW_SAMPLE_BEGINS ? jdw_sample_hash_keeps(ctl, k) : 1;
		fresh.answered = role == JDW_SAMPLE_ANSWERS;
		bpf_map_update_elem(&jdw_sample_states, &k, &fresh, BPF_ANY);
		return fresh.keep;
	}
	if (role == JDW_SAMPLE_BEGINS && st->answered) {
		st->keep = jdw_sample_hash_keeps(ctl, k);
		st->answered = 0;
	} else if (role == JDW_SAMPLE_ANSWERS) {
		st->answered = 1;
	}
	return st->keep;
}

#endif /* JDW_SAMPLE_BPF_H */
