// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the port proxy's HTTP/1.x parsing (api/e2b/http1.h)
 * against a hostile guest or client.  The input is cut at its LFs (a CR
 * before one dropped, as the proxy reads them) into lines: the first is
 * a status line, those up to an empty line header lines (split, and
 * their framing noted), then chunk-size lines; each is also tried as a
 * Host value and a port.  Nothing may crash or read past its line, and
 * what parses must hold what http1.h says of it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/e2b/http1.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool is_ctl(char c)
{
	unsigned char u = (unsigned char)c;

	return (u < 0x20 && c != '\t') || u == 0x7f;
}

/* Check what http1__header_split() gave for a line. */
static void check_header(const char *k, const char *v)
{
	size_t vl = strlen(v);

	if (!*k || strchr(k, ':') || strchr(k, ' ') || strchr(k, '\t'))
		abort();
	if (vl && (v[0] == ' ' || v[0] == '\t' || v[vl - 1] == ' ' ||
		   v[vl - 1] == '\t'))
		abort();
	for (const char *c = v; *c; c++)
		if (is_ctl(*c))
			abort();
}

static void one_line(char *line, size_t len, int n, bool *in_head,
		     struct http1_framing *fr)
{
	char id[HTTP1_ID_LEN + 1];
	unsigned int status, port;
	uint64_t chunk;
	char *k, *v;
	int p;

	if (n == 0) {
		if (!http1__status_line(line, len, &status) &&
		    (status < 100 || status > 599))
			abort();
	} else if (*in_head && !len) {
		*in_head = false;
	} else if (*in_head) {
		char *copy = malloc(len + 1);

		if (!copy)
			return;
		memcpy(copy, line, len);
		copy[len] = '\0';
		if (!http1__header_split(copy, len, &k, &v)) {
			struct http1_framing before = *fr;

			check_header(k, v);
			if (http1__framing_add(fr, k, v) &&
			    memcmp(&before, fr, sizeof(before)))
				abort();
		}
		free(copy);
	} else if (!http1__chunk_size(line, len, &chunk) && len &&
		   (line[0] == ' ' || line[0] == ';')) {
		abort();
	}
	p = http1__parse_port(line, len);
	if (p != -EINVAL && (p < 1 || p > 65535))
		abort();
	if (memchr(line, '\0', len))
		return;
	if (!http1__host_target(line, "e2b.example.com:3049", id, &port) &&
	    (port < 1 || port > 65535 || strlen(id) != HTTP1_ID_LEN))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http1_framing fr = { 0 };
	bool in_head = true;
	size_t start = 0;
	int n = 0;

	while (start < size) {
		const uint8_t *nl = memchr(data + start, '\n', size - start);
		size_t end = nl ? (size_t)(nl - data) : size;
		size_t len = end - start;
		char *line = malloc(len + 1);

		if (!line)
			return 0;
		memcpy(line, data + start, len);
		if (len && line[len - 1] == '\r')
			len--;
		line[len] = '\0';
		one_line(line, len, n++, &in_head, &fr);
		free(line);
		start = end + 1;
	}
	for (unsigned int s = 100; s < 600; s += 37) {
		struct http1_body b = http1__body_mode(&fr, s, s & 1);

		if (b.mode == HTTP1_BODY_LEN &&
		    (!fr.has_len || b.len != fr.len))
			abort();
		if (b.mode == HTTP1_BODY_CHUNKED && !fr.chunked)
			abort();
	}
	return 0;
}
