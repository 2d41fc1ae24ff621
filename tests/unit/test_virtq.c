// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for devices/virtq.c: the split virtqueue walker.  The test
 * plays the driver: it lays out a descriptor table, avail and used rings
 * in a small guest RAM, adds chains, publishes avail->idx and reads the
 * used ring back.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../devices/virtq.h"
#include "../../vmm/mem.h"
#include "test_util.h"

#define RAM_BYTES 0x10000ULL
#define QSIZE	  8

/* Guest-physical layout of the queue under test. */
#define DESC	0x1000ULL
#define AVAIL	0x2000ULL
#define USED	0x3000ULL
#define INDIR	0x4000ULL /* an indirect table */
#define INDIR2	0x5000ULL /* a second one, for nesting */
#define BUF	0x8000ULL /* data buffers from here */
#define OUTSIDE (RAM_BYTES + 0x1000)

#define D_R 0
#define D_W VIRTQ_DESC_F_WRITE
#define D_N VIRTQ_DESC_F_NEXT
#define D_I VIRTQ_DESC_F_INDIRECT

struct fixture {
	struct test_ram r; /* first: see test_ram__new_in() */
	struct virtq q;
	struct virtq_chain c;
	uint16_t avail_idx; /* the driver's next avail->idx */
};

static int setup(void **state)
{
	struct fixture *f =
		test_ram__new_in(sizeof(struct fixture), RAM_BYTES, 0);

	if (!f)
		return -1;
	f->q = (struct virtq){
		.size = QSIZE,
		.ready = true,
		.desc_gpa = DESC,
		.avail_gpa = AVAIL,
		.used_gpa = USED,
	};
	*state = f;
	return 0;
}

/* Write descriptor @i of the table at @table. */
static void desc(struct fixture *f, uint64_t table, uint16_t i, uint64_t addr,
		 uint32_t len, uint16_t flags, uint16_t next)
{
	uint8_t *p = f->r.ram + table + 16 * (uint64_t)i;

	wr64(p, 0, addr);
	wr32(p, 8, len);
	wr16(p, 12, flags);
	wr16(p, 14, next);
}

/* Set avail->idx (what a driver publishes). */
static void avail_idx_set(struct fixture *f, uint16_t idx)
{
	f->avail_idx = idx;
	wr16(f->r.ram, AVAIL + 2, idx);
}

/* Make chain @head available and publish the new avail->idx. */
static void avail_add(struct fixture *f, uint16_t head)
{
	wr16(f->r.ram, AVAIL + 4 + 2 * (f->avail_idx % f->q.size), head);
	avail_idx_set(f, f->avail_idx + 1);
}

static uint16_t used_idx(struct fixture *f)
{
	return rd16(f->r.ram, USED + 2);
}

static uint32_t used_id(struct fixture *f, uint16_t slot)
{
	return rd32(f->r.ram, USED + 4 + 8 * (slot % f->q.size));
}

static uint32_t used_len(struct fixture *f, uint16_t slot)
{
	return rd32(f->r.ram, USED + 4 + 8 * (slot % f->q.size) + 4);
}

static void used_event_set(struct fixture *f, uint16_t v)
{
	wr16(f->r.ram, AVAIL + 4 + 2 * f->q.size, v);
}

static uint16_t avail_event(struct fixture *f)
{
	return rd16(f->r.ram, USED + 4 + 8 * f->q.size);
}

/* A one-descriptor chain at desc @i: @len readable bytes at @addr. */
static void one(struct fixture *f, uint16_t i, uint64_t addr, uint32_t len,
		uint16_t flags)
{
	desc(f, DESC, i, addr, len, flags, 0);
	avail_add(f, i);
}

/* Pop expecting -EINVAL with the entry consumed and c.head == @head. */
static void expect_broken(struct fixture *f, uint16_t head)
{
	uint16_t last = f->q.last_avail;

	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), -EINVAL);
	assert_int_equal(f->c.head, head);
	assert_int_equal(f->q.last_avail, (uint16_t)(last + 1));
	assert_int_equal(f->c.nr_segs, 0);
	/* The caller may return it with length 0. */
	if (head < f->q.size) {
		assert_int_equal(virtq__push(&f->q, &f->r.m, head, 0), 0);
		assert_int_equal(used_id(f, f->q.used_idx - 1), head);
		assert_int_equal(used_len(f, f->q.used_idx - 1), 0);
	}
}

