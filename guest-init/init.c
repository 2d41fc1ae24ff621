// SPDX-License-Identifier: Apache-2.0
/*
 * ember's guest PID 1.
 *
 * Signals "init reached" through the boot-timer byte, mounts the usual
 * pseudo file systems, runs the command handed over as ember.run= on the
 * kernel command line (or an interactive shell when there is none), reports
 * its exit status through ember's exit-status page and resets the VM.
 *
 * Every failure prints one line and carries on: PID 1 must never die,
 * the kernel would panic and the host would learn nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "protocol.h"

#define CMDLINE_MAX    16384 /* x86 allows 2048; leave headroom */
#define RUN_CMD_MAX    8192 /* decoded ember.run, ~1500 expected */
#define STATUS_BAD_RUN 127

static void say(const char *what, int err)
{
	fprintf(stderr, "init: %s: %s\n", what, strerror(err));
}

/*
 * Map the page of guest-physical @gpa uncached through /dev/mem.  Returns
 * the mapping or NULL (a warning was printed).  MMIO outside guest RAM is
 * allowed under STRICT_DEVMEM as long as no driver claims it exclusively.
 */
static volatile void *devmem_map(uint64_t gpa, const char *what)
{
	char msg[96];
	void *p;
	int fd;

	fd = open("/dev/mem", O_RDWR | O_SYNC | O_CLOEXEC);
	if (fd < 0) {
		snprintf(msg, sizeof(msg), "%s: open /dev/mem", what);
		say(msg, errno);
		return NULL;
	}
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)gpa);
	if (p == MAP_FAILED) {
		snprintf(msg, sizeof(msg), "%s: mmap /dev/mem at %#llx", what,
			 (unsigned long long)gpa);
		say(msg, errno);
		close(fd);
		return NULL;
	}
	close(fd);
	return p;
}

static void devmem_unmap(volatile void *p)
{
	munmap((void *)p, 4096);
}

static void boot_timer_signal(void)
{
	volatile uint8_t *p = devmem_map(EMBER_BOOT_TIMER_GPA, "boot timer");

	if (!p)
		return;
	*p = EMBER_BOOT_TIMER_MAGIC;
	devmem_unmap(p);
}

static void exit_status_report(int status)
{
	volatile uint32_t *p = devmem_map(EMBER_EXIT_STATUS_GPA, "exit status");

	if (!p)
		return;
	*p = (uint32_t)status;
	devmem_unmap(p);
}

static void mount_one(const char *src, const char *dir, const char *type,
		      unsigned long flags, const char *data)
{
	char msg[64];

	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		snprintf(msg, sizeof(msg), "mkdir %s", dir);
		say(msg, errno);
	}
	if (mount(src, dir, type, flags, data) < 0 && errno != EBUSY) {
		snprintf(msg, sizeof(msg), "mount %s on %s", type, dir);
		say(msg, errno);
	}
}

/* The kernel hands init fds 0-2 on /dev/console only if the node exists. */
static void console_fds(void)
{
	int fd, i;

	for (i = 0; i < 3; i++)
		if (fcntl(i, F_GETFD) < 0)
			break;
	if (i == 3)
		return;
	fd = open("/dev/console", O_RDWR | O_NOCTTY);
	if (fd < 0)
		return; /* nowhere to complain to */
	for (i = 0; i < 3; i++)
		if (fcntl(i, F_GETFD) < 0 && fd != i)
			dup2(fd, i);
	if (fd > 2)
		close(fd);
}

/*
 * /dev/console cannot become a controlling terminal, so an interactive
 * shell gets the real device behind it (the last name in
 * /sys/class/tty/console/active) for job control and ^C.  Called in the
 * child after setsid(); on any failure the shell runs without one.
 */
static void controlling_tty(void)
{
	char buf[256], path[300], *name;
	ssize_t n;
	int fd;

	fd = open("/sys/class/tty/console/active", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0) {
			buf[n] = '\0';
			while (n > 0 &&
			       (buf[n - 1] == '\n' || buf[n - 1] == ' '))
				buf[--n] = '\0';
			name = strrchr(buf, ' ');
			name = name ? name + 1 : buf;
			snprintf(path, sizeof(path), "/dev/%s", name);
			fd = *name ? open(path, O_RDWR) : -1;
			if (fd >= 0 && isatty(fd)) {
				dup2(fd, 0);
				dup2(fd, 1);
				dup2(fd, 2);
			}
			if (fd > 2)
				close(fd);
		}
	}
	if (ioctl(0, TIOCSCTTY, 1) < 0)
		say("no controlling terminal", errno);
}

/*
 * Find the last ember.run= word of the kernel command line and decode it
 * into @cmd (NUL-terminated).  Returns 1 if found and decoded, 0 if absent,
 * -1 if malformed.
 */
