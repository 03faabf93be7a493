/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * jackdaw kernel-module backend: the /dev/jackdaw control and ring layout,
 * shared by kmod/ and user/. Records in the rings are abi.h's, unchanged,
 * except that hdr.ts (and block_complete.issue_ts) are TSC cycles.
 *
 * Session: open (CAP_SYS_ADMIN, one session at a time) -> JDW_IOC_SETUP
 * (ring size) -> mmap read-only -> filters -> JDW_IOC_ENABLE per group ->
 * read records, JDW_IOC_CONSUME to free them -> close.
 *
 * Mapping: CPU c's area starts at c * (JDW_KMOD_META_BYTES + ring_bytes): a
 * meta page (struct jdw_kmod_meta) then ring_bytes of records. The module is
 * the only writer of an area; head only grows, and a record's bytes are
 * complete before head passes them (release/acquire). The module never
 * writes between tail and head, so user space never sees a torn record.
 * A record never straddles the end of the ring: when it does not fit, the
 * module pads the rest (a header with type JDW_EVENT_NONE when at least a
 * header fits, else nothing) and starts again at offset 0.
 */
#ifndef JACKDAW_KMOD_H
#define JACKDAW_KMOD_H

#include "abi.h"

#ifdef __KERNEL__
#include <linux/ioctl.h>
#else
#include <sys/ioctl.h>
#endif

#define JDW_KMOD_DEVICE "/dev/jackdaw"
#define JDW_KMOD_META_BYTES 4096
#define JDW_KMOD_MIN_RING 4096
#define JDW_KMOD_MAX_RING (64u << 20)

/* Groups the module implements. */
#define JDW_KMOD_GROUPS                                                      \
	((1u << JDW_GROUP_SCHED) | (1u << JDW_GROUP_SYSCALL) |               \
	 (1u << JDW_GROUP_BLOCK) | (1u << JDW_GROUP_NET))

struct jdw_kmod_meta {
	__u64 head;  /* bytes ever produced (ring offset = head % ring_bytes) */
	__u64 tail;  /* bytes ever consumed, as set by JDW_IOC_CONSUME */
	__u64 lost[JDW_GROUP_MAX]; /* records dropped because the ring was full */
	__u64 records; /* records ever produced */
};

struct jdw_kmod_setup {
	__u32 abi_version;  /* in: JDW_ABI_VERSION */
	__u32 ring_bytes;   /* in: per CPU, power of two in [MIN, MAX] */
	__u32 ncpus;        /* out: areas mapped (nr_cpu_ids) */
	__u32 meta_bytes;   /* out: JDW_KMOD_META_BYTES */
};

struct jdw_kmod_filter {
	__u32 filter_flags; /* JDW_FILTER_* */
	__u32 reserved;     /* 0 */
	__u64 syscall_bitmap[JDW_SYSCALL_BITMAP_WORDS];
};

struct jdw_kmod_consume {
	__u32 cpu;
	__u32 reserved; /* 0 */
	__u64 tail;     /* new tail: between the current tail and head, 8-aligned */
};

#define JDW_KMOD_IOC_MAGIC 'J'
#define JDW_IOC_SETUP _IOWR(JDW_KMOD_IOC_MAGIC, 1, struct jdw_kmod_setup)
#define JDW_IOC_ENABLE _IOW(JDW_KMOD_IOC_MAGIC, 2, __u32)   /* group */
#define JDW_IOC_DISABLE _IOW(JDW_KMOD_IOC_MAGIC, 3, __u32)  /* group */
#define JDW_IOC_ADD_TGID _IOW(JDW_KMOD_IOC_MAGIC, 4, __u32)
#define JDW_IOC_SET_FILTER _IOW(JDW_KMOD_IOC_MAGIC, 5, struct jdw_kmod_filter)
#define JDW_IOC_CONSUME _IOW(JDW_KMOD_IOC_MAGIC, 6, struct jdw_kmod_consume)
#define JDW_IOC_GROUPS _IOR(JDW_KMOD_IOC_MAGIC, 7, __u32)   /* enabled groups */

JDW_ABI_ASSERT_SIZE(jdw_kmod_meta, 88);
JDW_ABI_ASSERT_SIZE(jdw_kmod_setup, 16);
JDW_ABI_ASSERT_SIZE(jdw_kmod_filter, 72);
JDW_ABI_ASSERT_SIZE(jdw_kmod_consume, 16);

#endif /* JACKDAW_KMOD_H */