static void test_round_trip(void **state)
{
	struct fixture *f = *state;
	uint8_t hdr[16], data[512], st = 0x5a, got[16];
	unsigned int i;

	for (i = 0; i < sizeof(hdr); i++)
		hdr[i] = 0x10 + i;
	for (i = 0; i < sizeof(data); i++)
		data[i] = i * 7;
	memcpy(f->r.ram + BUF, hdr, sizeof(hdr));
	desc(f, DESC, 3, BUF, 16, D_R | D_N, 5);
	desc(f, DESC, 5, BUF + 0x100, 512, D_W | D_N, 1);
	desc(f, DESC, 1, BUF + 0x400, 1, D_W, 0);
	avail_add(f, 3);

	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 1);
	assert_int_equal(f->q.last_avail, 1);
	assert_int_equal(f->c.head, 3);
	assert_int_equal(f->c.nr_segs, 3);
	assert_int_equal(f->c.out_bytes, 16);
	assert_int_equal(f->c.in_bytes, 513);
	assert_int_equal(f->c.seg[0].gpa, BUF);
	assert_int_equal(f->c.seg[0].len, 16);
	assert_false(f->c.seg[0].write);
	assert_int_equal(f->c.seg[1].gpa, BUF + 0x100);
	assert_int_equal(f->c.seg[1].len, 512);
	assert_true(f->c.seg[1].write);
	assert_int_equal(f->c.seg[2].gpa, BUF + 0x400);
	assert_int_equal(f->c.seg[2].len, 1);
	assert_true(f->c.seg[2].write);

	assert_int_equal(virtq__read(&f->c, &f->r.m, 0, got, sizeof(got)), 16);
	assert_memory_equal(got, hdr, sizeof(hdr));
	assert_int_equal(virtq__write(&f->c, &f->r.m, 0, data, sizeof(data)),
			 512);
	assert_int_equal(virtq__write(&f->c, &f->r.m, 512, &st, 1), 1);
	assert_memory_equal(f->r.ram + BUF + 0x100, data, sizeof(data));
	assert_int_equal(f->r.ram[BUF + 0x400], 0x5a);

	assert_int_equal(virtq__push(&f->q, &f->r.m, f->c.head, 513), 0);
	assert_int_equal(f->q.used_idx, 1);
	assert_int_equal(used_idx(f), 1);
	assert_int_equal(used_id(f, 0), 3);
	assert_int_equal(used_len(f, 0), 513);

	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 0);
	assert_int_equal(f->q.last_avail, 1);
}

static void test_read_write_segments(void **state)
{
	struct fixture *f = *state;
	uint8_t buf[64], in[16];
	unsigned int i;

	for (i = 0; i < 16; i++)
		f->r.ram[BUF + i] = 'a' + i;
	/* Readable: 4 bytes "abcd", then 6 bytes "ghijkl". */
	desc(f, DESC, 0, BUF, 4, D_R | D_N, 1);
	desc(f, DESC, 1, BUF + 6, 6, D_R | D_N, 2);
	/* Writable: 5 bytes at 0x200, then 3 bytes at 0x300. */
	desc(f, DESC, 2, BUF + 0x200, 5, D_W | D_N, 3);
	desc(f, DESC, 3, BUF + 0x300, 3, D_W, 0);
	avail_add(f, 0);
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 1);
	assert_int_equal(f->c.out_bytes, 10);
	assert_int_equal(f->c.in_bytes, 8);

	/* Across the boundary, short at the end of the stream. */
	memset(buf, 0, sizeof(buf));
	assert_int_equal(virtq__read(&f->c, &f->r.m, 2, buf, sizeof(buf)), 8);
	assert_memory_equal(buf, "cdghijkl", 8);
	assert_int_equal(buf[8], 0);
	/* Starting in the second segment, bounded by len. */
	memset(buf, 0, sizeof(buf));
	assert_int_equal(virtq__read(&f->c, &f->r.m, 5, buf, 3), 3);
	assert_memory_equal(buf, "hij", 3);
	/* Exactly at and past the end. */
	assert_int_equal(virtq__read(&f->c, &f->r.m, 10, buf, 1), 0);
	assert_int_equal(virtq__read(&f->c, &f->r.m, 1000, buf, 1), 0);
	assert_int_equal(virtq__read(&f->c, &f->r.m, 0, buf, 0), 0);

	/* Writes never land in readable segments or past the end. */
	for (i = 0; i < sizeof(in); i++)
		in[i] = 'A' + i;
	memset(f->r.ram + BUF + 0x1f0, 0xee, 0x120);
	assert_int_equal(virtq__write(&f->c, &f->r.m, 3, in, sizeof(in)), 5);
	assert_int_equal(f->r.ram[BUF + 0x202], 0xee);
	assert_memory_equal(f->r.ram + BUF + 0x203, "AB", 2);
	assert_memory_equal(f->r.ram + BUF + 0x300, "CDE", 3);
	assert_int_equal(f->r.ram[BUF + 0x303], 0xee);
	assert_int_equal(f->r.ram[BUF + 0x1ff], 0xee);
	assert_int_equal(virtq__write(&f->c, &f->r.m, 0, in, 2), 2);
	assert_memory_equal(f->r.ram + BUF + 0x200, "AB", 2);
	assert_int_equal(virtq__write(&f->c, &f->r.m, 8, in, 4), 0);
	/* The readable bytes are untouched. */
	assert_memory_equal(f->r.ram + BUF, "abcd", 4);
}

