// SPDX-License-Identifier: Apache-2.0
/* Split virtqueues, device side (see virtq.h; virtio 1.2 spec 2.7). */
#include "virtq.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

#include "le.h"

/* Ring layout (2.7.5, 2.7.6, 2.7.8): all fields little-endian. */
#define DESC_BYTES	 16
#define RING_HDR_BYTES	 4 /* flags, idx */
#define AVAIL_ELEM_BYTES 2
#define USED_ELEM_BYTES	 8
#define RING_FLAGS_OFF	 0
#define RING_IDX_OFF	 2

static bool virtq__size_ok(uint16_t size)
{
	return size && size <= VIRTQ_MAX_SIZE && !(size & (size - 1));
}

/* Driver area: flags, idx, ring[size], used_event (2.7.6). */
static uint64_t virtq__avail_bytes(uint16_t size)
{
	return RING_HDR_BYTES + (uint64_t)AVAIL_ELEM_BYTES * size + 2;
}

/* Device area: flags, idx, ring[size], avail_event (2.7.8). */
static uint64_t virtq__used_bytes(uint16_t size)
{
	return RING_HDR_BYTES + (uint64_t)USED_ELEM_BYTES * size + 2;
}

/*
 * A ring's host address, or NULL unless all of it is in guest RAM and its
 * host address is aligned for the 16-bit atomics used on its fields (a
 * queue that never went through virtq__valid() must not trip UB either).
 */
static uint8_t *virtq__ring(const struct guest_mem *m, uint64_t gpa,
			    uint64_t bytes, uintptr_t align)
{
	uint8_t *p = guest_mem__ptr(m, gpa, bytes);

	if (!p || ((uintptr_t)p & (align - 1)))
		return NULL;
	return p;
}

static uint16_t virtq__load16(const uint8_t *p, int order)
{
	return le16toh(__atomic_load_n((const uint16_t *)p, order));
}

static void virtq__store16(uint8_t *p, uint16_t v, int order)
{
	__atomic_store_n((uint16_t *)p, htole16(v), order);
}

int virtq__valid(const struct virtq *q, const struct guest_mem *m)
{
	if (!virtq__size_ok(q->size))
		return -EINVAL;
	if ((q->desc_gpa & 15) || (q->avail_gpa & 1) || (q->used_gpa & 3))
		return -EINVAL;
	if (!guest_mem__ptr(m, q->desc_gpa, (uint64_t)DESC_BYTES * q->size) ||
	    !guest_mem__ptr(m, q->avail_gpa, virtq__avail_bytes(q->size)) ||
	    !guest_mem__ptr(m, q->used_gpa, virtq__used_bytes(q->size)))
		return -EINVAL;
	return 0;
}

/* One descriptor (2.7.5), read field by field from guest RAM. */
struct virtq_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

static void virtq__desc(const uint8_t *table, uint16_t i, struct virtq_desc *d)
{
	const uint8_t *p = table + (size_t)i * DESC_BYTES;

	d->addr = le__get64(p);
	d->len = le__get32(p + 8);
	d->flags = le__get16(p + 12);
	d->next = le__get16(p + 14);
}

/*
 * Walk the chain at @c->head into @c.  Every descriptor that names a
 * buffer counts against q->size, in the table and in an indirect table
 * alike, which bounds the walk and catches loops; the one descriptor that
 * points to an indirect table ends the direct chain (no NEXT) and cannot
 * repeat (no nesting), so it is not counted.
 *
 * A zero-length descriptor is allowed and skipped (no segment, its address
 * unchecked, as nothing will be copied through it) but still counts and
 * still obeys readable-before-writable; the chain's total must be > 0.
 */
static int virtq__walk(const struct virtq *q, const struct guest_mem *m,
		       struct virtq_chain *c)
{
	const uint8_t *table;
	uint16_t tsize = q->size, i = c->head;
	unsigned int count = 0;
	bool indirect = false, seen_write = false;
	struct virtq_desc d;

