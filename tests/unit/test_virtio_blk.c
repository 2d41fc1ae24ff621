// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for devices/virtio_blk.c, driven through its virtio-mmio
 * transport by a small driver written here: a split queue laid out in
 * guest RAM, requests posted on it, a temporary raw image behind it (or
 * a copy-on-write overlay over one, snapshot/overlay.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../devices/virtio_blk.h"
#include "../../snapshot/overlay.h"
#include "../../vmm/dev/blk_backing.h"
#include "virtio_driver.h"

#define RAM_BYTES  (1 << 20)
#define GSI	   10
#define QSZ	   16
#define DESC_GPA   0x1000
#define AVAIL_GPA  0x2000
#define USED_GPA   0x3000
#define HDR_GPA	   0x8000
#define STATUS_GPA 0x8100
#define DATA_GPA   0x10000
#define DATA2_GPA  0x40000

#define SECTORS	   128
#define DISK_BYTES (SECTORS * 512)
#define SERIAL	   "ember-disk-0"
#define ST_UNSET   0xee /* status byte before the device writes it */

struct fixture {
	struct test_ram r; /* first: see test_ram__new_in() */
	struct virtio_blk *blk;
	struct virtio_mmio *t;
	int check_fd; /* our own view of the image */
	struct vdrv_queue q;
	int irq_level;
	uint8_t image[DISK_BYTES]; /* what the file held at set-up */
	/* The rate limiter's host side, faked: a clock and a timer. */
	uint64_t now;
	unsigned int now_calls, wakes;
	uint64_t wake_ns;
};

static void fake_irq(void *opaque, unsigned int gsi, int level)
{
	struct fixture *f = opaque;

	assert_int_equal(gsi, GSI);
	f->irq_level = level;
}

#define rd(f, off)    vdrv_rd((f)->t, off)
#define wr(f, off, v) vdrv_wr((f)->t, off, v)

/* Reset, accept every feature but EVENT_IDX, queue 0, DRIVER_OK. */
static void driver_init(struct fixture *f)
{
	uint64_t feat = vdrv_device_features(f->t);

	feat &= ~(1ULL << VIRTIO_F_EVENT_IDX);
	vdrv_queue_init(f->r.ram, &f->q, QSZ, DESC_GPA, AVAIL_GPA, USED_GPA);
	assert_int_equal(vdrv_negotiate(f->t, feat), VDRV_STATUS_NEGOTIATED);
	vdrv_queue_start(f->t, 0, &f->q);
	vdrv_driver_ok(f->t);
}

/* An image file with a pattern; the device gets @flags, we get O_RDWR. */
static int make_device(struct fixture *f, int flags, bool ro,
		       const char *serial)
{
	char path[] = "/tmp/ember-test-blk-XXXXXX";
	struct irq_line irq = { .set = fake_irq, .opaque = f, .gsi = GSI };
	struct virtio_blk_backing bk;
	int fd, dev_fd;
	size_t i;

	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	for (i = 0; i < DISK_BYTES; i++)
		f->image[i] = (uint8_t)(i * 7 % 251);
	dev_fd = open(path, flags | O_CLOEXEC);
	unlink(path);
	if (dev_fd < 0 || pwrite(fd, f->image, DISK_BYTES, 0) != DISK_BYTES) {
		close(fd);
		if (dev_fd >= 0)
			close(dev_fd);
		return -1;
	}
	bk = blk_backing__raw(dev_fd, DISK_BYTES);
	f->blk = virtio_blk__create(&f->r.m, irq, &bk, ro, serial);
	if (!f->blk) {
		close(fd);
		close(dev_fd);
		return -1;
	}
	f->check_fd = fd;
	f->t = virtio_blk__transport(f->blk);
	driver_init(f);
	return 0;
}

/*
 * The image as the base of an overlay the device gets (read-only with
 * @ro); check_fd is the base, which must never change.
 */
static int make_overlay_device(struct fixture *f, bool ro)
{
	char path[] = "/tmp/ember-test-blk-base-XXXXXX";
	struct irq_line irq = { .set = fake_irq, .opaque = f, .gsi = GSI };
	struct virtio_blk_backing bk;
	struct overlay *o = NULL;
	char ovl[64], why[256];
	size_t i;
	int fd;

	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	snprintf(ovl, sizeof(ovl), "%s.ovl", path);
	for (i = 0; i < DISK_BYTES; i++)
		f->image[i] = (uint8_t)(i * 7 % 251);
	if (pwrite(fd, f->image, DISK_BYTES, 0) != DISK_BYTES ||
	    overlay__create(ovl, path, why, sizeof(why)) ||
	    overlay__open(ovl, ro, &o, why, sizeof(why)))
		goto fail;
	unlink(ovl);
	unlink(path);
	bk = blk_backing__overlay(o);
	f->blk = virtio_blk__create(&f->r.m, irq, &bk, ro, SERIAL);
	if (!f->blk)
		goto fail;
	f->check_fd = fd;
	f->t = virtio_blk__transport(f->blk);
	driver_init(f);
	return 0;
fail:
	overlay__close(o);
	unlink(ovl);
	unlink(path);
	close(fd);
	return -1;
}

static int setup_overlay_with(void **state, bool ro)
{
	struct fixture *f = test_ram__new_in(sizeof(*f), RAM_BYTES, 0);

	if (!f)
		return -1;
	if (make_overlay_device(f, ro)) {
		test_ram__free(&f->r);
		return -1;
	}
	*state = f;
	return 0;
}

static int setup_overlay(void **state)
{
	return setup_overlay_with(state, false);
}

static int setup_overlay_ro(void **state)
{
	return setup_overlay_with(state, true);
}

static int setup_with(void **state, int flags, bool ro)
{
	struct fixture *f = test_ram__new_in(sizeof(*f), RAM_BYTES, 0);

	if (!f)
		return -1;
	if (make_device(f, flags, ro, SERIAL)) {
		test_ram__free(&f->r);
		return -1;
	}
	*state = f;
	return 0;
}

static int setup(void **state)
{
	return setup_with(state, O_RDWR, false);
}

static int setup_ro(void **state)
{
	return setup_with(state, O_RDONLY, true);
}

/* Read-write as far as the device knows, but the fd cannot write. */
static int setup_broken_fd(void **state)
{
	return setup_with(state, O_RDONLY, false);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	virtio_blk__destroy(f->blk);
	close(f->check_fd);
	return test_ram__teardown(state);
}

#define post(f, s, n)	   vdrv_post((f)->r.ram, &(f)->q, s, n)
#define used_idx(f)	   vdrv_used_idx((f)->r.ram, &(f)->q)
#define take_used(f, head) vdrv_take_used((f)->r.ram, &(f)->q, head)

/* Write a request header at HDR_GPA. */
static void header(struct fixture *f, uint32_t type, uint64_t sector)
{
	wr32(f->r.ram, HDR_GPA, type);
	wr32(f->r.ram, HDR_GPA + 4, 0);
	wr64(f->r.ram, HDR_GPA + 8, sector);
}

/*
 * Post header, @nd data segments and a 1-byte status, notify, and return
 * the used length; the status is at STATUS_GPA.
 */
static uint32_t request(struct fixture *f, uint32_t type, uint64_t sector,
			const struct vdrv_seg *data, unsigned int nd)
{
	struct vdrv_seg s[QSZ];
	uint16_t head;
	unsigned int i;

	assert_true(nd + 2 <= QSZ);
	header(f, type, sector);
	s[0] = (struct vdrv_seg){ HDR_GPA, 16, false };
	for (i = 0; i < nd; i++)
		s[1 + i] = data[i];
	s[1 + nd] = (struct vdrv_seg){ STATUS_GPA, 1, true };
	f->r.ram[STATUS_GPA] = ST_UNSET;
	head = post(f, s, nd + 2);
	wr(f, QUEUE_NOTIFY, 0);
	return take_used(f, head);
}

static uint8_t status(struct fixture *f)
{
	return f->r.ram[STATUS_GPA];
}

/* The image as the file holds it now, compared with @expect. */
static void check_image(struct fixture *f, const uint8_t *expect)
{
	static uint8_t now[DISK_BYTES];
	struct stat st;

	assert_int_equal(fstat(f->check_fd, &st), 0);
	assert_int_equal(st.st_size, DISK_BYTES);
	assert_int_equal(pread(f->check_fd, now, DISK_BYTES, 0), DISK_BYTES);
	assert_memory_equal(now, expect, DISK_BYTES);
}

static void cfg_read(struct fixture *f, uint64_t off, void *buf, uint32_t len)
{
	f->t->dev.ops->read(&f->t->dev, VIRTIO_MMIO_CONFIG + off, buf, len);
}

static void test_identity_and_config(void **state)
{
	struct fixture *f = *state;
	uint64_t feat = vdrv_device_features(f->t);
	uint8_t b[8];
	uint64_t v64;

	assert_int_equal(rd(f, DEVICE_ID), VIRTIO_ID_BLOCK);
	assert_int_equal(rd(f, DEVICE_ID), 2);
	assert_true(feat & (1ULL << VIRTIO_BLK_F_FLUSH));
	assert_true(feat & (1ULL << VIRTIO_BLK_F_SEG_MAX));
	assert_true(feat & (1ULL << VIRTIO_BLK_F_BLK_SIZE));
	assert_false(feat & (1ULL << VIRTIO_BLK_F_RO));
	assert_int_equal(feat, (1ULL << 9) | (1ULL << 2) | (1ULL << 6) |
				       (1ULL << VIRTIO_F_VERSION_1) |
				       (1ULL << VIRTIO_F_EVENT_IDX) |
				       (1ULL << VIRTIO_F_INDIRECT_DESC));
	assert_true(virtio_mmio__feature(f->t, VIRTIO_BLK_F_FLUSH));

	/* 4-byte halves, then one 8-byte read. */
	assert_int_equal(rd(f, VIRTIO_MMIO_CONFIG + 0), SECTORS);
	assert_int_equal(rd(f, VIRTIO_MMIO_CONFIG + 4), 0);
	cfg_read(f, 0, &v64, 8);
	assert_int_equal(le64toh(v64), SECTORS);
	assert_int_equal(rd(f, VIRTIO_MMIO_CONFIG + 8), 0); /* size_max */
	assert_int_equal(rd(f, VIRTIO_MMIO_CONFIG + 12), VIRTQ_MAX_SIZE - 2);
	assert_int_equal(rd(f, VIRTIO_MMIO_CONFIG + 16), 0); /* geometry */
	assert_int_equal(rd(f, VIRTIO_MMIO_CONFIG + 20), 512);
	/* Any offset and width inside; zeroes beyond. */
	memset(b, 0xee, sizeof(b));
	cfg_read(f, 12, b, 1);
	assert_int_equal(b[0], 254);
	cfg_read(f, 20, b, 2);
	assert_int_equal(rd16(b, 0), 512);
	cfg_read(f, 19, b, 4);
	assert_int_equal(rd32(b, 0), 0x00020000);
	memset(b, 0xee, sizeof(b));
	cfg_read(f, 22, b, 4);
	assert_int_equal(rd32(b, 0), 0);
	assert_int_equal(rd(f, VIRTIO_MMIO_CONFIG + 24), 0);
	assert_int_equal(rd(f, 0xffc), 0);
	/* Writes are ignored. */
	wr(f, VIRTIO_MMIO_CONFIG, 0);
	wr(f, VIRTIO_MMIO_CONFIG + 20, 4096);
	assert_int_equal(rd(f, VIRTIO_MMIO_CONFIG), SECTORS);
	assert_int_equal(rd(f, VIRTIO_MMIO_CONFIG + 20), 512);
}

static void test_out_then_in(void **state)
{
	struct fixture *f = *state;
	uint8_t expect[DISK_BYTES];
	const struct vdrv_seg out[] = {
		{ DATA_GPA, 1000, false },
		{ DATA_GPA + 0x2000, 24, false },
	};
	const struct vdrv_seg in[] = {
		{ DATA2_GPA, 700, true },
		{ DATA2_GPA + 0x1000, 324, true },
	};
	const struct vdrv_seg one = { DATA2_GPA, 512, true };
	unsigned int i;

	for (i = 0; i < 1000; i++)
		f->r.ram[DATA_GPA + i] = (uint8_t)(0x80 ^ i);
	for (i = 0; i < 24; i++)
		f->r.ram[DATA_GPA + 0x2000 + i] = (uint8_t)(0x11 + i);
	memcpy(expect, f->image, DISK_BYTES);
	memcpy(expect + 3 * 512, f->r.ram + DATA_GPA, 1000);
	memcpy(expect + 3 * 512 + 1000, f->r.ram + DATA_GPA + 0x2000, 24);

	assert_int_equal(request(f, VIRTIO_BLK_T_OUT, 3, out, 2), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	check_image(f, expect);
	assert_int_equal(f->irq_level, 1);
	assert_int_equal(rd(f, INT_STATUS), VIRTIO_MMIO_INT_VRING);
	wr(f, INT_ACK, VIRTIO_MMIO_INT_VRING);
	assert_int_equal(f->irq_level, 0);

	/* Read back what was written, split differently. */
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, 3, in, 2), 1024 + 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_memory_equal(f->r.ram + DATA2_GPA, expect + 3 * 512, 700);
	assert_memory_equal(f->r.ram + DATA2_GPA + 0x1000,
			    expect + 3 * 512 + 700, 324);
	/* And untouched sectors: the first and the last. */
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, 0, &one, 1), 512 + 1);
	assert_memory_equal(f->r.ram + DATA2_GPA, f->image, 512);
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, SECTORS - 1, &one, 1),
			 512 + 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_memory_equal(f->r.ram + DATA2_GPA, f->image + DISK_BYTES - 512,
			    512);
	assert_int_equal(f->irq_level, 1);
}