static int run_param(char *cmd, size_t cmdsz)
{
	static char line[CMDLINE_MAX];
	const size_t plen = sizeof(EMBER_RUN_PARAM) - 1;
	const char *val = NULL;
	size_t len = 0, vlen = 0, i;
	ssize_t n;
	long dec;
	int fd;

	fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		say("open /proc/cmdline", errno);
		return 0;
	}
	while (len < sizeof(line) - 1) {
		n = read(fd, line + len, sizeof(line) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	line[len] = '\0';

	for (i = 0; i < len;) {
		size_t start, end;

		while (i < len &&
		       (line[i] == ' ' || line[i] == '\t' || line[i] == '\n'))
			i++;
		start = i;
		while (i < len && line[i] != ' ' && line[i] != '\t' &&
		       line[i] != '\n')
			i++;
		end = i;
		if (end - start >= plen &&
		    !strncmp(line + start, EMBER_RUN_PARAM, plen)) {
			val = line + start + plen;
			vlen = end - start - plen;
		}
	}
	if (!val)
		return 0;

	dec = ember_b64_decode(val, vlen, cmd, cmdsz - 1);
	if (dec < 0)
		return -1;
	cmd[dec] = '\0'; /* an embedded NUL ends it, as documented */
	return 1;
}

/*
 * Run /bin/sh (with -c @cmd unless @cmd is NULL) in a new session and reap
 * every child until that one ends.  Returns its status in the shell's
 * convention: exit code, or 128 + signal.
 */
/*
 * A --run command's output should reach the host byte for byte, as from a
 * pipe: no "\n" -> "\r\n" translation and no echo on the console tty.
 */
static void console_raw_output(void)
{
	struct termios t;

	if (tcgetattr(STDOUT_FILENO, &t) < 0)
		return;
	t.c_oflag &= ~(tcflag_t)ONLCR;
	t.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
	if (tcsetattr(STDOUT_FILENO, TCSANOW, &t) < 0)
		say("tcsetattr console", errno);
}

/*
 * A --run command reads an empty stdin, as a command without a terminal
 * would: the serial console cannot carry an end of input, and a command
 * that waits for one would never end.
 */
static void stdin_null(void)
{
	int fd = open("/dev/null", O_RDONLY);

	if (fd < 0) {
		say("open /dev/null", errno);
		return;
	}
	if (fd != STDIN_FILENO) {
		dup2(fd, STDIN_FILENO);
		close(fd);
	}
}

static int run_shell(const char *cmd)
{
	pid_t pid, w;
	int st;

	pid = fork();
	if (pid < 0) {
		say("fork", errno);
		return STATUS_BAD_RUN;
	}
	if (pid == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (setsid() < 0)
			say("setsid", errno);
		if (cmd) {
			console_raw_output();
			stdin_null();
			execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		} else {
			controlling_tty();
			execl("/bin/sh", "sh", (char *)NULL);
		}
		say("exec /bin/sh", errno);
		_exit(STATUS_BAD_RUN);
	}

	for (;;) {
		w = waitpid(-1, &st, 0);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			say("waitpid", errno);
			return STATUS_BAD_RUN;
		}
		if (w != pid)
			continue; /* an orphan reparented to us */
		if (WIFEXITED(st))
			return WEXITSTATUS(st);
		if (WIFSIGNALED(st))
			return 128 + WTERMSIG(st);
	}
}

/*
 * Start the guest agent (agent.c, PROTOCOL.md) on its vsock port when the
 * kernel command line has EMBER_AGENT_PARAM and the image has the agent,
 * in its own session, its output discarded: the console
 * carries the --run command's output only.  It lives until the VM ends;
 * if it fails (no vsock device) it exits and is reaped like any orphan.
 */
/* Is @word one of the kernel command line's words? */
static int cmdline_word(const char *word)
{
	char line[CMDLINE_MAX], *tok, *save = NULL;
	ssize_t n;
	int fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	line[n] = '\0';
	for (tok = strtok_r(line, " \t\n", &save); tok;
	     tok = strtok_r(NULL, " \t\n", &save))
		if (!strcmp(tok, word))
			return 1;
	return 0;
}

/*
 * The agent's file: ember's parts in an image built from a user's image
 * live under EMBER_GUEST_LIBDIR, ember's own rootfs has it in /sbin.
 * NULL when there is none.
 */
static const char *agent_path(void)
{
	static const char *const where[] = { EMBER_GUEST_AGENT,
					     "/sbin/ember-agent" };

	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++)
		if (access(where[i], X_OK) == 0)
			return where[i];
	return NULL;
}

static pid_t agent_start(void)
{
	const char *agent;
	char port[16];
	sigset_t none;
	pid_t pid;
	int fd;

	/*
	 * Only when the VMM asks (it will with a vsock device): the agent
	 * costs a process start, which is slow where kernel mode is emulated.
	 */
	if (!cmdline_word(EMBER_AGENT_PARAM))
		return 0;
	agent = agent_path();
	if (!agent)
		return 0;
	snprintf(port, sizeof(port), "%d", EMBER_AGENT_PORT);
	pid = fork();
	if (pid < 0) {
		say("fork ember-agent", errno);
		return 0;
	}
	if (pid > 0)
		return pid;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
	execl(agent, "ember-agent", "--vsock", port, (char *)NULL);
	_exit(STATUS_BAD_RUN);
}