	table = guest_mem__ptr(m, q->desc_gpa, (uint64_t)DESC_BYTES * q->size);
	if (!table || i >= tsize)
		return -EINVAL;
	for (;;) {
		virtq__desc(table, i, &d);
		if (d.flags & VIRTQ_DESC_F_INDIRECT) {
			/* 2.7.5.3.1; the WRITE flag here is ignored. */
			if (indirect || (d.flags & VIRTQ_DESC_F_NEXT))
				return -EINVAL;
			if (!d.len || d.len % DESC_BYTES ||
			    d.len > (uint32_t)DESC_BYTES * q->size)
				return -EINVAL;
			table = guest_mem__ptr(m, d.addr, d.len);
			if (!table)
				return -EINVAL;
			tsize = d.len / DESC_BYTES;
			indirect = true;
			i = 0;
			continue;
		}
		if (++count > q->size)
			return -EINVAL;
		if (d.flags & VIRTQ_DESC_F_WRITE)
			seen_write = true;
		else if (seen_write)
			return -EINVAL;
		if (d.len) {
			struct virtq_seg *s = &c->seg[c->nr_segs];

			if (!guest_mem__ptr(m, d.addr, d.len))
				return -EINVAL;
			c->nr_segs++;
			s->gpa = d.addr;
			s->len = d.len;
			s->write = d.flags & VIRTQ_DESC_F_WRITE;
			if (s->write)
				c->in_bytes += d.len;
			else
				c->out_bytes += d.len;
		}
		if (!(d.flags & VIRTQ_DESC_F_NEXT))
			break;
		i = d.next;
		if (i >= tsize)
			return -EINVAL;
	}
	if (!c->in_bytes && !c->out_bytes)
		return -EINVAL;
	return 0;
}

int virtq__pop(struct virtq *q, const struct guest_mem *m,
	       struct virtq_chain *c)
{
	uint8_t *avail, *used = NULL;
	uint16_t idx, pending;

	c->head = UINT16_MAX; /* >= any q->size: "do not push" */
	c->nr_segs = 0;
	c->out_bytes = 0;
	c->in_bytes = 0;
	if (!virtq__size_ok(q->size))
		return -EINVAL;
	avail = virtq__ring(m, q->avail_gpa, virtq__avail_bytes(q->size), 2);
	if (!avail)
		return -EINVAL;
	if (q->event_idx) {
		used = virtq__ring(m, q->used_gpa, virtq__used_bytes(q->size),
				   2);
		if (!used)
			return -EINVAL;
	}