static void test_large_transfer(void **state)
{
	struct fixture *f = *state;
	/* The whole disk, more than one bounce buffer, in one request. */
	const struct vdrv_seg out = { DATA_GPA, DISK_BYTES, false };
	const struct vdrv_seg in = { DATA2_GPA, DISK_BYTES, true };
	unsigned int i;

	for (i = 0; i < DISK_BYTES; i++)
		f->r.ram[DATA_GPA + i] = (uint8_t)(i * 13 + 5);
	assert_int_equal(request(f, VIRTIO_BLK_T_OUT, 0, &out, 1), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	check_image(f, f->r.ram + DATA_GPA);
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, 0, &in, 1),
			 DISK_BYTES + 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_memory_equal(f->r.ram + DATA2_GPA, f->r.ram + DATA_GPA,
			    DISK_BYTES);
}

static void test_status_shares_descriptor(void **state)
{
	struct fixture *f = *state;
	/* Data and status in one writable buffer: status is its last byte. */
	const struct vdrv_seg s[] = {
		{ HDR_GPA, 16, false },
		{ DATA_GPA, 1025, true },
	};
	uint16_t head;

	header(f, VIRTIO_BLK_T_IN, 2);
	f->r.ram[DATA_GPA + 1024] = ST_UNSET;
	f->r.ram[DATA_GPA + 1025] = 0x5a;
	head = post(f, s, 2);
	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(take_used(f, head), 1025);
	assert_memory_equal(f->r.ram + DATA_GPA, f->image + 1024, 1024);
	assert_int_equal(f->r.ram[DATA_GPA + 1024], VIRTIO_BLK_S_OK);
	assert_int_equal(f->r.ram[DATA_GPA + 1025], 0x5a);
}

