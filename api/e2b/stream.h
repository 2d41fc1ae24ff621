/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stream.c's side for the HTTP layer: libmicrohttpd's content reader and
 * its free callback over a struct e2b_stream (e2b.h).
 */
#ifndef EMBER_API_E2B_STREAM_H
#define EMBER_API_E2B_STREAM_H

#include <stdint.h>
#include <sys/types.h>

/*
 * MHD_ContentReaderCallback: up to @max bytes of the stream @cls into
 * @buf, waiting for them up to the keepalive interval (then the keepalive
 * bytes); MHD_CONTENT_READER_END_OF_STREAM once the producer ended and
 * all was read.
 */
ssize_t stream__read(void *cls, uint64_t pos, char *buf, size_t max);

struct e2b_stream;

/*
 * The client's socket @fd (borrowed: MHD owns it), which stream__read()
 * looks at for a hang-up while it waits for bytes.
 */
void stream__set_client(struct e2b_stream *s, int fd);

/* The keepalive interval of @s, in seconds rounded up. */
unsigned int stream__keepalive_s(const struct e2b_stream *s);

/*
 * MHD_ContentReaderFreeCallback: the connection is done with the stream
 * (sent, or the client went away): the producer sees it as gone, and the
 * connection's reference is dropped.
 */
void stream__release(void *cls);

#endif /* EMBER_API_E2B_STREAM_H */
