/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP/1.x parsing of the port proxy (port_proxy.h), pure: no
 * sockets, no MHD.  Which sandbox and port a client's Host names, and,
 * from a guest that may be hostile, an answer's status line, its header
 * lines, how its body is framed, and a chunk's size line.  Each takes a
 * line already cut from the stream (its CRLF or LF gone) with its
 * length, so that a NUL within it is seen and refused.
 */
#ifndef EMBER_API_E2B_HTTP1_H
#define EMBER_API_E2B_HTTP1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP1_LINE_MAX	   16384 /* bytes of a head's or chunk's line */
#define HTTP1_ID_LEN	   12 /* characters of a sandbox id (SANDBOX_ID_LEN) */
#define HTTP1_SIZE_UNKNOWN UINT64_MAX /* MHD_SIZE_UNKNOWN */

/*
 * The first @n bytes of @s as a TCP port: 1-65535 in decimal, one to
 * five digits, no sign, no leading zero.  The port, or -EINVAL.
 */
int http1__parse_port(const char *s, size_t n);

/*
 * Split the client's Host value @host (NUL-terminated) as
 * PORT-ID.DOMAIN against ember-e2b's @domain: PORT by
 * http1__parse_port(), ID exactly HTTP1_ID_LEN characters (up to the
 * first '.' after the first '-'), the rest @domain compared without
 * case and each without its ":PORT" (an "[v6]" keeps its colons).  ID's
 * characters are not checked (the caller's routing does), but it is
 * given in lower case.  0 with @id (HTTP1_ID_LEN + 1 bytes, NUL ended)
 * and *@port set, or -EINVAL (@id and *@port then undefined).
 */
int http1__host_target(const char *host, const char *domain,
		       char id[HTTP1_ID_LEN + 1], unsigned int *port);

/*
 * The status line @line (@len bytes): "HTTP/1.0" or "HTTP/1.1", one
 * space, three digits 100-599, then nothing or a space and a reason
 * phrase without control characters (a tab allowed).  0 with *@status,
 * or -EINVAL.
 */
int http1__status_line(const char *line, size_t len, unsigned int *status);

/*
 * Split the header line @line (@len bytes, below HTTP1_LINE_MAX, with a
 * byte after them that is written) in place into its name and value:
 * the name a non-empty token (RFC 9110's tchar) right before the ':',
 * the value without the blanks around it, and no control character
 * other than a tab in it (bytes from 0x80 allowed).  An obs-fold line
 * (one starting with a blank) is refused.  0 with *@name and *@value
 * pointing into @line, each NUL-terminated, or -EINVAL.
 */
int http1__header_split(char *line, size_t len, char **name, char **value);

/* How an answer's body is framed. */
enum http1_body_mode {
	HTTP1_BODY_NONE, /* no body */
	HTTP1_BODY_LEN, /* Content-Length bytes */
	HTTP1_BODY_CHUNKED, /* chunks, up to a zero size and trailers */
	HTTP1_BODY_EOF, /* up to the end of the connection */
};

/* An answer's framing headers, as http1__framing_add() met them. */
struct http1_framing {
	bool te; /* a Transfer-Encoding was seen */
	bool chunked; /* and "chunked" is the last coding of the last one */
	bool has_len; /* a Content-Length was seen */
	uint64_t len; /* its value */
};

/*
 * Note header @name: @value (as http1__header_split() gives them) in
 * @f, zeroed before the first.  A Content-Length must be decimal digits
 * only (or a list of one value repeated) fitting in 64 bits, and one
 * given again must say the same.  Other headers are ignored.  0, or
 * -EINVAL for a Content-Length that is malformed, too big or
 * conflicting (@f then unchanged).
 */
int http1__framing_add(struct http1_framing *f, const char *name,
		       const char *value);

/* The body's framing, as http1__body_mode() decides it. */
struct http1_body {
	enum http1_body_mode mode;
	uint64_t len; /* HTTP1_BODY_LEN: its bytes */
	/* The size for the client's answer: bytes, or HTTP1_SIZE_UNKNOWN
	   (chunked or up to the end). */
	uint64_t size;
};

/*
 * The body of an answer with status @status (100-599, other than 101)
 * to a request that was a HEAD one when @head, with framing @f: none
 * for a HEAD (whose size is its Content-Length, if any), a 1xx, a 204
 * and a 304 (size 0); else chunked when "chunked" is the last
 * coding; else Content-Length bytes; else up to the end.  Never fails.
 */
struct http1_body http1__body_mode(const struct http1_framing *f,
				   unsigned int status, bool head);

/*
 * A chunk's size line @line (@len bytes): one or more hex digits, then
 * nothing, or blanks and/or a ';' and extensions (ignored; no NUL or
 * control character but a tab).  0 with *@size, or -EINVAL (also for a
 * size past 64 bits).
 */
int http1__chunk_size(const char *line, size_t len, uint64_t *size);

#endif /* EMBER_API_E2B_HTTP1_H */
