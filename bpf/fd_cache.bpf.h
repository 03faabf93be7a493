/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The fd cache: what object an fd of a traced process names, resolved once
 * when the fd is created and forgotten when it is closed, so that a read or
 * write does not walk task->files->fdtable->file->inode/sock (nine dependent
 * kernel reads) on every call.
 *
 * Invariant: an entry that exists names the object the fd names now. It
 * holds because every way an fd number stops naming its object is covered:
 *  - close(): the entry is deleted at its exit;
 *  - dup2()/dup3()/fcntl(F_DUPFD) and every call that returns a new fd: the
 *    new fd's entry is overwritten with the object resolved at exit (a
 *    socket) or deleted (anything else: that object goes to the memo);
 *  - close_range(): the range is deleted at its exit (bounded by the
 *    process's fd table size);
 *  - execve() (close-on-exec) and the end of a process (then pid reuse):
 *    the key carries the process image (leader start time and exec count),
 *    so entries of an earlier image can never match; LRU ages them out.
 * A miss (an fd made before the session, or passed over a unix socket) walks
 * the fd table once and inserts with BPF_NOEXIST, so it can never overwrite
 * what a creation stored meanwhile. The LRU may evict any entry: that only
 * costs another walk. Not covered: fds closed by io_uring (IORING_OP_CLOSE)
 * and then reused by io_uring, which never passes through a syscall here.
 *
 * In front of the LRU, a per-CPU memo: a small direct-mapped table (by fd
 * number) of the last lookups and creations on this CPU, each stamped with its fd's
 * epoch: one of JDW_FD_EPOCH_SLOTS shared counters, chosen by fd number,
 * bumped by every change to a cache entry of an fd that maps to it (a
 * creation, a close, a dup over an fd, the sock_info mark; close_range
 * bumps the slot of every fd in its range, all of them for a range that
 * long). A memo entry counts only while its fd's epoch is still the one it
 * was stamped with, so it can never name an object the LRU no longer
 * would: a hit costs one per-CPU array access (inlined) and a shared
 * counter read instead of a hash lookup. One counter per fd slot rather
 * than one for the whole cache, because servers open and close an fd per
 * request (nginx: open, pread, close of the file it serves): with a single
 * epoch every such close also threw away the memo of the connection's
 * socket. The epoch is read before the LRU lookup that fills an entry, so
 * a change that races with the fill leaves the entry stale, never wrong.
 * Programs on a CPU run to completion (syscall probes run with preemption
 * off; interrupt context never touches the memo), so an entry is never
 * seen half-written.
 *
 * The memo also saves LRU deletes that would find nothing: a non-socket
 * creation and a close leave their fd's memo entry marked "not in the
 * LRU", and the close or the creation that follows on this CPU (nginx's
 * close of the file it served; its open of the next one at the same fd
 * number) skips its delete when that entry is still valid. Sound because
 * every insert into the LRU bumps its fd's epoch (the fill after a walk
 * too), so a valid "not in the LRU" has seen no insert since it was
 * stamped. Each such delete is a hash and a bucket lock: two per request
 * on a server that opens a file per request.
 */
#ifndef JACKDAW_FD_CACHE_BPF_H
#define JACKDAW_FD_CACHE_BPF_H

#include "jackdaw.bpf.h"
#include "net_filter.bpf.h"

#define JDW_S_IFMT 00170000
#define JDW_S_IFSOCK 0140000
#define JDW_S_IFREG 0100000
#define JDW_S_IFIFO 0010000

/* close_range() over more fds than this leaves the rest to the LRU. */
#define JDW_FD_CLOSE_RANGE_MAX (1 << 17)

struct jdw_fd_key {
	__u32 tgid;
	__s32 fd;
	__u64 image; /* process image: see jdw_fd_image() */
};

struct jdw_fd_obj {
	__u64 obj;
	__u8 kind; /* enum jdw_obj_kind; an epoll fd is OTHER_FD (the call says) */
	__u8 sock_info_sent; /* this fd's socket addresses were reported, or it has
			      * none to report (not an IP socket) */
	__u8 pad[6];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct jdw_fd_key);
	__type(value, struct jdw_fd_obj);
} jdw_fd_cache SEC(".maps");

