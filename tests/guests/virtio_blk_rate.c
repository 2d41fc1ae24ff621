// SPDX-License-Identifier: Apache-2.0
/*
 * virtio-blk under a rate limiter: run with one drive of 1 MiB in slot 0
 * whose sector N starts with the u64 SECTOR_MAGIC + N, with or without
 * --drive bw=/ops= (tests/integration/tiny_guests.sh measures the time).
 *
 * Reads the whole disk in 16 requests of 64 KiB, posted four at a time
 * and kicked once, then sends 64 FLUSH requests, four at a time.  Every
 * request must come back OK, in the order posted, with the right sectors:
 * a limiter that holds requests back in the ring may delay them, never
 * lose, reorder or mix them up.
 */
#include "virtio.h"

#define BLK_T_IN     0
#define BLK_T_FLUSH  4
#define BLK_S_OK     0
#define DISK_SECTORS 2048 /* 1 MiB */
#define REQ_BYTES    65536
#define BATCH	     4
#define FLUSHES	     64
#define SECTOR_MAGIC 0x5241544500000000UL /* the script writes it */
#define NO_ANSWER    0xee

struct blk_hdr {
	u32 type;
	u32 reserved;
	u64 sector;
};

static struct vq_mem ring;
static struct vq q;
static struct blk_hdr hdr[BATCH] __attribute__((aligned(16)));
static u8 buf[BATCH][REQ_BYTES] __attribute__((aligned(4096)));
static u8 status[BATCH];

/*
 * Post @n requests of @type at once (reads of REQ_BYTES from @sector on,
 * one after the other), kick once, and take their used entries.  Returns
 * 1 when each came back OK, in order, reads with their sectors.
 */
static int batch(u32 type, u64 sector, unsigned int n)
{
	struct vq_used_elem e;
	unsigned int i, k;
	u16 d;

	for (i = 0; i < n; i++) {
		d = (u16)(i * 3);
		hdr[i].type = type;
		hdr[i].reserved = 0;
		hdr[i].sector = sector + i * (REQ_BYTES / 512);
		status[i] = NO_ANSWER;
		vq_desc(&q, d, (u64)&hdr[i], sizeof(hdr[i]), VQD_NEXT, d + 1);
		if (type == BLK_T_IN) {
			vq_desc(&q, d + 1, (u64)buf[i], REQ_BYTES,
				VQD_WRITE | VQD_NEXT, d + 2);
			vq_desc(&q, d + 2, (u64)&status[i], 1, VQD_WRITE, 0);
		} else {
			vq_desc(&q, d + 1, (u64)&status[i], 1, VQD_WRITE, 0);
		}
		vq_publish(&q, d);
	}
	vq_kick(&q);
	for (i = 0; i < n; i++) {
		if (!vq_wait(&q, TSC_WAIT_LONG))
			return 0;
		e = vq_take(&q);
		if (e.id != i * 3 || *(volatile u8 *)&status[i] != BLK_S_OK)
			return 0;
		if (type != BLK_T_IN)
			continue;
		if (e.len != REQ_BYTES + 1)
			return 0;
		for (k = 0; k < REQ_BYTES / 512; k++)
			if (get64(buf[i] + k * 512) !=
			    SECTOR_MAGIC + hdr[i].sector + k)
				return 0;
	}
	return 1;
}

int guest_main(void)
{
	u64 base = virtio_slot(0);
	unsigned int i;
	int ok = 1;

	if (!check(virtio_probe(base, VIRTIO_ID_BLOCK) &&
			   !virtio_setup(&q, base, VF_VERSION_1, &ring),
		   "slot 0: virtio-blk set up"))
		return 1;
	for (i = 0; ok && i < DISK_SECTORS / (BATCH * REQ_BYTES / 512); i++)
		ok = batch(BLK_T_IN, i * BATCH * (REQ_BYTES / 512), BATCH);
	if (!check(ok, "16 reads of 64 KiB, 4 at a time: OK, in order, the "
		       "right sectors"))
		return 2;
	for (i = 0; ok && i < FLUSHES / BATCH; i++)
		ok = batch(BLK_T_FLUSH, 0, BATCH);
	if (!check(ok, "64 FLUSH, 4 at a time: OK, in order"))
		return 3;
	puts("virtio_blk_rate: all checks passed\n");
	return 0;
}
