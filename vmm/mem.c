// SPDX-License-Identifier: Apache-2.0
/* Creating and freeing guest RAM (see mem.h). */
#include "mem.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "../boot/layout.h"

#define PAGE_MASK_4K 0xfffULL

static void mem__layout(struct guest_mem *m, uint8_t *base, uint64_t bytes)
{
	uint64_t low =
		bytes < LAYOUT_MMIO_GAP_START ? bytes : LAYOUT_MMIO_GAP_START;

	m->region[0] =
		(struct guest_mem_region){ .gpa = 0, .size = low, .hva = base };
	m->nr_regions = 1;
	if (bytes > low) {
		m->region[1] = (struct guest_mem_region){
			.gpa = LAYOUT_MMIO_GAP_END,
			.size = bytes - low,
			.hva = base + low,
		};
		m->nr_regions = 2;
	}
	m->ram_bytes = bytes;
}

/* Guest RAM of @ram_bytes: anonymous (@fd -1) or the file @fd's pages. */
static int mem__map(struct guest_mem *m, uint64_t ram_bytes, int fd)
{
	void *p;

	memset(m, 0, sizeof(*m));
	if (ram_bytes < LAYOUT_RAM_MIN || ram_bytes > LAYOUT_RAM_MAX ||
	    (ram_bytes & PAGE_MASK_4K))
		return -EINVAL;
	p = mmap(NULL, ram_bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_NORESERVE | (fd < 0 ? MAP_ANONYMOUS : 0), fd,
		 0);
	if (p == MAP_FAILED)
		return -errno;
	m->map = p;
	m->map_bytes = ram_bytes;
	m->owned = 1;
	mem__layout(m, p, ram_bytes);
	return 0;
}

int mem__create(struct guest_mem *m, uint64_t ram_bytes)
{
	return mem__map(m, ram_bytes, -1);
}

int mem__map_file(struct guest_mem *m, uint64_t ram_bytes, int fd)
{
	return fd < 0 ? -EBADF : mem__map(m, ram_bytes, fd);
}

int mem__wrap(struct guest_mem *m, void *buf, uint64_t bytes)
{
	memset(m, 0, sizeof(*m));
	if (!buf || !bytes || bytes > LAYOUT_MMIO_GAP_START)
		return -EINVAL;
	m->map = buf;
	m->map_bytes = bytes;
	mem__layout(m, buf, bytes);
	return 0;
}

void mem__destroy(struct guest_mem *m)
{
	if (m->owned && m->map)
		munmap(m->map, m->map_bytes);
	memset(m, 0, sizeof(*m));
}
