// SPDX-License-Identifier: Apache-2.0
/* The start gate on PVM hosts: see start_gate.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include "../../vmm/pvm/pvm.h"
#include "start_gate.h"

#define START_GATE_MAX 1024

unsigned int start_gate__slots(void)
{
	const char *e = getenv("EMBER_START_LIMIT");
	long n;

	if (e && *e) {
		char *end;

		errno = 0;
		n = strtol(e, &end, 10);
		if (!errno && !*end && n >= 0 && n <= START_GATE_MAX)
			return (unsigned int)n;
	}
	if (!pvm__detect())
		return 0;
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1		  ? 1 :
	       n > START_GATE_MAX ? START_GATE_MAX :
				    (unsigned int)n;
}

int start_gate__try(const char *dir, unsigned int slots)
{
	char path[4096];
	int last = -EAGAIN;

	for (unsigned int k = 0; k < slots && k < START_GATE_MAX; k++) {
		int fd;

		if (snprintf(path, sizeof(path), "%s/ember-start-gate.%u.%u",
			     dir ? dir : "/dev/shm", (unsigned int)geteuid(),
			     k) >= (int)sizeof(path))
			return -ENAMETOOLONG;
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
			  0600);
		if (fd < 0) {
			last = -errno;
			continue;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		if (errno != EWOULDBLOCK)
			last = -errno;
		close(fd);
	}
	return last;
}