static void test_flush(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(request(f, VIRTIO_BLK_T_FLUSH, 0, NULL, 0), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	/* The sector field is ignored for a flush. */
	assert_int_equal(request(f, VIRTIO_BLK_T_FLUSH, 12345, NULL, 0), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	check_image(f, f->image);
}

static void test_get_id(void **state)
{
	struct fixture *f = *state;
	struct vdrv_seg s = { DATA_GPA, 20, true };
	uint8_t expect[20] = SERIAL;

	memset(f->r.ram + DATA_GPA, 0xee, 64);
	assert_int_equal(request(f, VIRTIO_BLK_T_GET_ID, 0, &s, 1), 21);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_memory_equal(f->r.ram + DATA_GPA, expect, 20);
	assert_int_equal(f->r.ram[DATA_GPA + 20], 0xee);

	/* A short buffer gets a truncated answer. */
	memset(f->r.ram + DATA_GPA, 0xee, 64);
	s.len = 8;
	assert_int_equal(request(f, VIRTIO_BLK_T_GET_ID, 0, &s, 1), 9);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_memory_equal(f->r.ram + DATA_GPA, expect, 8);
	assert_int_equal(f->r.ram[DATA_GPA + 8], 0xee);

	/* A long one gets 20 bytes. */
	memset(f->r.ram + DATA_GPA, 0xee, 64);
	s.len = 40;
	assert_int_equal(request(f, VIRTIO_BLK_T_GET_ID, 0, &s, 1), 21);
	assert_memory_equal(f->r.ram + DATA_GPA, expect, 20);
	assert_int_equal(f->r.ram[DATA_GPA + 20], 0xee);
}

static void test_get_id_long_serial(void **state)
{
	struct fixture *f = test_ram__new_in(sizeof(*f), RAM_BYTES, 0);
	struct vdrv_seg s = { DATA_GPA, 20, true };

	(void)state;
	assert_non_null(f);
	assert_int_equal(
		make_device(f, O_RDWR, false, "0123456789abcdefghijKLMNOP"), 0);
	assert_int_equal(request(f, VIRTIO_BLK_T_GET_ID, 0, &s, 1), 21);
	assert_memory_equal(f->r.ram + DATA_GPA, "0123456789abcdefghij", 20);
	virtio_blk__destroy(f->blk);
	close(f->check_fd);

	/* No serial: 20 NULs. */
	assert_int_equal(make_device(f, O_RDWR, false, NULL), 0);
	memset(f->r.ram + DATA_GPA, 0xee, 20);
	assert_int_equal(request(f, VIRTIO_BLK_T_GET_ID, 0, &s, 1), 21);
	assert_memory_equal(f->r.ram + DATA_GPA,
			    "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 20);
	virtio_blk__destroy(f->blk);
	close(f->check_fd);
	test_ram__free(&f->r);
}

static void test_read_only(void **state)
{
	struct fixture *f = *state;
	const struct vdrv_seg out = { DATA_GPA, 512, false };
	const struct vdrv_seg in = { DATA2_GPA, 512, true };

	assert_true(vdrv_device_features(f->t) & (1ULL << VIRTIO_BLK_F_RO));
	assert_true(virtio_mmio__feature(f->t, VIRTIO_BLK_F_RO));
	memset(f->r.ram + DATA_GPA, 0x42, 512);
	assert_int_equal(request(f, VIRTIO_BLK_T_OUT, 0, &out, 1), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_IOERR);
	check_image(f, f->image);
	/* Reads, flushes and GET_ID still work. */
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, 5, &in, 1), 513);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_memory_equal(f->r.ram + DATA2_GPA, f->image + 5 * 512, 512);
	assert_int_equal(request(f, VIRTIO_BLK_T_FLUSH, 0, NULL, 0), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_false(rd(f, STATUS) & VIRTIO_STATUS_NEEDS_RESET);
}

static void test_host_io_error(void **state)
{
	struct fixture *f = *state;
	const struct vdrv_seg out = { DATA_GPA, 512, false };
	const struct vdrv_seg in = { DATA2_GPA, 512, true };

	/* The fd is read-only: pwrite fails with EBADF. */
	memset(f->r.ram + DATA_GPA, 0x42, 512);
	assert_int_equal(request(f, VIRTIO_BLK_T_OUT, 1, &out, 1), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_IOERR);
	check_image(f, f->image);
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, 1, &in, 1), 513);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
}

