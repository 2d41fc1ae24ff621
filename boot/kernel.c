// SPDX-License-Identifier: Apache-2.0
/*
 * ELF vmlinux and bzImage loaders (see kernel.h).  The image is untrusted:
 * every offset and size read from it is checked against the file length in
 * a form that cannot overflow before anything is used.
 */
#include "kernel.h"

#include <elf.h>
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "../devices/le.h"
#include "layout.h"

/*
 * vmlinux has a handful of program headers; a cap keeps a hostile image
 * from making us walk 65535 of them (PN_XNUM and above mean "extended
 * numbering", which no kernel uses).
 */
#define KERNEL_ELF_MAX_PHDRS 64

/* What the format checks and the bzImage setup_header need: the start. */
#define KERNEL_HEAD_BYTES 1024

/* Offsets in a bzImage file (boot.rst, "The real-mode kernel header"). */
#define BZ_HDR_OFF	       0x1f1 /* struct setup_header starts here */
#define BZ_SETUP_SECTS_OFF     0x1f1
#define BZ_BOOT_FLAG_OFF       0x1fe
#define BZ_JUMP_LEN_OFF	       0x201 /* 2nd byte of the short jmp */
#define BZ_HEADER_OFF	       0x202
#define BZ_VERSION_OFF	       0x206
#define BZ_XLOADFLAGS_OFF      0x236
#define BZ_BOOT_FLAG	       0xaa55
#define BZ_HEADER_MAGIC	       0x53726448 /* "HdrS" */
#define BZ_MIN_VERSION	       0x020c /* 2.12: xloadflags */
#define BZ_SECTOR	       512
#define BZ_DEFAULT_SETUP_SECTS 4
#define BZ_ENTRY64_OFF	       0x200
#define BZ_PARAGRAPH	       16 /* syssize unit */

/* True when [off, off + size) lies inside a buffer of @len bytes. */
static bool range_in(uint64_t off, uint64_t size, uint64_t len)
{
	return off <= len && size <= len - off;
}

static bool elf_has_magic(const uint8_t *p, size_t len)
{
	return len >= SELFMAG && memcmp(p, ELFMAG, SELFMAG) == 0;
}

/* The identity checks; -ENOEXEC means "not a kernel we can boot". */
static int elf_check_ident(const Elf64_Ehdr *eh)
{
	if (eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh->e_ident[EI_VERSION] != EV_CURRENT ||
	    eh->e_machine != EM_X86_64 || eh->e_type != ET_EXEC)
		return -ENOEXEC;
	return 0;
}

static bool bz_has_magic(const uint8_t *p, size_t len)
{
	return len >= BZ_HEADER_OFF + 4 &&
	       le__get16(p + BZ_BOOT_FLAG_OFF) == BZ_BOOT_FLAG &&
	       le__get32(p + BZ_HEADER_OFF) == BZ_HEADER_MAGIC;
}

/*
 * After bz_has_magic(): -EINVAL if the fields we test are past the end,
 * -ENOEXEC for a protocol too old for the 64-bit entry or a 32-bit kernel.
 */
static int bz_check_ident(const uint8_t *p, size_t len)
{
	if (len < BZ_XLOADFLAGS_OFF + 2)
		return -EINVAL;
	if (le__get16(p + BZ_VERSION_OFF) < BZ_MIN_VERSION)
		return -ENOEXEC;
	if (!(le__get16(p + BZ_XLOADFLAGS_OFF) & XLF_KERNEL_64))
		return -ENOEXEC;
	return 0;
}

int kernel__probe(const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (elf_has_magic(p, len)) {
		Elf64_Ehdr eh;

		if (len < sizeof(eh))
			return -ENOEXEC;
		memcpy(&eh, p, sizeof(eh));
		return elf_check_ident(&eh) ? -ENOEXEC : KERNEL_FORMAT_ELF;
	}
	if (bz_has_magic(p, len))
		return bz_check_ident(p, len) ? -ENOEXEC :
						KERNEL_FORMAT_BZIMAGE;
	return -ENOEXEC;
}

/* Record which check refused the image (kernel.h); returns @err. */
static int kernel_why(struct kernel_image *out, int err, const char *why)
{
	out->why = why;
	return err;
}

/* Checks one PT_LOAD against the file and guest RAM; copies nothing. */
static int elf_check_load(const struct guest_mem *m, const Elf64_Phdr *ph,
			  size_t len)
{
	if (ph->p_filesz > ph->p_memsz)
		return -EINVAL;
	if (!range_in(ph->p_offset, ph->p_filesz, len))
		return -EINVAL;
	if (ph->p_paddr > UINT64_MAX - ph->p_memsz)
		return -EINVAL;
	/* Below 1 MiB live the GDT, page tables, zero page and MP table. */
	if (ph->p_paddr < LAYOUT_HIGH_MEM_GPA)
		return -EINVAL;
	if (!guest_mem__ptr(m, ph->p_paddr, ph->p_memsz))
		return -E2BIG;
	return 0;
}

