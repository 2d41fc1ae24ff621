// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: devices/virtq.c against a hostile driver.  The input
 * picks the queue size, EVENT_IDX and the device's starting indices, and
 * fills a small guest RAM holding the rings, tables and buffers; the
 * target then pops, reads, writes and pushes like a device would.  Any
 * crash or sanitizer report is a bug: nothing outside guest RAM may be
 * touched, whatever the rings say.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "devices/virtq.h"
#include "vmm/mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_RAM_BYTES 0x10000
#define FUZZ_DESC      0x0000 /* up to 256 * 16 bytes */
#define FUZZ_AVAIL     0x1000
#define FUZZ_USED      0x1400
#define FUZZ_MAX_POPS  (2 * VIRTQ_MAX_SIZE)
#define FUZZ_HDR_BYTES 6

/* Static: a chain is ~4 KiB and RAM 64 KiB, reused across inputs. */
static uint8_t ram[FUZZ_RAM_BYTES] __attribute__((aligned(4096)));
static struct virtq_chain chain;
static uint8_t scratch[FUZZ_RAM_BYTES];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct guest_mem m;
	struct virtq q;
	uint64_t n, off;
	unsigned int i;
	int r;

	if (size < FUZZ_HDR_BYTES)
		return 0;
	if (mem__wrap(&m, ram, sizeof(ram)))
		return 0;
	memset(&q, 0, sizeof(q));
	/* Any size 0..511, valid or not: the walker must cope. */
	q.size = data[0] & 0x80 ? (uint16_t)1 << (data[0] & 0x0f) :
				  (uint16_t)data[0] << 1 | (data[1] & 1);
	q.event_idx = data[1] & 2;
	q.ready = true;
	q.desc_gpa = FUZZ_DESC;
	q.avail_gpa = FUZZ_AVAIL;
	q.used_gpa = FUZZ_USED;
	q.last_avail = (uint16_t)(data[2] | data[3] << 8);
	q.used_idx = (uint16_t)(data[4] | data[5] << 8);
	q.signalled_used = q.used_idx;
	q.signalled_valid = data[1] & 4;
	data += FUZZ_HDR_BYTES;
	size -= FUZZ_HDR_BYTES;
	memset(ram, 0, sizeof(ram));
	memcpy(ram, data, size < sizeof(ram) ? size : sizeof(ram));

	virtq__valid(&q, &m);
	for (i = 0; i < FUZZ_MAX_POPS; i++) {
		r = virtq__pop(&q, &m, &chain);
		if (r == 0)
			break;
		if (r < 0) {
			if (chain.head < q.size)
				virtq__push(&q, &m, chain.head, 0);
			else if (chain.head == UINT16_MAX)
				break; /* nothing consumed: needs reset */
			continue;
		}
		/* Read all, then write in two pieces from an odd offset. */
		off = chain.out_bytes ? (i * 7) % chain.out_bytes : 0;
		n = virtq__read(&chain, &m, off, scratch, sizeof(scratch));
		if (n > chain.out_bytes - off)
			__builtin_trap();
		n = virtq__write(&chain, &m, 1, scratch, sizeof(scratch));
		n += virtq__write(&chain, &m, 0, scratch, 1);
		if (n > chain.in_bytes)
			__builtin_trap();
		virtq__push(&q, &m, chain.head, (uint32_t)n);
		if (i & 1)
			virtq__needs_interrupt(&q, &m);
	}
	virtq__needs_interrupt(&q, &m);
	return 0;
}