static void test_empty(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 0);
	assert_int_equal(f->q.last_avail, 0);
	one(f, 0, BUF, 8, D_R);
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 1);
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 0);
	assert_int_equal(f->q.last_avail, 1);
}

static void test_wrap(void **state)
{
	struct fixture *f = *state;
	uint16_t start = 65534;
	unsigned int k;

	f->q.last_avail = start;
	f->q.used_idx = start;
	avail_idx_set(f, start);
	for (k = 0; k < 4; k++) {
		uint16_t head = (k * 3) % QSIZE;

		one(f, head, BUF + 0x100 * k, 16 + k, D_W);
		assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 1);
		assert_int_equal(f->c.head, head);
		assert_int_equal(f->c.in_bytes, 16 + k);
		assert_int_equal(virtq__push(&f->q, &f->r.m, head, k + 1), 0);
		assert_int_equal(used_idx(f), (uint16_t)(start + k + 1));
		assert_int_equal(used_id(f, start + k), head);
		assert_int_equal(used_len(f, start + k), k + 1);
	}
	assert_int_equal(f->q.last_avail, 2);
	assert_int_equal(f->q.used_idx, 2);
	/* 65534 % 8 = 6: slots 6, 7, 0, 1. */
	assert_int_equal(rd32(f->r.ram, USED + 4 + 8 * 6), 0);
	assert_int_equal(rd32(f->r.ram, USED + 4 + 8 * 1), 1);
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 0);

	/* A full ring: exactly size ahead is fine. */
	for (k = 0; k < QSIZE; k++)
		one(f, k, BUF, 1, D_R);
	for (k = 0; k < QSIZE; k++)
		assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 1);
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 0);
}

static void test_avail_idx_insane(void **state)
{
	struct fixture *f = *state;

	f->q.last_avail = 65530;
	desc(f, DESC, 0, BUF, 8, D_R, 0);
	/* size + 1 ahead, across the 16-bit wrap. */
	avail_idx_set(f, (uint16_t)(65530 + QSIZE + 1));
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), -EINVAL);
	assert_int_equal(f->q.last_avail, 65530);
	assert_int_equal(f->c.head, UINT16_MAX);
	/* Behind last_avail looks like 65535 ahead. */
	avail_idx_set(f, 65529);
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), -EINVAL);
	assert_int_equal(f->q.last_avail, 65530);
	/* Back to sane: the ring works again. */
	avail_idx_set(f, 65531);
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 1);
}

static void test_head_out_of_range(void **state)
{
	struct fixture *f = *state;

	avail_add(f, QSIZE);
	expect_broken(f, QSIZE);
	avail_add(f, 0xffff);
	expect_broken(f, 0xffff);
	/* The next entry is still served. */
	one(f, 2, BUF, 4, D_R);
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 1);
	assert_int_equal(f->c.head, 2);
}