static int elf_load(const struct guest_mem *m, const struct kernel_src *src,
		    const uint8_t *head, size_t head_len,
		    struct kernel_image *out)
{
	Elf64_Phdr phdrs[KERNEL_ELF_MAX_PHDRS];
	uint64_t lo = UINT64_MAX, hi = 0, len = src->size;
	bool entry_ok = false;
	Elf64_Ehdr eh;
	unsigned int i, nr_load = 0;
	int ret;

	if (head_len < sizeof(eh))
		return kernel_why(out, -EINVAL, "truncated ELF header");
	memcpy(&eh, head, sizeof(eh));
	ret = elf_check_ident(&eh);
	if (ret)
		return ret;
	if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
	    eh.e_phnum > KERNEL_ELF_MAX_PHDRS)
		return kernel_why(out, -EINVAL, "bad ELF program header table");
	if (!range_in(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(phdrs[0]), len))
		return kernel_why(out, -EINVAL,
				  "truncated ELF: the program headers lie "
				  "past the end of the file");
	ret = src->read(src, eh.e_phoff, phdrs,
			(uint64_t)eh.e_phnum * sizeof(phdrs[0]));
	if (ret)
		return ret;

	/* Validate everything before the first byte reaches guest RAM. */
	for (i = 0; i < eh.e_phnum; i++) {
		const Elf64_Phdr *ph = &phdrs[i];

		if (ph->p_type != PT_LOAD || ph->p_memsz == 0)
			continue;
		ret = elf_check_load(m, ph, len);
		if (ret == -EINVAL)
			return kernel_why(
				out, ret,
				range_in(ph->p_offset, ph->p_filesz, len) ?
					"bad ELF: a segment is malformed or "
					"below 1 MiB" :
					"truncated ELF: a segment lies "
					"past the end of the file");
		if (ret)
			return ret;
		if (ph->p_paddr < lo)
			lo = ph->p_paddr;
		if (ph->p_paddr + ph->p_memsz > hi)
			hi = ph->p_paddr + ph->p_memsz;
		if (eh.e_entry >= ph->p_paddr &&
		    eh.e_entry - ph->p_paddr < ph->p_memsz)
			entry_ok = true;
		nr_load++;
	}
	/* An entry outside every segment would run whatever RAM holds. */
	if (!nr_load || !entry_ok)
		return kernel_why(out, -EINVAL,
				  nr_load ?
					  "bad ELF: the entry point is outside "
					  "every segment" :
					  "bad ELF: no loadable segment");

	/* One copy: straight from the source into guest RAM. */
	for (i = 0; i < eh.e_phnum; i++) {
		const Elf64_Phdr *ph = &phdrs[i];
		uint8_t *dst;

		if (ph->p_type != PT_LOAD || ph->p_memsz == 0)
			continue;
		dst = guest_mem__ptr(m, ph->p_paddr, ph->p_memsz);
		if (!dst)
			return -E2BIG;
		ret = src->read(src, ph->p_offset, dst, ph->p_filesz);
		if (ret)
			return ret;
		memset(dst + ph->p_filesz, 0, ph->p_memsz - ph->p_filesz);
	}

	memset(out, 0, sizeof(*out));
	out->format = KERNEL_FORMAT_ELF;
	out->entry = eh.e_entry;
	out->load_start = lo;
	out->load_end = hi;
	return 0;
}

