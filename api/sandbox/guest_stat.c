// SPDX-License-Identifier: Apache-2.0
/* Entries of a guest's file system as its stat printed them (guest_stat.h). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "guest_stat.h"

struct parse {
	struct fs_ent e;
	bool have; /* e holds an S record */
	fs_ent_fn fn;
	void *ctx;
};

/* Hand the entry being built, if whole, to the callback. */
static int flush(struct parse *ps)
{
	bool whole = ps->have && ps->e.path;

	ps->have = false;
	return whole ? ps->fn(&ps->e, ps->ctx) : 0;
}

/* The nanoseconds of stat's %y "2024-01-02 03:04:05.123456789 +0000". */
static long nanos(const char *s, size_t n)
{
	const char *dot = memchr(s, '.', n);
	long v = 0;
	int i;

	if (!dot)
		return 0;
	dot++;
	for (i = 0; i < 9; i++) {
		v *= 10;
		if (dot < s + n && *dot >= '0' && *dot <= '9')
			v += *dot++ - '0';
	}
	return v;
}

/* One record, "K payload" (@n bytes at @p).  Junk is skipped. */
static int record(struct parse *ps, const char *p, size_t n)
{
	struct fs_ent *e = &ps->e;
	const char *d = p + 2;
	size_t dn = n - 2;
	char buf[160];
	int rc;

	if (n < 2 || p[1] != ' ')
		return 0;
	if (p[0] == 'S') {
		rc = flush(ps);
		if (rc)
			return rc;
		memset(e, 0, sizeof(*e));
		if (dn >= sizeof(buf))
			return 0;
		memcpy(buf, d, dn);
		buf[dn] = '\0';
		ps->have = sscanf(buf, "%lx %lld %lld %lu %lu %llu", &e->mode,
				  &e->size, &e->mtime, &e->uid, &e->gid,
				  &e->ino) == 6;
		return 0;
	}
	if (!ps->have)
		return 0;
	switch (p[0]) {
	case 'U':
		e->owner = d;
		e->olen = dn;
		break;
	case 'G':
		e->group = d;
		e->glen = dn;
		break;
	case 'T':
		e->nsec = nanos(d, dn);
		break;
	case 'N':
		e->path = d;
		e->plen = dn;
		break;
	case 'L':
		if (S_ISLNK(e->mode) && dn && dn < sizeof(buf) && d[0] != '-') {
			memcpy(buf, d, dn);
			buf[dn] = '\0';
			e->tvalid = sscanf(buf, "%lx", &e->tmode) == 1;
		}
		break;
	case 'R':
		if (S_ISLNK(e->mode)) {
			e->target = d;
			e->tlen = dn;
		}
		break;
	}
	return 0;
}

int guest_stat__parse(const char *out, size_t len, const char *nonce,
		      fs_ent_fn fn, void *ctx)
{
	struct parse ps = { .fn = fn, .ctx = ctx };
	char needle[GUEST_NONCE_LEN + 3];
	size_t nl, start, end, rend;
	const char *hit;
	int rc;

	nl = (size_t)snprintf(needle, sizeof(needle), "\n%s ", nonce);
	if (len >= nl - 1 && !memcmp(out, needle + 1, nl - 1)) {
		start = nl - 1;
	} else {
		hit = memmem(out, len, needle, nl);
		if (!hit)
			return 0;
		start = (size_t)(hit - out) + nl;
	}
	for (;;) {
		hit = memmem(out + start, len - start, needle, nl);
		end = hit ? (size_t)(hit - out) : len;
		rend = end;
		/* The last record's own newline (stat's, printf's). */
		if (!hit && rend > start && out[rend - 1] == '\n')
			rend--;
		rc = record(&ps, out + start, rend - start);
		if (rc || !hit)
			break;
		start = end + nl;
	}
	return rc ? rc : flush(&ps);
}

const char *guest_stat__last(const char *path, size_t n, size_t *len)
{
	size_t i = n;

	while (i && path[i - 1] != '/')
		i--;
	if (i == n) { /* "/" (or a trailing slash, which find never gives) */
		*len = n;
		return path;
	}
	*len = n - i;
	return path + i;
}
