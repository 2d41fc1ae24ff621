/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ttrpc's framing and messages (see ttrpc.h), pure: no I/O, every input
 * untrusted.  The server, the client, the unit test and the fuzz target
 * share it.
 */
#ifndef EMBER_API_CONTAINERD_TTRPC_CODEC_H
#define EMBER_API_CONTAINERD_TTRPC_CODEC_H

#include <stddef.h>
#include <stdint.h>

#define TTRPC_HEADER_LEN    10
#define TTRPC_MAX_MESSAGE   (4u << 20) /* bytes of one message body */
#define TTRPC_TYPE_REQUEST  1
#define TTRPC_TYPE_RESPONSE 2

struct ttrpc_header {
	uint32_t length; /* of the body, bytes */
	uint32_t stream;
	uint8_t type;
	uint8_t flags;
};

/*
 * Read the header at @buf (TTRPC_HEADER_LEN bytes) into @h: 0, -EMSGSIZE
 * for a length over TTRPC_MAX_MESSAGE, -EPROTO for a type other than
 * request or response.
 */
int ttrpc_codec__get_header(const uint8_t *buf, struct ttrpc_header *h);

/* Write @h at @buf (TTRPC_HEADER_LEN bytes). */
void ttrpc_codec__put_header(uint8_t *buf, const struct ttrpc_header *h);

/*
 * A decoded Request: @service and @method NUL-terminated, @payload inside
 * the decoded message; all owned by @priv (free with
 * ttrpc_codec__request_free).
 */
struct ttrpc_request {
	const char *service, *method;
	const uint8_t *payload;
	size_t len;
	int64_t timeout_ns;
	void *priv;
};

/*
 * Decode a Request body @buf (@len bytes) into @r: 0, -EBADMSG when it
 * does not decode or names no service or method, -ENOMEM.
 */
int ttrpc_codec__request_decode(const uint8_t *buf, size_t len,
				struct ttrpc_request *r);
void ttrpc_codec__request_free(struct ttrpc_request *r);

/*
 * A whole frame (header and body) in a malloc'd *@out (*@outlen bytes):
 * a Request on @stream for @service/@method with @payload (@len bytes,
 * may be NULL when 0) and @timeout_ns (0: none).  0, -EMSGSIZE (body over
 * TTRPC_MAX_MESSAGE) or -ENOMEM.
 */
int ttrpc_codec__request_frame(uint32_t stream, const char *service,
			       const char *method, const uint8_t *payload,
			       size_t len, int64_t timeout_ns, uint8_t **out,
			       size_t *outlen);

/*
 * A whole Response frame on @stream: status @code with @message (NULL or
 * "" for none) and @payload (@len bytes).  A body over TTRPC_MAX_MESSAGE
 * is replaced by a RESOURCE_EXHAUSTED status without payload.  0 or
 * -ENOMEM.
 */
int ttrpc_codec__response_frame(uint32_t stream, int code, const char *message,
				const uint8_t *payload, size_t len,
				uint8_t **out, size_t *outlen);

/*
 * Decode a Response body @buf (@len bytes): 0 with *@code (0 when no
 * status), the status message copied into @msg (@msglen bytes, may be
 * NULL/0) and the payload in a malloc'd *@payload (NULL when empty) of
 * *@plen bytes; -EBADMSG or -ENOMEM.
 */
int ttrpc_codec__response_decode(const uint8_t *buf, size_t len, int *code,
				 char *msg, size_t msglen, uint8_t **payload,
				 size_t *plen);

#endif
