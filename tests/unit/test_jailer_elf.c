// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for api/jailer/jailer_elf.c: an ELF file's loader, needed
 * libraries and search paths, from a built-in well-formed image, each
 * of its headers broken in turn, every truncation of it, and this test's
 * own executable.
 */
#include <elf.h>
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

#include "../../api/jailer/jailer.h"

/*
 * The image: ELF header, 3 program headers (PT_INTERP, PT_LOAD of the
 * whole file at vaddr 0x400000, PT_DYNAMIC), the interpreter string, the
 * string table, the dynamic section.
 */
#define VADDR	   0x400000UL
#define PH_OFF	   sizeof(Elf64_Ehdr)
#define INTERP_OFF (PH_OFF + 3 * sizeof(Elf64_Phdr))
#define INTERP	   "/lib64/ld-linux-x86-64.so.2"
#define STR_OFF	   (INTERP_OFF + sizeof(INTERP))
/* "\0libfoo.so.1\0libc.so.6\0$ORIGIN/../lib:/opt/x\0" */
#define STRTAB	 "\0libfoo.so.1\0libc.so.6\0$ORIGIN/../lib:/opt/x"
#define STR_SIZE sizeof(STRTAB)
#define DYN_OFF	 ((STR_OFF + STR_SIZE + 7) & ~7UL)
#define N_DYN	 6
#define IMG_SIZE (DYN_OFF + N_DYN * sizeof(Elf64_Dyn))

struct img {
	unsigned char b[IMG_SIZE];
};

static Elf64_Ehdr *ehdr(struct img *m)
{
	return (Elf64_Ehdr *)m->b;
}

static Elf64_Phdr *phdr(struct img *m, int i)
{
	return (Elf64_Phdr *)(m->b + PH_OFF) + i;
}

static Elf64_Dyn *dyn(struct img *m, int i)
{
	return (Elf64_Dyn *)(m->b + DYN_OFF) + i;
}

static void build(struct img *m)
{
	Elf64_Ehdr *e = ehdr(m);

	memset(m, 0, sizeof(*m));
	memcpy(e->e_ident, ELFMAG, SELFMAG);
	e->e_ident[EI_CLASS] = ELFCLASS64;
	e->e_ident[EI_DATA] = ELFDATA2LSB;
	e->e_ident[EI_VERSION] = EV_CURRENT;
	e->e_type = ET_DYN;
	e->e_machine = EM_X86_64;
	e->e_version = EV_CURRENT;
	e->e_phoff = PH_OFF;
	e->e_ehsize = sizeof(*e);
	e->e_phentsize = sizeof(Elf64_Phdr);
	e->e_phnum = 3;
	*phdr(m, 0) = (Elf64_Phdr){ .p_type = PT_INTERP,
				    .p_offset = INTERP_OFF,
				    .p_filesz = sizeof(INTERP) };
	*phdr(m, 1) = (Elf64_Phdr){ .p_type = PT_LOAD,
				    .p_offset = 0,
				    .p_vaddr = VADDR,
				    .p_filesz = IMG_SIZE,
				    .p_memsz = IMG_SIZE };
	*phdr(m, 2) = (Elf64_Phdr){ .p_type = PT_DYNAMIC,
				    .p_offset = DYN_OFF,
				    .p_filesz = N_DYN * sizeof(Elf64_Dyn) };
	memcpy(m->b + INTERP_OFF, INTERP, sizeof(INTERP));
	memcpy(m->b + STR_OFF, STRTAB, STR_SIZE);
	*dyn(m, 0) = (Elf64_Dyn){ DT_NEEDED, { 1 } };
	*dyn(m, 1) = (Elf64_Dyn){ DT_NEEDED, { 13 } };
	*dyn(m, 2) = (Elf64_Dyn){ DT_RUNPATH, { 23 } };
	*dyn(m, 3) = (Elf64_Dyn){ DT_STRTAB, { VADDR + STR_OFF } };
	*dyn(m, 4) = (Elf64_Dyn){ DT_STRSZ, { STR_SIZE } };
	*dyn(m, 5) = (Elf64_Dyn){ DT_NULL, { 0 } };
}

static struct jail_elf out;

static void test_well_formed(void **state)
{
	const char *why;
	struct img m;

	(void)state;
	build(&m);
	assert_int_equal(jail_elf__parse(m.b, sizeof(m.b), &out, &why), 0);
	assert_null(why);
	assert_true(out.dynamic);
	assert_string_equal(out.interp, INTERP);
	assert_int_equal(out.n_needed, 2);
	assert_string_equal(out.needed[0], "libfoo.so.1");
	assert_string_equal(out.needed[1], "libc.so.6");
	assert_true(out.has_runpath);
	assert_false(out.has_rpath);
	assert_string_equal(out.runpath, "$ORIGIN/../lib:/opt/x");
}

static void test_static(void **state)
{
	const char *why;
	struct img m;

	(void)state;
	build(&m);
	ehdr(&m)->e_phnum = 2; /* no PT_DYNAMIC */
	phdr(&m, 0)->p_type = PT_NOTE; /* no PT_INTERP */
	assert_int_equal(jail_elf__parse(m.b, sizeof(m.b), &out, &why), 0);
	assert_false(out.dynamic);
	assert_string_equal(out.interp, "");
	assert_int_equal(out.n_needed, 0);
}