#define JDW_FD_MEMO_SLOTS 64 /* power of two: indexed by fd & (slots - 1) */

/* lru_absent: the LRU holds no entry for key (a creation that kept the
 * object to the memo, or a close); with o.kind JDW_OBJ_NONE the fd was
 * closed, and the entry answers no lookup (an fd can come back without a
 * call this cache sees: SCM_RIGHTS), only the delete's question. */
struct jdw_fd_memo_entry {
	struct jdw_fd_key key;
	__u64 epoch;
	struct jdw_fd_obj o;
	__u32 lru_absent;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, JDW_FD_MEMO_SLOTS);
	__type(key, __u32);
	__type(value, struct jdw_fd_memo_entry);
} jdw_fd_memo SEC(".maps");

/* Per fd slot (fd & (slots - 1)), bumped by every change to a jdw_fd_cache
 * entry of an fd in that slot (see the memo above). A memo entry stores
 * epoch + 1, so an empty one (0) never matches. */
#define JDW_FD_EPOCH_SLOTS 1024 /* power of two, >= JDW_FD_MEMO_SLOTS */
__u64 jdw_fd_epochs[JDW_FD_EPOCH_SLOTS];

static __always_inline __u64 *jdw_fd_epoch_of(int fd)
{
	return &jdw_fd_epochs[(__u32)fd & (JDW_FD_EPOCH_SLOTS - 1)];
}

static __always_inline void jdw_fd_changed(int fd)
{
	__sync_fetch_and_add(jdw_fd_epoch_of(fd), 1);
}

static __always_inline struct jdw_fd_memo_entry *jdw_fd_memo_slot(int fd)
{
	__u32 idx = (__u32)fd & (JDW_FD_MEMO_SLOTS - 1);

	return bpf_map_lookup_elem(&jdw_fd_memo, &idx);
}

/* Distinguishes process images sharing a tgid: a reused pid has another
 * leader start time, an exec bumps self_exec_id (shared by every thread of
 * the image: threads older than the exec die in it). */
static __always_inline __u64 jdw_fd_image(void)
{
	struct task_struct *t = bpf_get_current_task_btf();

	return t->group_leader->start_time * 31 + t->self_exec_id;
}

/* fd -> struct file of the current task, or NULL: the walk the cache saves.
 * task, files and fdtable are BTF-typed: their fields are direct loads (the
 * JIT's fault-handled loads, no helper call); the fd array's element and the
 * file, which BTF types only as untyped pointers here, take probe reads. */
static __always_inline struct file *jdw_fd_to_file(int fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct files_struct *files;
	struct fdtable *fdt;
	struct file **fds;
	struct file *f = NULL;

	if (fd < 0)
		return NULL;
	files = task->files;
	if (!files)
		return NULL;
	fdt = files->fdt;
	if (!fdt || (unsigned int)fd >= fdt->max_fds)
		return NULL;
	fds = fdt->fd;
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	return f;
}

/* Walks the fd table: the object behind fd now. Sockets of a traced
 * process are marked for the net filter as they are met. */
static __always_inline bool jdw_fd_resolve(int fd, struct jdw_fd_obj *out)
{
	struct file *f = jdw_fd_to_file(fd);
	struct inode *inode;
	struct socket *sock;
	umode_t mode;

	__builtin_memset(out, 0, sizeof(*out));
	if (!f)
		return false;
	inode = BPF_CORE_READ(f, f_inode);
	mode = BPF_CORE_READ(inode, i_mode);
	switch (mode & JDW_S_IFMT) {
	case JDW_S_IFSOCK:
		sock = BPF_CORE_READ(f, private_data);
		out->obj = (__u64)BPF_CORE_READ(sock, sk);
		out->kind = JDW_OBJ_SOCKET;
		jdw_net_mark_sock(out->obj);
		return true;
	case JDW_S_IFIFO:
		out->kind = JDW_OBJ_PIPE;
		break;
	case JDW_S_IFREG:
		out->kind = JDW_OBJ_FILE;
		break;
	default:
		out->kind = JDW_OBJ_OTHER_FD;
	}
	out->obj = (__u64)inode;
	return true;
}