/*
 * A sandbox (the agent running, no ember.run): the agent is the guest's
 * whole purpose, so init reaps orphans and restarts the agent if it ever
 * ends, instead of starting a console shell.  The VM ends when the VMM
 * stops it.
 */
static void agent_supervise(pid_t agent)
{
	pid_t w;

	for (;;) {
		w = waitpid(-1, NULL, 0);
		if (w < 0 && errno != EINTR) {
			sleep(1);
			continue;
		}
		if (w != agent)
			continue;
		fprintf(stderr, "init: ember-agent ended, restarting it\n");
		sleep(1);
		agent = agent_start();
	}
}

/*
 * PATH for init's children: EMBER_GUEST_PATH, and when init runs from
 * EMBER_GUEST_LIBDIR (an image built from a user's image), its
 * EMBER_GUEST_BINDIR last when there is one: a busybox for images
 * without their own tools, never in front of the image's.
 */
static void guest_path(void)
{
	static const char path[] = EMBER_GUEST_PATH ":" EMBER_GUEST_BINDIR;
	char self[64];
	struct stat st;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	size_t dl = sizeof(EMBER_GUEST_LIBDIR) - 1;

	if (n > 0)
		self[n] = '\0';
	if (n > (ssize_t)dl && !strncmp(self, EMBER_GUEST_LIBDIR "/", dl + 1) &&
	    !strchr(self + dl + 1, '/') && stat(EMBER_GUEST_BINDIR, &st) == 0 &&
	    S_ISDIR(st.st_mode))
		setenv("PATH", path, 1);
	else
		setenv("PATH", EMBER_GUEST_PATH, 1);
}

/*
 * The loopback interface up, as on any Linux system: a server a template's
 * start command leaves listening on 127.0.0.1 must be reachable in a guest
 * without a network device too (the kernel's ip= brings lo up only with
 * one).  A kernel without networking: nothing to do, silently.
 */
static void loopback_up(void)
{
	struct ifreq ifr = { .ifr_name = "lo" };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return;
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 && !(ifr.ifr_flags & IFF_UP)) {
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
			say("lo up", errno);
	}
	close(fd);
}

/*
 * The image's WorkingDir (the defaults file's cwd, PROTOCOL.md) made when
 * it is missing, as a container runtime does at start: the disk has it,
 * but a tmpfs mounted above (/tmp, /run) hides one made there.  Root's,
 * 0755; silent: the exec's own chdir reports what is still wrong.
 */
static void default_cwd_make(void)
{
	static char buf[EMBER_DEFAULTS_MAX];
	struct ember_defaults d;
	char p[PATH_MAX];
	ssize_t n;
	size_t len;
	int fd = open(EMBER_GUEST_DEFAULTS, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0 || ember_defaults_decode(buf, (size_t)n, &d) < 0 || !d.cwd)
		return;
	len = strlen(d.cwd);
	if (len >= sizeof(p) || access(d.cwd, F_OK) == 0)
		return;
	memcpy(p, d.cwd, len + 1);
	for (size_t i = 1; i <= len; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		p[i] = '\0';
		mkdir(p, 0755);
		p[i] = d.cwd[i];
	}
}

int main(void)
{
	static char cmd[RUN_CMD_MAX];
	pid_t agent;
	int status, r;

	/* Before anything slow: the boot timer needs /dev/mem. */
	mount_one("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755");
	console_fds();
	boot_timer_signal();

	/* Pseudo-terminals for the agent's TTY execs (PROTOCOL.md, TTY). */
	mount_one("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		  "mode=0620,ptmxmode=0666");
	mount_one("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL);
	mount_one("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL);
	mount_one("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
	mount_one("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");

	if (sethostname("ember", 5) < 0)
		say("sethostname", errno);
	loopback_up();
	default_cwd_make();
	guest_path();
	setenv("HOME", EMBER_GUEST_HOME, 1);
	setenv("TERM", EMBER_GUEST_TERM, 1);
	if (chdir("/") < 0)
		say("chdir /", errno);

	agent = agent_start();
	r = run_param(cmd, sizeof(cmd));
	if (r == 0 && agent > 0)
		agent_supervise(agent);
	if (r < 0) {
		fprintf(stderr, "init: bad ember.run\n");
		status = STATUS_BAD_RUN;
	} else {
		status = run_shell(r ? cmd : NULL);
	}

	/*
	 * Flush first: ember may end the VM as soon as the status arrives.
	 * The reset is for VMMs that do not stop on the status.
	 */
	sync();
	/*
	 * A disk root is left clean (no journal to replay at its next boot)
	 * unless a leftover process holds a file open for writing (EBUSY):
	 * then the sync above has to do.  Silent: output is the command's.
	 */
	mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY, NULL);
	exit_status_report(status);
	reboot(RB_AUTOBOOT);
	say("reboot", errno);
	for (;;)
		pause();
}