static void test_image_shrank(void **state)
{
	struct fixture *f = *state;
	const struct vdrv_seg in = { DATA2_GPA, 1024, true };

	/* The file lost its last sector behind the device's back. */
	assert_int_equal(ftruncate(f->check_fd, DISK_BYTES - 512), 0);
	memset(f->r.ram + DATA2_GPA, 0xee, 1024);
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, SECTORS - 2, &in, 1), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_IOERR);
	assert_int_equal(f->r.ram[DATA2_GPA], 0xee);
	assert_int_equal(ftruncate(f->check_fd, DISK_BYTES), 0);
}

static void test_past_end(void **state)
{
	struct fixture *f = *state;
	const struct vdrv_seg in2 = { DATA2_GPA, 1024, true };
	const struct vdrv_seg out2 = { DATA_GPA, 1024, false };
	const uint64_t bad[] = {
		SECTORS - 1,	      SECTORS,
		SECTORS + 1,	      UINT64_MAX,
		UINT64_MAX / 512 + 1, /* *512 wraps */
		UINT64_MAX / 512,     (UINT64_MAX / 512) - 1,
		1ULL << 55,
	};
	unsigned int i;

	memset(f->r.ram + DATA2_GPA, 0xee, 1024);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(request(f, VIRTIO_BLK_T_IN, bad[i], &in2, 1),
				 1);
		assert_int_equal(status(f), VIRTIO_BLK_S_IOERR);
		assert_int_equal(request(f, VIRTIO_BLK_T_OUT, bad[i], &out2, 1),
				 1);
		assert_int_equal(status(f), VIRTIO_BLK_S_IOERR);
	}
	assert_int_equal(f->r.ram[DATA2_GPA], 0xee);
	check_image(f, f->image);
	/* Exactly up to the end is fine, and so is nothing at the end. */
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, SECTORS - 2, &in2, 1),
			 1025);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, SECTORS, NULL, 0), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, SECTORS + 1, NULL, 0), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_IOERR);
}

static void test_unaligned_length(void **state)
{
	struct fixture *f = *state;
	const struct vdrv_seg in = { DATA2_GPA, 100, true };
	const struct vdrv_seg in_odd = { DATA2_GPA, 513, true };
	const struct vdrv_seg out = { DATA_GPA, 513, false };

	memset(f->r.ram + DATA2_GPA, 0xee, 1024);
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, 0, &in, 1), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_IOERR);
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, 0, &in_odd, 1), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_IOERR);
	assert_int_equal(f->r.ram[DATA2_GPA], 0xee);
	memset(f->r.ram + DATA_GPA, 0x42, 1024);
	assert_int_equal(request(f, VIRTIO_BLK_T_OUT, 0, &out, 1), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_IOERR);
	check_image(f, f->image);
}

static void test_unsupported(void **state)
{
	struct fixture *f = *state;
	const struct vdrv_seg in = { DATA2_GPA, 512, true };
	const uint32_t types[] = { 2, 3, 5, 7, 11, 13, 0x80000000u, 42 };
	unsigned int i;

	memset(f->r.ram + DATA2_GPA, 0xee, 512);
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		assert_int_equal(request(f, types[i], 0, &in, 1), 1);
		assert_int_equal(status(f), VIRTIO_BLK_S_UNSUPP);
	}
	assert_int_equal(f->r.ram[DATA2_GPA], 0xee);
	check_image(f, f->image);
}