/* The object fd names, from the memo, the cache or (on a miss of both) the
 * fd table. */
/* The memo's entry for this fd of this image while it is valid, or NULL.
 * *epoch receives the stamp a fill of this entry would carry. */
static __always_inline struct jdw_fd_memo_entry *jdw_fd_memo_hit(const struct jdw_fd_key *key, __u64 *epoch,
								 struct jdw_fd_memo_entry **slot)
{
	struct jdw_fd_memo_entry *m = jdw_fd_memo_slot(key->fd);

	*epoch = *(volatile __u64 *)jdw_fd_epoch_of(key->fd) + 1;
	*slot = m;
	if (m && m->epoch == *epoch && m->key.fd == key->fd && m->key.tgid == key->tgid &&
	    m->key.image == key->image)
		return m;
	return NULL;
}

/* Stamps this CPU's memo entry for key after this program's own change to
 * the fd's cache state, which `old` (the value its epoch bump replaced)
 * shows to be the only one since `epoch` (the stored form, read before:
 * value + 1) was read; otherwise leaves the entry to go stale. */
static __always_inline void jdw_fd_memo_stamp(struct jdw_fd_memo_entry *m, const struct jdw_fd_key *key,
					      const struct jdw_fd_obj *o, __u64 epoch, __u64 old, bool lru_absent)
{
	if (!m || old + 1 != epoch)
		return;
	m->key = *key;
	m->o = *o;
	m->lru_absent = lru_absent;
	m->epoch = old + 2; /* the epoch now (old + 1), stored + 1 */
}

static __always_inline bool jdw_fd_lookup(__u32 tgid, int fd, struct jdw_fd_obj *out)
{
	struct jdw_fd_key key = { .tgid = tgid, .fd = fd, .image = jdw_fd_image() };
	struct jdw_fd_memo_entry *m, *hitm;
	struct jdw_fd_obj *hit;
	__u64 epoch;

	if (fd < 0)
		return false;
	hitm = jdw_fd_memo_hit(&key, &epoch, &m);
	if (hitm && hitm->o.kind != JDW_OBJ_NONE) {
		*out = hitm->o;
		return true;
	}
	hit = bpf_map_lookup_elem(&jdw_fd_cache, &key);
	if (hit) {
		*out = *hit;
	} else {
		if (!jdw_fd_resolve(fd, out))
			return false;
		if (bpf_map_update_elem(&jdw_fd_cache, &key, out, BPF_NOEXIST) != 0)
			return true; /* a creation stored it meanwhile: not memoized */
		/* an insert bumps the epoch: a "not in the LRU" memo entry of
		 * this fd on another CPU goes stale */
		jdw_fd_memo_stamp(m, &key, out, epoch, __sync_fetch_and_add(jdw_fd_epoch_of(fd), 1), false);
		return true;
	}
	if (m) {
		m->key = key;
		m->o = *out;
		m->lru_absent = false;
		m->epoch = epoch;
	}
	return true;
}

/* fd was just created (or replaced, by dup2): resolve it and overwrite.
 * A socket is stored in the LRU (connections live long, and the mark that
 * its addresses were reported lives there). Anything else (a file opened,
 * read and closed per request, as a web server does) goes only into this
 * CPU's memo, and its key leaves the LRU: a delete, cheaper than an
 * insert, and the lookups that follow on this CPU hit the memo instead of
 * the hash. Another CPU misses both and walks the table once, as for any
 * fd the LRU lost. The memo entry is stamped with the epoch this change
 * leaves behind only when no other change to the fd's slot came between
 * the epoch read before the resolve and this change's own bump (the fetch
 * returns the value it replaced): otherwise the entry is left as it was,
 * and the bump invalidates it. */
