// SPDX-License-Identifier: Apache-2.0
/* The Connect protocol's JSON codec (connect_rpc.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../sandbox/base64.h"
#include "connect_rpc.h"

int connect__unwrap(const uint8_t *buf, size_t len, uint8_t *flags,
		    const uint8_t **msg, size_t *msglen, size_t *used)
{
	uint32_t n;

	if (len < CONNECT_ENVELOPE_HDR)
		return -EAGAIN;
	n = (uint32_t)buf[1] << 24 | (uint32_t)buf[2] << 16 |
	    (uint32_t)buf[3] << 8 | (uint32_t)buf[4];
	if (n > CONNECT_MAX_MESSAGE)
		return -EMSGSIZE;
	if (len - CONNECT_ENVELOPE_HDR < n)
		return -EAGAIN;
	*flags = buf[0];
	*msg = buf + CONNECT_ENVELOPE_HDR;
	*msglen = n;
	*used = CONNECT_ENVELOPE_HDR + n;
	return 0;
}

json_t *connect__request(const char *body, size_t len, bool streaming,
			 const char **code, char *err, size_t errlen)
{
	const uint8_t *msg = (const uint8_t *)body;
	size_t msglen = len, used;
	uint8_t flags = 0;
	json_error_t jerr;
	json_t *j;
	int rc;

	*code = "invalid_argument";
	if (streaming) {
		rc = connect__unwrap((const uint8_t *)body, len, &flags, &msg,
				     &msglen, &used);
		if (rc) {
			snprintf(
				err, errlen, "%s",
				rc == -EMSGSIZE ?
					"the request message is too large" :
					"the request is not one whole Connect envelope");
			return NULL;
		}
		if (used != len) {
			snprintf(err, errlen,
				 "the request holds more than one message");
			return NULL;
		}
		if (flags & CONNECT_FLAG_COMPRESSED) {
			*code = "unimplemented";
			snprintf(err, errlen,
				 "compressed messages are not supported");
			return NULL;
		}
		if (flags) {
			snprintf(err, errlen,
				 "unexpected envelope flags 0x%02x", flags);
			return NULL;
		}
	} else if (len > CONNECT_MAX_MESSAGE) {
		snprintf(err, errlen, "the request message is too large");
		return NULL;
	}
	if (!msglen) /* an empty message: all fields default */
		return json_object();
	j = json_loadb((const char *)msg, msglen, JSON_REJECT_DUPLICATES,
		       &jerr);
	if (!j) {
		snprintf(err, errlen, "the request is not JSON: %s", jerr.text);
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		snprintf(err, errlen, "the request is not a JSON object");
		return NULL;
	}
	return j;
}

static uint8_t *wrap(uint8_t flags, const char *text, size_t n, size_t *outlen)
{
	uint8_t *out;

	if (n > CONNECT_MAX_MESSAGE)
		return NULL;
	out = malloc(CONNECT_ENVELOPE_HDR + n);
	if (!out)
		return NULL;
	out[0] = flags;
	out[1] = (uint8_t)(n >> 24);
	out[2] = (uint8_t)(n >> 16);
	out[3] = (uint8_t)(n >> 8);
	out[4] = (uint8_t)n;
	memcpy(out + CONNECT_ENVELOPE_HDR, text, n);
	*outlen = CONNECT_ENVELOPE_HDR + n;
	return out;
}

uint8_t *connect__envelope(uint8_t flags, const json_t *msg, size_t *outlen)
{
	char *text = json_dumps(msg, JSON_COMPACT);
	uint8_t *out;

	if (!text)
		return NULL;
	out = wrap(flags, text, strlen(text), outlen);
	free(text);
	return out;
}

uint8_t *connect__end_stream(const char *code, const char *message,
			     size_t *outlen)
{
	json_t *j;
	uint8_t *out;

	if (!code)
		return wrap(CONNECT_FLAG_END_STREAM, "{}", 2, outlen);
	j = json_pack("{s:o}", "error", connect__error(code, message));
	if (!j)
		return NULL;
	out = connect__envelope(CONNECT_FLAG_END_STREAM, j, outlen);
	json_decref(j);
	return out;
}

json_t *connect__error(const char *code, const char *message)
{
	return json_pack("{s:s, s:s}", "code", code, "message",
			 message ? message : "");
}

static const struct {
	const char *code;
	unsigned int status;
} codes[] = {
	{ "canceled", 499 },
	{ "unknown", 500 },
	{ "invalid_argument", 400 },
	{ "deadline_exceeded", 504 },
	{ "not_found", 404 },
	{ "already_exists", 409 },
	{ "permission_denied", 403 },
	{ "resource_exhausted", 429 },
	{ "failed_precondition", 400 },
	{ "aborted", 409 },
	{ "out_of_range", 400 },
	{ "unimplemented", 501 },
	{ "internal", 500 },
	{ "unavailable", 503 },
	{ "data_loss", 500 },
	{ "unauthenticated", 401 },
};

unsigned int connect__http_status(const char *code)
{
	for (size_t i = 0; code && i < sizeof(codes) / sizeof(codes[0]); i++)
		if (!strcmp(code, codes[i].code))
			return codes[i].status;
	return 500;
}

int connect__json_uint(const json_t *v, uint64_t max, uint64_t *out)
{
	const char *s;
	uint64_t n = 0;

	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		if (i < 0 || (uint64_t)i > max)
			return -EINVAL;
		*out = (uint64_t)i;
		return 0;
	}
	if (!json_is_string(v))
		return -EINVAL;
	s = json_string_value(v);
	if (!*s || json_string_length(v) > 20)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (n > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -EINVAL;
		n = n * 10 + (uint64_t)(*s - '0');
	}
	if (n > max)
		return -EINVAL;
	*out = n;
	return 0;
}

int connect__json_bytes(const json_t *v, uint8_t **out, size_t *outlen)
{
	const char *s;
	size_t n;
	char *std;
	uint8_t *buf;
	ssize_t got;

	if (!json_is_string(v))
		return -EINVAL;
	s = json_string_value(v);
	n = json_string_length(v);
	if (n > 4 * (size_t)CONNECT_MAX_MESSAGE)
		return -EINVAL;
	/* URL-safe to standard; padding is optional for base64__decode. */
	std = malloc(n + 1);
	buf = malloc(n / 4 * 3 + 3 + 1);
	if (!std || !buf) {
		free(std);
		free(buf);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '-')
			c = '+';
		else if (c == '_')
			c = '/';
		else if (c == '\0' || c == ' ' || c == '\t' || c == '\r' ||
			 c == '\n')
			c = '!'; /* white space is not base64 here */
		std[i] = c;
	}
	std[n] = '\0';
	got = base64__decode(std, n, buf);
	free(std);
	if (got < 0) {
		free(buf);
		return -EINVAL;
	}
	*out = buf;
	*outlen = (size_t)got;
	return 0;
}

json_t *connect__bytes_json(const void *buf, size_t len)
{
	char *s = malloc(BASE64_ENCODED_SIZE(len));
	json_t *j;

	if (!s)
		return NULL;
	base64__encode(buf, len, s);
	j = json_string(s);
	free(s);
	return j;
}
