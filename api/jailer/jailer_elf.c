// SPDX-License-Identifier: Apache-2.0
/*
 * What an executable or shared library needs at load time, from its ELF
 * headers (the System V gABI, "Program Header" and "Dynamic Section"):
 * PT_INTERP's loader, DT_NEEDED's names and DT_RUNPATH/DT_RPATH's search
 * paths.  The file is untrusted input: every offset, size and string is
 * checked against the buffer before it is read.  No I/O here.
 */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "jailer.h"

#ifdef __x86_64__
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#else
#error "ember-jailer knows the ELF machine of x86-64 and aarch64 only"
#endif

#define DYN_MAX 4096 /* dynamic entries read at most (ld.so: DT_NULL) */

/* [off, off + n) lies inside a buffer of @len bytes. */
static bool in_buf(uint64_t off, uint64_t n, size_t len)
{
	return off <= len && n <= len - off;
}

/*
 * Copy the NUL-terminated string at @off of the [@base, @base + @size)
 * string table into @dst (@dst_size bytes).  Returns 0, or -EINVAL (a
 * string past the table or without its NUL) or -ENAMETOOLONG.
 */
static int copy_str(const unsigned char *buf, uint64_t base, uint64_t size,
		    uint64_t off, char *dst, size_t dst_size)
{
	const unsigned char *s, *nul;

	if (off >= size)
		return -EINVAL;
	s = buf + base + off;
	nul = memchr(s, '\0', (size_t)(size - off));
	if (!nul)
		return -EINVAL;
	if ((size_t)(nul - s) >= dst_size)
		return -ENAMETOOLONG;
	memcpy(dst, s, (size_t)(nul - s) + 1);
	return 0;
}

/*
 * The file offset of virtual address @addr, and how many bytes of the
 * file follow it in the same PT_LOAD segment (*@avail).  Returns 0 or
 * -EINVAL when no segment holds it in the file.
 */
static int vaddr_to_off(const unsigned char *buf, size_t len,
			const Elf64_Ehdr *eh, uint64_t addr, uint64_t *off,
			uint64_t *avail)
{
	unsigned int i;

	for (i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, buf + eh->e_phoff + (uint64_t)i * sizeof(ph),
		       sizeof(ph));
		if (ph.p_type != PT_LOAD || addr < ph.p_vaddr ||
		    addr - ph.p_vaddr >= ph.p_filesz)
			continue;
		if (!in_buf(ph.p_offset, ph.p_filesz, len))
			return -EINVAL;
		*off = ph.p_offset + (addr - ph.p_vaddr);
		*avail = ph.p_filesz - (addr - ph.p_vaddr);
		return 0;
	}
	return -EINVAL;
}

static int fail(const char **why, const char *text, int ret)
{
	*why = text;
	return ret;
}

/* The dynamic section at file offset @off, @size bytes: names and paths. */
static int parse_dynamic(const unsigned char *buf, size_t len,
			 const Elf64_Ehdr *eh, uint64_t off, uint64_t size,
			 struct jail_elf *out, const char **why)
{
	uint64_t needed[JAIL_ELF_MAX_NEEDED], runpath = 0, rpath = 0;
	uint64_t strtab = 0, strsz = 0, str_off, str_avail, n, i;
	bool have_strtab = false, have_strsz = false;
	size_t n_needed = 0;
	int ret;

