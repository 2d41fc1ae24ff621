// SPDX-License-Identifier: Apache-2.0
/*
 * The host terminal of `emberctl exec -t`: raw mode and its restoring,
 * window-size changes as RESIZE records (see tty.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "../sandbox/agent_client.h"
#include "tty.h"

/* The signals that end a process and that nothing else here takes. */
static const int fatal_sigs[] = { SIGALRM, SIGXCPU, SIGXFSZ, SIGVTALRM,
				  SIGPROF };
static const int stop_sigs[] = { SIGTSTP, SIGTTIN, SIGTTOU };

/*
 * Static: the signal handlers reach it.  Set up before any handler is
 * installed, cleared (active first) before they are removed.
 */
static struct {
	volatile sig_atomic_t active; /* tty__follow() until tty__restore() */
	volatile sig_atomic_t raw; /* the terminal was made raw */
	int fd, ctl_fd;
	struct termios saved, rawmode;
} tty = { .fd = -1, .ctl_fd = -1 };

int tty__size(int fd, uint16_t *rows, uint16_t *cols)
{
	struct winsize ws;

	if (ioctl(fd, TIOCGWINSZ, &ws) < 0)
		return -errno;
	if (!ws.ws_row || !ws.ws_col)
		return -ERANGE;
	*rows = ws.ws_row;
	*cols = ws.ws_col;
	return 0;
}

/* The terminal's size as a RESIZE record to ctl_fd; async-signal-safe. */
static void send_size(void)
{
	struct agent_exec_ctl r = { .op = AGENT_EXEC_CTL_RESIZE };
	uint16_t rows = 0, cols = 0;
	ssize_t n;

	if (!tty.active || tty__size(tty.fd, &rows, &cols) < 0)
		return;
	r.a = rows;
	r.b = cols;
	n = write(tty.ctl_fd, &r, sizeof(r)); /* whole or nothing: a pipe */
	(void)n;
}

static void on_winch(int sig)
{
	int e = errno;

	(void)sig;
	send_size();
	errno = e;
}

void tty__restore(void)
{
	int e = errno;

	if (!tty.active)
		return;
	tty.active = 0;
	if (tty.raw)
		tcsetattr(tty.fd, TCSADRAIN, &tty.saved);
	tty.raw = 0;
	signal(SIGWINCH, SIG_DFL);
	errno = e;
}

/* A signal that ends emberctl: the terminal back, then the signal's end. */
static void on_fatal(int sig)
{
	tty__restore();
	signal(sig, SIG_DFL);
	raise(sig); /* pending (blocked in here) until the handler returns */
}

/*
 * A stop: the terminal back while stopped (the shell's again), raw once
 * more when continued in the foreground, and the size it may have
 * changed to meanwhile.
 */
static void on_stop(int sig)
{
	int e = errno;

	(void)sig;
	if (tty.active && tty.raw)
		tcsetattr(tty.fd, TCSADRAIN, &tty.saved);
	kill(getpid(), SIGSTOP);
	if (tty.active && tty.raw && tcgetpgrp(tty.fd) == getpgrp())
		tcsetattr(tty.fd, TCSADRAIN, &tty.rawmode);
	send_size();
	errno = e;
}

static void handle(int sig, void (*fn)(int))
{
	struct sigaction sa = { .sa_handler = fn, .sa_flags = SA_RESTART };

	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGWINCH);
	for (size_t i = 0; i < sizeof(stop_sigs) / sizeof(stop_sigs[0]); i++)
		sigaddset(&sa.sa_mask, stop_sigs[i]);
	sigaction(sig, &sa, NULL);
}

int tty__follow(int fd, int ctl_fd, int raw)
{
	static int registered;
	int fl;

	if (raw && tcgetattr(fd, &tty.saved) < 0)
		return -errno;
	fl = fcntl(ctl_fd, F_GETFL);
	if (fl < 0 || fcntl(ctl_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	tty.fd = fd;
	tty.ctl_fd = ctl_fd;
	if (raw) {
		tty.rawmode = tty.saved;
		cfmakeraw(&tty.rawmode);
		if (!registered && atexit(tty__restore))
			return -ENOMEM;
		registered = 1;
		for (size_t i = 0;
		     i < sizeof(fatal_sigs) / sizeof(fatal_sigs[0]); i++)
			handle(fatal_sigs[i], on_fatal);
		for (size_t i = 0; i < sizeof(stop_sigs) / sizeof(stop_sigs[0]);
		     i++)
			handle(stop_sigs[i], on_stop);
		if (tcsetattr(fd, TCSADRAIN, &tty.rawmode) < 0)
			return -errno;
		tty.raw = 1;
	}
	tty.active = 1;
	handle(SIGWINCH, on_winch);
	return 0;
}
