// SPDX-License-Identifier: GPL-2.0
/*
 * jackdaw.ko: /dev/jackdaw, the per-CPU rings and the ioctl control.
 *
 * Rings: one per CPU, written only by that CPU with interrupts off (so a
 * probe firing in an interrupt cannot interleave with one in the task it
 * interrupted): no lock, no atomic read-modify-write. head is published
 * with a release store after the record's bytes; the reader acquires head,
 * copies, and returns space with JDW_IOC_CONSUME. A record that does not fit
 * in the free space is dropped and counted in the meta page's lost[group].
 * The record is stamped inside the irq-off section, so within one CPU ring
 * order is time order.
 *
 * Lifetime: probes are registered per group on JDW_IOC_ENABLE and
 * unregistered on JDW_IOC_DISABLE and at close; the session is freed after
 * tracepoint_synchronize_unregister(), so no probe still running can touch
 * it. An open /dev/jackdaw holds a module reference, so rmmod while events
 * flow only ever happens with every probe gone.
 */
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/slab.h>
#include <linux/threads.h>
#include <linux/tracepoint.h>
#include <linux/uaccess.h>
#include <linux/version.h>
#include <linux/vmalloc.h>
#include <asm/msr.h>

#include "jackdaw.h"

static DEFINE_MUTEX(jdw_lock);    /* one session; serialises ioctls */
static struct jdw_session *jdw_current;

void jdw_emit(struct jdw_session *s, u32 group, void *rec, u32 size)
{
	struct jdw_record_header *h = rec;
	struct jdw_kmod_meta *m;
	unsigned long flags;
	u64 head, tail, off, need;
	char *ring;
	u32 cpu;

	local_irq_save(flags);
	cpu = smp_processor_id();
	m = jdw_meta(s, cpu);
	ring = (char *)m + JDW_KMOD_META_BYTES;
	head = m->head;
	tail = smp_load_acquire(&m->tail);
	off = head & (s->ring_bytes - 1);
	need = size;
	if (off + size > s->ring_bytes)
		need += s->ring_bytes - off;
	if (head + need - tail > s->ring_bytes) {
		m->lost[group]++;
		goto out;
	}
	if (need != size) {
		u64 pad = s->ring_bytes - off;

		if (pad >= sizeof(*h)) {
			struct jdw_record_header *p = (void *)(ring + off);

			memset(p, 0, sizeof(*p));
			p->type = JDW_EVENT_NONE;
			p->size = pad;
		}
		off = 0;
	}
	h->ts = rdtsc_ordered();
	h->cpu = cpu;
	h->size = size;
	memcpy(ring + off, rec, size);
	m->records++;
	smp_store_release(&m->head, head + need);
out:
	local_irq_restore(flags);
}

static void jdw_session_free(struct jdw_session *s)
{
	vfree(s->area);
	vfree(s->tgids);
	vfree(s->seen_socks);
	vfree(s->rqs);
	kfree(s);
}

static void jdw_disable_all(struct jdw_session *s)
{
	u32 g;

	for (g = 0; g < JDW_GROUP_MAX; g++)
		if (s->enabled & (1u << g))
			jdw_probes_unregister(s, g);
	s->enabled = 0;
	tracepoint_synchronize_unregister();
}

static int jdw_open(struct inode *inode, struct file *f)
{
	struct jdw_session *s;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	s->tgids = vzalloc(BITS_TO_LONGS(PID_MAX_LIMIT) * sizeof(long));
	s->seen_socks = vzalloc(JDW_SEEN_SOCK_SLOTS * sizeof(u64));
	s->rqs = vzalloc(JDW_RQ_SLOTS * sizeof(struct jdw_rq_slot));
	raw_spin_lock_init(&s->rq_lock);
	if (!s->tgids || !s->seen_socks || !s->rqs) {
		jdw_session_free(s);
		return -ENOMEM;
	}
	mutex_lock(&jdw_lock);
	if (jdw_current) {
		mutex_unlock(&jdw_lock);
		jdw_session_free(s);
		return -EBUSY;
	}
	jdw_current = s;
	mutex_unlock(&jdw_lock);
	f->private_data = s;
	return 0;
}

static int jdw_release(struct inode *inode, struct file *f)
{
	struct jdw_session *s = f->private_data;

	mutex_lock(&jdw_lock);
	jdw_disable_all(s);
	jdw_current = NULL;
	mutex_unlock(&jdw_lock);
	jdw_session_free(s);
	return 0;
}

static long jdw_setup(struct jdw_session *s, void __user *arg)
{
	struct jdw_kmod_setup su;
	size_t bytes;

	if (copy_from_user(&su, arg, sizeof(su)))
		return -EFAULT;
	if (s->area || su.abi_version != JDW_ABI_VERSION || su.ring_bytes < JDW_KMOD_MIN_RING ||
	    su.ring_bytes > JDW_KMOD_MAX_RING || (su.ring_bytes & (su.ring_bytes - 1)))
		return -EINVAL;
	bytes = (size_t)nr_cpu_ids * (JDW_KMOD_META_BYTES + su.ring_bytes);
	s->area = vmalloc_user(bytes);
	if (!s->area)
		return -ENOMEM;
	s->area_bytes = bytes;
	s->ring_bytes = su.ring_bytes;
	s->ncpus = nr_cpu_ids;
	su.ncpus = s->ncpus;
	su.meta_bytes = JDW_KMOD_META_BYTES;
	if (copy_to_user(arg, &su, sizeof(su)))
		return -EFAULT;
	return 0;
}

