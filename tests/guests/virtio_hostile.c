// SPDX-License-Identifier: Apache-2.0
/*
 * A hostile virtio driver: broken chains, rings and register sequences
 * against ember's virtio-blk (slot 0, a 1 MiB drive) and virtio-rng
 * (slot 1), with --mem 64 so that RAM ends at 64 MiB
 * (tests/integration/tiny_guests.sh).  ember must stay up with no
 * sanitizer report, and each case must behave as virtio 1.2 allows:
 *
 * - a broken chain (loops, chains longer than the queue, bad indices, bad
 *   indirect tables, buffers outside RAM or wrapping, zero total length,
 *   readable after writable) or an avail->idx far ahead: the device sets
 *   DEVICE_NEEDS_RESET (2.1.2) or fails the request (used entry of length
 *   0 or a non-OK status); the guest then resets and re-initialises it;
 * - a notification before DRIVER_OK, or for a queue that does not exist,
 *   is ignored (nothing in the used ring);
 * - a bad queue layout (QueueNum not a power of 2, 0, too big, rings
 *   misaligned or outside RAM) does not make QueueReady stick: the device
 *   needs a reset and processes nothing;
 * - features without VERSION_1 or with bits never offered leave
 *   FEATURES_OK clear;
 * - a reset in the middle of I/O stops the device touching the old rings,
 *   and a fresh init serves requests again.
 *
 * Each case prints "ok - ..." and the guest returns the number of the
 * first failed group (0 when all passed).
 */
#include "virtio.h"

#define RAM_END	    0x4000000UL /* --mem 64 */
#define BLK_T_IN    0
#define BLK_T_OUT   1
#define BLK_S_OK    0
#define NO_ANSWER   0xee
#define IND_ENTRIES (2 * VQ_SIZE)
#define RNG_BIG_GPA 0x2000000UL /* 32 MiB: free guest RAM */
#define RNG_BIG_LEN 0x100000UL
#define RNG_MAX	    4096 /* devices/virtio_rng.h VIRTIO_RNG_MAX_BYTES */
#define RESET_BURST 5 /* requests in flight at the mid-I/O reset */
#define BURST_BYTES 0x10000UL /* each */

struct blk_hdr {
	u32 type;
	u32 reserved;
	u64 sector;
};

static struct vq_mem ring_a, ring_b, ring_c;
static struct vq blk, rng;
static struct blk_hdr hdr[RESET_BURST] __attribute__((aligned(16)));
static u8 data[512] __attribute__((aligned(512)));
static u8 status_byte[RESET_BURST];
static struct vq_desc ind[IND_ENTRIES + 1] __attribute__((aligned(16)));
static u8 rng_buf[64];

static u64 blk_base(void)
{
	return virtio_slot(0);
}

static u64 rng_base(void)
{
	return virtio_slot(1);
}

static int blk_init(void)
{
	return !virtio_setup(&blk, blk_base(), VF_VERSION_1 | VF_INDIRECT_DESC,
			     &ring_a);
}

static int rng_init(void)
{
	return !virtio_setup(&rng, rng_base(), VF_VERSION_1 | VF_INDIRECT_DESC,
			     &ring_b);
}

/* Descriptors 0-2 of @q: a T_IN of @len bytes from sector 0 into @buf. */
static void blk_read_chain(struct vq *q, u64 buf, u32 len)
{
	hdr[0] = (struct blk_hdr){ BLK_T_IN, 0, 0 };
	status_byte[0] = NO_ANSWER;
	vq_desc(q, 0, (u64)&hdr[0], sizeof(hdr[0]), VQD_NEXT, 1);
	vq_desc(q, 1, buf, len, VQD_WRITE | VQD_NEXT, 2);
	vq_desc(q, 2, (u64)&status_byte[0], 1, VQD_WRITE, 0);
}

/* A normal read on the blk queue: must complete with OK. */
static int blk_read_ok(void)
{
	struct vq_used_elem e;

	blk_read_chain(&blk, (u64)data, sizeof(data));
	return vq_submit(&blk, 0, &e) && e.id == 0 && e.len == 513 &&
	       *(volatile u8 *)&status_byte[0] == BLK_S_OK;
}

