/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ttrpc, containerd's RPC over a unix socket (github.com/containerd/ttrpc,
 * channel.go): each message is a 10-byte header (length u32 big-endian
 * excluding the header, stream id u32 big-endian, type u8: 1 request, 2
 * response, flags u8) and a protobuf body of at most TTRPC_MAX_MESSAGE
 * bytes: ttrpc.Request {service, method, payload, timeout_nano, metadata}
 * or ttrpc.Response {status (google.rpc.Status), payload}.  Clients use
 * odd stream ids.  The pure codec is ttrpc_codec.h.
 */
#ifndef EMBER_API_CONTAINERD_TTRPC_H
#define EMBER_API_CONTAINERD_TTRPC_H

#include <stddef.h>
#include <stdint.h>

/* gRPC status codes a handler answers with (google.rpc.Code). */
enum ttrpc_code {
	TTRPC_OK = 0,
	TTRPC_CANCELLED = 1,
	TTRPC_UNKNOWN = 2,
	TTRPC_INVALID_ARGUMENT = 3,
	TTRPC_DEADLINE_EXCEEDED = 4,
	TTRPC_NOT_FOUND = 5,
	TTRPC_ALREADY_EXISTS = 6,
	TTRPC_PERMISSION_DENIED = 7,
	TTRPC_RESOURCE_EXHAUSTED = 8,
	TTRPC_FAILED_PRECONDITION = 9,
	TTRPC_ABORTED = 10,
	TTRPC_OUT_OF_RANGE = 11,
	TTRPC_UNIMPLEMENTED = 12,
	TTRPC_INTERNAL = 13,
	TTRPC_UNAVAILABLE = 14,
};

/*
 * One call as a handler sees it: @service ("containerd.task.v2.Task"),
 * @method ("Create"), the request message @payload (@len bytes, never
 * NULL, possibly 0 bytes); all owned by the server and valid until the
 * handler returns.  The request's metadata (containerd sends its
 * namespace there) and timeout are not passed on.
 */
struct ttrpc_call {
	const char *service, *method;
	const uint8_t *payload;
	size_t len;
};

/*
 * A handler's answer, zeroed before the call: @payload (@len bytes, the
 * packed response message) malloc'd by the handler or NULL (the server
 * frees it); @code a gRPC code (enum ttrpc_code) with @message (a NUL-
 * terminated string) when it is not 0.
 */
struct ttrpc_reply {
	uint8_t *payload;
	size_t len;
	int code;
	char message[512];
};

typedef void (*ttrpc_handler_fn)(void *opaque, const struct ttrpc_call *c,
				 struct ttrpc_reply *r);

struct ttrpc_server;
struct ttrpc_client;

/*
 * Requests of one connection in flight at once (Waits of every task and
 * exec of a pod fit), and their bytes (one request of any size is let
 * through alone); past either the server reads no more from that
 * connection until one is answered.
 */
#define TTRPC_MAX_INFLIGHT	 1024
#define TTRPC_MAX_INFLIGHT_BYTES (16u << 20)

/*
 * A server on @listen_fd (a listening unix stream socket; the server owns
 * it and closes it in ttrpc_server__free) calling @fn(@opaque, ...) for
 * each request, each in a thread of its own (so a Wait may block for
 * long), at most TTRPC_MAX_INFLIGHT(_BYTES) per connection; replies on a
 * connection are serialized; a frame over 4 MiB, of an unknown type or
 * cut short closes that connection only; a Request that does not decode
 * is answered INVALID_ARGUMENT.  NULL on ENOMEM.
 */
struct ttrpc_server *ttrpc_server__new(int listen_fd, ttrpc_handler_fn fn,
				       void *opaque);

/*
 * Accept and serve until ttrpc_server__stop: then stop accepting, let the
 * requests in flight finish (up to 2 s, so that e.g. Shutdown's own reply
 * is sent), close every connection and return 0; -errno if accept fails
 * for good.
 */
int ttrpc_server__run(struct ttrpc_server *s);

/* Make ttrpc_server__run return; from any thread, a handler's included. */
void ttrpc_server__stop(struct ttrpc_server *s);

/*
 * Free @s after ttrpc_server__run returned (or if it never ran).  A
 * handler still running then keeps the memory it needs (it is leaked
 * rather than freed under it: the process is about to exit).
 */
void ttrpc_server__free(struct ttrpc_server *s);

/*
 * Connect to @address: "unix:///path" or "/path" (a socket file, as
 * containerd's TTRPC_ADDRESS), "unix://@name", "@name" or "\0name" (an
 * abstract socket), waiting up to @timeout_ms for the connect.  NULL with
 * *@err = -errno (-EINVAL for an address of another form).
 */
struct ttrpc_client *ttrpc_client__connect(const char *address, int timeout_ms,
					   int *err);

/*
 * Call @service/@method with the packed request @req (@len bytes), waiting
 * up to @timeout_ms (also sent as the request's timeout).  Returns 0 with
 * the response message in *@resp (malloc'd, NULL when empty; the caller
 * frees it) and *@resp_len; a positive gRPC code with its message in @msg
 * (@msglen bytes, may be NULL/0); or -errno (-ETIMEDOUT, -EPIPE, -EPROTO
 * for a bad answer, -ECONNRESET...), after which the client is unusable.
 * Calls on one client are serialized.
 */
int ttrpc_client__call(struct ttrpc_client *c, const char *service,
		       const char *method, const uint8_t *req, size_t len,
		       int timeout_ms, uint8_t **resp, size_t *resp_len,
		       char *msg, size_t msglen);

/* Close and free @c (NULL is fine). */
void ttrpc_client__free(struct ttrpc_client *c);

#endif
