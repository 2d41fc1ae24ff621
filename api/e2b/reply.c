// SPDX-License-Identifier: Apache-2.0
/*
 * What the services read of a request and how they fill its answer
 * (reply.h): headers and query arguments (borrowed from libmicrohttpd's
 * connection), and struct e2b_resp set as JSON, E2B's error shape, bytes
 * or a stream.  The HTTP layer (http.c) sends what they filled.
 */
#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect_rpc.h"
#include "reply.h"

const char *e2b__header(const struct e2b_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

uint64_t e2b__header_num(const struct e2b_req *r, const char *name,
			 size_t digits, uint64_t def)
{
	const char *v = e2b__header(r, name);
	uint64_t n = 0;

	if (digits > 19)
		digits = 19; /* fits in 64 bits */
	if (!v || !*v || strlen(v) > digits ||
	    strspn(v, "0123456789") != strlen(v))
		return def;
	for (size_t i = 0; v[i]; i++)
		n = n * 10 + (uint64_t)(v[i] - '0');
	return n;
}

const char *e2b__query(const struct e2b_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND,
					   name);
}

static void set_type(struct e2b_resp *resp, const char *type)
{
	snprintf(resp->content_type, sizeof(resp->content_type), "%s",
		 type ? type : "");
}

int reply__json(struct e2b_resp *resp, unsigned int status, json_t *j)
{
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	free(resp->body);
	resp->body = NULL;
	resp->len = 0;
	if (!text) {
		static const char oom[] =
			"{\"code\":500,\"message\":\"out of memory\"}";

		resp->status = 500;
		resp->body = strdup(oom);
		resp->len = resp->body ? strlen(oom) : 0;
		set_type(resp, "application/json");
		return 0;
	}
	resp->status = status;
	resp->body = text;
	resp->len = strlen(text);
	set_type(resp, "application/json");
	return 0;
}

int reply__error(struct e2b_resp *resp, unsigned int status, const char *fmt,
		 ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return reply__json(
		resp, status,
		json_pack("{s:i, s:s}", "code", (int)status, "message", msg));
}

int reply__empty(struct e2b_resp *resp, unsigned int status)
{
	free(resp->body);
	resp->body = NULL;
	resp->len = 0;
	resp->status = status;
	set_type(resp, NULL);
	return 0;
}

int reply__bytes(struct e2b_resp *resp, unsigned int status,
		 const char *content_type, const void *buf, size_t len)
{
	char *copy = malloc(len ? len : 1);

	if (!copy) {
		reply__error(resp, 500, "out of memory");
		return -ENOMEM;
	}
	memcpy(copy, buf, len);
	free(resp->body);
	resp->body = copy;
	resp->len = len;
	resp->status = status;
	set_type(resp, content_type);
	return 0;
}

int reply__header(struct e2b_resp *resp, const char *name, const char *value)
{
	if (resp->nheaders >= E2B_RESP_HEADERS)
		return -ENOSPC;
	if (strlen(name) >= sizeof(resp->hname[0]) ||
	    strlen(value) >= sizeof(resp->hvalue[0]))
		return -E2BIG;
	strcpy(resp->hname[resp->nheaders], name);
	strcpy(resp->hvalue[resp->nheaders], value);
	resp->nheaders++;
	return 0;
}

int reply__stream(struct e2b_resp *resp, const char *content_type,
		  struct e2b_stream *s)
{
	free(resp->body);
	resp->body = NULL;
	resp->len = 0;
	resp->status = 200;
	resp->stream = s;
	set_type(resp, content_type);
	return 0;
}

void e2b__clean_text(char *dst, size_t cap, const char *src)
{
	size_t i;

	for (i = 0; src[i] && i + 1 < cap; i++) {
		unsigned char ch = (unsigned char)src[i];

		dst[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
	}
	if (cap)
		dst[i] = 0;
}

int reply__connect(struct e2b_resp *resp, const char *code, const char *fmt,
		   ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return reply__json(resp, connect__http_status(code),
			   connect__error(code, msg));
}

int reply__connect_end(struct e2b_resp *resp, const char *code, const char *msg)
{
	size_t n;
	uint8_t *b = connect__end_stream(code, msg, &n);
	int rc;

	if (!b)
		return reply__connect(resp, "internal", "out of memory");
	rc = reply__bytes(resp, 200, "application/connect+json", b, n);
	free(b);
	return rc;
}

void e2b__vclean_text(char *dst, size_t cap, const char *fmt, va_list ap)
{
	vsnprintf(dst, cap, fmt, ap);
	e2b__clean_text(dst, cap, dst);
}
