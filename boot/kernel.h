/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kernel image loaders: ELF vmlinux and bzImage, for the Linux x86 64-bit
 * boot protocol (Documentation/x86/boot.rst, "64-bit Boot Protocol").
 * Pure: they parse a file already read into memory and copy it into guest
 * RAM through devices/guest_mem.h, so they can be unit-tested and fuzzed.
 */
#ifndef EMBER_BOOT_KERNEL_H
#define EMBER_BOOT_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include <asm/bootparam.h>

#include "../devices/guest_mem.h"

enum kernel_format {
	KERNEL_FORMAT_ELF = 1, /* uncompressed vmlinux, ELF64 x86_64 */
	KERNEL_FORMAT_BZIMAGE, /* compressed bzImage, boot protocol >= 2.12 */
};

/* What a loader leaves in guest RAM, for the zero page and the vCPU. */
struct kernel_image {
	enum kernel_format format;
	uint64_t entry; /* guest-physical 64-bit entry point */
	uint64_t load_start; /* guest-physical first byte loaded */
	uint64_t load_end; /* guest-physical end (exclusive) of what the
				 * kernel needs: loaded bytes, or for a bzImage
				 * pref_address + init_size */
	/*
	 * bzImage: the image's setup_header (boot.rst: copied from offset
	 * 0x1f1 of the file into the zero page).  ELF: zeroed, then the
	 * fields a loader must set are filled by zeropage__build().
	 */
	struct setup_header hdr;
	/*
	 * Set when a loader returns -EINVAL: which check refused the image,
	 * a static string for one error line ("truncated: ...").  NULL
	 * otherwise.
	 */
	const char *why;
};

/*
 * Where a loader reads an image from.  @read copies [@off, @off + @len),
 * which the loader has checked lies inside @size, to @dst and returns 0 or
 * a negative errno (-EIO for a file that shrank under it).  Reading a file
 * with it costs one copy, straight into guest RAM, and only of the bytes
 * the guest needs.
 */
struct kernel_src {
	uint64_t size; /* bytes in the image */
	int (*read)(const struct kernel_src *s, uint64_t off, void *dst,
		    uint64_t len);
	const void *buf; /* for kernel__src_buffer() */
	int fd; /* for a caller's file source */
};

/* kernel__src_buffer() - a source over @len bytes at @buf (not owned). */
void kernel__src_buffer(struct kernel_src *s, const void *buf, size_t len);

/*
 * kernel__probe() - which format is @buf (@len bytes)?
 * Returns KERNEL_FORMAT_ELF or KERNEL_FORMAT_BZIMAGE, or -ENOEXEC if it is
 * neither (wrong magic, 32-bit ELF, non-x86_64 machine, bzImage without
 * XLF_KERNEL_64 or with boot protocol < 2.12).
 */
int kernel__probe(const void *buf, size_t len);

/*
 * kernel__load() - copy the kernel in @buf (@len bytes, caller-owned, read
 * only) into guest RAM @m and describe it in @out.
 * ELF: every PT_LOAD segment goes to its p_paddr (p_filesz bytes copied,
 * the rest up to p_memsz zeroed); entry is e_entry (vmlinux's physical
 * startup_64), which must lie inside a PT_LOAD segment; at most 64 program
 * headers; all segments are checked before any is copied.  bzImage: the protected-mode part (after (setup_sects+1)*512
 * bytes, setup_sects 0 meaning 4) goes to LAYOUT_BZIMAGE_GPA and the entry is
 * LAYOUT_BZIMAGE_GPA + 0x200 (boot.rst: 64-bit entry at +0x200), so that
 * part must be longer than 0x200 bytes, and load_end (see above) must not
 * pass the end of low RAM.
 * Returns 0; -ENOEXEC for neither format; -EINVAL for a truncated or
 * malformed image (offsets or sizes past the file, overlapping boot data
 * below LAYOUT_HIGH_MEM_GPA, overflow), with @out->why naming the check;
 * -E2BIG if it does not fit in RAM.
 * On error guest RAM may hold partial data but nothing outside it is
 * touched.
 */
int kernel__load(const struct guest_mem *m, const void *buf, size_t len,
		 struct kernel_image *out);

/*
 * kernel__load_src() - kernel__load() reading through @src; a failing
 * @src->read is returned as it is.
 */
int kernel__load_src(const struct guest_mem *m, const struct kernel_src *src,
		     struct kernel_image *out);

#endif /* EMBER_BOOT_KERNEL_H */
