// SPDX-License-Identifier: Apache-2.0
/*
 * virtio-blk, the normal path and the request errors a driver can cause
 * without breaking the queue (virtio 1.2, 5.2.6): run with one drive of
 * 1 MiB, id=tiny-disk, in slot 0 (tests/integration/tiny_guests.sh).
 *
 * Checks: probe and config space (capacity, blk_size), features, a
 * two-sector T_OUT then T_IN through split data descriptors, FLUSH,
 * GET_ID, a T_IN through an indirect table, status bytes and used
 * lengths (the status byte plus the bytes read); then reads and writes
 * past the end, with a sector of 2^64-1 and of a length that is not a
 * multiple of 512 fail with IOERR, an unknown type with UNSUPP, and the
 * device stays live (no NEEDS_RESET) and serves a last read, this time
 * with EVENT_IDX negotiated.  The script checks the written sector in
 * the image afterwards.
 */
#include "virtio.h"

#define BLK_T_IN       0
#define BLK_T_OUT      1
#define BLK_T_FLUSH    4
#define BLK_T_GET_ID   8
#define BLK_S_OK       0
#define BLK_S_IOERR    1
#define BLK_S_UNSUPP   2
#define BLK_F_BLK_SIZE (1UL << 6)
#define BLK_F_FLUSH    (1UL << 9)
#define DISK_SECTORS   2048 /* 1 MiB */
#define DATA_SECTOR    5
#define DATA_BYTES     1024
#define MARKER	       "ember virtio-blk" /* the script looks for it */
#define NO_ANSWER      0xee /* not a status: the device did not answer */

struct blk_hdr {
	u32 type;
	u32 reserved;
	u64 sector;
};

static struct vq_mem ring;
static struct vq q;
static struct blk_hdr hdr __attribute__((aligned(16)));
static u8 out_buf[DATA_BYTES] __attribute__((aligned(512)));
static u8 in_buf[DATA_BYTES] __attribute__((aligned(512)));
static u8 status_byte;
static struct vq_desc ind[4] __attribute__((aligned(16)));
static u32 used_len;

/*
 * One request: header, @len bytes at @buf (device-readable for T_OUT,
 * writable otherwise; split over two descriptors when @len > 512), the
 * status byte.  Returns the status (NO_ANSWER on none); used_len is set.
 */
static u8 blk_req(u32 type, u64 sector, u8 *buf, u32 len)
{
	u16 data_flags = type == BLK_T_OUT ? 0 : VQD_WRITE;
	struct vq_used_elem e;
	u16 n = 1;

	hdr.type = type;
	hdr.reserved = 0;
	hdr.sector = sector;
	status_byte = NO_ANSWER;
	vq_desc(&q, 0, (u64)&hdr, sizeof(hdr), VQD_NEXT, 1);
	if (len > 512) {
		vq_desc(&q, n, (u64)buf, 512, data_flags | VQD_NEXT, n + 1);
		n++;
		vq_desc(&q, n, (u64)buf + 512, len - 512, data_flags | VQD_NEXT,
			n + 1);
		n++;
	} else if (len) {
		vq_desc(&q, n, (u64)buf, len, data_flags | VQD_NEXT, n + 1);
		n++;
	}
	vq_desc(&q, n, (u64)&status_byte, 1, VQD_WRITE, 0);
	used_len = 0xffffffff;
	if (!vq_submit(&q, 0, &e) || e.id != 0)
		return NO_ANSWER;
	used_len = e.len;
	return *(volatile u8 *)&status_byte;
}