static void test_malformed(void **state)
{
	struct fixture *f = *state;
	const struct vdrv_seg short_hdr[] = {
		{ HDR_GPA, 8, false },
		{ STATUS_GPA, 1, true },
	};
	const struct vdrv_seg no_status[] = {
		{ HDR_GPA, 16, false },
		{ DATA_GPA, 512, false },
	};
	const struct vdrv_seg split_hdr[] = {
		{ HDR_GPA, 10, false },
		{ HDR_GPA + 10, 6, false },
		{ DATA2_GPA, 512, true },
		{ STATUS_GPA, 1, true },
	};
	uint16_t head;

	header(f, VIRTIO_BLK_T_IN, 0);
	f->r.ram[STATUS_GPA] = ST_UNSET;
	head = post(f, short_hdr, 2);
	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(take_used(f, head), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_IOERR);

	/* Nowhere to put the status: length 0, and no write to the disk. */
	header(f, VIRTIO_BLK_T_OUT, 0);
	memset(f->r.ram + DATA_GPA, 0x42, 512);
	head = post(f, no_status, 2);
	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(take_used(f, head), 0);
	check_image(f, f->image);

	/* A header across two descriptors is fine. */
	header(f, VIRTIO_BLK_T_IN, 4);
	f->r.ram[STATUS_GPA] = ST_UNSET;
	head = post(f, split_hdr, 4);
	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(take_used(f, head), 513);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_memory_equal(f->r.ram + DATA2_GPA, f->image + 4 * 512, 512);
	assert_false(rd(f, STATUS) & VIRTIO_STATUS_NEEDS_RESET);
}

static void test_several_per_notify(void **state)
{
	struct fixture *f = *state;
	const struct vdrv_seg w[] = {
		{ HDR_GPA, 16, false },
		{ DATA_GPA, 512, false },
		{ STATUS_GPA, 1, true },
	};
	const struct vdrv_seg r[] = {
		{ HDR_GPA + 0x20, 16, false },
		{ DATA2_GPA, 512, true },
		{ STATUS_GPA + 1, 1, true },
	};
	uint16_t h1, h2;

	header(f, VIRTIO_BLK_T_OUT, 9);
	wr32(f->r.ram, HDR_GPA + 0x20, VIRTIO_BLK_T_IN);
	wr64(f->r.ram, HDR_GPA + 0x28, 9);
	memset(f->r.ram + DATA_GPA, 0x3c, 512);
	f->r.ram[STATUS_GPA] = f->r.ram[STATUS_GPA + 1] = ST_UNSET;
	h1 = post(f, w, 3);
	h2 = post(f, r, 3);
	virtio_mmio__notify(f->t, 0);
	assert_int_equal(used_idx(f), 2);
	assert_int_equal(take_used(f, h1), 1);
	assert_int_equal(take_used(f, h2), 513);
	assert_int_equal(f->r.ram[STATUS_GPA], VIRTIO_BLK_S_OK);
	assert_int_equal(f->r.ram[STATUS_GPA + 1], VIRTIO_BLK_S_OK);
	/* The write happened before the read. */
	assert_memory_equal(f->r.ram + DATA2_GPA, f->r.ram + DATA_GPA, 512);
}

static void test_broken_chain(void **state)
{
	struct fixture *f = *state;
	const struct vdrv_seg bad[] = {
		{ HDR_GPA, 16, false },
		{ RAM_BYTES - 256, 512, true }, /* runs out of RAM */
		{ STATUS_GPA, 1, true },
	};
	const struct vdrv_seg in = { DATA2_GPA, 512, true };

	header(f, VIRTIO_BLK_T_IN, 0);
	post(f, bad, 3);
	wr(f, QUEUE_NOTIFY, 0);
	assert_true(rd(f, STATUS) & VIRTIO_STATUS_NEEDS_RESET);
	assert_true(rd(f, INT_STATUS) & VIRTIO_MMIO_INT_CONFIG);
	assert_int_equal(f->irq_level, 1);
	assert_int_equal(used_idx(f), 0);
	/* Then the driver resets and things work again. */
	driver_init(f);
	assert_int_equal(f->irq_level, 0);
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, 0, &in, 1), 513);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
}

/* A raw image never starts with the overlay magic by a guest's write. */
static void test_raw_refuses_overlay_magic(void **state)
{
	struct fixture *f = *state;
	const struct vdrv_seg out = { DATA_GPA, 1024, false };
	const struct vdrv_seg in = { DATA2_GPA, 1024, true };
	uint8_t expect[DISK_BYTES];

	memset(f->r.ram + DATA_GPA, 0, 1024);
	memcpy(f->r.ram + DATA_GPA, OVERLAY_MAGIC, OVERLAY_MAGIC_BYTES);
	assert_int_equal(request(f, VIRTIO_BLK_T_OUT, 0, &out, 1), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_IOERR);
	check_image(f, f->image);
	/* Anywhere else it is only bytes. */
	assert_int_equal(request(f, VIRTIO_BLK_T_OUT, 1, &out, 1), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	memcpy(expect, f->image, DISK_BYTES);
	memcpy(expect + 512, f->r.ram + DATA_GPA, 1024);
	check_image(f, expect);
	/* And at the start, one byte off is fine. */
	f->r.ram[DATA_GPA + 7] ^= 1;
	assert_int_equal(request(f, VIRTIO_BLK_T_OUT, 0, &out, 1), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	memcpy(expect, f->r.ram + DATA_GPA, 1024);
	check_image(f, expect);
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, 0, &in, 1), 1025);
	assert_memory_equal(f->r.ram + DATA2_GPA, expect, 1024);
}