static void test_next_out_of_range(void **state)
{
	struct fixture *f = *state;

	desc(f, DESC, 0, BUF, 8, D_R | D_N, 1);
	desc(f, DESC, 1, BUF, 8, D_R | D_N, QSIZE);
	avail_add(f, 0);
	expect_broken(f, 0);
}

static void test_loop(void **state)
{
	struct fixture *f = *state;

	desc(f, DESC, 4, BUF, 8, D_R | D_N, 4);
	avail_add(f, 4);
	expect_broken(f, 4);
	desc(f, DESC, 0, BUF, 8, D_R | D_N, 1);
	desc(f, DESC, 1, BUF, 8, D_R | D_N, 2);
	desc(f, DESC, 2, BUF, 8, D_R | D_N, 0);
	avail_add(f, 0);
	expect_broken(f, 0);
	/* A loop of zero-length descriptors must end too. */
	desc(f, DESC, 5, BUF, 8, D_R | D_N, 6);
	desc(f, DESC, 6, BUF, 0, D_R | D_N, 7);
	desc(f, DESC, 7, BUF, 0, D_R | D_N, 6);
	avail_add(f, 5);
	expect_broken(f, 5);
}

static void test_chain_length(void **state)
{
	struct fixture *f = *state;
	unsigned int k;

	/* Exactly size descriptors: fine. */
	for (k = 0; k < QSIZE; k++)
		desc(f, DESC, k, BUF + k, 1, D_R | (k + 1 < QSIZE ? D_N : 0),
		     k + 1);
	avail_add(f, 0);
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 1);
	assert_int_equal(f->c.nr_segs, QSIZE);
	assert_int_equal(f->c.out_bytes, QSIZE);

	/* One direct + (size - 1) indirect: fine; one more is too many. */
	desc(f, DESC, 0, BUF, 1, D_R | D_N, 1);
	desc(f, DESC, 1, INDIR, 16 * QSIZE, D_I, 0);
	for (k = 0; k < QSIZE; k++)
		desc(f, INDIR, k, BUF + k, 1, D_R | (k + 1 < QSIZE ? D_N : 0),
		     k + 1);
	desc(f, INDIR, QSIZE - 2, BUF, 1, D_R, 0);
	avail_add(f, 0);
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 1);
	assert_int_equal(f->c.nr_segs, QSIZE);
	desc(f, INDIR, QSIZE - 2, BUF, 1, D_R | D_N, QSIZE - 1);
	avail_add(f, 0);
	expect_broken(f, 0);
}

static void test_zero_length(void **state)
{
	struct fixture *f = *state;

	/* A lone zero-length descriptor: zero total. */
	one(f, 0, BUF, 0, D_W);
	expect_broken(f, 0);
	/* All zero. */
	desc(f, DESC, 1, BUF, 0, D_R | D_N, 2);
	desc(f, DESC, 2, BUF, 0, D_W, 0);
	avail_add(f, 1);
	expect_broken(f, 1);
	/* A zero-length one inside a non-empty chain is skipped. */
	desc(f, DESC, 3, BUF, 4, D_R | D_N, 4);
	desc(f, DESC, 4, OUTSIDE, 0, D_R | D_N, 5);
	desc(f, DESC, 5, BUF + 0x10, 2, D_W, 0);
	avail_add(f, 3);
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 1);
	assert_int_equal(f->c.nr_segs, 2);
	assert_int_equal(f->c.seg[1].gpa, BUF + 0x10);
	assert_int_equal(f->c.out_bytes, 4);
	assert_int_equal(f->c.in_bytes, 2);
}

static void test_outside_ram(void **state)
{
	struct fixture *f = *state;

	/* Ends exactly at the end of RAM: fine. */
	one(f, 0, RAM_BYTES - 8, 8, D_W);
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 1);
	/* One byte over. */
	one(f, 0, RAM_BYTES - 8, 9, D_W);
	expect_broken(f, 0);
	/* Wholly outside. */
	one(f, 0, OUTSIDE, 1, D_R);
	expect_broken(f, 0);
	/* gpa + len overflows 64 bits. */
	one(f, 0, UINT64_MAX - 3, 8, D_R);
	expect_broken(f, 0);
	/* The second segment of a chain. */
	desc(f, DESC, 1, BUF, 8, D_R | D_N, 2);
	desc(f, DESC, 2, RAM_BYTES - 4, 0xffffffff, D_W, 0);
	avail_add(f, 1);
	expect_broken(f, 1);
}

