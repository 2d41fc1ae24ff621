/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A minimal virtio-mmio (version 2) driver for the tiny test guests: probe,
 * the 3.1.1 initialisation sequence, split-queue set-up (2.7) and helpers
 * to place descriptors, publish avail entries and wait for the used ring.
 * Polled only: the guest runs with interrupts off, and ember serves
 * QueueNotify on its event thread (an ioeventfd), asynchronously, so every
 * wait is bounded by the TSC.
 *
 * Memory is the guest's own .bss, identity-mapped: a pointer is its
 * guest-physical address.  Each guest includes this once (after guest.h).
 */
#ifndef EMBER_TESTS_VIRTIO_H
#define EMBER_TESTS_VIRTIO_H

#include "guest.h"

#define VIRTIO_MMIO_GPA	 0xd0010000UL /* boot/layout.h: slot 0 */
#define VIRTIO_MMIO_SIZE 0x1000UL
#define VIRTIO_MAGIC	 0x74726976 /* "virt" */

/* Registers (virtio 1.2, 4.2.2). */
#define VIO_MAGIC	     0x000
#define VIO_VERSION	     0x004
#define VIO_DEVICE_ID	     0x008
#define VIO_VENDOR_ID	     0x00c
#define VIO_DEV_FEATURES     0x010
#define VIO_DEV_FEATURES_SEL 0x014
#define VIO_DRV_FEATURES     0x020
#define VIO_DRV_FEATURES_SEL 0x024
#define VIO_QUEUE_SEL	     0x030
#define VIO_QUEUE_NUM_MAX    0x034
#define VIO_QUEUE_NUM	     0x038
#define VIO_QUEUE_READY	     0x044
#define VIO_QUEUE_NOTIFY     0x050
#define VIO_INT_STATUS	     0x060
#define VIO_INT_ACK	     0x064
#define VIO_STATUS	     0x070
#define VIO_QUEUE_DESC	     0x080 /* low; high at +4 */
#define VIO_QUEUE_DRIVER     0x090
#define VIO_QUEUE_DEVICE     0x0a0
#define VIO_CONFIG	     0x100

/* Device status (2.1). */
#define VS_ACKNOWLEDGE 1
#define VS_DRIVER      2
#define VS_DRIVER_OK   4
#define VS_FEATURES_OK 8
#define VS_NEEDS_RESET 64
#define VS_FAILED      128

/* Feature bits. */
#define VF_INDIRECT_DESC (1UL << 28)
#define VF_EVENT_IDX	 (1UL << 29)
#define VF_VERSION_1	 (1UL << 32)

#define VIRTIO_ID_BLOCK 2
#define VIRTIO_ID_RNG	4

/* Split virtqueue (2.7); VQ_SIZE entries, the size the guests use. */
#define VQ_SIZE		16
#define VQD_NEXT	1
#define VQD_WRITE	2
#define VQD_INDIRECT	4
#define VQ_NO_INTERRUPT 1

struct vq_desc {
	u64 addr;
	u32 len;
	u16 flags;
	u16 next;
};

struct vq_avail {
	u16 flags;
	u16 idx;
	u16 ring[VQ_SIZE];
	u16 used_event;
};

struct vq_used_elem {
	u32 id;
	u32 len;
};

struct vq_used {
	u16 flags;
	u16 idx;
	struct vq_used_elem ring[VQ_SIZE];
	u16 avail_event;
};

/* One queue's rings, in one page. */
struct vq_mem {
	struct vq_desc desc[VQ_SIZE];
	struct vq_avail avail;
	struct vq_used used __attribute__((aligned(4)));
} __attribute__((aligned(4096)));

/* The driver's view of one queue. */
struct vq {
	u64 base; /* the device's MMIO slot */
	struct vq_mem *mem;
	u16 next_avail; /* the avail->idx the driver publishes next */
	u16 last_used; /* used entries taken so far */
};

static inline void barrier(void)
{
	asm volatile("" : : : "memory");
}

static inline u64 rdtsc(void)
{
	u32 lo, hi;

	asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((u64)hi << 32) | lo;
}