/* The same requests on an overlay: the base never changes. */
static void test_overlay_backing(void **state)
{
	struct fixture *f = *state;
	const struct vdrv_seg out = { DATA_GPA, 3 * 512, false };
	const struct vdrv_seg big = { DATA_GPA, DISK_BYTES, false };
	const struct vdrv_seg in = { DATA2_GPA, DISK_BYTES, true };
	uint8_t expect[DISK_BYTES];
	struct dev_stats st;
	unsigned int i;

	assert_int_equal(rd(f, VIRTIO_MMIO_CONFIG + 0), SECTORS);
	assert_false(vdrv_device_features(f->t) & (1ULL << VIRTIO_BLK_F_RO));
	for (i = 0; i < 3 * 512; i++)
		f->r.ram[DATA_GPA + i] = (uint8_t)(0x80 ^ i);
	memcpy(expect, f->image, DISK_BYTES);
	memcpy(expect + 7 * 512, f->r.ram + DATA_GPA, 3 * 512);
	assert_int_equal(request(f, VIRTIO_BLK_T_OUT, 7, &out, 1), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, 0, &in, 1),
			 DISK_BYTES + 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_memory_equal(f->r.ram + DATA2_GPA, expect, DISK_BYTES);
	assert_int_equal(request(f, VIRTIO_BLK_T_FLUSH, 0, NULL, 0), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	check_image(f, f->image);
	/* The overlay magic is only bytes on an overlay's disk. */
	memset(f->r.ram + DATA_GPA, 0x3c, DISK_BYTES);
	memcpy(f->r.ram + DATA_GPA, OVERLAY_MAGIC, OVERLAY_MAGIC_BYTES);
	assert_int_equal(request(f, VIRTIO_BLK_T_OUT, 0, &big, 1), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, 0, &in, 1),
			 DISK_BYTES + 1);
	assert_memory_equal(f->r.ram + DATA2_GPA, f->r.ram + DATA_GPA,
			    DISK_BYTES);
	check_image(f, f->image);
	/* Past the end, as on a raw image. */
	assert_int_equal(request(f, VIRTIO_BLK_T_OUT, SECTORS - 2, &out, 1), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_IOERR);
	virtio_blk__stats(f->blk, &st);
	assert_int_equal(st.errors, 1);
	assert_int_equal(st.write_bytes, 3 * 512 + DISK_BYTES);
}

static void test_overlay_read_only(void **state)
{
	struct fixture *f = *state;
	const struct vdrv_seg out = { DATA_GPA, 512, false };
	const struct vdrv_seg in = { DATA2_GPA, 512, true };

	assert_true(vdrv_device_features(f->t) & (1ULL << VIRTIO_BLK_F_RO));
	assert_int_equal(request(f, VIRTIO_BLK_T_OUT, 0, &out, 1), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_IOERR);
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, 9, &in, 1), 513);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_memory_equal(f->r.ram + DATA2_GPA, f->image + 9 * 512, 512);
	assert_int_equal(request(f, VIRTIO_BLK_T_FLUSH, 0, NULL, 0), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
}

/* A backing that fails every call, and counts its destruction. */
static int bad_destroyed;

static int bad_read(void *opaque, void *buf, uint64_t len, uint64_t off)
{
	(void)opaque;
	(void)buf;
	(void)len;
	(void)off;
	return -EIO;
}

static int bad_write(void *opaque, const void *buf, uint64_t len, uint64_t off)
{
	(void)opaque;
	(void)buf;
	(void)len;
	(void)off;
	return -ENOSPC;
}

static int bad_flush(void *opaque)
{
	(void)opaque;
	return -EIO;
}

static void bad_destroy(void *opaque)
{
	assert_ptr_equal(opaque, &bad_destroyed);
	bad_destroyed++;
}

static const struct virtio_blk_backing_ops bad_ops = {
	.read = bad_read,
	.write = bad_write,
	.flush = bad_flush,
	.destroy = bad_destroy,
};

/* Swap the raw image for other backings: capacity and interrupt follow. */
static void test_replace_backing(void **state)
{
	struct fixture *f = *state;
	struct virtio_blk_backing bk = { &bad_ops, &bad_destroyed,
					 2 * DISK_BYTES + 100 };
	struct virtio_blk_backing raw;
	const struct vdrv_seg out = { DATA_GPA, 512, false };
	const struct vdrv_seg in = { DATA2_GPA, 512, true };

	assert_int_equal(virtio_blk__set_backing(f->blk, NULL), -EINVAL);
	bk.ops = NULL;
	assert_int_equal(virtio_blk__set_backing(f->blk, &bk), -EINVAL);
	bk.ops = &bad_ops;
	bad_destroyed = 0;
	assert_int_equal(virtio_blk__set_backing(f->blk, &bk), 0);
	assert_int_equal(rd(f, VIRTIO_MMIO_CONFIG + 0), 2 * SECTORS);
	assert_true(rd(f, INT_STATUS) & VIRTIO_MMIO_INT_CONFIG);
	assert_int_equal(f->irq_level, 1);
	/* Every failure is an I/O error for the guest. */
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, SECTORS + 3, &in, 1), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_IOERR);
	assert_int_equal(request(f, VIRTIO_BLK_T_OUT, 0, &out, 1), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_IOERR);
	assert_int_equal(request(f, VIRTIO_BLK_T_FLUSH, 0, NULL, 0), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_IOERR);
	check_image(f, f->image);
	assert_int_equal(bad_destroyed, 0);
	/* Back to a raw image (the old backing is destroyed). */
	raw = blk_backing__raw(dup(f->check_fd), DISK_BYTES);
	assert_int_equal(virtio_blk__set_backing(f->blk, &raw), 0);
	assert_int_equal(bad_destroyed, 1);
	assert_int_equal(rd(f, VIRTIO_MMIO_CONFIG + 0), SECTORS);
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, 5, &in, 1), 513);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_memory_equal(f->r.ram + DATA2_GPA, f->image + 5 * 512, 512);
	/* And a device made on a backing destroys it with itself. */
	{
		struct irq_line irq = { 0 };
		struct virtio_blk *b;

		assert_null(
			virtio_blk__create(&f->r.m, irq, NULL, false, NULL));
		bk.ops = NULL;
		assert_null(virtio_blk__create(&f->r.m, irq, &bk, false, NULL));
		bk.ops = &bad_ops;
		assert_null(virtio_blk__create(NULL, irq, &bk, false, NULL));
		assert_int_equal(bad_destroyed, 1);
		b = virtio_blk__create(&f->r.m, irq, &bk, false, NULL);
		assert_non_null(b);
		virtio_blk__destroy(b);
		assert_int_equal(bad_destroyed, 2);
	}
}