/* A normal request on the rng queue: 64 bytes, not all zero. */
static int rng_ok(void)
{
	struct vq_used_elem e;
	unsigned int i, nonzero = 0;

	memset8(rng_buf, 0, sizeof(rng_buf));
	vq_desc(&rng, 0, (u64)rng_buf, sizeof(rng_buf), VQD_WRITE, 0);
	if (!vq_submit(&rng, 0, &e) || e.id != 0 || e.len != sizeof(rng_buf))
		return 0;
	for (i = 0; i < sizeof(rng_buf); i++)
		nonzero += rng_buf[i] != 0;
	return nonzero > 8;
}

/*
 * Publish @head on @q and kick: the device must set NEEDS_RESET or fail
 * the request (used length 0, or a status byte other than OK when
 * @status is given).  Then reset, re-init and check a normal request.
 */
static int expect_broken(struct vq *q, u16 head, const u8 *status,
			 const char *what)
{
	int ok, again;
	u16 used0 = vq_used_idx(q);

	vq_publish(q, head);
	vq_kick(q);
	if (vq_wait(q, TSC_WAIT_LONG)) {
		struct vq_used_elem e = vq_take(q);

		ok = !e.len || (status && *(volatile u8 *)status != BLK_S_OK);
		puts(ok ? "  (request failed) " : "  (served!) ");
	} else {
		ok = (virtio_status(q->base) & VS_NEEDS_RESET) &&
		     vq_used_idx(q) == used0;
		puts(ok ? "  (needs reset) " : "  (no answer) ");
	}
	ok = check(ok, what);
	virtio_reset(q->base);
	again = virtio_status(q->base) == 0;
	if (q == &blk)
		again = again && blk_init() && blk_read_ok();
	else
		again = again && rng_init() && rng_ok();
	return check(again, "  reset, re-init, a normal request works") && ok;
}

/* Broken chains on the blk queue: build case @n, return its head. */
static const char *const blk_case_name[] = {
	"blk: descriptor loop (1 -> 0)",
	"blk: descriptor pointing at itself",
	"blk: indirect table of 2 * queue size entries",
	"blk: indirect chain of queue size entries looping back",
	"blk: indirect next index past the table",
	"blk: nested indirect table",
	"blk: indirect descriptor with NEXT",
	"blk: indirect table length not a multiple of 16",
	"blk: indirect table past RAM's end",
	"blk: head index >= queue size",
	"blk: next index >= queue size",
	"blk: buffer past RAM's end (128 MiB)",
	"blk: buffer crossing RAM's end",
	"blk: buffer address wrapping past 2^64",
	"blk: buffer of 4 GiB - 1 bytes",
	"blk: zero-length chain (one descriptor)",
	"blk: zero-length chain (three descriptors)",
	"blk: readable descriptor after a writable one",
	"blk: indirect table in the MMIO gap",
	"blk: no writable descriptor (no room for the status)",
	"blk: request header of 8 bytes",
};

#define BLK_CASES (sizeof(blk_case_name) / sizeof(blk_case_name[0]))