static void test_read_after_write(void **state)
{
	struct fixture *f = *state;

	desc(f, DESC, 0, BUF, 8, D_W | D_N, 1);
	desc(f, DESC, 1, BUF + 8, 8, D_R, 0);
	avail_add(f, 0);
	expect_broken(f, 0);
	/* Across the indirect boundary too. */
	desc(f, DESC, 2, BUF, 8, D_W | D_N, 3);
	desc(f, DESC, 3, INDIR, 16, D_I, 0);
	desc(f, INDIR, 0, BUF + 8, 8, D_R, 0);
	avail_add(f, 2);
	expect_broken(f, 2);
}

static void test_indirect_valid(void **state)
{
	struct fixture *f = *state;

	/* The WRITE flag on the indirect descriptor itself is ignored. */
	desc(f, DESC, 6, INDIR, 3 * 16, D_I | D_W, 0);
	desc(f, INDIR, 0, BUF, 16, D_R | D_N, 2);
	desc(f, INDIR, 2, BUF + 0x100, 64, D_W | D_N, 1);
	desc(f, INDIR, 1, BUF + 0x200, 1, D_W, 0);
	avail_add(f, 6);
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 1);
	assert_int_equal(f->c.head, 6);
	assert_int_equal(f->c.nr_segs, 3);
	assert_int_equal(f->c.seg[0].gpa, BUF);
	assert_false(f->c.seg[0].write);
	assert_int_equal(f->c.seg[1].gpa, BUF + 0x100);
	assert_true(f->c.seg[1].write);
	assert_int_equal(f->c.seg[2].gpa, BUF + 0x200);
	assert_int_equal(f->c.out_bytes, 16);
	assert_int_equal(f->c.in_bytes, 65);

	/* Direct readable descriptors, then an indirect table. */
	desc(f, DESC, 0, BUF + 0x300, 4, D_R | D_N, 1);
	desc(f, DESC, 1, INDIR2, 16, D_I, 0);
	desc(f, INDIR2, 0, BUF + 0x400, 4, D_W, 0);
	avail_add(f, 0);
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 1);
	assert_int_equal(f->c.nr_segs, 2);
	assert_int_equal(f->c.seg[0].gpa, BUF + 0x300);
	assert_int_equal(f->c.seg[1].gpa, BUF + 0x400);
	assert_true(f->c.seg[1].write);

	/* A table of the largest length, size * 16. */
	desc(f, DESC, 2, INDIR, 16 * QSIZE, D_I, 0);
	desc(f, INDIR, 0, BUF, 4, D_R, 0);
	avail_add(f, 2);
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 1);
	assert_int_equal(f->c.nr_segs, 1);
}

