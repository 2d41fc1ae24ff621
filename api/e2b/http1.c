// SPDX-License-Identifier: Apache-2.0
/*
 * The port proxy's HTTP/1.x parsing (http1.h): plain functions of their
 * input, strict where the input is the guest's.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "http1.h"

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* A control character other than a tab (NUL, CR, LF, DEL among them). */
static bool is_ctl(char c)
{
	unsigned char u = (unsigned char)c;

	return (u < 0x20 && c != '\t') || u == 0x7f;
}

/* RFC 9110's tchar. */
static bool is_tchar(char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c);
}

static int hex_value(char c)
{
	if (is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int http1__parse_port(const char *s, size_t n)
{
	int v = 0;

	if (!n || n > 5 || s[0] == '0')
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	return v <= 65535 ? v : -EINVAL;
}

/* The length of host name @h without its ":PORT" (none for "[v6]"). */
static size_t name_len(const char *h)
{
	const char *c = strrchr(h, ':');

	return c && !strchr(h, ']') ? (size_t)(c - h) : strlen(h);
}

int http1__host_target(const char *host, const char *domain,
		       char id[HTTP1_ID_LEN + 1], unsigned int *port)
{
	const char *dash = strchr(host, '-');
	const char *dot = dash ? strchr(dash, '.') : NULL;
	size_t dlen;
	int p;

	if (!dot || dot - dash - 1 != HTTP1_ID_LEN)
		return -EINVAL;
	p = http1__parse_port(host, (size_t)(dash - host));
	if (p < 0)
		return p;
	dlen = name_len(domain);
	if (name_len(dot + 1) != dlen || strncasecmp(dot + 1, domain, dlen))
		return -EINVAL;
	for (int i = 0; i < HTTP1_ID_LEN; i++) {
		char c = dash[1 + i];

		id[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
	}
	id[HTTP1_ID_LEN] = '\0';
	*port = (unsigned int)p;
	return 0;
}

int http1__status_line(const char *line, size_t len, unsigned int *status)
{
	unsigned int v;

	if (len < 12 || len >= HTTP1_LINE_MAX || memcmp(line, "HTTP/1.", 7) ||
	    (line[7] != '0' && line[7] != '1') || line[8] != ' ')
		return -EINVAL;
	for (int i = 9; i < 12; i++)
		if (!is_digit(line[i]))
			return -EINVAL;
	v = (unsigned int)((line[9] - '0') * 100 + (line[10] - '0') * 10 +
			   (line[11] - '0'));
	if (v < 100 || v > 599 || (len > 12 && line[12] != ' '))
		return -EINVAL;
	for (size_t i = 12; i < len; i++)
		if (is_ctl(line[i]))
			return -EINVAL;
	*status = v;
	return 0;
}

int http1__header_split(char *line, size_t len, char **name, char **value)
{
	size_t colon = 0, v, e;

	if (!len || len >= HTTP1_LINE_MAX)
		return -EINVAL;
	while (colon < len && is_tchar(line[colon]))
		colon++;
	/* Also refuses an obs-fold, a blank before the ':' and no ':'. */
	if (!colon || colon == len || line[colon] != ':')
		return -EINVAL;
	for (size_t i = colon + 1; i < len; i++)
		if (is_ctl(line[i]))
			return -EINVAL;
	for (v = colon + 1; v < len && is_blank(line[v]); v++)
		;
	for (e = len; e > v && is_blank(line[e - 1]); e--)
		;
	line[colon] = '\0';
	line[e] = '\0';
	*name = line;
	*value = line + v;
	return 0;
}

/* @v's Content-Length: digits, or a list of one value repeated.  0 with
   *@out, or -EINVAL. */
static int parse_length(const char *v, uint64_t *out)
{
	bool have = false;
	uint64_t first = 0;

	for (;;) {
		uint64_t n = 0;
		size_t d = 0;

		while (is_blank(*v))
			v++;
		for (; is_digit(v[d]); d++) {
			unsigned int dig = (unsigned int)(v[d] - '0');

			if (n > (UINT64_MAX - dig) / 10)
				return -EINVAL;
			n = n * 10 + dig;
		}
		if (!d || (have && n != first))
			return -EINVAL;
		first = n;
		have = true;
		v += d;
		while (is_blank(*v))
			v++;
		if (!*v)
			break;
		if (*v++ != ',')
			return -EINVAL;
	}
	*out = first;
	return 0;
}

/* Whether the last coding of list @v is "chunked"; -1 if it has none. */
static int last_chunked(const char *v)
{
	const char *last = NULL, *e;
	size_t n;

	for (const char *s = v; *s;) {
		s += strspn(s, " \t,");
		if (!*s)
			break;
		last = s;
		s += strcspn(s, ",");
	}
	if (!last)
		return -1;
	e = last + strcspn(last, ",");
	while (e > last && is_blank(e[-1]))
		e--;
	n = (size_t)(e - last);
	return n == 7 && !strncasecmp(last, "chunked", 7);
}

int http1__framing_add(struct http1_framing *f, const char *name,
		       const char *value)
{
	if (!strcasecmp(name, "Content-Length")) {
		uint64_t n;

		if (parse_length(value, &n) || (f->has_len && n != f->len))
			return -EINVAL;
		f->has_len = true;
		f->len = n;
	} else if (!strcasecmp(name, "Transfer-Encoding")) {
		int c = last_chunked(value);

		if (c >= 0) {
			f->te = true;
			f->chunked = c;
		}
	}
	return 0;
}

struct http1_body http1__body_mode(const struct http1_framing *f,
				   unsigned int status, bool head)
{
	struct http1_body b = { .mode = HTTP1_BODY_EOF,
				.size = HTTP1_SIZE_UNKNOWN };

	if (head) {
		b.mode = HTTP1_BODY_NONE;
		b.size = f->has_len ? f->len : 0;
		return b;
	}
	if (status < 200 || status == 204 || status == 304) {
		b.mode = HTTP1_BODY_NONE;
		b.size = 0;
		return b;
	}
	if (f->te) {
		if (f->chunked)
			b.mode = HTTP1_BODY_CHUNKED;
		return b;
	}
	if (f->has_len) {
		b.mode = HTTP1_BODY_LEN;
		b.len = b.size = f->len;
	}
	return b;
}

int http1__chunk_size(const char *line, size_t len, uint64_t *size)
{
	uint64_t n = 0;
	size_t i = 0;

	if (len >= HTTP1_LINE_MAX)
		return -EINVAL;
	for (; i < len && hex_value(line[i]) >= 0; i++) {
		if (n >> 60)
			return -EINVAL;
		n = n << 4 | (uint64_t)hex_value(line[i]);
	}
	if (!i)
		return -EINVAL;
	while (i < len && is_blank(line[i]))
		i++;
	if (i < len && line[i] != ';')
		return -EINVAL;
	for (; i < len; i++)
		if (is_ctl(line[i]))
			return -EINVAL;
	*size = n;
	return 0;
}
