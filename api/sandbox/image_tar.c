// SPDX-License-Identifier: Apache-2.0
/*
 * What umoci --rootless cannot keep, read from the layer tars as
 * image_oci.c hashes them: device nodes and security.* / trusted.*
 * xattrs, with the layers' order applied (a later entry at the same path,
 * a whiteout, an opaque directory drop what came before).  Pure: fed the
 * uncompressed bytes in chunks of any size (see image_internal.h).
 * Formats: POSIX ustar and pax (SCHILY.xattr.*, path), GNU long names.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"

#define BLK	    512
#define PAX_MAX	    (1u << 20) /* a bigger pax header is skipped */
#define SPECIAL_MAX 65536 /* records kept at most */

void image_tar__init(struct image_tar *t)
{
	memset(t, 0, sizeof(*t));
}

static void special_free(struct image_special *s)
{
	free(s->path);
	free(s->xname);
	free(s->xval);
}

void image_tar__free(struct image_tar *t)
{
	for (size_t i = 0; i < t->n; i++)
		special_free(&t->v[i]);
	free(t->v);
	free(t->pax);
	free(t->long_name);
	free(t->px_path);
	for (size_t i = 0; i < t->n_px; i++) {
		free(t->px_name[i]);
		free(t->px_val[i]);
	}
	memset(t, 0, sizeof(*t));
}

/* "./a/b/" -> "a/b", in place. */
static void norm(char *p)
{
	size_t n;

	while (p[0] == '.' && p[1] == '/')
		memmove(p, p + 2, strlen(p + 2) + 1);
	while (p[0] == '/')
		memmove(p, p + 1, strlen(p + 1) + 1);
	n = strlen(p);
	while (n && p[n - 1] == '/')
		p[--n] = '\0';
}

/* Whether @p is @dir or below it ("" is the root: everything). */
static bool under(const char *p, const char *dir, bool self)
{
	size_t n = strlen(dir);

	if (!n)
		return true;
	if (strncmp(p, dir, n))
		return false;
	return p[n] == '/' || (self && p[n] == '\0');
}

/* Drop records matching: at/under @path, of layers below @layer_lt. */
static void drop(struct image_tar *t, const char *path, bool self,
		 bool below_only, unsigned int layer_lt)
{
	size_t w = 0;

	for (size_t i = 0; i < t->n; i++) {
		struct image_special *s = &t->v[i];
		bool hit = under(s->path, path, self) &&
			   (!below_only || s->layer < layer_lt);

		if (hit)
			special_free(s);
		else
			t->v[w++] = *s;
	}
	t->n = w;
}

static int add(struct image_tar *t, struct image_special *s)
{
	struct image_special *nv;

	if (t->n >= SPECIAL_MAX)
		return -E2BIG;
	if (t->n == t->cap) {
		size_t c = t->cap ? t->cap * 2 : 16;

		nv = realloc(t->v, c * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		t->v = nv;
		t->cap = c;
	}
	t->v[t->n++] = *s;
	return 0;
}

static int64_t octal(const uint8_t *f, size_t n)
{
	int64_t v = 0;
	size_t i = 0;

	if (f[0] & 0x80) { /* base-256 */
		for (i = 1; i < n; i++) {
			if (v > (INT64_MAX >> 8))
				return -1;
			v = (v << 8) | f[i];
		}
		return v;
	}
	while (i < n && f[i] == ' ')
		i++;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v > (INT64_MAX >> 3))
			return -1;
		v = (v << 3) | (f[i] - '0');
	}
	return v;
}

static void pending_clear(struct image_tar *t)
{
	free(t->long_name);
	free(t->px_path);
	t->long_name = t->px_path = NULL;
	for (size_t i = 0; i < t->n_px; i++) {
		free(t->px_name[i]);
		free(t->px_val[i]);
	}
	t->n_px = 0;
}

