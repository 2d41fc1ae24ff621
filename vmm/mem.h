/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Guest memory: the host mapping of guest RAM and the ONE checked
 * guest-physical -> host-virtual helper every other module goes through.
 * Pure: no ioctl here (vm.c registers the regions as KVM memslots), so
 * boot/ and devices/ code using it is unit-testable and fuzzable.
 */
#ifndef EMBER_VMM_MEM_H
#define EMBER_VMM_MEM_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MEM_MAX_REGIONS 2

/* One contiguous range of guest-physical RAM backed by host memory. */
struct mem_region {
	uint64_t gpa; /* guest-physical start, page aligned */
	uint64_t size; /* bytes, page aligned, > 0 */
	uint8_t *hva; /* host address of gpa */
};

struct guest_mem {
	struct mem_region region[MEM_MAX_REGIONS];
	unsigned int nr_regions;
	uint64_t ram_bytes; /* total RAM, sum of region sizes */
	void *map; /* the one host mapping behind all regions */
	size_t map_bytes;
	int owned; /* map was created by mem__create */
};

/*
 * mem__create() - map @ram_bytes of anonymous guest RAM (MAP_NORESERVE,
 * zero-filled) and lay it out: [0, min(ram, LAYOUT_MMIO_GAP_START)) and the
 * rest from 4 GiB (layout.h).  @ram_bytes must be a multiple of 4 KiB within
 * [LAYOUT_RAM_MIN, LAYOUT_RAM_MAX].
 * Returns 0, -EINVAL for a bad size, or -errno from mmap.  The caller owns
 * the mapping and frees it with mem__destroy().
 */
int mem__create(struct guest_mem *m, uint64_t ram_bytes);

/*
 * mem__map_file() - guest RAM of @ram_bytes (as mem__create()) mapped
 * MAP_PRIVATE from the file @fd at offset 0, which must be at least that
 * long (a snapshot's raw memory file): pages load on first touch, the
 * guest's writes stay in this process, and every VM mapping the file
 * shares the pages it has not changed.  @fd may be closed afterwards.
 * Returns 0, -EINVAL for a bad size, or -errno from mmap.
 */
int mem__map_file(struct guest_mem *m, uint64_t ram_bytes, int fd);

/*
 * mem__wrap() - describe caller-owned host memory @buf of @bytes as guest
 * RAM from GPA 0 (one region; @bytes <= LAYOUT_MMIO_GAP_START).  For unit
 * tests and fuzzers.  mem__destroy() will not free @buf.
 * Returns 0 or -EINVAL.
 */
int mem__wrap(struct guest_mem *m, void *buf, uint64_t bytes);

/* mem__destroy() - unmap what mem__create() mapped; safe on a zeroed m. */
void mem__destroy(struct guest_mem *m);

/*
 * mem__ptr() - THE checked translation: the host address of the guest
 * range [@gpa, @gpa + @len), or NULL unless the whole range lies inside a
 * single RAM region.  Overflow of @gpa + @len is checked; @len 0 is
 * accepted for any @gpa inside or at the end of a region.  The pointer is
 * valid until mem__destroy().
 */
void *mem__ptr(const struct guest_mem *m, uint64_t gpa, uint64_t len);

/*
 * mem__read()/mem__write() - copy @len bytes between guest RAM at @gpa and
 * host memory.  A range may span regions only where they are contiguous in
 * guest-physical space (they never are in ember's layout).
 * Return 0, or -EFAULT if any byte is outside guest RAM (nothing copied).
 */
int mem__read(const struct guest_mem *m, uint64_t gpa, void *dst, uint64_t len);
int mem__write(const struct guest_mem *m, uint64_t gpa, const void *src,
	       uint64_t len);

/*
 * mem__low_ram_end() - end (exclusive) of the RAM region at GPA 0, the
 * highest address below the MMIO gap that holds RAM.
 */
uint64_t mem__low_ram_end(const struct guest_mem *m);

/*
 * Little-endian values at any alignment: what virtio structures, device
 * config space and x86 boot images hold.  @p must point to 2, 4 or 8
 * readable (writable) bytes; the caller checked the range (mem__ptr()).
 */
static inline uint16_t mem__get_le16(const void *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

static inline uint32_t mem__get_le32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static inline uint64_t mem__get_le64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static inline void mem__put_le16(void *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void mem__put_le32(void *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void mem__put_le64(void *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

#endif /* EMBER_VMM_MEM_H */