static u16 blk_case(struct vq *q, unsigned int n)
{
	unsigned int i;

	blk_read_chain(q, (u64)data, sizeof(data));
	switch (n) {
	case 0:
		vq_desc(q, 1, (u64)&status_byte[0], 1, VQD_WRITE | VQD_NEXT, 0);
		break;
	case 1:
		vq_desc(q, 0, (u64)&hdr[0], sizeof(hdr[0]), VQD_NEXT, 0);
		break;
	case 2:
	case 3:
		for (i = 0; i < IND_ENTRIES; i++)
			ind[i] = (struct vq_desc){ (u64)data, 16,
						   VQD_WRITE | VQD_NEXT,
						   (u16)(i + 1) };
		ind[0] = (struct vq_desc){ (u64)&hdr[0], sizeof(hdr[0]),
					   VQD_NEXT, 1 };
		if (n == 2) {
			ind[IND_ENTRIES - 1].flags = VQD_WRITE;
			vq_desc(q, 3, (u64)ind, sizeof(ind[0]) * IND_ENTRIES,
				VQD_INDIRECT, 0);
		} else {
			ind[VQ_SIZE - 1].next = 0;
			vq_desc(q, 3, (u64)ind, sizeof(ind[0]) * VQ_SIZE,
				VQD_INDIRECT, 0);
		}
		return 3;
	case 4:
		ind[0] = (struct vq_desc){ (u64)&hdr[0], sizeof(hdr[0]),
					   VQD_NEXT, 2 };
		ind[1] = (struct vq_desc){ (u64)&status_byte[0], 1, VQD_WRITE,
					   0 };
		vq_desc(q, 3, (u64)ind, 2 * sizeof(ind[0]), VQD_INDIRECT, 0);
		return 3;
	case 5:
		ind[0] = (struct vq_desc){ (u64)&ind[1], 16, VQD_INDIRECT, 0 };
		ind[1] = (struct vq_desc){ (u64)&status_byte[0], 1, VQD_WRITE,
					   0 };
		vq_desc(q, 3, (u64)ind, sizeof(ind[0]), VQD_INDIRECT, 0);
		return 3;
	case 6:
		ind[0] = (struct vq_desc){ (u64)&status_byte[0], 1, VQD_WRITE,
					   0 };
		vq_desc(q, 3, (u64)ind, sizeof(ind[0]), VQD_INDIRECT | VQD_NEXT,
			1);
		return 3;
	case 7:
		vq_desc(q, 3, (u64)ind, 40, VQD_INDIRECT, 0);
		return 3;
	case 8:
		vq_desc(q, 3, RAM_END - 32, 64, VQD_INDIRECT, 0);
		return 3;
	case 9:
		return VQ_SIZE;
	case 10:
		vq_desc(q, 1, (u64)data, sizeof(data), VQD_WRITE | VQD_NEXT,
			200);
		break;
	case 11:
		vq_desc(q, 1, 2 * RAM_END, 512, VQD_WRITE | VQD_NEXT, 2);
		break;
	case 12:
		vq_desc(q, 1, RAM_END - 256, 512, VQD_WRITE | VQD_NEXT, 2);
		break;
	case 13:
		vq_desc(q, 1, 0xfffffffffffffe00UL, 0x400, VQD_WRITE | VQD_NEXT,
			2);
		break;
	case 14:
		vq_desc(q, 1, (u64)data, 0xffffffff, VQD_WRITE | VQD_NEXT, 2);
		break;
	case 15:
		vq_desc(q, 0, (u64)data, 0, VQD_WRITE, 0);
		break;
	case 16:
		vq_desc(q, 0, (u64)&hdr[0], 0, VQD_NEXT, 1);
		vq_desc(q, 1, (u64)data, 0, VQD_WRITE | VQD_NEXT, 2);
		vq_desc(q, 2, (u64)&status_byte[0], 0, VQD_WRITE, 0);
		break;
	case 17:
		/* hdr (R), data (W), hdr again (R), status (W) */
		vq_desc(q, 2, (u64)&hdr[0], sizeof(hdr[0]), VQD_NEXT, 3);
		vq_desc(q, 3, (u64)&status_byte[0], 1, VQD_WRITE, 0);
		break;
	case 18:
		vq_desc(q, 3, 0xd0010000UL, 64, VQD_INDIRECT, 0);
		return 3;
	case 19:
		vq_desc(q, 1, (u64)data, sizeof(data), 0, 0);
		break;
	case 20:
		vq_desc(q, 0, (u64)&hdr[0], 8, VQD_NEXT, 1);
		break;
	}
	return 0;
}

static int broken_chains(void)
{
	unsigned int n;
	int ok = 1;

	for (n = 0; n < BLK_CASES; n++)
		ok &= expect_broken(&blk, blk_case(&blk, n), &status_byte[0],
				    blk_case_name[n]);
	return ok;
}

static int rng_chains(void)
{
	int ok;

	vq_desc(&rng, 0, (u64)rng_buf, sizeof(rng_buf), VQD_WRITE | VQD_NEXT,
		0);
	ok = expect_broken(&rng, 0, 0, "rng: descriptor pointing at itself");
	vq_desc(&rng, 0, 2 * RAM_END, 64, VQD_WRITE, 0);
	ok &= expect_broken(&rng, 0, 0, "rng: buffer past RAM's end");
	vq_desc(&rng, 0, RAM_END - 8, 64, VQD_WRITE, 0);
	ok &= expect_broken(&rng, 0, 0, "rng: buffer crossing RAM's end");
	vq_desc(&rng, 0, (u64)rng_buf, 0, VQD_WRITE, 0);
	ok &= expect_broken(&rng, 0, 0, "rng: zero-length chain");
	/* Nothing writable: the device can only answer with length 0. */
	vq_desc(&rng, 0, (u64)rng_buf, sizeof(rng_buf), 0, 0);
	ok &= expect_broken(&rng, 0, 0, "rng: device-readable buffer only");
	ind[0] = (struct vq_desc){ (u64)rng_buf, 8, VQD_WRITE | VQD_NEXT, 1 };
	ind[1] = (struct vq_desc){ (u64)rng_buf, 8, VQD_WRITE | VQD_NEXT, 0 };
	vq_desc(&rng, 0, (u64)ind, 2 * sizeof(ind[0]), VQD_INDIRECT, 0);
	ok &= expect_broken(&rng, 0, 0, "rng: loop inside an indirect table");
	return ok;
}