	/* Acquire: the ring entry and descriptors are read after idx. */
	idx = virtq__load16(avail + RING_IDX_OFF, __ATOMIC_ACQUIRE);
	if (idx == q->last_avail && used) {
		/*
		 * Empty: ask for a notification on the next entry
		 * (avail_event, 2.7.10), then look again, or a buffer made
		 * available between the two reads would wait for a kick that
		 * the driver decided not to send.
		 */
		virtq__store16(used + RING_HDR_BYTES +
				       USED_ELEM_BYTES * q->size,
			       q->last_avail, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		idx = virtq__load16(avail + RING_IDX_OFF, __ATOMIC_ACQUIRE);
	}
	pending = idx - q->last_avail;
	if (!pending)
		return 0;
	if (pending > q->size)
		return -EINVAL; /* nothing consumed: the ring itself is bad */

	c->head = virtq__load16(avail + RING_HDR_BYTES +
					AVAIL_ELEM_BYTES *
						(q->last_avail & (q->size - 1)),
				__ATOMIC_RELAXED);
	q->last_avail++;
	if (used)
		virtq__store16(used + RING_HDR_BYTES +
				       USED_ELEM_BYTES * q->size,
			       q->last_avail, __ATOMIC_RELAXED);
	if (virtq__walk(q, m, c)) {
		/* Consumed; a valid head may go back with length 0. */
		c->nr_segs = 0;
		c->out_bytes = 0;
		c->in_bytes = 0;
		return -EINVAL;
	}
	return 1;
}

int virtq__push(struct virtq *q, const struct guest_mem *m, uint16_t head,
		uint32_t len)
{
	uint8_t *used, *elem;
	uint32_t v;

	if (!virtq__size_ok(q->size))
		return -EFAULT;
	used = virtq__ring(m, q->used_gpa, virtq__used_bytes(q->size), 2);
	if (!used)
		return -EFAULT;
	elem = used + RING_HDR_BYTES +
	       USED_ELEM_BYTES * (q->used_idx & (q->size - 1));
	v = htole32(head);
	memcpy(elem, &v, 4);
	v = htole32(len);
	memcpy(elem + 4, &v, 4);
	q->used_idx++;
	/* Release: the driver sees the element before the new idx. */
	virtq__store16(used + RING_IDX_OFF, q->used_idx, __ATOMIC_RELEASE);
	return 0;
}

bool virtq__needs_interrupt(struct virtq *q, const struct guest_mem *m)
{
	const uint8_t *avail;
	uint16_t event, old = q->signalled_used, new = q->used_idx;
	bool need;

	/*
	 * Full fence: our used->idx store must be visible before we read
	 * the driver's used_event/flags, which it writes before re-reading
	 * used->idx; otherwise both sides can miss each other's update.
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	avail = virtq__size_ok(q->size) ?
			virtq__ring(m, q->avail_gpa,
				    virtq__avail_bytes(q->size), 2) :
			NULL;
	if (!avail) {
		need = true; /* a spurious interrupt is harmless, a lost one not */
	} else if (q->event_idx) {
		event = virtq__load16(avail + RING_HDR_BYTES +
					      AVAIL_ELEM_BYTES * q->size,
				      __ATOMIC_RELAXED);
		/* vring_need_event(): event in [old, new), modulo 2^16. */
		need = !q->signalled_valid ||
		       (uint16_t)(new - event - 1) < (uint16_t)(new - old);
	} else {
		need = !(virtq__load16(avail + RING_FLAGS_OFF,
				       __ATOMIC_RELAXED) &
			 VIRTQ_AVAIL_F_NO_INTERRUPT);
	}
	if (need) {
		q->signalled_used = new;
		q->signalled_valid = true;
	}
	return need;
}

/* Copy to or from the @write segments of @c as one stream from @offset. */
static uint64_t virtq__copy(const struct virtq_chain *c,
			    const struct guest_mem *m, uint64_t offset,
			    uint8_t *buf, uint64_t len, bool write)
{
	uint64_t done = 0, n;
	unsigned int i;
	uint8_t *p;

	for (i = 0; i < c->nr_segs && done < len; i++) {
		const struct virtq_seg *s = &c->seg[i];

		if (s->write != write)
			continue;
		if (offset >= s->len) {
			offset -= s->len;
			continue;
		}
		n = s->len - offset;
		if (n > len - done)
			n = len - done;
		/* offset < s->len, so s->gpa + offset cannot wrap. */
		p = guest_mem__ptr(m, s->gpa + offset, n);
		if (!p)
			break;
		if (write)
			memcpy(p, buf + done, n);
		else
			memcpy(buf + done, p, n);
		done += n;
		offset = 0;
	}
	return done;
}

uint64_t virtq__read(const struct virtq_chain *c, const struct guest_mem *m,
		     uint64_t offset, void *buf, uint64_t len)
{
	return virtq__copy(c, m, offset, buf, len, false);
}

uint64_t virtq__write(const struct virtq_chain *c, const struct guest_mem *m,
		      uint64_t offset, const void *buf, uint64_t len)
{
	/* virtq__copy() only reads @buf when copying into guest RAM. */
	return virtq__copy(c, m, offset, (uint8_t *)buf, len, true);
}

void virtq__reset(struct virtq *q)
{
	memset(q, 0, sizeof(*q));
}

void virtq__arm_notify(struct virtq *q, const struct guest_mem *m)
{
	uint8_t *avail, *used;
	uint16_t idx;

	if (!q->event_idx || !virtq__size_ok(q->size))
		return;
	avail = virtq__ring(m, q->avail_gpa, virtq__avail_bytes(q->size), 2);
	used = virtq__ring(m, q->used_gpa, virtq__used_bytes(q->size), 2);
	if (!avail || !used)
		return;
	idx = virtq__load16(avail + RING_IDX_OFF, __ATOMIC_ACQUIRE);
	virtq__store16(used + RING_HDR_BYTES + USED_ELEM_BYTES * q->size, idx,
		       __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