/*
 * Wait budgets in TSC cycles: long enough for ember's event thread to
 * answer even where guest code is emulated, short enough that a test
 * waiting for nothing to happen stays quick.
 */
#define TSC_WAIT_LONG  4000000000UL /* a request that must complete */
#define TSC_WAIT_SHORT 300000000UL /* ~0.1 s: something must not happen */

static inline u64 virtio_slot(unsigned int i)
{
	return VIRTIO_MMIO_GPA + i * VIRTIO_MMIO_SIZE;
}

static inline u32 vio_rd(u64 base, u32 off)
{
	return *(volatile u32 *)(base + off);
}

static inline void vio_wr(u64 base, u32 off, u32 v)
{
	barrier();
	*(volatile u32 *)(base + off) = v;
	barrier();
}

static inline void vio_wr64(u64 base, u32 off, u64 v)
{
	vio_wr(base, off, (u32)v);
	vio_wr(base, off + 4, (u32)(v >> 32));
}

/* Byte loops through volatile: gcc must not turn them into memset(). */
static inline void memset8(void *p, u8 v, u64 n)
{
	volatile u8 *b = p;

	while (n--)
		*b++ = v;
}

static inline u32 virtio_status(u64 base)
{
	return vio_rd(base, VIO_STATUS);
}

/* Does slot @base hold a version 2 virtio-mmio device of @device_id? */
static inline int virtio_probe(u64 base, u32 device_id)
{
	return vio_rd(base, VIO_MAGIC) == VIRTIO_MAGIC &&
	       vio_rd(base, VIO_VERSION) == 2 &&
	       vio_rd(base, VIO_DEVICE_ID) == device_id;
}

static inline u64 virtio_device_features(u64 base)
{
	u64 f;

	vio_wr(base, VIO_DEV_FEATURES_SEL, 1);
	f = (u64)vio_rd(base, VIO_DEV_FEATURES) << 32;
	vio_wr(base, VIO_DEV_FEATURES_SEL, 0);
	return f | vio_rd(base, VIO_DEV_FEATURES);
}

static inline void virtio_reset(u64 base)
{
	vio_wr(base, VIO_STATUS, 0);
}

/*
 * 3.1.1 steps 1-6: reset, ACKNOWLEDGE, DRIVER, negotiate @features (all
 * of which the device must offer), FEATURES_OK and read it back.
 * Returns 0, or 1 when status did not read 0 after the reset, 2 when a
 * wanted feature is not offered, 3 when FEATURES_OK did not stick.
 */
static inline int virtio_init(u64 base, u64 features)
{
	u32 s;

	virtio_reset(base);
	if (virtio_status(base) != 0)
		return 1;
	vio_wr(base, VIO_STATUS, VS_ACKNOWLEDGE);
	vio_wr(base, VIO_STATUS, VS_ACKNOWLEDGE | VS_DRIVER);
	if ((virtio_device_features(base) & features) != features)
		return 2;
	vio_wr(base, VIO_DRV_FEATURES_SEL, 0);
	vio_wr(base, VIO_DRV_FEATURES, (u32)features);
	vio_wr(base, VIO_DRV_FEATURES_SEL, 1);
	vio_wr(base, VIO_DRV_FEATURES, (u32)(features >> 32));
	s = VS_ACKNOWLEDGE | VS_DRIVER | VS_FEATURES_OK;
	vio_wr(base, VIO_STATUS, s);
	if (!(virtio_status(base) & VS_FEATURES_OK))
		return 3;
	return 0;
}

/*
 * 3.1.1 step 7 for queue @sel: program @num entries and the three ring
 * addresses as given (they may be hostile), then QueueReady 1.
 * Returns what QueueReady reads back.
 */
static inline u32 virtio_queue_raw(u64 base, u32 sel, u32 num, u64 desc,
				   u64 avail, u64 used)
{
	vio_wr(base, VIO_QUEUE_SEL, sel);
	vio_wr(base, VIO_QUEUE_NUM, num);
	vio_wr64(base, VIO_QUEUE_DESC, desc);
	vio_wr64(base, VIO_QUEUE_DRIVER, avail);
	vio_wr64(base, VIO_QUEUE_DEVICE, used);
	vio_wr(base, VIO_QUEUE_READY, 1);
	return vio_rd(base, VIO_QUEUE_READY);
}