static void test_indirect_invalid(void **state)
{
	struct fixture *f = *state;

	desc(f, INDIR, 0, BUF, 16, D_R, 0);
	desc(f, INDIR2, 0, BUF, 16, D_R, 0);

	/* INDIRECT together with NEXT. */
	desc(f, DESC, 1, BUF, 4, D_R, 0);
	desc(f, DESC, 0, INDIR, 16, D_I | D_N, 1);
	avail_add(f, 0);
	expect_broken(f, 0);
	/* Nested: an indirect descriptor inside the table. */
	desc(f, DESC, 0, INDIR, 16, D_I, 0);
	desc(f, INDIR, 0, INDIR2, 16, D_I, 0);
	avail_add(f, 0);
	expect_broken(f, 0);
	desc(f, INDIR, 0, BUF, 16, D_R, 0);
	/* Length 0, not a multiple of 16, larger than size * 16. */
	desc(f, DESC, 0, INDIR, 0, D_I, 0);
	avail_add(f, 0);
	expect_broken(f, 0);
	desc(f, DESC, 0, INDIR, 24, D_I, 0);
	avail_add(f, 0);
	expect_broken(f, 0);
	desc(f, DESC, 0, INDIR, 16 * (QSIZE + 1), D_I, 0);
	avail_add(f, 0);
	expect_broken(f, 0);
	/* Table not (wholly) in RAM, with and without overflow. */
	desc(f, DESC, 0, RAM_BYTES - 16, 32, D_I, 0);
	avail_add(f, 0);
	expect_broken(f, 0);
	desc(f, DESC, 0, UINT64_MAX - 15, 32, D_I, 0);
	avail_add(f, 0);
	expect_broken(f, 0);
	/* next past the table's own end (the table has 2 entries). */
	desc(f, DESC, 0, INDIR, 32, D_I, 0);
	desc(f, INDIR, 0, BUF, 16, D_R | D_N, 2);
	avail_add(f, 0);
	expect_broken(f, 0);
	/* A loop inside the table. */
	desc(f, INDIR, 0, BUF, 16, D_R | D_N, 1);
	desc(f, INDIR, 1, BUF, 16, D_R | D_N, 0);
	avail_add(f, 0);
	expect_broken(f, 0);
	/* A buffer in the table outside RAM. */
	desc(f, INDIR, 1, OUTSIDE, 16, D_R, 0);
	avail_add(f, 0);
	expect_broken(f, 0);
	/* And the same table, fixed, works. */
	desc(f, INDIR, 1, BUF, 16, D_R, 0);
	avail_add(f, 0);
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 1);
	assert_int_equal(f->c.nr_segs, 2);
}

static void test_bad_queue(void **state)
{
	struct fixture *f = *state;

	one(f, 0, BUF, 4, D_R);
	/* An unchecked size larger than struct virtq_chain can hold. */
	f->q.size = 2 * VIRTQ_MAX_SIZE;
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), -EINVAL);
	f->q.size = 0;
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), -EINVAL);
	assert_int_equal(virtq__push(&f->q, &f->r.m, 0, 0), -EFAULT);
	f->q.size = QSIZE;
	/* Rings that left RAM. */
	f->q.avail_gpa = OUTSIDE;
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), -EINVAL);
	assert_int_equal(f->q.last_avail, 0);
	f->q.avail_gpa = AVAIL;
	f->q.used_gpa = RAM_BYTES - 8;
	assert_int_equal(virtq__push(&f->q, &f->r.m, 0, 4), -EFAULT);
	assert_int_equal(f->q.used_idx, 0);
	/* With EVENT_IDX, pop needs the used ring for avail_event. */
	f->q.event_idx = true;
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), -EINVAL);
	assert_int_equal(f->q.last_avail, 0);
	f->q.used_gpa = USED;
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 1);
}

static void test_event_idx(void **state)
{
	struct fixture *f = *state;
	unsigned int k;

	f->q.event_idx = true;
	/* First call after reset: nothing is known, so interrupt. */
	assert_true(virtq__needs_interrupt(&f->q, &f->r.m));
	assert_true(f->q.signalled_valid);
	assert_int_equal(f->q.signalled_used, 0);
	assert_false(virtq__needs_interrupt(&f->q, &f->r.m));

	/* used_event 1: interrupt once used->idx passes 1 (i.e. is 2). */
	used_event_set(f, 1);
	assert_int_equal(virtq__push(&f->q, &f->r.m, 0, 0), 0);
	assert_false(virtq__needs_interrupt(&f->q, &f->r.m));
	assert_int_equal(f->q.signalled_used, 0);
	assert_int_equal(virtq__push(&f->q, &f->r.m, 0, 0), 0);
	assert_true(virtq__needs_interrupt(&f->q, &f->r.m));
	assert_int_equal(f->q.signalled_used, 2);
	/* Nothing new since: no interrupt. */
	assert_false(virtq__needs_interrupt(&f->q, &f->r.m));
	/* An event the device already passed: none. */
	assert_int_equal(virtq__push(&f->q, &f->r.m, 0, 0), 0);
	assert_false(virtq__needs_interrupt(&f->q, &f->r.m));
	/* Several pushes at once that jump over the event: one. */
	used_event_set(f, 4);
	for (k = 0; k < 3; k++)
		assert_int_equal(virtq__push(&f->q, &f->r.m, 0, 0), 0);
	assert_true(virtq__needs_interrupt(&f->q, &f->r.m));
	assert_int_equal(f->q.signalled_used, 6);

	/* Across the 16-bit wrap. */
	f->q.used_idx = 65534;
	f->q.signalled_used = 65534;
	used_event_set(f, 65535);
	assert_int_equal(virtq__push(&f->q, &f->r.m, 0, 0), 0);
	assert_false(virtq__needs_interrupt(&f->q, &f->r.m));
	assert_int_equal(virtq__push(&f->q, &f->r.m, 0, 0), 0);
	assert_int_equal(f->q.used_idx, 0);
	assert_true(virtq__needs_interrupt(&f->q, &f->r.m));
	assert_int_equal(f->q.signalled_used, 0);
	/* Not crossing across the wrap: event 1, old 65535, new 0. */
	f->q.used_idx = 65535;
	f->q.signalled_used = 65535;
	used_event_set(f, 1);
	assert_int_equal(virtq__push(&f->q, &f->r.m, 0, 0), 0);
	assert_false(virtq__needs_interrupt(&f->q, &f->r.m));
	assert_int_equal(virtq__push(&f->q, &f->r.m, 0, 0), 0);
	assert_int_equal(virtq__push(&f->q, &f->r.m, 0, 0), 0);
	assert_true(virtq__needs_interrupt(&f->q, &f->r.m));
	/* NO_INTERRUPT is ignored with EVENT_IDX. */
	wr16(f->r.ram, AVAIL, VIRTQ_AVAIL_F_NO_INTERRUPT);
	used_event_set(f, 2);
	assert_int_equal(virtq__push(&f->q, &f->r.m, 0, 0), 0);
	assert_true(virtq__needs_interrupt(&f->q, &f->r.m));
}

