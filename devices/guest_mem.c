// SPDX-License-Identifier: Apache-2.0
/* The checked gpa -> hva translation (see guest_mem.h). */
#include "guest_mem.h"

#include <errno.h>
#include <string.h>

void *guest_mem__ptr(const struct guest_mem *m, uint64_t gpa, uint64_t len)
{
	unsigned int i;

	for (i = 0; i < m->nr_regions; i++) {
		const struct guest_mem_region *r = &m->region[i];

		if (gpa < r->gpa)
			continue;
		/* Written so that no sum can overflow. */
		if (gpa - r->gpa > r->size || len > r->size - (gpa - r->gpa))
			continue;
		return r->hva + (gpa - r->gpa);
	}
	return NULL;
}

int guest_mem__read(const struct guest_mem *m, uint64_t gpa, void *dst,
		    uint64_t len)
{
	const void *src = guest_mem__ptr(m, gpa, len);

	if (!src)
		return -EFAULT;
	memcpy(dst, src, len);
	return 0;
}

int guest_mem__write(const struct guest_mem *m, uint64_t gpa, const void *src,
		     uint64_t len)
{
	void *dst = guest_mem__ptr(m, gpa, len);

	if (!dst)
		return -EFAULT;
	memcpy(dst, src, len);
	return 0;
}

uint64_t guest_mem__low_ram_end(const struct guest_mem *m)
{
	return m->nr_regions ? m->region[0].size : 0;
}