/*
 * Set up queue 0 of @base on @mem (zeroed here) with VQ_SIZE entries and
 * the driver's shadow @q.  Returns 0, or 4 when QueueNumMax is below
 * VQ_SIZE or the queue is already live, 5 when QueueReady did not stick.
 */
static inline int virtio_queue(struct vq *q, u64 base, struct vq_mem *mem)
{
	memset8(mem, 0, sizeof(*mem));
	q->base = base;
	q->mem = mem;
	q->next_avail = 0;
	q->last_used = 0;
	vio_wr(base, VIO_QUEUE_SEL, 0);
	if (vio_rd(base, VIO_QUEUE_NUM_MAX) < VQ_SIZE ||
	    vio_rd(base, VIO_QUEUE_READY))
		return 4;
	if (virtio_queue_raw(base, 0, VQ_SIZE, (u64)mem->desc, (u64)&mem->avail,
			     (u64)&mem->used) != 1)
		return 5;
	return 0;
}

/* 3.1.1 step 8. */
static inline void virtio_driver_ok(u64 base)
{
	vio_wr(base, VIO_STATUS,
	       VS_ACKNOWLEDGE | VS_DRIVER | VS_FEATURES_OK | VS_DRIVER_OK);
}

/* The whole sequence on queue 0: 0 or the step's code (see above). */
static inline int virtio_setup(struct vq *q, u64 base, u64 features,
			       struct vq_mem *mem)
{
	int r = virtio_init(base, features);

	if (!r)
		r = virtio_queue(q, base, mem);
	if (!r)
		virtio_driver_ok(base);
	return r;
}

static inline void vq_desc(struct vq *q, u16 i, u64 addr, u32 len, u16 flags,
			   u16 next)
{
	volatile struct vq_desc *d = &q->mem->desc[i];

	d->addr = addr;
	d->len = len;
	d->flags = flags;
	d->next = next;
}

/* Make chain @head available (without notifying). */
static inline void vq_publish(struct vq *q, u16 head)
{
	q->mem->avail.ring[q->next_avail % VQ_SIZE] = head;
	barrier(); /* x86 keeps stores in order; the compiler must too */
	q->next_avail++;
	*(volatile u16 *)&q->mem->avail.idx = q->next_avail;
	barrier();
}

static inline void vq_kick(struct vq *q)
{
	vio_wr(q->base, VIO_QUEUE_NOTIFY, 0);
}

static inline u16 vq_used_idx(const struct vq *q)
{
	return *(volatile u16 *)&q->mem->used.idx;
}

/*
 * Wait up to @tsc cycles for a used entry past last_used, or for the
 * device to set NEEDS_RESET.  Returns 1 when an entry is there, 0 when
 * not (timeout or NEEDS_RESET: see virtio_status()).
 */
static inline int vq_wait(const struct vq *q, u64 tsc)
{
	u64 end = rdtsc() + tsc;

	do {
		if (vq_used_idx(q) != q->last_used) {
			barrier();
			return 1;
		}
		if (virtio_status(q->base) & VS_NEEDS_RESET)
			return 0;
		asm volatile("pause");
	} while (rdtsc() < end);
	return vq_used_idx(q) != q->last_used;
}

/* Take the next used entry (after vq_wait() said there is one). */
static inline struct vq_used_elem vq_take(struct vq *q)
{
	volatile struct vq_used_elem *e =
		&q->mem->used.ring[q->last_used % VQ_SIZE];
	struct vq_used_elem r = { e->id, e->len };

	q->last_used++;
	return r;
}

/* Publish @head, notify, wait: 1 with *@e filled, 0 on no answer. */
static inline int vq_submit(struct vq *q, u16 head, struct vq_used_elem *e)
{
	vq_publish(q, head);
	vq_kick(q);
	if (!vq_wait(q, TSC_WAIT_LONG))
		return 0;
	*e = vq_take(q);
	return 1;
}

#endif /* EMBER_TESTS_VIRTIO_H */