static __always_inline void jdw_fd_created(__u32 tgid, int fd)
{
	struct jdw_fd_key key = { .tgid = tgid, .fd = fd, .image = jdw_fd_image() };
	struct jdw_fd_memo_entry *m, *hitm;
	struct jdw_fd_obj o;
	__u64 epoch;
	bool absent;

	if (fd < 0)
		return;
	hitm = jdw_fd_memo_hit(&key, &epoch, &m);
	absent = hitm && hitm->lru_absent; /* this fd's close just said so */
	if (!jdw_fd_resolve(fd, &o)) {
		if (!absent)
			bpf_map_delete_elem(&jdw_fd_cache, &key);
		jdw_fd_changed(fd);
		return;
	}
	if (o.kind == JDW_OBJ_SOCKET) {
		bpf_map_update_elem(&jdw_fd_cache, &key, &o, BPF_ANY);
		jdw_fd_changed(fd);
		return;
	}
	if (!absent)
		bpf_map_delete_elem(&jdw_fd_cache, &key);
	jdw_fd_memo_stamp(m, &key, &o, epoch, __sync_fetch_and_add(jdw_fd_epoch_of(fd), 1), true);
}

/* Two fds written to user memory (pipe, pipe2, socketpair). */
static __always_inline void jdw_fd_created_pair(__u32 tgid, __u64 user_fds)
{
	int fds[2];

	if (bpf_probe_read_user(fds, sizeof(fds), (void *)user_fds))
		return;
	jdw_fd_created(tgid, fds[0]);
	jdw_fd_created(tgid, fds[1]);
}

static __always_inline void jdw_fd_set_sock_info_sent(__u32 tgid, int fd, struct jdw_fd_obj *o)
{
	struct jdw_fd_key key = { .tgid = tgid, .fd = fd, .image = jdw_fd_image() };

	o->sock_info_sent = 1;
	bpf_map_update_elem(&jdw_fd_cache, &key, o, BPF_EXIST);
	jdw_fd_changed(fd);
}

static __always_inline void jdw_fd_closed(__u32 tgid, int fd)
{
	struct jdw_fd_key key = { .tgid = tgid, .fd = fd, .image = jdw_fd_image() };
	struct jdw_fd_memo_entry *m, *hitm;
	struct jdw_fd_obj *o, none = {};
	__u64 epoch;
	bool absent = false;

	if (fd < 0)
		return;
	/* Only a socket's close has more to do than the delete: the memo (the
	 * close's own enter just filled it) usually says what the fd was,
	 * without a second hash lookup, and whether the LRU holds it at all. */
	hitm = jdw_fd_memo_hit(&key, &epoch, &m);
	if (hitm) {
		if (hitm->o.kind == JDW_OBJ_SOCKET)
			jdw_net_forget_sock(hitm->o.obj);
		absent = hitm->lru_absent;
	} else {
		o = bpf_map_lookup_elem(&jdw_fd_cache, &key);
		if (o && o->kind == JDW_OBJ_SOCKET)
			jdw_net_forget_sock(o->obj);
	}
	if (!absent)
		bpf_map_delete_elem(&jdw_fd_cache, &key);
	/* closed and out of the LRU: the creation that reuses this fd number
	 * on this CPU needs no delete either */
	jdw_fd_memo_stamp(m, &key, &none, epoch, __sync_fetch_and_add(jdw_fd_epoch_of(fd), 1), true);
}

static long jdw_fd_close_one(__u64 i, void *ctx)
{
	struct jdw_fd_key *key = ctx;

	bpf_map_delete_elem(&jdw_fd_cache, key);
	jdw_fd_changed(key->fd);
	key->fd++;
	return 0;
}

static __always_inline void jdw_fd_closed_range(__u32 tgid, __u32 first, __u32 last)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct jdw_fd_key key = { .tgid = tgid, .fd = first, .image = jdw_fd_image() };
	__u32 max_fds = BPF_CORE_READ(task, files, fdt, max_fds);
	__u64 n;

	/* No fd at or above the table's size was open before the call. */
	if (last >= max_fds)
		last = max_fds - 1;
	if (max_fds == 0 || first > last || first > 0x7fffffff)
		return;
	n = (__u64)last - first + 1;
	if (n > JDW_FD_CLOSE_RANGE_MAX)
		n = JDW_FD_CLOSE_RANGE_MAX;
	/* Each deleted fd bumps its own epoch slot; a range truncated at
	 * JDW_FD_CLOSE_RANGE_MAX still covers every slot, so no memo entry
	 * of the fds left to the LRU survives either. */
	bpf_loop(n, jdw_fd_close_one, &key, 0);
}

#endif /* JACKDAW_FD_CACHE_BPF_H */