	n = size / sizeof(Elf64_Dyn);
	if (n > DYN_MAX)
		n = DYN_MAX;
	for (i = 0; i < n; i++) {
		Elf64_Dyn d;

		memcpy(&d, buf + off + i * sizeof(d), sizeof(d));
		if (d.d_tag == DT_NULL)
			break;
		switch (d.d_tag) {
		case DT_NEEDED:
			if (n_needed == JAIL_ELF_MAX_NEEDED)
				return fail(why, "more than 64 DT_NEEDED",
					    -E2BIG);
			needed[n_needed++] = d.d_un.d_val;
			break;
		case DT_RUNPATH:
			out->has_runpath = true;
			runpath = d.d_un.d_val;
			break;
		case DT_RPATH:
			out->has_rpath = true;
			rpath = d.d_un.d_val;
			break;
		case DT_STRTAB:
			have_strtab = true;
			strtab = d.d_un.d_ptr;
			break;
		case DT_STRSZ:
			have_strsz = true;
			strsz = d.d_un.d_val;
			break;
		default:
			break;
		}
	}
	if (!n_needed && !out->has_runpath && !out->has_rpath)
		return 0;
	if (!have_strtab || !have_strsz)
		return fail(why, "a dynamic section without DT_STRTAB/DT_STRSZ",
			    -EINVAL);
	if (vaddr_to_off(buf, len, eh, strtab, &str_off, &str_avail))
		return fail(why, "DT_STRTAB outside the file's segments",
			    -EINVAL);
	if (strsz > str_avail)
		return fail(why, "DT_STRSZ past its segment", -EINVAL);
	for (i = 0; i < n_needed; i++) {
		char *name = out->needed[out->n_needed];

		ret = copy_str(buf, str_off, strsz, needed[i], name,
			       sizeof(out->needed[0]));
		if (ret)
			return fail(
				why,
				"a DT_NEEDED name past DT_STRTAB or too long",
				ret);
		if (!name[0])
			return fail(why, "an empty DT_NEEDED name", -EINVAL);
		out->n_needed++;
	}
	if (out->has_runpath && copy_str(buf, str_off, strsz, runpath,
					 out->runpath, sizeof(out->runpath)))
		return fail(why, "DT_RUNPATH past DT_STRTAB or too long",
			    -EINVAL);
	if (out->has_rpath && copy_str(buf, str_off, strsz, rpath, out->rpath,
				       sizeof(out->rpath)))
		return fail(why, "DT_RPATH past DT_STRTAB or too long",
			    -EINVAL);
	return 0;
}

int jail_elf__parse(const void *data, size_t len, struct jail_elf *out,
		    const char **why)
{
	const unsigned char *buf = data;
	bool have_dyn = false;
	uint64_t dyn_off = 0, dyn_size = 0;
	Elf64_Ehdr eh;
	unsigned int i;
	int ret;

	memset(out, 0, sizeof(*out));
	*why = NULL;
	if (len < EI_NIDENT || memcmp(buf, ELFMAG, SELFMAG))
		return fail(why, "not an ELF file", -ENOEXEC);
	if (buf[EI_CLASS] != ELFCLASS64 || buf[EI_DATA] != ELFDATA2LSB)
		return fail(why, "not a 64-bit little-endian ELF file",
			    -ENOEXEC);
	if (len < sizeof(eh))
		return fail(why, "an ELF header past the end of the file",
			    -EINVAL);
	memcpy(&eh, buf, sizeof(eh));
	if (eh.e_machine != HOST_MACHINE)
		return fail(why, "an ELF file for another machine", -ENOEXEC);
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return fail(why, "neither an executable nor a shared object",
			    -ENOEXEC);
	if (eh.e_phnum && eh.e_phentsize != sizeof(Elf64_Phdr))
		return fail(why, "an unexpected e_phentsize", -EINVAL);
	if (!in_buf(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr), len))
		return fail(why, "program headers past the end of the file",
			    -EINVAL);
	for (i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, buf + eh.e_phoff + (uint64_t)i * sizeof(ph),
		       sizeof(ph));
		if (ph.p_type == PT_INTERP) {
			if (out->interp[0])
				return fail(why, "two PT_INTERP", -EINVAL);
			if (!in_buf(ph.p_offset, ph.p_filesz, len))
				return fail(why,
					    "PT_INTERP past the end of "
					    "the file",
					    -EINVAL);
			ret = copy_str(buf, ph.p_offset, ph.p_filesz, 0,
				       out->interp, sizeof(out->interp));
			if (ret)
				return fail(why,
					    "PT_INTERP without its NUL "
					    "or too long",
					    ret);
			if (out->interp[0] != '/')
				return fail(why,
					    "PT_INTERP not an absolute "
					    "path",
					    -EINVAL);
		} else if (ph.p_type == PT_DYNAMIC) {
			if (have_dyn)
				return fail(why, "two PT_DYNAMIC", -EINVAL);
			if (!in_buf(ph.p_offset, ph.p_filesz, len))
				return fail(why,
					    "PT_DYNAMIC past the end of "
					    "the file",
					    -EINVAL);
			have_dyn = true;
			dyn_off = ph.p_offset;
			dyn_size = ph.p_filesz;
		}
	}
	out->dynamic = have_dyn;
	if (!have_dyn)
		return 0;
	return parse_dynamic(buf, len, &eh, dyn_off, dyn_size, out, why);
}
