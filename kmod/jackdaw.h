/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared between the module's device (jackdaw_main.c: session, rings, ioctl)
 * and its probes (jackdaw_probes.c). One session exists at a time; probes
 * receive it as their tracepoint data and it is freed only after every probe
 * is unregistered and tracepoint_synchronize_unregister() has returned.
 */
#ifndef JACKDAW_KMOD_INTERNAL_H
#define JACKDAW_KMOD_INTERNAL_H

#include <linux/spinlock.h>
#include <linux/types.h>

#include "jackdaw/abi.h"
#include "jackdaw/kmod.h"

#define JDW_SEEN_SOCK_SLOTS 65536 /* direct-mapped: a collision re-reports */
#define JDW_RQ_SLOTS 4096

struct jdw_rq_slot {
	u64 rq;
	u64 ts;
	u32 tid;
	u32 tgid;
};

struct jdw_session {
	void *area;             /* vmalloc_user: ncpus * (meta + ring) */
	size_t area_bytes;
	u32 ring_bytes;
	u32 ncpus;
	u32 enabled;            /* groups whose probes are registered */
	u32 filter_flags;
	u64 syscall_bitmap[JDW_SYSCALL_BITMAP_WORDS];
	unsigned long *tgids;   /* bitmap over PID_MAX_LIMIT */
	u64 *seen_socks;        /* JDW_SEEN_SOCK_SLOTS */
	raw_spinlock_t rq_lock;
	struct jdw_rq_slot *rqs; /* JDW_RQ_SLOTS */
};

static inline struct jdw_kmod_meta *jdw_meta(struct jdw_session *s, u32 cpu)
{
	return (struct jdw_kmod_meta *)((char *)s->area +
					(size_t)cpu * (JDW_KMOD_META_BYTES + s->ring_bytes));
}

/* Copies one record (header ts/cpu filled here) into this CPU's ring, or
 * counts it lost in its group. Callable from any context but NMI. */
void jdw_emit(struct jdw_session *s, u32 group, void *rec, u32 size);

/* Probe registration per group; 0 or -errno (nothing left registered). */
int jdw_probes_register(struct jdw_session *s, u32 group);
void jdw_probes_unregister(struct jdw_session *s, u32 group);
/* Finds the kernel's tracepoints by name; -ENOENT names what is missing. */
int jdw_probes_init(void);

#endif