static void test_create_args(void **state)
{
	struct test_ram *r = test_ram__new(RAM_BYTES, 0);
	struct irq_line irq = { 0 };
	struct virtio_blk_backing bk;
	struct virtio_blk *b;
	uint32_t v = 0;
	int fd;

	(void)state;
	assert_non_null(r);
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	bk = blk_backing__raw(fd, 4096);
	assert_null(virtio_blk__create(NULL, irq, &bk, false, NULL));
	/* A size that is not a multiple of 512 rounds down. */
	bk = blk_backing__raw(fd, 1000);
	b = virtio_blk__create(&r->m, irq, &bk, true, "x");
	assert_non_null(b);
	virtio_blk__transport(b)->dev.ops->read(&virtio_blk__transport(b)->dev,
						VIRTIO_MMIO_CONFIG, &v, 4);
	assert_int_equal(le32toh(v), 1);
	virtio_blk__destroy(b); /* closes fd */
	virtio_blk__destroy(NULL);
	test_ram__free(r);
}

/* --- the rate limiter ---------------------------------------------------- */

#define MS 1000000ULL /* ns */

static uint64_t fake_now(void *opaque)
{
	struct fixture *f = opaque;

	f->now_calls++;
	return f->now;
}

static void fake_wake(void *opaque, uint64_t ns)
{
	struct fixture *f = opaque;

	assert_true(ns >= 1);
	f->wakes++;
	f->wake_ns = ns;
}

static const struct virtio_blk_throttle_ops fake_throttle = {
	.now_ns = fake_now,
	.wake = fake_wake,
};

/*
 * Post request @i (0..7) of type @type on @len bytes of data (reads into,
 * writes from DATA_GPA + 0x1000 * @i), its header at HDR_GPA + 0x20 * @i
 * and status byte at STATUS_GPA + @i.  Returns its head.
 */
static uint16_t post_nth(struct fixture *f, unsigned int i, uint32_t type,
			 uint32_t len)
{
	struct vdrv_seg s[3];
	unsigned int n = 0;

	wr32(f->r.ram, HDR_GPA + 0x20 * i, type);
	wr32(f->r.ram, HDR_GPA + 0x20 * i + 4, 0);
	wr64(f->r.ram, HDR_GPA + 0x20 * i + 8, i);
	s[n++] = (struct vdrv_seg){ HDR_GPA + 0x20 * i, 16, false };
	if (len)
		s[n++] = (struct vdrv_seg){ DATA_GPA + 0x1000 * i, len,
					    type == VIRTIO_BLK_T_IN };
	s[n++] = (struct vdrv_seg){ STATUS_GPA + i, 1, true };
	f->r.ram[STATUS_GPA + i] = ST_UNSET;
	return post(f, s, n);
}

static void ack_irq(struct fixture *f)
{
	wr(f, INT_ACK, rd(f, INT_STATUS));
	assert_int_equal(f->irq_level, 0);
}

/*
 * Two requests a second: the third waits in the ring (not taken, nothing
 * pushed for it), the host side is asked to wake the device when it may
 * go; notifications meanwhile change nothing; a wake-up that comes early
 * asks again; the right one serves it, in order, with its interrupt.
 */
static void test_limiter_ops(void **state)
{
	struct fixture *f = *state;
	struct rate_limiter_config rl = { .ops = { 2, 0, 1000 } };
	struct dev_stats st;
	uint16_t h[3];
	unsigned int i;

	/* No host side, no limiter. */
	assert_int_equal(virtio_blk__set_limiter(f->blk, &rl), -EINVAL);
	virtio_blk__set_throttle(f->blk, &fake_throttle, f);
	f->now = 5000 * MS;
	assert_int_equal(virtio_blk__set_limiter(f->blk, &rl), 0);

	for (i = 0; i < 3; i++)
		h[i] = post_nth(f, i, VIRTIO_BLK_T_FLUSH, 0);
	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(used_idx(f), 2);
	assert_int_equal(take_used(f, h[0]), 1);
	assert_int_equal(take_used(f, h[1]), 1);
	assert_int_equal(f->r.ram[STATUS_GPA + 2], ST_UNSET);
	assert_int_equal(f->irq_level, 1); /* for the two served */
	assert_int_equal(f->wakes, 1);
	assert_int_equal(f->wake_ns, 500 * MS);
	virtio_blk__stats(f->blk, &st);
	assert_int_equal(st.requests, 2);
	assert_int_equal(st.throttled, 1);
	ack_irq(f);

	/* The guest kicks again: nothing moves, nothing more is asked. */
	wr(f, QUEUE_NOTIFY, 0);
	virtio_mmio__notify(f->t, 0);
	assert_int_equal(used_idx(f), 2);
	assert_int_equal(f->wakes, 1);
	assert_int_equal(f->irq_level, 0);

	/* 1 ns early: refused again, a wake-up 1 ns later. */
	f->now += 500 * MS - 1;
	virtio_blk__resume(f->blk);
	assert_int_equal(used_idx(f), 2);
	assert_int_equal(f->wakes, 2);
	assert_int_equal(f->wake_ns, 1);

	f->now += 1;
	virtio_blk__resume(f->blk);
	assert_int_equal(used_idx(f), 3);
	assert_int_equal(take_used(f, h[2]), 1);
	assert_int_equal(f->r.ram[STATUS_GPA + 2], VIRTIO_BLK_S_OK);
	assert_int_equal(f->irq_level, 1);
	assert_int_equal(f->wakes, 2);
	assert_false(rd(f, STATUS) & VIRTIO_STATUS_NEEDS_RESET);
}