/* A 1 MiB buffer: the device fills at most 4 KiB of it (5.4.6). */
static int rng_big(void)
{
	struct vq_used_elem e;

	vq_desc(&rng, 0, RNG_BIG_GPA, RNG_BIG_LEN, VQD_WRITE, 0);
	return check(vq_submit(&rng, 0, &e) && e.id == 0 && e.len == RNG_MAX,
		     "rng: 1 MiB buffer, 4 KiB of it filled");
}

/* avail->idx far ahead of what the driver made available. */
static int avail_ahead(struct vq *q, const char *what)
{
	u16 used0 = vq_used_idx(q);
	int ok;

	q->next_avail += 1000;
	*(volatile u16 *)&q->mem->avail.idx = q->next_avail;
	vq_kick(q);
	ok = !vq_wait(q, TSC_WAIT_LONG) &&
	     (virtio_status(q->base) & VS_NEEDS_RESET) &&
	     vq_used_idx(q) == used0;
	ok = check(ok, what);
	virtio_reset(q->base);
	if (q == &blk)
		return check(blk_init() && blk_read_ok(),
			     "  reset, re-init, a normal request works") &&
		       ok;
	return check(rng_init() && rng_ok(),
		     "  reset, re-init, a normal request works") &&
	       ok;
}

/*
 * A request made available and kicked before DRIVER_OK: ignored.  Once
 * DRIVER_OK is set it waits for the next kick, then is served once.
 */
static int notify_early(void)
{
	u64 base = blk_base();
	struct vq_used_elem e;
	int ok;

	ok = !virtio_init(base, VF_VERSION_1) &&
	     !virtio_queue(&blk, base, &ring_a);
	blk_read_chain(&blk, (u64)data, sizeof(data));
	vq_publish(&blk, 0);
	vq_kick(&blk);
	ok = ok && !vq_wait(&blk, TSC_WAIT_SHORT) &&
	     !(virtio_status(base) & VS_NEEDS_RESET);
	if (!check(ok, "blk: a kick before DRIVER_OK is ignored"))
		return 0;
	virtio_driver_ok(base);
	ok = !vq_wait(&blk, TSC_WAIT_SHORT);
	vq_kick(&blk);
	ok = ok && vq_wait(&blk, TSC_WAIT_LONG);
	e = vq_take(&blk);
	ok = ok && e.id == 0 && e.len == 513 &&
	     *(volatile u8 *)&status_byte[0] == BLK_S_OK &&
	     !vq_wait(&blk, TSC_WAIT_SHORT);
	return check(ok, "blk: after DRIVER_OK, served once on the next kick");
}

/* Kicks naming queues that do not exist are ignored. */
static int notify_bad_queue(void)
{
	struct vq_used_elem e;
	int ok;

	blk_read_chain(&blk, (u64)data, sizeof(data));
	vq_publish(&blk, 0);
	vio_wr(blk.base, VIO_QUEUE_NOTIFY, 1);
	vio_wr(blk.base, VIO_QUEUE_NOTIFY, 7);
	vio_wr(blk.base, VIO_QUEUE_NOTIFY, 0x10000);
	vio_wr(blk.base, VIO_QUEUE_NOTIFY, 0xffffffff);
	ok = !vq_wait(&blk, TSC_WAIT_SHORT) &&
	     !(virtio_status(blk.base) & VS_NEEDS_RESET);
	vq_kick(&blk);
	ok = ok && vq_wait(&blk, TSC_WAIT_LONG);
	e = vq_take(&blk);
	ok = ok && e.id == 0 && e.len == 513;
	return check(ok, "blk: kicks for queues 1, 7, 2^16, 2^32-1 ignored");
}

