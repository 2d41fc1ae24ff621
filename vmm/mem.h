/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Guest memory, the VMM's part: creating guest RAM (anonymous, or a
 * snapshot's memory file mapped MAP_PRIVATE) laid out around the MMIO gap
 * (boot/layout.h), and freeing it.  What devices and loaders use, struct
 * guest_mem and THE checked translation guest_mem__ptr(), is at the
 * ground floor: devices/guest_mem.h, included here.  No ioctl here either
 * (kvm.c registers the regions as KVM memslots).
 */
#ifndef EMBER_VMM_MEM_H
#define EMBER_VMM_MEM_H

#include <stdint.h>

#include "../devices/guest_mem.h"

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

#endif /* EMBER_VMM_MEM_H */
