// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: emberctl's side of the agent protocol
 * (api/sandbox/agent_client.c) against a hostile guest.  The input, after a first
 * byte that picks the request (ping, exec with stdin, read file, write
 * file, init, a container's exec: root, rlimit, tty and control records
 * on ctl_fd), is everything "the agent" answers: it sits in a socketpair whose
 * far end is then closed, so every call must end (with a result or an
 * error) without reading past a frame, crashing or hanging.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/sandbox/agent_client.h"
#include "guest-init/protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const argv[] = { "sh", "-c", "true", NULL };
	struct agent_exec_result res;
	struct agent_exec_req req = { .argv = argv, .sig_fd = -1 };
	struct agent_client *c;
	int sv[2], null;
	uint8_t op;

	if (size < 1 || size > 64 * 1024)
		return 0;
	op = data[0] % 6;
	data++;
	size--;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	/* 64 KiB fits the socket buffer: the write never blocks. */
	if (size && write(sv[1], data, size) != (ssize_t)size)
		abort();
	shutdown(sv[1], SHUT_WR);
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	c = agent_client__new();
	if (null < 0 || !c || agent_client__attach_fd(c, sv[0]))
		abort();
	switch (op) {
	case 0:
		(void)agent_client__ping(c, 1000);
		break;
	case 1:
		req.stdin_fd = null; /* at EOF at once: an empty STDIN */
		req.stdout_fd = req.stderr_fd = null;
		(void)agent_client__exec(c, &req, &res);
		break;
	case 2:
		(void)agent_client__read_file(c, "/f", null, 1000);
		break;
	case 3:
		(void)agent_client__write_file(c, null, "/f", 0644, 1000);
		break;
	case 5: {
		static const struct agent_rlimit rl = { 7, 64, 128 };
		const struct agent_exec_ctl ctl[] = {
			{ AGENT_EXEC_CTL_RESIZE, 50, 132 },
			{ AGENT_EXEC_CTL_KILL, 15, 0 },
			{ AGENT_EXEC_CTL_CLOSE_STDIN, 0, 0 },
		};
		int p[2];

		if (pipe2(p, O_CLOEXEC) < 0 ||
		    write(p[1], ctl, sizeof(ctl)) != (ssize_t)sizeof(ctl))
			abort();
		close(p[1]);
		req.stdin_fd = -1;
		req.stdout_fd = req.stderr_fd = null;
		req.root = "/run/c/rootfs";
		req.rlimits = &rl;
		req.nr_rlimits = 1;
		req.tty = true;
		req.rows = 24;
		req.cols = 80;
		req.ctl_fd = p[0];
		(void)agent_client__exec(c, &req, &res);
		close(p[0]);
		break;
	}
	default:
		(void)agent_client__init_guest(c, 1000);
		break;
	}
	agent_client__free(c);
	close(sv[1]);
	close(null);
	return 0;
}