/* The pax records in t->pax (t->pax_len bytes) into the pending ones. */
static int pax_parse(struct image_tar *t)
{
	size_t off = 0;

	while (off < t->pax_len) {
		char *rec = (char *)t->pax + off, *sp, *eq, *end;
		unsigned long len;

		/*
		 * "LEN KEY=VALUE\n", LEN counting the whole record: digits
		 * only (strtoul() would take blanks and a sign), and room in
		 * LEN for the blank, a key, the '=' and the '\n' after them,
		 * so that the searches below stay inside the record.
		 */
		if (*rec < '0' || *rec > '9')
			return -EPROTO;
		len = strtoul(rec, &sp, 10);
		if (*sp != ' ' || len > t->pax_len - off ||
		    len < (unsigned long)(sp - rec) + 4)
			return -EPROTO;
		end = rec + len - 1; /* the '\n' */
		eq = memchr(sp + 1, '=', (size_t)(end - sp - 1));
		if (!eq || *end != '\n')
			return -EPROTO;
		*eq = '\0';
		if (!strcmp(sp + 1, "path")) {
			free(t->px_path);
			t->px_path = strndup(eq + 1, (size_t)(end - eq - 1));
			if (!t->px_path)
				return -ENOMEM;
		} else if ((!strncmp(sp + 1, "SCHILY.xattr.security.", 22) ||
			    !strncmp(sp + 1, "SCHILY.xattr.trusted.", 21)) &&
			   t->n_px < IMAGE_TAR_XATTRS) {
			size_t vl = (size_t)(end - eq - 1);

			t->px_name[t->n_px] = strdup(sp + 1 + 13);
			t->px_val[t->n_px] = malloc(vl ? vl : 1);
			if (!t->px_name[t->n_px] || !t->px_val[t->n_px]) {
				free(t->px_name[t->n_px]);
				free(t->px_val[t->n_px]);
				return -ENOMEM;
			}
			memcpy(t->px_val[t->n_px], eq + 1, vl);
			t->px_len[t->n_px++] = vl;
		}
		off += len;
	}
	return 0;
}

/* One entry's header, its name resolved: apply it to the records. */
static int entry(struct image_tar *t, const uint8_t *h, char *name)
{
	char type = (char)h[156];
	char *base = strrchr(name, '/');
	const char *b = base ? base + 1 : name;
	struct image_special s;
	int rc;

	if (!strcmp(b, ".wh..wh..opq")) {
		if (base)
			*base = '\0';
		drop(t, base ? name : "", false, true, t->layer);
		return 0;
	}
	if (!strncmp(b, ".wh.", 4)) {
		char *target;

		if (base)
			memmove(base + 1, b + 4, strlen(b + 4) + 1);
		else
			memmove(name, name + 4, strlen(name + 4) + 1);
		target = name;
		drop(t, target, true, false, 0);
		return 0;
	}
	drop(t, name, true, false, 0);
	if (type == '3' || type == '4') {
		memset(&s, 0, sizeof(s));
		s.path = strdup(name);
		if (!s.path)
			return -ENOMEM;
		s.kind = type == '3' ? 'c' : 'b';
		s.major = (uint32_t)octal(h + 329, 8);
		s.minor = (uint32_t)octal(h + 337, 8);
		s.mode = (uint32_t)octal(h + 100, 8) & 07777;
		s.uid = (uint32_t)octal(h + 108, 8);
		s.gid = (uint32_t)octal(h + 116, 8);
		s.layer = t->layer;
		if ((rc = add(t, &s))) {
			special_free(&s);
			return rc;
		}
	}
	for (size_t i = 0; i < t->n_px; i++) {
		memset(&s, 0, sizeof(s));
		s.path = strdup(name);
		s.kind = 'x';
		s.xname = t->px_name[i];
		s.xval = t->px_val[i];
		s.xlen = t->px_len[i];
		s.layer = t->layer;
		t->px_name[i] = NULL;
		t->px_val[i] = NULL;
		if (!s.path || (rc = add(t, &s))) {
			special_free(&s);
			return s.path ? rc : -ENOMEM;
		}
	}
	t->n_px = 0;
	return 0;
}

