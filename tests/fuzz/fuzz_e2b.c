// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: ember-e2b's pure parsers against a hostile client or
 * a tampered sandbox directory.  The input is, at once: a stream of
 * Connect envelopes (split in a loop, as a server-streaming body is), a
 * unary and a server-streaming request body (connect__request), whose
 * every value is fed to the proto3 JSON readers (connect__json_uint,
 * connect__json_bytes), and the contents of a sandbox's e2b.json
 * (record__load, then a save and load that must give it back).  Nothing
 * may crash, leak or read past the input; a request that parses must
 * survive a trip through an envelope unchanged.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/e2b/connect_rpc.h"
#include "api/e2b/record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_DEPTH 8

static void check_bytes(const json_t *v)
{
	uint8_t *out = NULL;
	size_t len = 0;
	json_t *back;

	if (connect__json_bytes(v, &out, &len))
		return;
	/* What decodes re-encodes to something that decodes the same. */
	back = connect__bytes_json(out, len);
	if (back) {
		uint8_t *again = NULL;
		size_t len2 = 0;

		if (connect__json_bytes(back, &again, &len2) || len2 != len ||
		    (len && memcmp(again, out, len)))
			abort();
		free(again);
		json_decref(back);
	}
	free(out);
}

/* Every value of @v, at any depth up to MAX_DEPTH, through the readers. */
static void walk(const json_t *v, int depth)
{
	const char *key;
	json_t *m;
	uint64_t n = 0;
	size_t i;

	if (connect__json_uint(v, UINT64_MAX, &n) == 0 &&
	    connect__json_uint(v, n, &n) != 0)
		abort();
	if (connect__json_uint(v, 0xffffffffu, &n) == 0 && n > 0xffffffffu)
		abort();
	check_bytes(v);
	if (depth >= MAX_DEPTH)
		return;
	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, key, m)
		{
			walk(m, depth + 1);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, m)
		{
			walk(m, depth + 1);
		}
	}
}

static void check_request(const uint8_t *data, size_t size, bool streaming)
{
	const char *code = NULL;
	char err[256];
	json_t *j, *back;
	uint8_t *env;
	size_t len;

	err[0] = '\0';
	j = connect__request((const char *)data, size, streaming, &code, err,
			     sizeof(err));
	if (!j) {
		if (!code || !*code || !err[0] ||
		    connect__http_status(code) < 400)
			abort();
		return;
	}
	if (!json_is_object(j))
		abort();
	walk(j, 0);
	/* Its envelope is a streaming request that gives it back. */
	env = connect__envelope(0, j, &len);
	if (env) {
		back = connect__request((const char *)env, len, true, &code,
					err, sizeof(err));
		if (!back || !json_equal(back, j))
			abort();
		json_decref(back);
		free(env);
	}
	json_decref(j);
}

static void check_unwrap(const uint8_t *data, size_t size)
{
	const uint8_t *msg;
	size_t off = 0, msglen, used;
	uint8_t flags;

	while (off < size) {
		int rc = connect__unwrap(data + off, size - off, &flags, &msg,
					 &msglen, &used);

		if (rc == -EAGAIN || rc == -EMSGSIZE)
			return;
		if (rc || used != CONNECT_ENVELOPE_HDR + msglen ||
		    used > size - off ||
		    msg != data + off + CONNECT_ENVELOPE_HDR ||
		    msglen > CONNECT_MAX_MESSAGE)
			abort();
		off += used;
	}
}

static char dir[] = "/tmp/fuzz_e2b.XXXXXX";

static void remove_dir(void)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, RECORD_NAME);
	unlink(path);
	snprintf(path, sizeof(path), "%s/.%s.tmp", dir, RECORD_NAME);
	unlink(path);
	rmdir(dir);
}

/* A directory of the fuzzer's own for e2b.json, made once. */
static const char *record_dir(void)
{
	static bool made;

	if (!made) {
		if (!mkdtemp(dir))
			abort();
		atexit(remove_dir);
		made = true;
	}
	return dir;
}

static void check_record(const uint8_t *data, size_t size)
{
	const char *dir = record_dir();
	struct e2b_record r, back;
	char path[PATH_MAX];
	int fd, rc;

	snprintf(path, sizeof(path), "%s/%s", dir, RECORD_NAME);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	rc = record__load(dir, &r);
	if (rc) {
		if (rc != -EINVAL || r.metadata || r.env_vars)
			abort();
		return;
	}
	if (!record__token_ok(&r, r.token) || !json_is_object(r.metadata) ||
	    !json_is_object(r.env_vars) ||
	    !record__metadata_match(&r, r.metadata))
		abort();
	if (record__save(dir, &r) == 0) {
		if (record__load(dir, &back) != 0 ||
		    strcmp(back.token, r.token) ||
		    strcmp(back.template_id, r.template_id) ||
		    !json_equal(back.metadata, r.metadata) ||
		    !json_equal(back.env_vars, r.env_vars))
			abort();
		record__release(&back);
	}
	record__release(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1024 * 1024)
		return 0;
	check_unwrap(data, size);
	check_request(data, size, false);
	check_request(data, size, true);
	check_record(data, size);
	return 0;
}