static void test_avail_event(void **state)
{
	struct fixture *f = *state;

	f->q.event_idx = true;
	f->q.last_avail = 100;
	avail_idx_set(f, 100);
	wr16(f->r.ram, USED + 4 + 8 * QSIZE, 7);
	/* Empty: ask to be notified of entry 100. */
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 0);
	assert_int_equal(avail_event(f), 100);
	one(f, 0, BUF, 4, D_R);
	one(f, 1, BUF, 4, D_R);
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 1);
	assert_int_equal(avail_event(f), 101);
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 1);
	assert_int_equal(avail_event(f), 102);
	/* Without EVENT_IDX the word is left alone. */
	f->q.event_idx = false;
	one(f, 2, BUF, 4, D_R);
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 1);
	assert_int_equal(avail_event(f), 102);
}

static void test_no_interrupt_flag(void **state)
{
	struct fixture *f = *state;

	/* used_event is ignored without EVENT_IDX. */
	used_event_set(f, 1000);
	assert_int_equal(virtq__push(&f->q, &f->r.m, 0, 0), 0);
	assert_true(virtq__needs_interrupt(&f->q, &f->r.m));
	assert_int_equal(f->q.signalled_used, 1);
	wr16(f->r.ram, AVAIL, VIRTQ_AVAIL_F_NO_INTERRUPT);
	assert_int_equal(virtq__push(&f->q, &f->r.m, 0, 0), 0);
	assert_false(virtq__needs_interrupt(&f->q, &f->r.m));
	assert_int_equal(f->q.signalled_used, 1);
	wr16(f->r.ram, AVAIL, 0);
	assert_true(virtq__needs_interrupt(&f->q, &f->r.m));
	assert_int_equal(f->q.signalled_used, 2);
	/* Ring gone: interrupt rather than risk a lost one. */
	wr16(f->r.ram, AVAIL, VIRTQ_AVAIL_F_NO_INTERRUPT);
	f->q.avail_gpa = OUTSIDE;
	assert_true(virtq__needs_interrupt(&f->q, &f->r.m));
}

