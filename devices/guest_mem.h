/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Guest memory as devices and loaders see it: the host mapping of guest
 * RAM, its regions, and THE checked guest-physical -> host-virtual
 * translation every guest address goes through (DESIGN: "one helper that
 * checks gpa + len against the memslots without overflow").
 *
 * Ground floor, with le.h and fileio.h: libc only, no ioctl, no KVM, so
 * that devices/, boot/ and snapshot/ code using it is unit-testable and
 * fuzzable.  Creating, mapping and destroying guest memory is the VMM's
 * (vmm/mem.h); so is registering the regions as KVM memslots (vmm/kvm.c).
 */
#ifndef EMBER_DEVICES_GUEST_MEM_H
#define EMBER_DEVICES_GUEST_MEM_H

#include <stddef.h>
#include <stdint.h>

#define GUEST_MEM_MAX_REGIONS 2

/* One contiguous range of guest-physical RAM backed by host memory. */
struct guest_mem_region {
	uint64_t gpa; /* guest-physical start, page aligned */
	uint64_t size; /* bytes, page aligned, > 0 */
	uint8_t *hva; /* host address of gpa */
};

/* Guest RAM; filled by vmm/mem.h's mem__create() and friends. */
struct guest_mem {
	struct guest_mem_region region[GUEST_MEM_MAX_REGIONS];
	unsigned int nr_regions;
	uint64_t ram_bytes; /* total RAM, sum of region sizes */
	void *map; /* the one host mapping behind all regions */
	size_t map_bytes;
	int owned; /* map was created by mem__create */
};

/*
 * guest_mem__ptr() - THE checked translation: the host address of the
 * guest range [@gpa, @gpa + @len), or NULL unless the whole range lies
 * inside a single RAM region.  Overflow of @gpa + @len is checked; @len 0
 * is accepted for any @gpa inside or at the end of a region.  The pointer
 * is valid until the memory is destroyed (mem__destroy()).
 */
void *guest_mem__ptr(const struct guest_mem *m, uint64_t gpa, uint64_t len);

/*
 * guest_mem__read()/guest_mem__write() - copy @len bytes between guest
 * RAM at @gpa and host memory.  A range may span regions only where they
 * are contiguous in guest-physical space (they never are in ember's
 * layout).  Return 0, or -EFAULT if any byte is outside guest RAM
 * (nothing copied).
 */
int guest_mem__read(const struct guest_mem *m, uint64_t gpa, void *dst,
		    uint64_t len);
int guest_mem__write(const struct guest_mem *m, uint64_t gpa, const void *src,
		     uint64_t len);

/*
 * guest_mem__low_ram_end() - end (exclusive) of the RAM region at GPA 0,
 * the highest address below the MMIO gap that holds RAM.
 */
uint64_t guest_mem__low_ram_end(const struct guest_mem *m);

#endif /* EMBER_DEVICES_GUEST_MEM_H */
