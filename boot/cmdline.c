// SPDX-License-Identifier: Apache-2.0
/* Kernel command-line assembly (see cmdline.h). */
#include "cmdline.h"

#include <errno.h>
#include <string.h>

#include "../guest-init/protocol.h"

void cmdline__init(struct cmdline *c)
{
	c->buf[0] = '\0';
	c->len = 0;
}

/*
 * Room check for appending @add bytes, plus the separating space when the
 * line is not empty, plus the NUL.  Returns the offset to write at, or
 * -E2BIG.  Written so that a huge @add cannot wrap.
 */
static long cmdline_reserve(const struct cmdline *c, size_t add)
{
	size_t sep = c->len ? 1 : 0;
	size_t room = sizeof(c->buf) - 1 - c->len;

	if (add > room || sep > room - add)
		return -E2BIG;
	return (long)(c->len + sep);
}

/* Appends the pieces as one word; all or nothing. */
static int cmdline_append(struct cmdline *c, const char *const parts[],
			  const size_t lens[], unsigned int nr)
{
	size_t total = 0;
	unsigned int i;
	long at;

	for (i = 0; i < nr; i++) {
		if (lens[i] > sizeof(c->buf))
			return -E2BIG;
		total += lens[i]; /* nr * sizeof(buf) cannot wrap */
	}
	if (!total)
		return 0;
	at = cmdline_reserve(c, total);
	if (at < 0)
		return (int)at;
	if (c->len)
		c->buf[c->len] = ' ';
	for (i = 0; i < nr; i++) {
		memcpy(c->buf + at, parts[i], lens[i]);
		at += (long)lens[i];
	}
	c->buf[at] = '\0';
	c->len = (size_t)at;
	return 0;
}

int cmdline__add(struct cmdline *c, const char *arg)
{
	const char *parts[] = { arg };
	const size_t lens[] = { strlen(arg) };

	return cmdline_append(c, parts, lens, 1);
}

static int is_sep(char ch)
{
	/* The kernel splits parameters at any isspace() character. */
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' ||
	       ch == '\v' || ch == '\f';
}

bool cmdline__has(const struct cmdline *c, const char *key)
{
	size_t klen = strlen(key), i = 0, start, wlen;

	if (!klen)
		return false;
	while (i < c->len) {
		while (i < c->len && is_sep(c->buf[i]))
			i++;
		start = i;
		while (i < c->len && !is_sep(c->buf[i]))
			i++;
		wlen = i - start;
		if (wlen >= klen && !memcmp(c->buf + start, key, klen) &&
		    (wlen == klen || c->buf[start + klen] == '='))
			return true;
	}
	return false;
}

int cmdline__add_default(struct cmdline *c, const char *key, const char *value)
{
	const char *parts[] = { key, "=", value };
	size_t lens[] = { strlen(key), 1, value ? strlen(value) : 0 };

	if (cmdline__has(c, key))
		return 0;
	return cmdline_append(c, parts, lens, value ? 3 : 1);
}

int cmdline__add_run(struct cmdline *c, const void *cmd, size_t len)
{
	const size_t plen = strlen(EMBER_RUN_PARAM);
	size_t enc;
	long at;

	if (len > sizeof(c->buf))
		return -E2BIG;
	enc = ember_b64_encoded_len(len);
	at = cmdline_reserve(c, plen + enc);
	if (at < 0)
		return (int)at;
	if (c->len)
		c->buf[c->len] = ' ';
	memcpy(c->buf + at, EMBER_RUN_PARAM, plen);
	at += (long)plen;
	/* Cannot fail: the room was reserved above. */
	at += ember_b64_encode(cmd, len, c->buf + at, sizeof(c->buf) - at);
	c->len = (size_t)at;
	return 0;
}