/* Not for this machine: -ENOEXEC, which a search skips. */
static void test_not_ours(void **state)
{
	const char *why;
	struct img m;

	(void)state;
	build(&m);
	m.b[EI_CLASS] = ELFCLASS32;
	assert_int_equal(jail_elf__parse(m.b, sizeof(m.b), &out, &why),
			 -ENOEXEC);
	assert_non_null(why);
	build(&m);
	ehdr(&m)->e_machine = EM_ARM;
	assert_int_equal(jail_elf__parse(m.b, sizeof(m.b), &out, &why),
			 -ENOEXEC);
	build(&m);
	ehdr(&m)->e_type = ET_REL;
	assert_int_equal(jail_elf__parse(m.b, sizeof(m.b), &out, &why),
			 -ENOEXEC);
	assert_int_equal(jail_elf__parse("#!/bin/sh\n", 10, &out, &why),
			 -ENOEXEC);
	assert_int_equal(jail_elf__parse("", 0, &out, &why), -ENOEXEC);
}

/* Each header pointing outside the file, or a string without its end. */
static void test_malformed(void **state)
{
	const char *why;
	struct img m;
	int i;

	(void)state;
	for (i = 0; i < 12; i++) {
		build(&m);
		switch (i) {
		case 0:
			ehdr(&m)->e_phoff = IMG_SIZE;
			break;
		case 1:
			ehdr(&m)->e_phoff = UINT64_MAX - 8;
			break;
		case 2:
			phdr(&m, 0)->p_offset = UINT64_MAX;
			break;
		case 3:
			phdr(&m, 0)->p_filesz = sizeof(INTERP) - 1; /* no NUL */
			break;
		case 4:
			phdr(&m, 2)->p_filesz = IMG_SIZE;
			break;
		case 5:
			dyn(&m, 3)->d_un.d_ptr = 0x1000; /* in no segment */
			break;
		case 6:
			dyn(&m, 4)->d_un.d_val =
				IMG_SIZE; /* past the segment */
			break;
		case 7:
			dyn(&m, 0)->d_un.d_val = STR_SIZE; /* past DT_STRSZ */
			break;
		case 8:
			dyn(&m, 4)->d_un.d_val = 5; /* cuts "libfoo.so.1" */
			break;
		case 9:
			dyn(&m, 3)->d_tag = DT_DEBUG; /* names, no table */
			break;
		case 10:
			memcpy(m.b + INTERP_OFF, "lib64", 6); /* relative */
			break;
		case 11:
			ehdr(&m)->e_phentsize = 32;
			break;
		}
		assert_int_not_equal(
			jail_elf__parse(m.b, sizeof(m.b), &out, &why), 0);
		assert_non_null(why);
	}
}

/* Every prefix of the image: no read past it (ASan), never a crash. */
static void test_truncated(void **state)
{
	const char *why;
	struct img m;
	size_t n;

	(void)state;
	build(&m);
	for (n = 0; n < sizeof(m.b); n++) {
		unsigned char *cut = malloc(n ? n : 1);
		int ret;

		assert_non_null(cut);
		memcpy(cut, m.b, n);
		ret = jail_elf__parse(cut, n, &out, &why);
		assert_true(ret == -ENOEXEC || ret == -EINVAL);
		free(cut);
	}
}

static void test_too_many_needed(void **state)
{
	unsigned char *b;
	size_t size = IMG_SIZE + 80 * sizeof(Elf64_Dyn);
	Elf64_Dyn *d;
	const char *why;
	struct img m;
	int i;

	(void)state;
	build(&m);
	b = calloc(1, size);
	assert_non_null(b);
	memcpy(b, m.b, sizeof(m.b));
	((Elf64_Phdr *)(b + PH_OFF))[1].p_filesz = size;
	((Elf64_Phdr *)(b + PH_OFF))[2].p_filesz = 80 * sizeof(Elf64_Dyn);
	d = (Elf64_Dyn *)(b + DYN_OFF);
	d[0] = (Elf64_Dyn){ DT_STRTAB, { VADDR + STR_OFF } };
	d[1] = (Elf64_Dyn){ DT_STRSZ, { STR_SIZE } };
	for (i = 2; i < 79; i++)
		d[i] = (Elf64_Dyn){ DT_NEEDED, { 1 } };
	assert_int_equal(jail_elf__parse(b, size, &out, &why), -E2BIG);
	free(b);
}

/* This test's own executable, as the jailer reads ember. */
static void test_self(void **state)
{
	const char *why;
	struct stat st;
	unsigned char *b;
	size_t i;
	bool libc = false;
	int fd;

	(void)state;
	fd = open("/proc/self/exe", O_RDONLY);
	assert_true(fd >= 0 && !fstat(fd, &st));
	b = malloc((size_t)st.st_size);
	assert_non_null(b);
	assert_int_equal(read(fd, b, (size_t)st.st_size), st.st_size);
	close(fd);
	assert_int_equal(jail_elf__parse(b, (size_t)st.st_size, &out, &why), 0);
	free(b);
	assert_true(out.interp[0] == '/');
	for (i = 0; i < out.n_needed; i++)
		libc |= !strcmp(out.needed[i], "libc.so.6");
	assert_true(libc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_well_formed),
		cmocka_unit_test(test_static),
		cmocka_unit_test(test_not_ours),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_too_many_needed),
		cmocka_unit_test(test_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
