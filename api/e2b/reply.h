/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A request as the services see it and the answer they fill (reply.c):
 * the HTTP layer (http.c) reads a request whole into a struct e2b_req,
 * the router (route.c) hands it to a service, the service answers with
 * these helpers into a struct e2b_resp, and the HTTP layer sends that.
 */
#ifndef EMBER_API_E2B_REPLY_H
#define EMBER_API_E2B_REPLY_H

#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct MHD_Connection;

/* One request, its body complete. */
struct e2b_req {
	struct MHD_Connection *conn; /* for e2b__header() and e2b__query() */
	const char *method; /* "GET", "POST", ... */
	const char *path; /* the URL's path, no query string */
	const char *body; /* NUL-terminated; "" when none; NULL when the body
			     went to @body_fd */
	size_t len; /* its bytes */
	int body_fd; /* -1, or a memfd with the whole body (POST /files, whose
			bodies may be large), read from offset 0; the
			HTTP layer closes it */
	uint64_t body_fd_len;
};

struct e2b_stream;

/*
 * The answer.  Exactly one of: @body (malloc()ed, owned by the response,
 * @len bytes; NULL with @len 0 for none), @fd (>= 0: @fd_len bytes from
 * offset 0 are sent and the fd closed), @stream (its reference is the
 * response's).  Up to E2B_RESP_HEADERS extra headers, strings copied.
 */
#define E2B_RESP_HEADERS 4
struct e2b_resp {
	unsigned int status;
	char content_type[64];
	char *body;
	size_t len;
	int fd;
	uint64_t fd_len;
	struct e2b_stream *stream;
	size_t nheaders;
	char hname[E2B_RESP_HEADERS][32];
	char hvalue[E2B_RESP_HEADERS][256];
};

/* The request header @name (case-insensitive), or NULL. */
const char *e2b__header(const struct e2b_req *r, const char *name);

/*
 * The request header @name as a number: decimal digits only, at most
 * @digits of them (1-19); @def when absent or malformed (Connect-Timeout-Ms,
 * Keepalive-Ping-Interval).
 */
uint64_t e2b__header_num(const struct e2b_req *r, const char *name,
			 size_t digits, uint64_t def);

/* The query argument @name, URL-decoded, or NULL.  Borrowed from MHD. */
const char *e2b__query(const struct e2b_req *r, const char *name);

/*
 * Answer @status with @j (stolen; NULL: out of memory -> 500) as
 * application/json.  Returns 0.
 */
int reply__json(struct e2b_resp *resp, unsigned int status, json_t *j);

/*
 * Answer with E2B's error shape {"code": @status, "message": ...}
 * (the control plane's and envd's REST error), as application/json.
 * Returns 0.
 */
__attribute__((format(printf, 3, 4))) int
reply__error(struct e2b_resp *resp, unsigned int status, const char *fmt, ...);

/* Answer @status (204, 200...) with no body.  Returns 0. */
int reply__empty(struct e2b_resp *resp, unsigned int status);

/*
 * Answer @status with the bytes @buf (copied), @len of them, as
 * @content_type.  -ENOMEM (then a 500 is set instead).
 */
int reply__bytes(struct e2b_resp *resp, unsigned int status,
		 const char *content_type, const void *buf, size_t len);

/* Add a header to the answer; -ENOSPC past E2B_RESP_HEADERS, -E2BIG. */
int reply__header(struct e2b_resp *resp, const char *name, const char *value);

/* Answer 200 with @s as @content_type (the response takes a reference). */
int reply__stream(struct e2b_resp *resp, const char *content_type,
		  struct e2b_stream *s);

/*
 * Answer a unary Connect call's error: Connect's error shape
 * {"code": @code, "message": ...} with the HTTP status that Connect gives
 * @code.  The message (at most 1023 bytes) must be UTF-8, or the answer
 * is a 500.  Returns 0.
 */
__attribute__((format(printf, 3, 4))) int
reply__connect(struct e2b_resp *resp, const char *code, const char *fmt, ...);

/*
 * Answer a server-streaming Connect call's error: 200 as
 * application/connect+json with only the END_STREAM message carrying
 * @code and @msg (UTF-8).  0; -ENOMEM (then a 500 is set instead).
 */
int reply__connect_end(struct e2b_resp *resp, const char *code,
		       const char *msg);

/*
 * @src as a message safe for JSON into @dst (@cap bytes, NUL-terminated,
 * cut short to fit): control bytes and bytes over 0x7e as '?'.  @dst may
 * be @src.
 */
void e2b__clean_text(char *dst, size_t cap, const char *src);

/* The message of @fmt and @ap into @dst (@cap bytes), as e2b__clean_text(). */
void e2b__vclean_text(char *dst, size_t cap, const char *fmt, va_list ap);

#endif /* EMBER_API_E2B_REPLY_H */
