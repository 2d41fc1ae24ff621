// SPDX-License-Identifier: Apache-2.0
/* Which pages of guest RAM a snapshot must write (see persist.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../devices/fileio.h"
#include "../../snapshot/memfile.h"
#include "persist.h"

/* /proc/self/pagemap (Documentation/admin-guide/mm/pagemap.rst). */
#define PM_PRESENT  (1ULL << 63)
#define PM_SWAPPED  (1ULL << 62)
#define PM_FILE	    (1ULL << 61) /* file page or shared anonymous */
#define PAGES_BATCH 4096 /* pagemap entries per read */

int pages__select(const void *hva, uint64_t bytes, bool changed_only,
		  uint64_t **out, uint64_t *selected)
{
	uint64_t npages = bytes / MEMFILE_PAGE, i, n = 0, *bm, *pm;
	uint64_t first = (uintptr_t)hva / MEMFILE_PAGE;
	int fd, ret = 0;

	*out = NULL;
	*selected = 0;
	if ((uintptr_t)hva % MEMFILE_PAGE || bytes % MEMFILE_PAGE)
		return -EINVAL;
	bm = calloc(memfile__bitmap_words(bytes), sizeof(*bm));
	pm = malloc(PAGES_BATCH * sizeof(*pm));
	fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (!bm || !pm || fd < 0) {
		ret = fd < 0 ? -errno : -ENOMEM;
		goto out;
	}
	for (i = 0; i < npages; i += PAGES_BATCH) {
		uint64_t k, chunk = npages - i < PAGES_BATCH ? npages - i :
							       PAGES_BATCH;

		ret = fileio__pread_all(fd, pm, chunk * sizeof(*pm),
					(first + i) * sizeof(*pm));
		if (ret)
			goto out;
		for (k = 0; k < chunk; k++) {
			uint64_t e = pm[k];
			bool take = (e & PM_SWAPPED) ||
				    ((e & PM_PRESENT) &&
				     !(changed_only && (e & PM_FILE)));

			if (take) {
				bm[(i + k) / 64] |= 1ULL << ((i + k) % 64);
				n++;
			}
		}
	}
	*out = bm;
	*selected = n;
	bm = NULL;
out:
	if (fd >= 0)
		close(fd);
	free(pm);
	free(bm);
	return ret;
}

int pages__add_file_data(int fd, uint64_t bytes, uint64_t *sel,
			 uint64_t *selected)
{
	off_t data = 0, hole = 0;
	uint64_t p, end;
	int ret;

	while ((ret = fileio__next_data(fd, &data, &hole)) > 0) {
		if ((uint64_t)data >= bytes)
			return 0;
		end = (uint64_t)hole < bytes ? (uint64_t)hole : bytes;
		for (p = (uint64_t)data / MEMFILE_PAGE;
		     p < (end + MEMFILE_PAGE - 1) / MEMFILE_PAGE; p++) {
			if (!(sel[p / 64] >> (p % 64) & 1)) {
				sel[p / 64] |= 1ULL << (p % 64);
				(*selected)++;
			}
		}
		data = hole;
	}
	return ret;
}
