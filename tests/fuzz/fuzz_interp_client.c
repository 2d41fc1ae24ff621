// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the host side of the code interpreter
 * (api/sandbox/interp_client.c) against a hostile guest.  The input, after
 * a first byte that picks the request (execute, gathering its events, or
 * one of the context requests), is everything "the interpreter" answers:
 * it sits in a socketpair whose far end is then closed, so every call must
 * end with a result or an error, without crashing or hanging.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/sandbox/interp_client.h"

/* The most a socketpair buffers without a reader (the default sndbuf). */
#define MAX_INPUT (128u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int gather(void *arg, const json_t *ev)
{
	return interp__gather(arg, ev);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const ops[] = { "ping", "create_context",
					   "list_contexts", "restart_context",
					   "delete_context" };
	struct interp_exec_req req = { .code = "1+1" };
	struct interp_client *c;
	json_t *r, *ans;
	char err[256];
	uint8_t op;
	int sv[2];

	if (size < 1 || size > MAX_INPUT)
		return 0;
	op = data[0] % 6;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return 0;
	if (write(sv[1], data + 1, size - 1) != (ssize_t)(size - 1)) {
		close(sv[0]);
		close(sv[1]);
		return 0;
	}
	shutdown(sv[1], SHUT_WR);
	if (interp_client__attach_fd(sv[0], &c) < 0) {
		close(sv[1]);
		return 0;
	}
	if (op == 5) {
		struct interp_gather g = { .execution =
						   interp__execution_new() };

		if (g.execution)
			interp_client__execute(c, &req, gather, &g, err,
					       sizeof(err));
		json_decref(g.execution);
	} else {
		r = json_pack("{s:s, s:s}", "op", ops[op], "context", "c");
		if (r && interp_client__request(c, r, 1000, &ans, err,
						sizeof(err)) == 0)
			json_decref(ans);
		json_decref(r);
	}
	interp_client__free(c);
	close(sv[1]);
	return 0;
}
