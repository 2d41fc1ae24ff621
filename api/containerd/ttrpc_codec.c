// SPDX-License-Identifier: Apache-2.0
/* ttrpc's framing and messages: see ttrpc_codec.h. */
#include "ttrpc_codec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ttrpc.pb-c.h"

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

int ttrpc_codec__get_header(const uint8_t *buf, struct ttrpc_header *h)
{
	h->length = get_be32(buf);
	h->stream = get_be32(buf + 4);
	h->type = buf[8];
	h->flags = buf[9];
	if (h->length > TTRPC_MAX_MESSAGE)
		return -EMSGSIZE;
	if (h->type != TTRPC_TYPE_REQUEST && h->type != TTRPC_TYPE_RESPONSE)
		return -EPROTO;
	return 0;
}

void ttrpc_codec__put_header(uint8_t *buf, const struct ttrpc_header *h)
{
	put_be32(buf, h->length);
	put_be32(buf + 4, h->stream);
	buf[8] = h->type;
	buf[9] = h->flags;
}

int ttrpc_codec__request_decode(const uint8_t *buf, size_t len,
				struct ttrpc_request *r)
{
	Ttrpc__Request *m;

	memset(r, 0, sizeof(*r));
	m = ttrpc__request__unpack(NULL, len, buf);
	if (!m)
		return -EBADMSG;
	if (!m->service || !m->service[0] || !m->method || !m->method[0]) {
		ttrpc__request__free_unpacked(m, NULL);
		return -EBADMSG;
	}
	r->service = m->service;
	r->method = m->method;
	r->payload = m->payload.data;
	r->len = m->payload.len;
	r->timeout_ns = m->timeout_nano;
	r->priv = m;
	return 0;
}

void ttrpc_codec__request_free(struct ttrpc_request *r)
{
	if (r->priv)
		ttrpc__request__free_unpacked(r->priv, NULL);
	memset(r, 0, sizeof(*r));
}

/* Header then the packed @msg, in one malloc'd buffer. */
static int frame(uint32_t stream, uint8_t type, const ProtobufCMessage *msg,
		 uint8_t **out, size_t *outlen)
{
	struct ttrpc_header h = { .stream = stream, .type = type };
	size_t n = protobuf_c_message_get_packed_size(msg);
	uint8_t *buf;

	if (n > TTRPC_MAX_MESSAGE)
		return -EMSGSIZE;
	buf = malloc(TTRPC_HEADER_LEN + n);
	if (!buf)
		return -ENOMEM;
	h.length = n;
	ttrpc_codec__put_header(buf, &h);
	protobuf_c_message_pack(msg, buf + TTRPC_HEADER_LEN);
	*out = buf;
	*outlen = TTRPC_HEADER_LEN + n;
	return 0;
}

int ttrpc_codec__request_frame(uint32_t stream, const char *service,
			       const char *method, const uint8_t *payload,
			       size_t len, int64_t timeout_ns, uint8_t **out,
			       size_t *outlen)
{
	Ttrpc__Request m = TTRPC__REQUEST__INIT;

	m.service = (char *)service;
	m.method = (char *)method;
	m.payload.data = (uint8_t *)payload;
	m.payload.len = payload ? len : 0;
	m.timeout_nano = timeout_ns;
	return frame(stream, TTRPC_TYPE_REQUEST, &m.base, out, outlen);
}

int ttrpc_codec__response_frame(uint32_t stream, int code, const char *message,
				const uint8_t *payload, size_t len,
				uint8_t **out, size_t *outlen)
{
	Ttrpc__Response m = TTRPC__RESPONSE__INIT;
	Ttrpc__Status st = TTRPC__STATUS__INIT;
	int err;

	if (code) {
		st.code = code;
		st.message = (char *)(message ? message : "");
		m.status = &st;
	} else {
		m.payload.data = (uint8_t *)payload;
		m.payload.len = payload ? len : 0;
	}
	err = frame(stream, TTRPC_TYPE_RESPONSE, &m.base, out, outlen);
	if (err != -EMSGSIZE)
		return err;
	st.code = 8; /* RESOURCE_EXHAUSTED */
	st.message = "response over 4 MiB";
	m.status = &st;
	m.payload.data = NULL;
	m.payload.len = 0;
	return frame(stream, TTRPC_TYPE_RESPONSE, &m.base, out, outlen);
}

int ttrpc_codec__response_decode(const uint8_t *buf, size_t len, int *code,
				 char *msg, size_t msglen, uint8_t **payload,
				 size_t *plen)
{
	Ttrpc__Response *m = ttrpc__response__unpack(NULL, len, buf);
	int err = 0;

	*payload = NULL;
	*plen = 0;
	*code = 0;
	if (msg && msglen)
		msg[0] = 0;
	if (!m)
		return -EBADMSG;
	if (m->status) {
		*code = m->status->code;
		if (msg && msglen && m->status->message)
			snprintf(msg, msglen, "%s", m->status->message);
	}
	if (m->payload.len) {
		*payload = malloc(m->payload.len);
		if (!*payload) {
			err = -ENOMEM;
			goto out;
		}
		memcpy(*payload, m->payload.data, m->payload.len);
		*plen = m->payload.len;
	}
out:
	ttrpc__response__free_unpacked(m, NULL);
	return err;
}
