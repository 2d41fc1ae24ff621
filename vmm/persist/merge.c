// SPDX-License-Identifier: Apache-2.0
/*
 * Folding a Diff snapshot and its base into a Full one (see persist.h):
 * the base memory file copied (its holes kept), the diff's pages written
 * over the copy, and the state file rewritten with a Full memory section.
 * The base itself is never changed: other diffs and VMs may use it.
 */
#define _FILE_OFFSET_BITS 64
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../devices/fileio.h"
#include "../../snapshot/memfile.h"
#include "../../snapshot/state.h"
#include "persist.h"

#define MERGE_VERSION 1 /* of the memory section (persist.c) */

/* Copy @in to the empty @out, data extents only: holes stay holes. */
static int merge__copy_sparse(int in, int out, uint64_t size)
{
	off_t data = 0, hole = 0;
	int ret;

	if (ftruncate(out, (off_t)size) < 0)
		return -errno;
	for (;;) {
		ret = fileio__next_data(in, &data, &hole);
		if (ret <= 0)
			return ret;
		while (data < hole) {
			off_t o = data;
			ssize_t n = copy_file_range(in, &o, out, &o,
						    (size_t)(hole - data), 0);

			if (n <= 0)
				return n < 0 ? -errno : -EIO;
			data += n;
		}
	}
}

struct merge_mem {
	uint64_t ram_bytes;
	char base[PATH_MAX];
	uint64_t base_size, base_mtime_ns;
	uint64_t *sel;
};

static int merge__memory(const struct snap_state *s, struct merge_mem *m,
			 char *why, size_t whylen)
{
	struct snap_cur c;
	uint64_t i, words;

	if (snap_state__find(s, "memory", &c) || c.version != MERGE_VERSION) {
		snprintf(why, whylen, "no memory section");
		return -EINVAL;
	}
	m->ram_bytes = snap_cur__u64(&c);
	if (!snap_cur__u8(&c)) {
		snprintf(why, whylen,
			 "a Full snapshot: there is nothing to merge");
		return -EINVAL;
	}
	if (snap_cur__u8(&c)) {
		snprintf(why, whylen,
			 "a compressed diff: only raw ones merge (load it and "
			 "take a Full snapshot)");
		return -EINVAL;
	}
	snap_cur__str(&c, m->base, sizeof(m->base));
	m->base_size = snap_cur__u64(&c);
	m->base_mtime_ns = snap_cur__u64(&c);
	words = snap_cur__u64(&c);
	if (c.err || words != memfile__bitmap_words(m->ram_bytes)) {
		snprintf(why, whylen, "its memory section is malformed");
		return -EINVAL;
	}
	m->sel = calloc(words, sizeof(*m->sel));
	if (!m->sel)
		return -ENOMEM;
	for (i = 0; i < words; i++)
		m->sel[i] = snap_cur__u64(&c);
	if (snap_cur__end(&c)) {
		snprintf(why, whylen, "its memory section is malformed");
		return -EINVAL;
	}
	return 0;
}

/* The state file again, its memory section now a Full one's. */
static int merge__state(const struct snap_state *s, uint64_t ram_bytes,
			const char *out)
{
	char name[SNAP_NAME_MAX + 1];
	struct snap_buf b;
	struct snap_cur c;
	size_t iter = 0;
	int ret;

	memset(&b, 0, sizeof(b));
	snap_buf__init(&b);
	while (snap_state__next(s, &iter, name, &c) == 1) {
		snap_buf__section(&b, name, c.version);
		if (!strcmp(name, "memory")) {
			snap_buf__u64(&b, ram_bytes);
			snap_buf__u8(&b, 0); /* Full */
			snap_buf__u8(&b, 0); /* raw */
		} else {
			snap_buf__bytes(&b, c.p, c.len);
		}
	}
	ret = snap_buf__finish(&b);
	if (!ret)
		ret = snap_file__write(out, b.data, b.len);
	snap_buf__free(&b);
	return ret;
}

