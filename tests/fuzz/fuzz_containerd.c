// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the containerd shim's parsers against a hostile peer
 * on its socket or a tampered bundle.  The input is, at once: a stream of
 * ttrpc frames (headers split off in a loop as the server's reader does),
 * each body decoded as a Request and as a Response; a Request that
 * decodes must survive a trip through a frame unchanged, and its payload
 * is decoded as the Task service's CreateTaskRequest; and the bundle's
 * config.json for the pod grouping.  Nothing may crash, leak or read past
 * the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/containerd/address.h"
#include "api/containerd/ttrpc_codec.h"
#include "proto/shim.pb-c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void round_trip(const struct ttrpc_request *r, uint32_t stream)
{
	struct ttrpc_request again;
	struct ttrpc_header h;
	uint8_t *f;
	size_t n;

	if (ttrpc_codec__request_frame(stream, r->service, r->method,
				       r->payload, r->len, r->timeout_ns, &f,
				       &n))
		return;
	if (ttrpc_codec__get_header(f, &h) || h.stream != stream ||
	    h.length + TTRPC_HEADER_LEN != n ||
	    ttrpc_codec__request_decode(f + TTRPC_HEADER_LEN, h.length, &again))
		abort();
	if (strcmp(again.service, r->service) ||
	    strcmp(again.method, r->method) || again.len != r->len ||
	    (r->len && memcmp(again.payload, r->payload, r->len)) ||
	    again.timeout_ns != r->timeout_ns)
		abort();
	ttrpc_codec__request_free(&again);
	free(f);
}

static void body(const struct ttrpc_header *h, const uint8_t *b, size_t len)
{
	Containerd__Task__V2__CreateTaskRequest *create;
	struct ttrpc_request r;
	uint8_t *payload;
	size_t plen;
	char msg[64];
	int code;

	if (!ttrpc_codec__request_decode(b, len, &r)) {
		round_trip(&r, h->stream);
		create = containerd__task__v2__create_task_request__unpack(
			NULL, r.len, r.payload);
		if (create)
			containerd__task__v2__create_task_request__free_unpacked(
				create, NULL);
		ttrpc_codec__request_free(&r);
	}
	if (!ttrpc_codec__response_decode(b, len, &code, msg, sizeof(msg),
					  &payload, &plen))
		free(payload);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data;
	size_t left = size;
	struct ttrpc_header h;
	char group[64];

	while (left >= TTRPC_HEADER_LEN) {
		if (ttrpc_codec__get_header(p, &h))
			break;
		p += TTRPC_HEADER_LEN;
		left -= TTRPC_HEADER_LEN;
		if (h.length > left)
			break;
		body(&h, p, h.length);
		p += h.length;
		left -= h.length;
	}
	shim_address__group((const char *)data, size, "id", group,
			    sizeof(group));
	return 0;
}