static void test_valid(void **state)
{
	struct fixture *f = *state;
	struct virtq q = f->q;
	uint16_t s;

	assert_int_equal(virtq__valid(&q, &f->r.m), 0);
	for (s = 1; s <= VIRTQ_MAX_SIZE; s <<= 1) {
		q.size = s;
		assert_int_equal(virtq__valid(&q, &f->r.m), 0);
	}
	q.size = 0;
	assert_int_equal(virtq__valid(&q, &f->r.m), -EINVAL);
	q.size = 3;
	assert_int_equal(virtq__valid(&q, &f->r.m), -EINVAL);
	q.size = 2 * VIRTQ_MAX_SIZE;
	assert_int_equal(virtq__valid(&q, &f->r.m), -EINVAL);
	q.size = QSIZE;

	/* Alignment: desc 16, avail 2, used 4. */
	q.desc_gpa = DESC + 8;
	assert_int_equal(virtq__valid(&q, &f->r.m), -EINVAL);
	q.desc_gpa = DESC;
	q.avail_gpa = AVAIL + 1;
	assert_int_equal(virtq__valid(&q, &f->r.m), -EINVAL);
	q.avail_gpa = AVAIL + 2;
	assert_int_equal(virtq__valid(&q, &f->r.m), 0);
	q.used_gpa = USED + 2;
	assert_int_equal(virtq__valid(&q, &f->r.m), -EINVAL);
	q.used_gpa = USED + 4;
	assert_int_equal(virtq__valid(&q, &f->r.m), 0);

	/* Each area ending exactly at the end of RAM, then one slot more. */
	q.desc_gpa = RAM_BYTES - 16 * QSIZE;
	assert_int_equal(virtq__valid(&q, &f->r.m), 0);
	q.desc_gpa += 16;
	assert_int_equal(virtq__valid(&q, &f->r.m), -EINVAL);
	q.desc_gpa = UINT64_MAX - 15;
	assert_int_equal(virtq__valid(&q, &f->r.m), -EINVAL);
	q.desc_gpa = DESC;
	q.avail_gpa = RAM_BYTES - (6 + 2 * QSIZE);
	assert_int_equal(virtq__valid(&q, &f->r.m), 0);
	q.avail_gpa += 2; /* used_event would leave RAM */
	assert_int_equal(virtq__valid(&q, &f->r.m), -EINVAL);
	q.avail_gpa = AVAIL;
	q.used_gpa = RAM_BYTES - (8 + 8 * QSIZE); /* 4-aligned: 2 spare */
	assert_int_equal(virtq__valid(&q, &f->r.m), 0);
	q.used_gpa += 4; /* avail_event would leave RAM */
	assert_int_equal(virtq__valid(&q, &f->r.m), -EINVAL);
	q.used_gpa = OUTSIDE;
	assert_int_equal(virtq__valid(&q, &f->r.m), -EINVAL);
}

static void test_reset(void **state)
{
	struct fixture *f = *state;
	struct virtq zero;

	one(f, 0, BUF, 4, D_R);
	f->q.event_idx = true;
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), 1);
	assert_int_equal(virtq__push(&f->q, &f->r.m, 0, 4), 0);
	assert_true(virtq__needs_interrupt(&f->q, &f->r.m));
	virtq__reset(&f->q);
	memset(&zero, 0, sizeof(zero));
	assert_int_equal(f->q.size, 0);
	assert_false(f->q.ready);
	assert_false(f->q.event_idx);
	assert_int_equal(f->q.desc_gpa, 0);
	assert_int_equal(f->q.avail_gpa, 0);
	assert_int_equal(f->q.used_gpa, 0);
	assert_int_equal(f->q.last_avail, 0);
	assert_int_equal(f->q.used_idx, 0);
	assert_int_equal(f->q.signalled_used, 0);
	assert_false(f->q.signalled_valid);
	assert_memory_equal(&f->q, &zero, sizeof(zero));
	assert_int_equal(virtq__valid(&f->q, &f->r.m), -EINVAL);
	assert_int_equal(virtq__pop(&f->q, &f->r.m, &f->c), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, test_ram__teardown)
		T(test_round_trip),
		T(test_read_write_segments),
		T(test_empty),
		T(test_wrap),
		T(test_avail_idx_insane),
		T(test_head_out_of_range),
		T(test_next_out_of_range),
		T(test_loop),
		T(test_chain_length),
		T(test_zero_length),
		T(test_outside_ram),
		T(test_read_after_write),
		T(test_indirect_valid),
		T(test_indirect_invalid),
		T(test_bad_queue),
		T(test_event_idx),
		T(test_avail_event),
		T(test_no_interrupt_flag),
		T(test_valid),
		T(test_reset),
#undef T
	};

	return cmocka_run_group_tests_name("virtq", tests, NULL, NULL);
}