/* The layout of a live queue cannot change under the device. */
static int relayout_live(void)
{
	u64 base = blk_base();

	vio_wr(base, VIO_QUEUE_SEL, 0);
	vio_wr(base, VIO_QUEUE_NUM, 3);
	vio_wr64(base, VIO_QUEUE_DESC, 0xdead000UL);
	vio_wr64(base, VIO_QUEUE_DRIVER, 2 * RAM_END);
	vio_wr64(base, VIO_QUEUE_DEVICE, ~0UL);
	vio_wr(base, VIO_QUEUE_READY, 1);
	return check(blk_read_ok() && !(virtio_status(base) & VS_NEEDS_RESET),
		     "blk: layout writes to a live queue are ignored");
}

/*
 * One bad layout: QueueReady must not stick, the device must need a
 * reset and ignore a kick.
 */
static int bad_layout(u32 num, u64 desc, u64 avail, u64 used, const char *what)
{
	u64 base = blk_base();
	int ok;

	ok = !virtio_init(base, VF_VERSION_1);
	memset8(&ring_a, 0, sizeof(ring_a));
	blk.mem = &ring_a;
	blk.next_avail = 0;
	blk.last_used = 0;
	ok = ok && virtio_queue_raw(base, 0, num, desc, avail, used) == 0;
	ok = ok && (virtio_status(base) & VS_NEEDS_RESET);
	virtio_driver_ok(base);
	blk_read_chain(&blk, (u64)data, sizeof(data));
	vq_publish(&blk, 0);
	vq_kick(&blk);
	ok = ok && vq_used_idx(&blk) == 0;
	{
		u64 end = rdtsc() + TSC_WAIT_SHORT;

		while (ok && rdtsc() < end)
			ok = vq_used_idx(&blk) == 0 &&
			     *(volatile u8 *)&status_byte[0] == NO_ANSWER;
	}
	ok = check(ok, what);
	virtio_reset(base);
	return check(virtio_status(base) == 0 && blk_init() && blk_read_ok(),
		     "  reset, re-init, a normal request works") &&
	       ok;
}

static int bad_layouts(void)
{
	u64 d = (u64)ring_a.desc, a = (u64)&ring_a.avail;
	u64 u = (u64)&ring_a.used;
	int ok;

	ok = bad_layout(12, d, a, u, "blk: QueueNum 12 (not a power of 2)");
	ok &= bad_layout(0, d, a, u, "blk: QueueNum 0");
	ok &= bad_layout(512, d, a, u, "blk: QueueNum 512 (> QueueNumMax)");
	ok &= bad_layout(0x10010, d, a, u,
			 "blk: QueueNum 0x10010 (16 modulo 2^16)");
	ok &= bad_layout(VQ_SIZE, d + 8, a, u,
			 "blk: descriptor table misaligned");
	ok &= bad_layout(VQ_SIZE, d, a + 1, u, "blk: avail ring misaligned");
	ok &= bad_layout(VQ_SIZE, d, a, u + 2, "blk: used ring misaligned");
	ok &= bad_layout(VQ_SIZE, RAM_END - 128, a, u,
			 "blk: descriptor table crossing RAM's end");
	ok &= bad_layout(VQ_SIZE, d, a, RAM_END - 64,
			 "blk: used ring crossing RAM's end");
	ok &= bad_layout(VQ_SIZE, d, 0xd0010000UL, u,
			 "blk: avail ring on the device's registers");
	return ok;
}

/* Feature sets the device must refuse by leaving FEATURES_OK clear. */
static int bad_features(void)
{
	u64 base = blk_base();
	int ok;

	ok = check(virtio_init(base, VF_INDIRECT_DESC) == 3,
		   "blk: features without VERSION_1 refused");
	/* virtio_init() stops before writing what is not offered. */
	virtio_reset(base);
	vio_wr(base, VIO_STATUS, VS_ACKNOWLEDGE | VS_DRIVER);
	vio_wr(base, VIO_DRV_FEATURES_SEL, 1);
	vio_wr(base, VIO_DRV_FEATURES, 1 | (1 << 8)); /* VERSION_1, bit 40 */
	vio_wr(base, VIO_STATUS, VS_ACKNOWLEDGE | VS_DRIVER | VS_FEATURES_OK);
	ok = check(ok, "blk: a feature never offered (bit 40) refused");
	virtio_reset(base);
	return check(blk_init() && blk_read_ok(),
		     "  reset, re-init, a normal request works") &&
	       ok;
}