/*
 * Bytes: reads and writes cost their data, a flush none.  1 KiB a second:
 * after a 512-byte read, a 1 KiB write waits 500 ms and the flush behind
 * it waits with it; then both go.
 */
static void test_limiter_bytes(void **state)
{
	struct fixture *f = *state;
	struct rate_limiter_config rl = { .bandwidth = { 1024, 0, 1000 } };
	uint16_t h[3];

	virtio_blk__set_throttle(f->blk, &fake_throttle, f);
	f->now = 1;
	assert_int_equal(virtio_blk__set_limiter(f->blk, &rl), 0);
	h[0] = post_nth(f, 0, VIRTIO_BLK_T_IN, 512);
	h[1] = post_nth(f, 1, VIRTIO_BLK_T_OUT, 1024);
	h[2] = post_nth(f, 2, VIRTIO_BLK_T_FLUSH, 0);
	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(used_idx(f), 1);
	assert_int_equal(take_used(f, h[0]), 513);
	assert_int_equal(f->wakes, 1);
	assert_int_equal(f->wake_ns, 500 * MS);
	f->now += 500 * MS;
	virtio_blk__resume(f->blk);
	assert_int_equal(used_idx(f), 3);
	assert_int_equal(take_used(f, h[1]), 1);
	assert_int_equal(take_used(f, h[2]), 1);
	assert_int_equal(f->r.ram[STATUS_GPA + 1], VIRTIO_BLK_S_OK);
	assert_int_equal(f->r.ram[STATUS_GPA + 2], VIRTIO_BLK_S_OK);
}

/*
 * At run time: lifting the limit while a request waits asks for a wake-up
 * at once; a reset drops the wait (the ring is gone); no limit never
 * reads the clock.
 */
static void test_limiter_update(void **state)
{
	struct fixture *f = *state;
	struct rate_limiter_config rl = { .ops = { 1, 0, 1000000 } };
	unsigned int calls;
	uint16_t h;

	virtio_blk__set_throttle(f->blk, &fake_throttle, f);
	assert_int_equal(virtio_blk__set_limiter(f->blk, NULL), 0);
	calls = f->now_calls;
	h = post_nth(f, 0, VIRTIO_BLK_T_FLUSH, 0);
	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(take_used(f, h), 1);
	assert_int_equal(f->now_calls, calls);

	assert_int_equal(virtio_blk__set_limiter(f->blk, &rl), 0);
	h = post_nth(f, 1, VIRTIO_BLK_T_FLUSH, 0);
	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(take_used(f, h), 1);
	h = post_nth(f, 2, VIRTIO_BLK_T_FLUSH, 0);
	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(used_idx(f), 2);
	assert_int_equal(f->wakes, 1);
	assert_int_equal(f->wake_ns, 1000000 * MS);
	assert_int_equal(virtio_blk__set_limiter(f->blk, NULL), 0);
	assert_int_equal(f->wakes, 2);
	assert_int_equal(f->wake_ns, 1);
	virtio_blk__resume(f->blk);
	assert_int_equal(used_idx(f), 3);
	assert_int_equal(take_used(f, h), 1);

	/* Throttled, then the driver resets: the new ring is served. */
	assert_int_equal(virtio_blk__set_limiter(f->blk, &rl), 0);
	post_nth(f, 0, VIRTIO_BLK_T_FLUSH, 0); /* a full bucket: it goes */
	post_nth(f, 1, VIRTIO_BLK_T_FLUSH, 0);
	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(used_idx(f), 4);
	assert_int_equal(f->wakes, 3);
	assert_int_equal(virtio_blk__set_limiter(f->blk, NULL), 0);
	driver_init(f);
	h = post_nth(f, 0, VIRTIO_BLK_T_FLUSH, 0);
	calls = f->now_calls;
	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(used_idx(f), 1);
	assert_int_equal(take_used(f, h), 1);
	assert_int_equal(f->now_calls, calls);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_identity_and_config),
		T(test_out_then_in),
		T(test_large_transfer),
		T(test_status_shares_descriptor),
		T(test_flush),
		T(test_get_id),
		cmocka_unit_test(test_get_id_long_serial),
		cmocka_unit_test_setup_teardown(test_read_only, setup_ro,
						teardown),
		cmocka_unit_test_setup_teardown(test_host_io_error,
						setup_broken_fd, teardown),
		T(test_image_shrank),
		T(test_past_end),
		T(test_unaligned_length),
		T(test_unsupported),
		T(test_malformed),
		T(test_several_per_notify),
		T(test_broken_chain),
		T(test_raw_refuses_overlay_magic),
		cmocka_unit_test_setup_teardown(test_overlay_backing,
						setup_overlay, teardown),
		cmocka_unit_test_setup_teardown(test_overlay_read_only,
						setup_overlay_ro, teardown),
		T(test_replace_backing),
		cmocka_unit_test(test_create_args),
		T(test_limiter_ops),
		T(test_limiter_bytes),
		T(test_limiter_update),
#undef T
	};

	return cmocka_run_group_tests_name("virtio_blk", tests, NULL, NULL);
}
