/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Connect protocol's JSON codec, the part envd's services need
 * (connectrpc.com/docs/protocol: "Unary-Request", "Streaming-Request",
 * "Streaming-Response", "Error codes"): a server-streaming request is one
 * envelope (flags u8, length u32 big-endian, message); its answer is
 * envelopes of messages, then one with flag END_STREAM holding {} or
 * {"error":{"code","message"}}.  A unary request's body is the message;
 * its error answer is {"code","message"} with the code's HTTP status.
 * Plus the proto3 JSON forms (protobuf.dev "ProtoJSON Format") the
 * services read: 64-bit integers as numbers or strings, enums by name or
 * number.  Pure: no I/O; everything from the client is untrusted.
 */
#ifndef EMBER_API_E2B_CONNECT_RPC_H
#define EMBER_API_E2B_CONNECT_RPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONNECT_FLAG_COMPRESSED 0x01
#define CONNECT_FLAG_END_STREAM 0x02
#define CONNECT_ENVELOPE_HDR	5
#define CONNECT_MAX_MESSAGE	(16u << 20) /* bytes of one message */

/*
 * Split the first envelope off @buf (@len bytes): 0 with *@flags, *@msg
 * (inside @buf), *@msglen and *@used (header + message); -EAGAIN when
 * @buf holds less than a whole envelope; -EMSGSIZE for a length over
 * CONNECT_MAX_MESSAGE.
 */
int connect__unwrap(const uint8_t *buf, size_t len, uint8_t *flags,
		    const uint8_t **msg, size_t *msglen, size_t *used);

/*
 * The request message of a call whose body is @body (@len bytes): the
 * body itself for a unary call (@streaming false), else exactly one
 * uncompressed envelope with flags 0.  Returns the JSON object (a new
 * reference), or NULL with a Connect code ("invalid_argument",
 * "unimplemented" for a compressed one) in *@code and one line in @err.
 */
json_t *connect__request(const char *body, size_t len, bool streaming,
			 const char **code, char *err, size_t errlen);

/*
 * An envelope of @flags around the JSON text of @msg (not stolen),
 * malloc()ed, *@outlen bytes.  NULL when out of memory.
 */
uint8_t *connect__envelope(uint8_t flags, const json_t *msg, size_t *outlen);

/*
 * The END_STREAM envelope: {} when @code is NULL, else
 * {"error":{"code":@code,"message":@message}}.  malloc()ed, *@outlen
 * bytes; NULL when out of memory.
 */
uint8_t *connect__end_stream(const char *code, const char *message,
			     size_t *outlen);

/* A unary call's error body {"code":@code,"message":@message}. */
json_t *connect__error(const char *code, const char *message);

/*
 * The HTTP status of Connect error @code (the protocol's table: not_found
 * 404, invalid_argument 400, unimplemented 501, ...); 500 for one it does
 * not know.
 */
unsigned int connect__http_status(const char *code);

/*
 * A proto3 JSON unsigned integer (a number, or a decimal string, as
 * int64/uint64 are written) at most @max: 0 with *@out, -EINVAL.
 */
int connect__json_uint(const json_t *v, uint64_t max, uint64_t *out);

/*
 * A proto3 JSON bytes field (standard or URL-safe base64, padded or
 * not) decoded into a malloc()ed buffer (*@out, *@outlen; the caller
 * frees).  -EINVAL for a non-string or bad base64, -ENOMEM.
 */
int connect__json_bytes(const json_t *v, uint8_t **out, size_t *outlen);

/* @len bytes of @buf as a proto3 JSON bytes value (standard base64). */
json_t *connect__bytes_json(const void *buf, size_t len);

#endif /* EMBER_API_E2B_CONNECT_RPC_H */