/*
 * RESET_BURST writes in flight, then Status 0 at once.  After the reset
 * the device must not touch the old rings, and a fresh init on other
 * rings serves requests.
 */
static int reset_mid_io(void)
{
	u64 base = blk_base();
	u16 used0 = vq_used_idx(&blk), used_at_reset, done;
	unsigned int i;
	u16 n;
	int ok;

	/* 64 KiB each, so the reset may land while the device works. */
	for (i = 0; i < 512; i++)
		((volatile u8 *)RNG_BIG_GPA)[i] = (u8)(i ^ 0x5a);
	for (i = 0; i < RESET_BURST; i++) {
		n = (u16)(3 * i);
		hdr[i] = (struct blk_hdr){ BLK_T_OUT, 0,
					   10 + i * (BURST_BYTES / 512) };
		status_byte[i] = NO_ANSWER;
		vq_desc(&blk, n, (u64)&hdr[i], sizeof(hdr[i]), VQD_NEXT, n + 1);
		vq_desc(&blk, n + 1, RNG_BIG_GPA, BURST_BYTES, VQD_NEXT, n + 2);
		vq_desc(&blk, n + 2, (u64)&status_byte[i], 1, VQD_WRITE, 0);
		vq_publish(&blk, n);
	}
	vq_kick(&blk);
	virtio_reset(base);
	used_at_reset = vq_used_idx(&blk);
	done = (u16)(used_at_reset - used0);
	ok = virtio_status(base) == 0 && done <= RESET_BURST;
	puts("  requests done before the reset: ");
	put_hex(done);
	serial_putc('\n');
	for (i = 0; i < done && ok; i++)
		ok = *(volatile u8 *)&status_byte[i] == BLK_S_OK;
	if (!check(ok, "blk: reset with 5 writes of 64 KiB in flight"))
		return 0;

	/* Fresh init on other rings. */
	ok = !virtio_setup(&blk, base, VF_VERSION_1, &ring_c);
	blk_read_chain(&blk, (u64)data, sizeof(data));
	hdr[0].sector = 10;
	{
		struct vq_used_elem e;

		memset8(data, 0, sizeof(data));
		ok = ok && vq_submit(&blk, 0, &e) && e.len == 513 &&
		     *(volatile u8 *)&status_byte[0] == BLK_S_OK;
	}
	/* Sector 10 holds the pattern if the first write ran, else zeroes. */
	ok = ok && (data[1] == (u8)(1 ^ 0x5a) || data[1] == 0);
	{
		u64 end = rdtsc() + TSC_WAIT_SHORT;

		while (ok && rdtsc() < end)
			ok = vq_used_idx(&blk) == 1 &&
			     *(volatile u16 *)&ring_a.used.idx == used_at_reset;
	}
	ok = check(ok,
		   "blk: fresh init on new rings works, old rings untouched");
	virtio_reset(base);
	return ok &&
	       check(blk_init() && blk_read_ok() && rng_init() && rng_ok(),
		     "  both devices re-initialised on their rings");
}

int guest_main(void)
{
	if (!check(virtio_probe(blk_base(), VIRTIO_ID_BLOCK) &&
			   virtio_probe(rng_base(), VIRTIO_ID_RNG),
		   "slot 0: virtio-blk, slot 1: virtio-rng"))
		return 1;
	if (!check(blk_init() && blk_read_ok() && rng_init() && rng_ok(),
		   "both devices serve a normal request"))
		return 2;
	if (!broken_chains())
		return 3;
	if (!rng_chains() || !rng_big())
		return 4;
	if (!avail_ahead(&blk, "blk: avail->idx 1000 ahead") ||
	    !avail_ahead(&rng, "rng: avail->idx 1000 ahead"))
		return 5;
	if (!notify_early() || !notify_bad_queue() || !relayout_live())
		return 6;
	if (!bad_layouts())
		return 7;
	if (!bad_features())
		return 8;
	if (!reset_mid_io())
		return 9;
	if (!check(blk_read_ok() && rng_ok() &&
			   !(virtio_status(blk_base()) & VS_NEEDS_RESET) &&
			   !(virtio_status(rng_base()) & VS_NEEDS_RESET),
		   "final normal requests on both devices"))
		return 10;
	puts("virtio_hostile: all checks passed\n");
	return 0;
}