static int normal_path(void)
{
	u64 base = virtio_slot(0);
	const char *id = "tiny-disk";
	unsigned int i;
	u32 cap_lo, cap_hi;
	int ok;

	if (!check(virtio_probe(base, VIRTIO_ID_BLOCK) &&
			   vio_rd(base, VIO_VENDOR_ID) == 0x52424d45,
		   "slot 0: virtio-mmio v2 block device, vendor EMBR"))
		return 0;
	if (!check(!virtio_setup(&q, base,
				 VF_VERSION_1 | VF_INDIRECT_DESC | BLK_F_FLUSH |
					 BLK_F_BLK_SIZE,
				 &ring),
		   "init: features VERSION_1|INDIRECT|FLUSH|BLK_SIZE, queue"))
		return 0;
	cap_lo = vio_rd(base, VIO_CONFIG);
	cap_hi = vio_rd(base, VIO_CONFIG + 4);
	if (!check(cap_lo == DISK_SECTORS && cap_hi == 0 &&
			   vio_rd(base, VIO_CONFIG + 20) == 512,
		   "config: capacity 2048 sectors, blk_size 512"))
		return 0;

	for (i = 0; i < DATA_BYTES; i++)
		out_buf[i] = (u8)(i * 7 + 3);
	for (i = 0; MARKER[i]; i++)
		out_buf[i] = (u8)MARKER[i];
	ok = blk_req(BLK_T_OUT, DATA_SECTOR, out_buf, DATA_BYTES) == BLK_S_OK;
	if (!check(ok && used_len == 1, "T_OUT 2 sectors: OK, used len 1"))
		return 0;

	memset8(in_buf, 0, DATA_BYTES);
	ok = blk_req(BLK_T_IN, DATA_SECTOR, in_buf, DATA_BYTES) == BLK_S_OK;
	if (!check(ok && used_len == DATA_BYTES + 1 &&
			   same(in_buf, out_buf, DATA_BYTES),
		   "T_IN 2 sectors: OK, used len 1025, data matches"))
		return 0;

	ok = blk_req(BLK_T_FLUSH, 0, 0, 0) == BLK_S_OK;
	if (!check(ok && used_len == 1, "FLUSH: OK, used len 1"))
		return 0;

	memset8(in_buf, 0xaa, 20);
	ok = blk_req(BLK_T_GET_ID, 0, in_buf, 20) == BLK_S_OK && used_len == 21;
	for (i = 0; i < 20 && ok; i++)
		ok = in_buf[i] == (i < 9 ? (u8)id[i] : 0);
	if (!check(ok, "GET_ID: \"tiny-disk\", NUL-padded, used len 21"))
		return 0;

	/* The same read through an indirect table of three descriptors. */
	memset8(in_buf, 0, DATA_BYTES);
	hdr.type = BLK_T_IN;
	hdr.sector = DATA_SECTOR;
	status_byte = NO_ANSWER;
	ind[0] = (struct vq_desc){ (u64)&hdr, sizeof(hdr), VQD_NEXT, 1 };
	ind[1] = (struct vq_desc){ (u64)in_buf, 512, VQD_WRITE | VQD_NEXT, 2 };
	ind[2] = (struct vq_desc){ (u64)&status_byte, 1, VQD_WRITE, 0 };
	vq_desc(&q, 3, (u64)ind, 3 * sizeof(ind[0]), VQD_INDIRECT, 0);
	{
		struct vq_used_elem e;

		ok = vq_submit(&q, 3, &e) && e.id == 3 && e.len == 513;
	}
	ok = ok && *(volatile u8 *)&status_byte == BLK_S_OK &&
	     same(in_buf, out_buf, 512);
	return check(ok, "T_IN through an indirect table: OK, used len 513");
}

static int request_errors(void)
{
	u64 base = virtio_slot(0);
	int ok;

	ok = blk_req(BLK_T_IN, DISK_SECTORS - 1, in_buf, 1024) == BLK_S_IOERR;
	if (!check(ok && used_len == 1,
		   "T_IN across the end (sector 2047, 2 sectors): IOERR"))
		return 0;
	ok = blk_req(BLK_T_IN, DISK_SECTORS, in_buf, 512) == BLK_S_IOERR;
	ok = ok && blk_req(BLK_T_IN, ~0UL, in_buf, 512) == BLK_S_IOERR;
	ok = ok &&
	     blk_req(BLK_T_IN, ~0UL / 512 + 1, in_buf, 512) == BLK_S_IOERR;
	if (!check(ok, "T_IN at sector 2048, 2^64-1, 2^55: IOERR"))
		return 0;
	ok = blk_req(BLK_T_OUT, DISK_SECTORS - 1, out_buf, 1024) == BLK_S_IOERR;
	ok = ok && blk_req(BLK_T_OUT, ~0UL, out_buf, 512) == BLK_S_IOERR;
	if (!check(ok, "T_OUT across the end and at 2^64-1: IOERR"))
		return 0;
	ok = blk_req(BLK_T_IN, 0, in_buf, 100) == BLK_S_IOERR;
	ok = ok && blk_req(BLK_T_OUT, 0, out_buf, 100) == BLK_S_IOERR;
	ok = ok && blk_req(BLK_T_IN, 0, in_buf, 612) == BLK_S_IOERR;
	if (!check(ok, "T_IN/T_OUT of 100 and 612 bytes: IOERR"))
		return 0;
	ok = blk_req(0x1234, 0, in_buf, 512) == BLK_S_UNSUPP;
	if (!check(ok, "unknown request type: UNSUPP"))
		return 0;
	return check(!(virtio_status(base) & VS_NEEDS_RESET),
		     "request errors do not need a reset");
}

static int event_idx(void)
{
	u64 base = virtio_slot(0);
	int ok;

	if (!check(!virtio_setup(&q, base, VF_VERSION_1 | VF_EVENT_IDX, &ring),
		   "re-init with EVENT_IDX"))
		return 0;
	memset8(in_buf, 0, DATA_BYTES);
	ok = blk_req(BLK_T_IN, DATA_SECTOR, in_buf, 512) == BLK_S_OK &&
	     used_len == 513 && same(in_buf, out_buf, 512);
	/* The device asks for the next kick at the next avail entry. */
	ok = ok && *(volatile u16 *)&ring.used.avail_event == q.next_avail;
	return check(ok, "T_IN with EVENT_IDX: OK, avail_event = avail idx");
}

int guest_main(void)
{
	if (!normal_path())
		return 1;
	if (!request_errors())
		return 2;
	if (!event_idx())
		return 3;
	puts("virtio_blk_ok: all checks passed\n");
	return 0;
}