int persist__merge(const char *diff_state, const char *diff_mem,
		   const char *out_state, const char *out_mem, char *why)
{
	char what[PERSIST_WHY_MAX - 220], tmp[PATH_MAX];
	struct merge_mem m;
	struct snap_state s;
	struct stat st;
	void *data = NULL;
	size_t len = 0;
	int dfd = -1, bfd = -1, ofd = -1, ret;

	memset(&m, 0, sizeof(m));
	tmp[0] = '\0';
	ret = snap_file__read(diff_state, &data, &len, what, sizeof(what));
	if (!ret)
		ret = snap_state__parse(&s, data, len, what, sizeof(what));
	if (ret) {
		snprintf(why, PERSIST_WHY_MAX, "%.200s: %s", diff_state, what);
		goto out;
	}
	ret = merge__memory(&s, &m, what, sizeof(what));
	if (ret) {
		snprintf(why, PERSIST_WHY_MAX, "%.200s: %s", diff_state,
			 ret == -ENOMEM ? "out of memory" : what);
		goto out;
	}
	/* O_NONBLOCK: a FIFO is refused below, never waited on. */
	bfd = open(m.base, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (bfd < 0 || fstat(bfd, &st) < 0) {
		ret = -errno;
		snprintf(why, PERSIST_WHY_MAX, "the base %.200s: %s", m.base,
			 strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != m.ram_bytes) {
		ret = -EINVAL;
		snprintf(why, PERSIST_WHY_MAX,
			 "the base %.200s is not a raw memory file of the "
			 "snapshot's %llu bytes of RAM",
			 m.base, (unsigned long long)m.ram_bytes);
		goto out;
	}
	if ((uint64_t)st.st_size != m.base_size ||
	    (uint64_t)st.st_mtim.tv_sec * 1000000000ULL +
			    (uint64_t)st.st_mtim.tv_nsec !=
		    m.base_mtime_ns) {
		ret = -EINVAL;
		snprintf(why, PERSIST_WHY_MAX,
			 "the base %.200s changed since the diff was taken",
			 m.base);
		goto out;
	}
	dfd = open(diff_mem, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (dfd < 0 || fstat(dfd, &st) < 0 || !S_ISREG(st.st_mode)) {
		ret = dfd < 0 ? -errno : -EINVAL;
		snprintf(why, PERSIST_WHY_MAX, "%.200s: %s", diff_mem,
			 dfd < 0 ? strerror(errno) : "not a regular file");
		goto out;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", out_mem, (int)getpid());
	ofd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (ofd < 0) {
		ret = -errno;
		tmp[0] = '\0';
		snprintf(why, PERSIST_WHY_MAX, "%.200s: %s", out_mem,
			 strerror(errno));
		goto out;
	}
	ret = merge__copy_sparse(bfd, ofd, m.base_size);
	if (ret) {
		snprintf(why, PERSIST_WHY_MAX, "copying the base %.200s: %s",
			 m.base, strerror(-ret));
		goto out;
	}
	ret = memfile__merge(dfd, ofd, m.sel, what, sizeof(what));
	if (ret) {
		snprintf(why, PERSIST_WHY_MAX, "%.200s: %s", diff_mem, what);
		goto out;
	}
	if (fsync(ofd) < 0 || rename(tmp, out_mem) < 0) {
		ret = -errno;
		snprintf(why, PERSIST_WHY_MAX, "%.200s: %s", out_mem,
			 strerror(errno));
		goto out;
	}
	tmp[0] = '\0';
	ret = merge__state(&s, m.ram_bytes, out_state);
	if (ret)
		snprintf(why, PERSIST_WHY_MAX, "%.200s: %s", out_state,
			 strerror(-ret));
out:
	if (tmp[0])
		unlink(tmp);
	if (ofd >= 0)
		close(ofd);
	if (dfd >= 0)
		close(dfd);
	if (bfd >= 0)
		close(bfd);
	free(m.sel);
	free(data);
	return ret;
}