static long jdw_set_filter(struct jdw_session *s, void __user *arg)
{
	struct jdw_kmod_filter fl;

	if (copy_from_user(&fl, arg, sizeof(fl)))
		return -EFAULT;
	if (fl.reserved || (fl.filter_flags & ~(JDW_FILTER_TGID | JDW_FILTER_SYSCALL)))
		return -EINVAL;
	/* Probes read the bitmap word by word; a call racing this update sees
	 * either filter for that word, never a torn word. */
	memcpy(s->syscall_bitmap, fl.syscall_bitmap, sizeof(s->syscall_bitmap));
	WRITE_ONCE(s->filter_flags, fl.filter_flags);
	return 0;
}

static long jdw_consume(struct jdw_session *s, void __user *arg)
{
	struct jdw_kmod_consume c;
	struct jdw_kmod_meta *m;

	if (copy_from_user(&c, arg, sizeof(c)))
		return -EFAULT;
	if (!s->area || c.reserved || c.cpu >= s->ncpus || (c.tail & 7))
		return -EINVAL;
	m = jdw_meta(s, c.cpu);
	if (c.tail < m->tail || c.tail > smp_load_acquire(&m->head))
		return -EINVAL;
	/* The reader has copied everything below c.tail. */
	smp_store_release(&m->tail, c.tail);
	return 0;
}

static long jdw_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct jdw_session *s = f->private_data;
	void __user *uarg = (void __user *)arg;
	long ret = 0;
	u32 v;

	mutex_lock(&jdw_lock);
	switch (cmd) {
	case JDW_IOC_SETUP:
		ret = jdw_setup(s, uarg);
		break;
	case JDW_IOC_ENABLE:
	case JDW_IOC_DISABLE:
		if (get_user(v, (u32 __user *)uarg)) {
			ret = -EFAULT;
			break;
		}
		if (v >= JDW_GROUP_MAX || !(JDW_KMOD_GROUPS & (1u << v)) || !s->area) {
			ret = -EINVAL;
			break;
		}
		if (cmd == JDW_IOC_ENABLE && !(s->enabled & (1u << v))) {
			ret = jdw_probes_register(s, v);
			if (!ret)
				s->enabled |= 1u << v;
		} else if (cmd == JDW_IOC_DISABLE && (s->enabled & (1u << v))) {
			jdw_probes_unregister(s, v);
			s->enabled &= ~(1u << v);
			tracepoint_synchronize_unregister();
		}
		break;
	case JDW_IOC_ADD_TGID:
		if (get_user(v, (u32 __user *)uarg)) {
			ret = -EFAULT;
			break;
		}
		if (v == 0 || v >= PID_MAX_LIMIT) {
			ret = -EINVAL;
			break;
		}
		set_bit(v, s->tgids);
		break;
	case JDW_IOC_SET_FILTER:
		ret = jdw_set_filter(s, uarg);
		break;
	case JDW_IOC_CONSUME:
		ret = jdw_consume(s, uarg);
		break;
	case JDW_IOC_GROUPS:
		ret = put_user(s->enabled, (u32 __user *)uarg) ? -EFAULT : 0;
		break;
	default:
		ret = -ENOTTY;
	}
	mutex_unlock(&jdw_lock);
	return ret;
}

static int jdw_mmap(struct file *f, struct vm_area_struct *vma)
{
	struct jdw_session *s = f->private_data;
	int ret;

	mutex_lock(&jdw_lock);
	ret = -EINVAL;
	if (!s->area || vma->vm_pgoff != 0 || vma->vm_end - vma->vm_start != PAGE_ALIGN(s->area_bytes))
		goto out;
	ret = -EPERM;
	if (vma->vm_flags & VM_WRITE)
		goto out;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_clear(vma, VM_MAYWRITE);
#else
	vma->vm_flags &= ~VM_MAYWRITE;
#endif
	ret = remap_vmalloc_range(vma, s->area, 0);
out:
	mutex_unlock(&jdw_lock);
	return ret;
}

static const struct file_operations jdw_fops = {
	.owner = THIS_MODULE,
	.open = jdw_open,
	.release = jdw_release,
	.unlocked_ioctl = jdw_ioctl,
	.mmap = jdw_mmap,
	.llseek = noop_llseek,
};

static struct miscdevice jdw_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "jackdaw",
	.fops = &jdw_fops,
	.mode = 0600,
};

static int __init jdw_init(void)
{
	int ret = jdw_probes_init();

	if (ret)
		return ret;
	return misc_register(&jdw_dev);
}

static void __exit jdw_exit(void)
{
	misc_deregister(&jdw_dev);
}

module_init(jdw_init);
module_exit(jdw_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("jackdaw: tracepoint capture into per-CPU mmap rings (TSC timestamps)");
