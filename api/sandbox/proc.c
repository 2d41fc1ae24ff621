// SPDX-License-Identifier: Apache-2.0
/* Processes as /proc shows them: see proc.h. */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "proc.h"

int proc__start_time(pid_t pid, uint64_t *start)
{
	char path[64], buf[1024], *p;
	unsigned long long v;
	ssize_t n;
	int fd, field;

	if (pid <= 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: fields start after the last ')'. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X' || p[2] == 'x')
		return -ESRCH;
	p += 2; /* field 3, state */
	for (field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p || sscanf(p, "%llu", &v) != 1)
		return -ESRCH;
	*start = v;
	return 0;
}

int proc__alive(pid_t pid, uint64_t start)
{
	uint64_t now;

	if (proc__start_time(pid, &now) < 0)
		return 0;
	return !start || now == start;
}

void proc__terminate(pid_t pid, uint64_t start, int grace_ms)
{
	int64_t end = clock__mono_ms() + grace_ms;

	if (!proc__alive(pid, start) || kill(pid, SIGTERM) < 0)
		return;
	while (clock__mono_ms() < end) {
		if (!proc__alive(pid, start))
			return;
		clock__sleep_ms(20);
	}
	if (proc__alive(pid, start))
		kill(pid, SIGKILL);
}

void proc__daemon_stdio(void)
{
	const char *logp = getenv("EMBER_SUPERVISOR_LOG");
	int null = open("/dev/null", O_RDWR | O_CLOEXEC), log = -1;

	if (logp && *logp)
		log = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
			   0600);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(log >= 0 ? log : null, 2);
		close(null);
	}
	if (log >= 0)
		close(log);
}

void proc__close_others(int keep1, int keep2)
{
	unsigned int lo = (unsigned int)(keep1 < keep2 ? keep1 : keep2);
	unsigned int hi = (unsigned int)(keep1 < keep2 ? keep2 : keep1);
	int ok = 1;

	if (lo > 3)
		ok &= close_range(3, lo - 1, 0) == 0;
	if (hi > lo + 1)
		ok &= close_range(lo + 1, hi - 1, 0) == 0;
	ok &= close_range(hi + 1, ~0U, 0) == 0;
	if (ok)
		return;
	for (int fd = 3; fd < 1024; fd++)
		if (fd != keep1 && fd != keep2)
			close(fd);
}
