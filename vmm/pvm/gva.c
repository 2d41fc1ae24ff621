// SPDX-License-Identifier: Apache-2.0
/* Guest page-table walker (see gva.h). */
#include "gva.h"

#include <errno.h>
#include <string.h>

#define X86_CR0_PG   (1ULL << 31)
#define X86_CR0_WP   (1ULL << 16)
#define X86_CR4_PAE  (1ULL << 5)
#define X86_CR4_LA57 (1ULL << 12)
#define X86_EFER_LMA (1ULL << 10)

#define PTE_P	 (1ULL << 0)
#define PTE_RW	 (1ULL << 1)
#define PTE_US	 (1ULL << 2)
#define PTE_A	 (1ULL << 5)
#define PTE_D	 (1ULL << 6)
#define PTE_PS	 (1ULL << 7)
#define PTE_ADDR 0x000ffffffffff000ULL

#define PAGE_SIZE_4K 4096ULL

static int gva__canonical(uint64_t gva)
{
	uint64_t top = gva >> 47;

	return top == 0 || top == 0x1ffff;
}

int gva__translate(const struct guest_mem *m, const struct gva_ctx *c,
		   uint64_t gva, unsigned int access, uint64_t *gpa,
		   uint32_t *pfec)
{
	uint64_t table = c->cr3 & PTE_ADDR, e = 0;
	uint64_t *entries[4];
	int level, write = !!(access & GVA_ACCESS_WRITE);
	int user = !!(access & GVA_ACCESS_USER);
	uint32_t ec = access &
		      (GVA_ACCESS_WRITE | GVA_ACCESS_USER | GVA_ACCESS_FETCH);
	unsigned int shift = 39, depth = 0;

	if (!(c->cr0 & X86_CR0_PG)) {
		*gpa = gva;
		return 0;
	}
	if (!(c->efer & X86_EFER_LMA) || !(c->cr4 & X86_CR4_PAE) ||
	    (c->cr4 & X86_CR4_LA57))
		return -ENOTSUP;
	if (!gva__canonical(gva))
		return -EINVAL;

	for (level = 4; level >= 1; level--, shift -= 9) {
		uint64_t *pe = guest_mem__ptr(
			m, table + ((gva >> shift) & 511) * 8, 8);

		if (!pe)
			return -EIO;
		e = __atomic_load_n(pe, __ATOMIC_RELAXED);
		entries[depth++] = pe;
		if (!(e & PTE_P)) {
			*pfec = ec;
			return -EFAULT;
		}
		if ((write && !(e & PTE_RW) &&
		     (user || (c->cr0 & X86_CR0_WP))) ||
		    (user && !(e & PTE_US))) {
			*pfec = ec | GVA_PFEC_PRESENT;
			return -EFAULT;
		}
		if (level == 1 || ((level == 2 || level == 3) && (e & PTE_PS)))
			break;
		table = e & PTE_ADDR;
	}

	/* The access is allowed: record it as the CPU would. */
	for (level = 0; level < (int)depth; level++)
		__atomic_fetch_or(entries[level], PTE_A, __ATOMIC_RELAXED);
	if (write)
		__atomic_fetch_or(entries[depth - 1], PTE_D, __ATOMIC_RELAXED);
	*gpa = (e & PTE_ADDR & ~((1ULL << shift) - 1)) |
	       (gva & ((1ULL << shift) - 1));
	return 0;
}

/*
 * One page-sized step of an access at @va with @left bytes to go: the
 * bytes in this page (*@chunk) and their host address (*@host).
 */
static int gva__step(const struct guest_mem *m, const struct gva_ctx *c,
		     uint64_t va, uint64_t left, unsigned int access,
		     uint32_t *pfec, uint64_t *chunk, uint8_t **host)
{
	uint64_t gpa;
	int ret;

	*chunk = PAGE_SIZE_4K - (va & (PAGE_SIZE_4K - 1));
	if (*chunk > left)
		*chunk = left;
	ret = gva__translate(m, c, va, access, &gpa, pfec);
	if (ret)
		return ret;
	*host = guest_mem__ptr(m, gpa, *chunk);
	return *host ? 0 : -EIO;
}

int gva__check(const struct guest_mem *m, const struct gva_ctx *c, uint64_t gva,
	       uint64_t len, unsigned int access, uint32_t *pfec,
	       uint64_t *fault_gva)
{
	uint64_t done, chunk;
	uint8_t *host;
	int ret;

	/*
	 * The canonical check covers the whole access and comes before
	 * paging: an area whose first byte is canonical and whose last is
	 * not raises #GP even where its first page is not present.
	 */
	if (len && (c->cr0 & X86_CR0_PG) && (c->efer & X86_EFER_LMA) &&
	    !gva__canonical(gva + len - 1)) {
		*fault_gva = gva;
		return -EINVAL;
	}
	for (done = 0; done < len; done += chunk) {
		ret = gva__step(m, c, gva + done, len - done, access, pfec,
				&chunk, &host);
		if (ret) {
			*fault_gva = gva + done;
			return ret;
		}
	}
	return 0;
}

int gva__copy(const struct guest_mem *m, const struct gva_ctx *c, uint64_t gva,
	      void *buf, uint64_t len, unsigned int access, uint32_t *pfec,
	      uint64_t *fault_gva)
{
	uint64_t done, chunk;
	uint8_t *host;
	int ret;

	/* Every page is checked first, so that a fault changes nothing. */
	ret = gva__check(m, c, gva, len, access, pfec, fault_gva);
	if (ret)
		return ret;
	for (done = 0; done < len; done += chunk) {
		ret = gva__step(m, c, gva + done, len - done, access, pfec,
				&chunk, &host);
		if (ret) {
			*fault_gva = gva + done;
			return ret;
		}
		if (access & GVA_ACCESS_WRITE)
			memcpy(host, (uint8_t *)buf + done, chunk);
		else
			memcpy((uint8_t *)buf + done, host, chunk);
	}
	return 0;
}