/* A whole header block in t->hdr: decide what follows it. */
static int header(struct image_tar *t)
{
	const uint8_t *h = t->hdr;
	char name[PATH_MAX];
	int64_t size = octal(h + 124, 12);
	bool zero = true;
	int rc = 0;

	for (int i = 0; i < BLK && zero; i++)
		zero = !h[i];
	if (zero) {
		t->state = IMAGE_TAR_END;
		return 0;
	}
	if (size < 0)
		return -EPROTO;
	t->left = (uint64_t)size;
	t->pad = (BLK - (size % BLK)) % BLK;
	switch (h[156]) {
	case 'x':
	case 'L':
		if (size > PAX_MAX) {
			t->state = IMAGE_TAR_SKIP;
			return 0;
		}
		free(t->pax);
		t->pax = malloc((size_t)size + 1);
		if (!t->pax)
			return -ENOMEM;
		t->pax_len = 0;
		t->pax_kind = (char)h[156];
		t->state = IMAGE_TAR_META;
		return 0;
	case 'g':
	case 'K':
		t->state = IMAGE_TAR_SKIP;
		return 0;
	default:
		break;
	}
	if (t->px_path) {
		snprintf(name, sizeof(name), "%s", t->px_path);
	} else if (t->long_name) {
		snprintf(name, sizeof(name), "%s", t->long_name);
	} else if (!memcmp(h + 257, "ustar", 5) && h[345]) {
		snprintf(name, sizeof(name), "%.155s/%.100s",
			 (const char *)h + 345, (const char *)h);
	} else {
		snprintf(name, sizeof(name), "%.100s", (const char *)h);
	}
	/* A name cut by name[]'s size names the wrong file: leave it. */
	if (strlen(name) < sizeof(name) - 1) {
		norm(name);
		if (name[0])
			rc = entry(t, h, name);
	}
	pending_clear(t);
	t->state = IMAGE_TAR_SKIP;
	return rc;
}

int image_tar__feed(struct image_tar *t, const uint8_t *buf, size_t len)
{
	while (len && t->state != IMAGE_TAR_END && !t->error) {
		size_t n;
		int rc = 0;

		switch (t->state) {
		case IMAGE_TAR_HEADER:
			n = BLK - t->hdr_len;
			n = n < len ? n : len;
			memcpy(t->hdr + t->hdr_len, buf, n);
			t->hdr_len += n;
			if (t->hdr_len == BLK) {
				t->hdr_len = 0;
				rc = header(t);
			}
			break;
		case IMAGE_TAR_META:
			n = t->left < len ? (size_t)t->left : len;
			memcpy(t->pax + t->pax_len, buf, n);
			t->pax_len += n;
			t->left -= n;
			if (!t->left) {
				t->pax[t->pax_len] = 0;
				if (t->pax_kind == 'x') {
					rc = pax_parse(t);
				} else {
					free(t->long_name);
					t->long_name = strdup((char *)t->pax);
					rc = t->long_name ? 0 : -ENOMEM;
				}
				t->state = IMAGE_TAR_SKIP; /* its padding */
			}
			break;
		default: /* IMAGE_TAR_SKIP: data, then padding */
			if (t->left) {
				n = t->left < len ? (size_t)t->left : len;
				t->left -= n;
			} else {
				n = t->pad < len ? (size_t)t->pad : len;
				t->pad -= n;
			}
			if (!t->left && !t->pad)
				t->state = IMAGE_TAR_HEADER;
			break;
		}
		if (rc)
			t->error = rc;
		buf += n;
		len -= n;
	}
	return t->error;
}

void image_tar__next_layer(struct image_tar *t)
{
	pending_clear(t);
	t->layer++;
	t->state = IMAGE_TAR_HEADER;
	t->hdr_len = 0;
	t->left = t->pad = 0;
}
