// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: jail_elf__parse() (api/jailer/jailer_elf.c) on an
 * untrusted file, as ember-jailer reads the exec file and each library
 * it needs.  Oracle: the sanitizers, and what a success promises: the
 * strings are terminated, the interpreter is absolute or empty, at most
 * JAIL_ELF_MAX_NEEDED names, none empty.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/jailer/jailer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct jail_elf out;
	const char *why;
	size_t i;

	if (jail_elf__parse(data, size, &out, &why)) {
		if (!why)
			abort();
		return 0;
	}
	if (why || out.n_needed > JAIL_ELF_MAX_NEEDED ||
	    !memchr(out.interp, '\0', sizeof(out.interp)) ||
	    (out.interp[0] && out.interp[0] != '/') ||
	    !memchr(out.runpath, '\0', sizeof(out.runpath)) ||
	    !memchr(out.rpath, '\0', sizeof(out.rpath)))
		abort();
	for (i = 0; i < out.n_needed; i++)
		if (!out.needed[i][0] ||
		    !memchr(out.needed[i], '\0', sizeof(out.needed[i])))
			abort();
	return 0;
}