static int bz_load(const struct guest_mem *m, const struct kernel_src *src,
		   const uint8_t *p, size_t head_len, struct kernel_image *out)
{
	struct setup_header hdr;
	uint64_t hdr_len, setup_sects, pm_off, pm_len, end, need;
	uint64_t len = src->size;
	uint8_t *dst;
	int ret;

	ret = bz_check_ident(p, head_len);
	if (ret)
		return kernel_why(
			out, ret,
			"truncated bzImage: the setup header is cut off");

	/*
	 * boot.rst: the header ends at 0x202 + the byte at 0x201 (the
	 * short jump over it); we read no further than struct setup_header
	 * knows, and need at least up to init_size, which 2.12 has.
	 */
	hdr_len = BZ_HEADER_OFF + (uint64_t)p[BZ_JUMP_LEN_OFF] - BZ_HDR_OFF;
	if (hdr_len > sizeof(hdr))
		hdr_len = sizeof(hdr);
	if (hdr_len <
	    offsetof(struct setup_header, init_size) + sizeof(hdr.init_size))
		return kernel_why(out, -EINVAL,
				  "bad bzImage: the setup header ends before "
				  "init_size");
	if (!range_in(BZ_HDR_OFF, hdr_len, head_len))
		return kernel_why(
			out, -EINVAL,
			"truncated bzImage: the setup header is cut off");
	memset(&hdr, 0, sizeof(hdr));
	memcpy(&hdr, p + BZ_HDR_OFF, hdr_len);

	/*
	 * boot.rst: the setup code is setup_sects 512-byte sectors after
	 * the boot sector (0 meaning 4), and the protected-mode kernel that
	 * follows is syssize 16-byte paragraphs (a 32-bit field since
	 * 2.04).  A file shorter than that sum was cut off; longer is fine
	 * (a signature may follow) but only the kernel is loaded.
	 */
	setup_sects = p[BZ_SETUP_SECTS_OFF];
	if (setup_sects == 0)
		setup_sects = BZ_DEFAULT_SETUP_SECTS;
	pm_off = (setup_sects + 1) * BZ_SECTOR;
	if (pm_off >= len)
		return kernel_why(out, -EINVAL,
				  "truncated bzImage: the file ends inside the "
				  "setup code (setup_sects)");
	pm_len = (uint64_t)le32toh(hdr.syssize) * BZ_PARAGRAPH;
	if (pm_len == 0)
		return kernel_why(out, -EINVAL, "bad bzImage: syssize is 0");
	if (pm_len > len - pm_off)
		return kernel_why(out, -EINVAL,
				  "truncated bzImage: the file is shorter than "
				  "setup_sects and syssize announce");
	/* The 64-bit entry itself must be part of what we load. */
	if (pm_len <= BZ_ENTRY64_OFF)
		return kernel_why(
			out, -EINVAL,
			"bad bzImage: too short to hold the 64-bit entry");
	/* 2.08+: the compressed payload lies inside the protected-mode part. */
	if (hdr.payload_length == 0 ||
	    (uint64_t)le32toh(hdr.payload_offset) +
			    le32toh(hdr.payload_length) >
		    pm_len)
		return kernel_why(
			out, -EINVAL,
			"bad bzImage: payload_offset and payload_length "
			"point past the kernel");
	/* init_size covers at least the image itself (boot.rst). */
	if (le32toh(hdr.init_size) < pm_len)
		return kernel_why(
			out, -EINVAL,
			"bad bzImage: init_size is smaller than the kernel");

	/* Both terms are < 2^64: pm_len < len, pref_address + a u32 checked. */
	end = LAYOUT_BZIMAGE_GPA + pm_len;
	if (le64toh(hdr.pref_address) > UINT64_MAX - UINT32_MAX)
		return kernel_why(out, -EINVAL,
				  "bad bzImage: pref_address overflows");
	need = le64toh(hdr.pref_address) + le32toh(hdr.init_size);
	if (need > end)
		end = need;
	if (end > guest_mem__low_ram_end(m))
		return -E2BIG;
	dst = guest_mem__ptr(m, LAYOUT_BZIMAGE_GPA, pm_len);
	if (!dst)
		return -E2BIG;
	ret = src->read(src, pm_off, dst, pm_len);
	if (ret)
		return ret;

	memset(out, 0, sizeof(*out));
	out->format = KERNEL_FORMAT_BZIMAGE;
	out->entry = LAYOUT_BZIMAGE_GPA + BZ_ENTRY64_OFF;
	out->load_start = LAYOUT_BZIMAGE_GPA;
	out->load_end = end;
	out->hdr = hdr;
	return 0;
}

static int buffer_read(const struct kernel_src *s, uint64_t off, void *dst,
		       uint64_t len)
{
	if (!range_in(off, len, s->size))
		return -EINVAL;
	memcpy(dst, (const uint8_t *)s->buf + off, len);
	return 0;
}

void kernel__src_buffer(struct kernel_src *s, const void *buf, size_t len)
{
	memset(s, 0, sizeof(*s));
	s->size = len;
	s->read = buffer_read;
	s->buf = buf;
	s->fd = -1;
}

int kernel__load_src(const struct guest_mem *m, const struct kernel_src *src,
		     struct kernel_image *out)
{
	uint8_t head[KERNEL_HEAD_BYTES];
	size_t head_len = src->size < sizeof(head) ? src->size : sizeof(head);
	int ret;

	out->why = NULL;
	ret = src->read(src, 0, head, head_len);
	if (ret)
		return ret;
	if (elf_has_magic(head, head_len))
		return elf_load(m, src, head, head_len, out);
	if (bz_has_magic(head, head_len))
		return bz_load(m, src, head, head_len, out);
	return -ENOEXEC;
}

int kernel__load(const struct guest_mem *m, const void *buf, size_t len,
		 struct kernel_image *out)
{
	struct kernel_src src;

	kernel__src_buffer(&src, buf, len);
	return kernel__load_src(m, &src, out);
}
