// SPDX-License-Identifier: Apache-2.0
/*
 * The supervisor of one sandbox: see supervisor.h.
 *
 *   emberctl run --fork--> supervisor (setsid) --fork/exec--> ember
 *
 * The supervisor holds the directory's lock for its whole life, arms the
 * TTL only after "R", and ends the sandbox on TTL expiry,
 * SIGTERM/SIGINT/SIGHUP or ember's own exit: SIGTERM to ember, SIGKILL
 * after SUPERVISOR_STOP_GRACE_MS, then the directory is renamed to
 * .<id>.dead and removed.  A park (pause.c) marks the info file parked
 * and sends SIGUSR1: then ember is stopped and the directory stays.  A
 * sandbox made with ttl_park (run --on-timeout pause) is parked by the
 * supervisor itself at its TTL's end (ttl_park()), as pause.c would.
 * ember gets SIGTERM should the supervisor die (PR_SET_PDEATHSIG); what
 * such a death leaves is found by the next lookup or listing through the
 * free lock (lookup.c), and removed (unless parked).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../guest-init/protocol.h"
#include "agent_client.h"
#include "clock.h"
#include "ember_api.h"
#include "files.h"
#include "jail.h"
#include "net.h"
#include "proc.h"
#include "record.h"
#include "start_gate.h"
#include "supervisor.h"

#define PROBE_MS     5000 /* the first readiness probe: connect + PING */
#define PROBE_MAX_MS 60000 /* a probe's limit, doubled after each timeout */
#define INIT_MS	     5000 /* the agent's init after a restore */
#define API_TRY_MS   1000 /* one GET / while ember starts */
#define TAIL_LINES   6

struct sup {
	const struct sandbox_opts *o;
	const char *state; /* the state directory */
	const struct supervisor_how *how;
	struct sandbox_info info;
	int64_t deadline; /* CLOCK_MONOTONIC ms: ready by then */
	bool loaded; /* the snapshot is loaded: the guest ran on from it */
	int lock_fd; /* held, shared with `run` until it exits */
	int verdict_fd; /* the pipe to `run`; -1 once written */
	int sig_fd; /* SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGUSR1 */
	int ember_status; /* valid once ember_reaped */
	int ember_reaped;
	struct sandbox_paths paths; /* as we and as ember see them (jail.h) */
	struct jail_argv *jail; /* a jailed sandbox: the jailer's argv */
	int gate_fd; /* a start slot held until ready (start_gate.h), or -1 */
};

/*
 * The last 4 KiB of @path in @buf (@bufsz bytes, NUL-terminated), printable
 * text only (the console has escapes and CRs).  Returns the length, or 0.
 */
static size_t read_end(const char *path, char *buf, size_t bufsz)
{
	ssize_t n;
	off_t size;
	size_t i;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	size = lseek(fd, 0, SEEK_END);
	if (size < 0)
		size = 0;
	n = pread(fd, buf, bufsz - 1,
		  size > (off_t)bufsz - 1 ? size - (off_t)bufsz + 1 : 0);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	for (i = 0; i < (size_t)n; i++)
		if (buf[i] == '\r' || buf[i] == '\t')
			buf[i] = ' ';
		else if (buf[i] != '\n' && ((unsigned char)buf[i] < 0x20 ||
					    (unsigned char)buf[i] == 0x7f))
			buf[i] = '?';
	return (size_t)n;
}

/*
 * Append the last TAIL_LINES lines of @path to @out as "\n<label>: ...",
 * each without @strip where it starts with it (ember's log lines start
 * with "ember: " themselves).
 */
static void tail(const char *path, const char *label, const char *strip,
		 char *out, size_t outsz)
{
	char buf[4096], *lines[TAIL_LINES];
	size_t len = strlen(out), nl = 0, i;

	if (!read_end(path, buf, sizeof(buf)))
		return;
	for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		while (*l == ' ')
			l++;
		if (strip && !strncmp(l, strip, strlen(strip)))
			l += strlen(strip);
		if (!*l)
			continue;
		if (nl == TAIL_LINES) {
			memmove(lines, lines + 1, sizeof(lines[0]) * (nl - 1));
			nl--;
		}
		lines[nl++] = l;
	}
	for (i = 0; i < nl && len < outsz; i++) {
		snprintf(out + len, outsz - len, "\n%s: %.200s", label,
			 lines[i]);
		len += strlen(out + len);
	}
}

/* Tell `run` (once): 0, or -EPIPE when nobody reads any more. */
static int verdict(struct sup *s, const char *msg)
{
	int rc;

	if (s->verdict_fd < 0)
		return 0;
	rc = files__write_all(s->verdict_fd, msg, strlen(msg));
	close(s->verdict_fd);
	s->verdict_fd = -1;
	return rc;
}

/*
 * Start ember: booting, or (a restore) with only its control socket; in
 * the sandbox's network namespace when it has a network device.  Its
 * pid, or a negative errno.
 */
static pid_t start_ember(struct sup *s)
{
	char mem[16], vcpus[16], console[PATH_MAX + 8], drive[PATH_MAX + 32],
		vsock[PATH_MAX + 32], log[PATH_MAX], api[PATH_MAX],
		append[1024], spare[SANDBOX_MAX_SPARE_DRIVES][PATH_MAX + 32];
	/* ember, 8 options and their values, 7 spares, --net: 36 at most. */
	const char *boot[48];
	/* A restore: the machine comes from the snapshot. */
	const char *restore[] = { s->o->ember, "--api-sock", api,
				  "--console", console,	     NULL };
	pid_t parent = getpid(), pid;
	const char *dir = s->info.dir;
	unsigned int nb = 0, k;
	int ns_fd = -1;

	snprintf(mem, sizeof(mem), "%u", s->o->mem_mib);
	snprintf(vcpus, sizeof(vcpus), "%u", s->o->vcpus);
	if (files__pathf(console, sizeof(console), "file:%s",
			 s->paths.e_console) ||
	    files__pathf(drive, sizeof(drive), "path=%s,root,id=%s",
			 s->paths.e_disk, SANDBOX_DRIVE_ID) ||
	    files__pathf(vsock, sizeof(vsock), "cid=%d,uds=%s",
			 SANDBOX_GUEST_CID, s->paths.e_uds) ||
	    files__pathf(log, sizeof(log), "%s/" SANDBOX_EMBER_LOG, dir) ||
	    files__pathf(api, sizeof(api), "%s", s->paths.e_api))
		return -ENAMETOOLONG;
	/* The spare drives after the root drive: vdb, vdc ... (spare.h). */
	for (k = 0; k < s->info.spare_drives && k < SANDBOX_MAX_SPARE_DRIVES;
	     k++)
		if (files__pathf(spare[k], sizeof(spare[k]),
				 "path=%s/" SANDBOX_SPARE_NAME
				 ",id=" SANDBOX_SPARE_ID,
				 dir, k, k))
			return -ENAMETOOLONG;
	/* A jailed ember: the jailer joins the namespace (--netns). */
	if (s->info.net_dev && !s->jail) {
		ns_fd = net__ns_open(s->info.id);
		if (ns_fd < 0)
			return ns_fd;
	}
	/* The guest's address where it has a network device (net.h). */
	if (files__pathf(append, sizeof(append), "%s%s%s",
			 s->info.net_dev ? NET_GUEST_CMDLINE : "",
			 s->info.net_dev && s->o->append ? " " : "",
			 s->o->append ? s->o->append : "")) {
		if (ns_fd >= 0)
			close(ns_fd);
		return -ENAMETOOLONG;
	}
	boot[nb++] = s->o->ember;
	boot[nb++] = "--kernel";
	boot[nb++] = s->o->kernel;
	boot[nb++] = "--mem";
	boot[nb++] = mem;
	boot[nb++] = "--vcpus";
	boot[nb++] = vcpus;
	boot[nb++] = "--console";
	boot[nb++] = console;
	boot[nb++] = "--drive";
	boot[nb++] = drive;
	for (k = 0; k < s->info.spare_drives && k < SANDBOX_MAX_SPARE_DRIVES;
	     k++) {
		boot[nb++] = "--drive";
		boot[nb++] = spare[k];
	}
	boot[nb++] = "--vsock";
	boot[nb++] = vsock;
	boot[nb++] = "--api-sock";
	boot[nb++] = api;
	boot[nb++] = "--append";
	boot[nb++] = append;
	/* The device and the guest's address (net.h). */
	if (s->info.net_dev) {
		boot[nb++] = "--net";
		boot[nb++] = "tap=" NET_TAP_NAME ",mac=" NET_GUEST_MAC
			     ",id=" NET_IFACE_ID;
	}
	boot[nb] = NULL;
	pid = fork();
	if (pid != 0) {
		if (ns_fd >= 0)
			close(ns_fd);
		return pid < 0 ? -errno : pid;
	}
	{
		sigset_t none;
		int fd;

		/* ember must not outlive its supervisor. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(125);
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (fd >= 0 && fd != 2) {
			dup2(fd, 2);
			close(fd);
		}
		if (ns_fd >= 0 && setns(ns_fd, CLONE_NEWNET) < 0) {
			dprintf(2,
				"emberctl: entering the sandbox's network "
				"namespace: %s\n",
				strerror(errno));
			_exit(127);
		}
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (s->jail)
			execv(s->jail->argv[0], (char *const *)s->jail->argv);
		else
			execv(s->o->ember,
			      (char *const *)(s->how->snap_state ? restore :
								   boot));
		dprintf(2, "emberctl: cannot run %s: %s\n",
			s->jail ? s->jail->argv[0] : s->o->ember,
			strerror(errno));
		_exit(127);
	}
}

/*
 * Take the signals that came: -EINTR for a stop request, -ECHILD once
 * ember has ended (s->ember_status), 1 when the info file changed (a
 * pause or resume: SIGUSR1), else 0.  Waits up to @ms for one.
 */
static int sup_events(struct sup *s, int ms)
{
	struct pollfd pfd = { .fd = s->sig_fd, .events = POLLIN };
	struct signalfd_siginfo si;
	int rc = 0, st;

	if (poll(&pfd, 1, ms) <= 0)
		return s->ember_reaped ? -ECHILD : 0;
	while (read(s->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGUSR1)
			rc = rc ? rc : 1;
		else if (si.ssi_signo != SIGCHLD)
			rc = -EINTR;
	}
	if (!s->ember_reaped && waitpid(s->info.ember, &st, WNOHANG) > 0) {
		s->ember_reaped = 1;
		s->ember_status = st;
	}
	if (rc < 0)
		return rc;
	return s->ember_reaped ? -ECHILD : rc;
}

/*
 * Why ember ended: its last error line ("ember: [ ms] error: WHY"), WHY
 * into @out.  Returns 0, or -1 when its log @path has none.
 */
static int ember_error(const char *path, char *out, size_t outsz)
{
	static const char mark[] = "] error: ";
	char buf[4096], *why = NULL;

	if (!read_end(path, buf, sizeof(buf)))
		return -1;
	for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		char *m = strstr(l, mark);

		if (!strncmp(l, "ember: [", 8) && m)
			why = m + sizeof(mark) - 1;
	}
	if (!why || !*why)
		return -1;
	snprintf(out, outsz, "%s", why);
	return 0;
}

static void describe_exit(int st, char *out, size_t outsz)
{
	if (WIFEXITED(st))
		snprintf(out, outsz, "ember exited with status %d",
			 WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(out, outsz, "ember was killed by signal %d",
			 WTERMSIG(st));
	else
		snprintf(out, outsz, "ember ended");
}

/*
 * After a restore: the agent sets the guest's wall clock and reseeds its
 * random generator, before anyone else reaches the guest (the snapshot's
 * clock is the template's, its RNG state every sibling's).
 */
static int init_guest(struct agent_client *c, char *why, size_t whylen)
{
	int rc = agent_client__init_guest(c, INIT_MS);

	if (rc < 0)
		snprintf(why, whylen, "%s", agent_client__error(c));
	return rc;
}

/*
 * A nat sandbox's resolver: the host's upstream nameservers (net.h),
 * written to the guest's /etc/resolv.conf through the agent @c (on the
 * connection that answered the readiness probe) before the sandbox is
 * handed out: after a restore the template's file is there, and the
 * host's servers may have changed since.  0, or -errno with @why.
 */
static int guest_resolv(struct agent_client *c, char *why, size_t whylen)
{
	char conf[NET_RESOLV_MAX];
	int fd = memfd_create("ember-resolv", MFD_CLOEXEC), rc = 0;

	if (fd < 0)
		return sandbox__errf(why, whylen, -errno,
				     "the guest's resolv.conf: %s",
				     strerror(errno));
	net__host_resolv(conf, sizeof(conf));
	rc = files__write_all(fd, conf, strlen(conf));
	if (rc == 0 && lseek(fd, 0, SEEK_SET) < 0)
		rc = -errno;
	if (rc < 0)
		sandbox__errf(why, whylen, rc, "the guest's resolv.conf: %s",
			      strerror(-rc));
	if (rc == 0) {
		rc = agent_client__write_file(c, fd, "/etc/resolv.conf", 0644,
					      INIT_MS);
		if (rc < 0)
			sandbox__errf(why, whylen, rc,
				      "writing the guest's /etc/resolv.conf: "
				      "%s",
				      agent_client__error(c));
	}
	close(fd);
	return rc;
}

/*
 * A jailed sandbox: the jailer's command line (jail.h), in s->jail
 * (freed by exit).  0, or -errno with @why.
 */
static int jail_prepare(struct sup *s, char *why, size_t whylen)
{
	char ns[NET_NAME_MAX], nspath[PATH_MAX];
	struct jail_start js = {
		.jailer = s->info.jailer,
		.ember = s->o->ember,
		.id = s->info.id,
		.root = s->info.jail_root,
		.uid = (uid_t)s->info.jail_uid,
		.gid = (gid_t)s->info.jail_gid,
		.mem_mib = s->info.mem_mib,
		.template_dir = s->how->template_dir,
		.p = &s->paths,
	};

	if (s->info.net_dev) {
		if (net__names(s->info.id, ns, NULL) ||
		    files__pathf(nspath, sizeof(nspath), NET_NETNS_DIR "/%s",
				 ns))
			return sandbox__errf(why, whylen, -EINVAL,
					     "the network namespace of %s",
					     s->info.id);
		js.netns = nspath;
	}
	s->jail = malloc(sizeof(*s->jail));
	if (!s->jail)
		return sandbox__errf(why, whylen, -ENOMEM, "out of memory");
	return jail__argv(&js, s->jail, why, whylen);
}

/*
 * Remove the sandbox's jail, if it has one (jail.h): once ember is gone,
 * before the directory (its info names the jail).
 */
static void jail_gone(struct sup *s)
{
	char why[512];

	if (s->info.jail_root[0] &&
	    jail__cleanup(&s->info, why, sizeof(why)) < 0)
		dprintf(2, "emberctl: sandbox %s: %s\n", s->info.id, why);
}

/* Remove the sandbox's network, if it has one (net.h). */
static void net_gone(struct sup *s)
{
	char why[512];

	if (s->info.net_dev && net__teardown(s->info.id, why, sizeof(why)) < 0)
		dprintf(2, "emberctl: sandbox %s: %s\n", s->info.id, why);
}

/*
 * A wait that ended on @rc from sup_events(): a stop request or ember's
 * end, said in @why.  Returns @rc.
 */
static int step_failed(struct sup *s, int rc, char *why, size_t whylen)
{
	if (rc == -EINTR)
		return sandbox__errf(why, whylen, rc, "stopped while %s",
				     s->how->snap_state ? "restoring" :
							  "booting");
	if (rc == -ECHILD)
		describe_exit(s->ember_status, why, whylen);
	return rc;
}

/*
 * Take a start slot (start_gate.h) before ember starts, waiting for one
 * until the deadline where the host has a gate: 0 (with s->gate_fd, or
 * none when there is no gate or its files cannot be opened), or -errno
 * with @why.
 */
static int gate_enter(struct sup *s, char *why, size_t whylen)
{
	unsigned int slots = start_gate__slots();
	int delay = 5, rc;

	s->gate_fd = -1;
	if (!slots)
		return 0;
	for (;;) {
		int64_t left = s->deadline - clock__mono_ms();

		rc = start_gate__try(NULL, slots);
		if (rc >= 0) {
			s->gate_fd = rc;
			return 0;
		}
		if (rc != -EAGAIN)
			return 0;
		if (left <= 0)
			return sandbox__errf(
				why, whylen, -ETIMEDOUT,
				"no start slot free within %u s: %u sandboxes "
				"of this host were starting (a PVM host's start "
				"gate; EMBER_START_LIMIT sets it)",
				s->o->boot_timeout_s, slots);
		rc = sup_events(s, left < delay ? (int)left : delay);
		if (rc < 0)
			return step_failed(s, rc, why, whylen);
		delay = delay * 2 > 100 ? 100 : delay * 2;
	}
}

/* Give the start slot back (start_gate.h), if one is held. */
static void gate_leave(struct sup *s)
{
	if (s->gate_fd >= 0)
		close(s->gate_fd);
	s->gate_fd = -1;
}

/*
 * Probe the agent until it answers a PING, then (after a restore) send
 * its init: 0 or -errno with @why.
 */
static int wait_ready(struct sup *s, char *why, size_t whylen)
{
	struct agent_client *c = agent_client__new();
	int delay = s->how->snap_state ? 2 : 10, rc;
	int probe = PROBE_MS;
	char buf[512];

	if (!c)
		return sandbox__errf(why, whylen, -ENOMEM, "out of memory");
	for (;;) {
		int64_t left = s->deadline - clock__mono_ms();
		int att = left > probe ? probe : (int)left;

		rc = sup_events(s, 0);
		if (rc < 0)
			break;
		if (left <= 0) {
			rc = sandbox__errf(
				why, whylen, -ETIMEDOUT,
				"the guest agent did not answer within %u s "
				"(last: %s)",
				s->o->boot_timeout_s,
				agent_client__error(c)[0] ?
					agent_client__error(c) :
					"no attempt");
			break;
		}
		rc = agent_client__connect(c, s->info.uds, EMBER_AGENT_PORT,
					   att);
		if (rc == 0)
			rc = agent_client__ping(c, att);
		/*
		 * A connection the guest's transport reset closes is tried
		 * again; an agent that refuses INIT (or predates it) is not.
		 */
		if (rc == 0 && s->how->snap_state) {
			rc = init_guest(c, buf, sizeof(buf));
			if (rc == -EREMOTEIO || rc == -EPROTO) {
				sandbox__errf(why, whylen, rc,
					      "the guest agent's init after "
					      "the restore: %s",
					      buf);
				break;
			}
		}
		/* nat: the guest's resolver, on the same connection. */
		if (rc == 0 && s->info.net_dev && s->info.net_mode == NET_NAT) {
			rc = guest_resolv(c, why, whylen);
			if (rc < 0)
				break;
		}
		agent_client__close(c);
		if (rc == 0)
			break;
		/*
		 * A guest too busy to answer in time (many starting at once)
		 * gets longer next time: each abandoned connection is more
		 * work for it, and short retries alone could keep it busy.
		 */
		if (rc == -ETIMEDOUT)
			probe = probe * 2 > PROBE_MAX_MS ? PROBE_MAX_MS :
							   probe * 2;
		left = s->deadline - clock__mono_ms();
		rc = sup_events(s, left < delay ? (int)(left > 0 ? left : 0) :
						  delay);
		if (rc < 0)
			break;
		delay = delay * 2 > 250 ? 250 : delay * 2;
	}
	agent_client__free(c);
	/* rc 1, the info file changed (SIGUSR1), is no reason to stop. */
	return rc < 0 ? step_failed(s, rc, why, whylen) : 0;
}

/*
 * A restore: wait until ember's control socket answers, then load the
 * snapshot with this sandbox's disk and vsock socket (the vCPUs run on
 * 204).  0, or -errno with @why.
 */
static int load_snapshot(struct sup *s, char *why, size_t whylen)
{
	char api[PATH_MAX], state[32], msg[1024] = "no attempt";
	char spare_id[SANDBOX_MAX_SPARE_DRIVES][16];
	char spare[SANDBOX_MAX_SPARE_DRIVES][PATH_MAX];
	struct ember_api_load l = {
		.state_path = s->how->snap_state,
		.mem_path = s->how->snap_mem,
		.uds_path = s->paths.e_uds,
		.drive_id = { SANDBOX_DRIVE_ID },
		.disk_path = { s->paths.e_disk },
		.nr_drives = 1,
	};
	int delay = 1, rc;
	int64_t t0;

	if (files__pathf(api, sizeof(api), "%s", s->paths.api))
		return sandbox__errf(why, whylen, -ENAMETOOLONG,
				     "sandbox path too long");
	/*
	 * From a template, its spare drives name the build's placeholders:
	 * this sandbox's own instead.  From a park, each keeps the file it
	 * had (its placeholder, or the file swapped in: spare.h).
	 */
	for (unsigned int k = 0; !s->how->parked && k < s->info.spare_drives &&
				 k < SANDBOX_MAX_SPARE_DRIVES;
	     k++) {
		snprintf(spare_id[k], sizeof(spare_id[k]), SANDBOX_SPARE_ID, k);
		if (files__pathf(spare[k], sizeof(spare[k]),
				 "%s/" SANDBOX_SPARE_NAME, s->info.dir, k))
			return sandbox__errf(why, whylen, -ENAMETOOLONG,
					     "sandbox path too long");
		l.drive_id[l.nr_drives] = spare_id[k];
		l.disk_path[l.nr_drives++] = spare[k];
	}
	for (;;) {
		int64_t left = s->deadline - clock__mono_ms();

		rc = sup_events(s, 0);
		if (rc < 0)
			return step_failed(s, rc, why, whylen);
		if (left <= 0)
			return sandbox__errf(why, whylen, -ETIMEDOUT,
					     "ember's control socket did not "
					     "answer within %u s (last: %s)",
					     s->o->boot_timeout_s, msg);
		rc = ember_api__state(
			api, left > API_TRY_MS ? API_TRY_MS : (int)left, state,
			sizeof(state), msg, sizeof(msg));
		if (rc == 0)
			break;
		/*
		 * Not there yet, not listening yet, or too busy to answer
		 * within one try (many sandboxes starting at once on a
		 * loaded host): try again until the deadline.
		 */
		if (rc != -ENOENT && rc != -ECONNREFUSED && rc != -ETIMEDOUT)
			return sandbox__errf(why, whylen, rc, "%s", msg);
		rc = sup_events(s, delay);
		if (rc < 0)
			return step_failed(s, rc, why, whylen);
		delay = delay * 2 > 50 ? 50 : delay * 2;
	}
	/* The jail exists now (ember answered in it): its disk goes in. */
	if (s->jail) {
		rc = jail__link_in(s->how->disk, s->paths.root, JAIL_DISK_NAME,
				   s->info.jail_uid, s->info.jail_gid, why,
				   whylen);
		if (rc < 0)
			return rc;
	}
	t0 = clock__mono_ms();
	rc = ember_api__snapshot_load(api, &l, msg, sizeof(msg));
	if (rc < 0) {
		/* ember may have ended meanwhile: its own reason is better. */
		if (sup_events(s, 0) == -ECHILD)
			return step_failed(s, -ECHILD, why, whylen);
		return sandbox__errf(why, whylen, rc,
				     "loading the snapshot: %s", msg);
	}
	s->loaded = true;
	s->info.restore_load_ms = (unsigned int)(clock__mono_ms() - t0);
	rc = wait_ready(s, why, whylen);
	s->info.restore_ready_ms = (unsigned int)(clock__mono_ms() - t0);
	return rc;
}

/* SIGTERM ember, SIGKILL after SUPERVISOR_STOP_GRACE_MS, reap it. */
static void stop_ember(struct sup *s)
{
	int64_t end = clock__mono_ms() + SUPERVISOR_STOP_GRACE_MS;

	if (s->ember_reaped || s->info.ember <= 0)
		return;
	kill(s->info.ember, SIGTERM);
	while (!s->ember_reaped) {
		int64_t left = end - clock__mono_ms();

		if (left <= 0)
			break;
		if (sup_events(s, (int)left) == -ECHILD)
			break;
	}
	if (!s->ember_reaped) {
		kill(s->info.ember, SIGKILL);
		while (waitpid(s->info.ember, &s->ember_status, 0) < 0 &&
		       errno == EINTR)
			;
		s->ember_reaped = 1;
	}
}

/* Remove the sandbox directory: hidden first, so no lookup finds it. */
static void remove_dir(struct sup *s)
{
	char dead[PATH_MAX];

	if (files__pathf(dead, sizeof(dead), "%s/.%s.dead", s->state,
			 s->info.id) == 0 &&
	    rename(s->info.dir, dead) == 0)
		files__rm_tree(dead);
	else
		files__rm_tree(s->info.dir);
}

/* Has a park (pause.c) marked the sandbox parked?  Then it stays. */
static bool parked_now(struct sup *s)
{
	struct sandbox_info now = s->info;

	return sandbox__read_info(s->info.dir, &now) == 0 && now.parked;
}

int supervisor__snapshot(struct sandbox_info *cur, char *err, size_t errlen)
{
	char sock[PATH_MAX], state[PATH_MAX], mem[PATH_MAX], why[512];
	int64_t now = clock__wall_s();
	unsigned int gen = cur->snap_gen + 1;
	bool was_paused = cur->paused != 0, diff;
	int rc;

	if (files__pathf(sock, sizeof(sock), "%s/" SANDBOX_API_NAME,
			 cur->dir) ||
	    files__pathf(state, sizeof(state), "%s/" SANDBOX_SNAP_STATE,
			 cur->dir, gen) ||
	    files__pathf(mem, sizeof(mem), "%s/" SANDBOX_SNAP_MEM, cur->dir,
			 gen))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "sandbox path too long");
	if (!was_paused) {
		rc = ember_api__pause(sock, true, err, errlen);
		if (rc < 0)
			return rc;
	}
	/* What a failed earlier attempt may have left. */
	sandbox__snap_gone(cur->dir, gen);
	/*
	 * Restored from its template, this ember knows which pages changed
	 * since: a diff over the template's memory.  Restored from its own
	 * Diff park, its base is still the template's memory (the diff's
	 * pages count as changed): a diff again.  Booted, or restored from a
	 * Full park (whose file this park replaces), all of RAM.
	 */
	diff = cur->origin == SANDBOX_FROM_TEMPLATE ||
	       (cur->origin == SANDBOX_FROM_PARK && cur->snap_diff);
	rc = ember_api__snapshot_create(sock, diff, state, mem, err, errlen);
	if (rc == 0) {
		struct sandbox_info next = *cur;

		next.parked = 1;
		next.snap_gen = gen;
		next.snap_diff = diff;
		if (!was_paused)
			sandbox__run_stop(&next, now, clock__mono_ms());
		rc = sandbox__write_info(cur->dir, &next);
		if (rc == 0) {
			*cur = next;
			return 0;
		}
		sandbox__errf(err, errlen, rc, "writing the info file: %s",
			      strerror(-rc));
	}
	sandbox__snap_gone(cur->dir, gen);
	if (!was_paused && ember_api__pause(sock, false, why, sizeof(why)) < 0)
		snprintf(err + strlen(err), errlen - strlen(err),
			 "; and resuming it: %s", why);
	return rc;
}

/*
 * The TTL is over and the sandbox asked to be parked then (ttl_park):
 * park it, as sandbox__park() would, under its pause.lock.  A pause, park
 * or renew under way elsewhere is waited for: it may park the sandbox
 * itself, or give it more time.  1 parked by us, 2 parked meanwhile by
 * sandbox__park(), 0 not to end after all (renewed or paused meanwhile:
 * the info file says), -1 to be ended (a stop request, ember's end, or
 * the park failed: said in the supervisor's log).
 */
static int ttl_park(struct sup *s)
{
	char lock[PATH_MAX], why[1024];
	struct sandbox_info cur;
	int fd, rc;

	if (files__pathf(lock, sizeof(lock), "%s/" SANDBOX_PAUSE_LOCK,
			 s->info.dir))
		return -1;
	for (;;) {
		fd = files__lock(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600,
				 LOCK_EX | LOCK_NB, why, sizeof(why));
		if (fd >= 0)
			break;
		if (fd != -EWOULDBLOCK)
			goto failed;
		rc = sup_events(s, 50);
		if (rc < 0)
			return -1;
		/* A park under way (pause.c) waits for us to end. */
		if (rc == 1 && parked_now(s))
			return 2;
	}
	cur = s->info;
	rc = sandbox__read_info(s->info.dir, &cur);
	if (rc == 0 && cur.parked) {
		close(fd);
		return 2;
	}
	/* Renewed (a new ttl) or paused meanwhile: not over after all. */
	if (rc == 0 && (cur.paused || cur.ttl_s != s->info.ttl_s)) {
		close(fd);
		return 0;
	}
	if (rc)
		sandbox__errf(why, sizeof(why), rc, "its info file: %s",
			      strerror(-rc));
	else
		rc = supervisor__snapshot(&cur, why, sizeof(why));
	close(fd);
	if (rc == 0) {
		s->info = cur;
		return 1;
	}
failed:
	dprintf(2,
		"emberctl: sandbox %s: parking it at the TTL's end: %s; "
		"ended instead\n",
		s->info.id, why);
	return -1;
}

/* The TTL's end in CLOCK_MONOTONIC ms from what @i has left; 0: none. */
static int64_t ttl_end_of(const struct sandbox_info *i)
{
	int64_t now = clock__mono_ms(), left = sandbox__ttl_left_ms(i, now);

	if (left < 0)
		return 0;
	return now + (left > 0 ? left : 1);
}

/*
 * The sandbox is ready: its info says so (a resumed park's pause ends
 * here, the TTL goes on from where it stopped), and `run` learns it.
 */
static void ready(struct sup *s)
{
	int64_t now = clock__wall_s(), mono = clock__mono_ms();

	if (!s->info.ready)
		s->info.ready = now;
	sandbox__run_start(&s->info, now, mono);
	if (s->info.parked) {
		s->info.parked = 0;
		/*
		 * Parked when its TTL ran out (run --on-timeout pause): it
		 * gets the last TTL it was given anew, from now.
		 */
		if (s->info.ttl_s && s->info.ttl_len &&
		    sandbox__ttl_left_ms(&s->info, mono) == 0) {
			int64_t ttl = sandbox__ttl_from_now(
				&s->info, s->info.ttl_len, mono);

			if (ttl >= 1 && ttl <= UINT32_MAX)
				s->info.ttl_s = (unsigned int)ttl;
		}
	}
	s->info.origin = !s->how->snap_state ? SANDBOX_BOOTED :
			 s->how->parked	     ? SANDBOX_FROM_PARK :
					       SANDBOX_FROM_TEMPLATE;
	sandbox__write_info(s->info.dir, &s->info);
}

__attribute__((noreturn)) static void supervise(struct sup *s)
{
	char why[SUPERVISOR_VERDICT_MAX - 16], msg[SUPERVISOR_VERDICT_MAX],
		path[PATH_MAX];
	int64_t ttl_end;
	sigset_t set;
	bool logged, parked = false;
	int rc;

	setsid();
	proc__daemon_stdio();
	proc__close_others(s->lock_fd, s->verdict_fd);
	prctl(PR_SET_NAME, "emberctl-sup");
	if (chdir("/") < 0)
		_exit(125);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	s->deadline = clock__mono_ms() + (int64_t)s->o->boot_timeout_s * 1000;
	s->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (s->sig_fd < 0) {
		rc = sandbox__errf(why, sizeof(why), -errno, "signalfd: %s",
				   strerror(errno));
		goto fail;
	}
	s->info.supervisor = getpid();
	proc__start_time(s->info.supervisor, &s->info.supervisor_start);
	s->info.ember = 0;
	s->info.ember_start = 0;
	rc = sandbox__write_info(s->info.dir, &s->info);
	if (rc == 0 && s->info.jail_root[0]) {
		rc = jail_prepare(s, why, sizeof(why));
		if (rc < 0)
			goto fail;
	}
	if (rc == 0 && s->info.net_dev) {
		struct net_setup ns = {
			.id = s->info.id,
			.mode = s->info.net_mode,
			.tap_uid = s->jail ? s->info.jail_uid : geteuid(),
			.tap_gid = s->jail ? s->info.jail_gid : getegid()
		};

		rc = net__setup(&ns, why, sizeof(why));
		if (rc < 0)
			goto fail;
	}
	if (rc == 0) {
		rc = gate_enter(s, why, sizeof(why));
		if (rc < 0)
			goto fail;
		s->info.ember = start_ember(s);
		if (s->info.ember < 0)
			rc = s->info.ember;
	}
	if (rc < 0) {
		s->info.ember = 0;
		sandbox__errf(why, sizeof(why), rc, "starting ember: %s",
			      strerror(-rc));
		goto fail;
	}
	proc__start_time(s->info.ember, &s->info.ember_start);
	sandbox__write_info(s->info.dir, &s->info);
	if (s->how->snap_state)
		rc = load_snapshot(s, why, sizeof(why));
	else
		rc = wait_ready(s, why, sizeof(why));
	gate_leave(s);
	if (rc < 0)
		goto fail;
	ready(s);
	ttl_end = ttl_end_of(&s->info);
	/* `run` died: nobody knows the id, nobody would use it. */
	if (verdict(s, "R") < 0 && !s->how->parked) {
		stop_ember(s);
		net_gone(s);
		jail_gone(s);
		remove_dir(s);
		_exit(1);
	}
	for (;;) {
		int64_t left = ttl_end ? ttl_end - clock__mono_ms() : -1;

		if (ttl_end && left <= 0) {
			struct sandbox_info now = s->info;

			if (!s->info.ttl_park)
				break;
			rc = ttl_park(s);
			parked = rc == 1;
			if (rc > 0)
				break;
			if (rc < 0 || sandbox__read_info(s->info.dir, &now))
				break;
			/* Renewed or paused meanwhile: on it goes. */
			s->info.ttl_s = now.ttl_s;
			s->info.ttl_len = now.ttl_len;
			s->info.paused = now.paused;
			s->info.paused_s = now.paused_s;
			s->info.ttl_used_ms = now.ttl_used_ms;
			s->info.run_since_ms = now.run_since_ms;
			ttl_end = now.paused ? 0 : ttl_end_of(&now);
			continue;
		}
		rc = sup_events(s, left < 0	? -1 :
				   left > 60000 ? 60000 :
						  (int)left);
		if (rc < 0)
			break;
		if (rc == 1) {
			/*
			 * Paused: the TTL clock stops; resumed: it goes on;
			 * renewed (sandbox__renew): a new end.  The info
			 * file says which.
			 */
			struct sandbox_info now = s->info;

			if (sandbox__read_info(s->info.dir, &now))
				continue;
			if (now.parked)
				break;
			if (!s->info.ttl_s || !now.ttl_s)
				continue;
			s->info.ttl_s = now.ttl_s;
			s->info.ttl_len = now.ttl_len;
			s->info.paused = now.paused;
			s->info.paused_s = now.paused_s;
			s->info.ttl_used_ms = now.ttl_used_ms;
			s->info.run_since_ms = now.run_since_ms;
			ttl_end = now.paused ? 0 : ttl_end_of(&now);
		}
	}
	stop_ember(s);
	/* Parked too: a resume makes the network again. */
	net_gone(s);
	jail_gone(s);
	/* Our own park: what sandbox__park() does once we are gone. */
	if (parked) {
		sandbox__sockets_gone(s->info.dir);
		if (s->info.snap_gen > 1)
			sandbox__snap_gone(s->info.dir, s->info.snap_gen - 1);
	}
	/* A park's snapshot is complete: the directory is the sandbox. */
	if (!parked_now(s))
		remove_dir(s);
	_exit(0);
fail:
	gate_leave(s);
	/*
	 * What the guest and ember said, before it all goes.  When ember
	 * ended on an error (a guest kernel panic, a bad option), that line
	 * is the reason: the console's last lines follow it.
	 */
	logged = files__pathf(path, sizeof(path), "%s/" SANDBOX_EMBER_LOG,
			      s->info.dir) == 0 &&
		 rc == -ECHILD && ember_error(path, why, sizeof(why)) == 0;
	if (s->how->parked)
		snprintf(why + strlen(why), sizeof(why) - strlen(why), "%s",
			 s->loaded ? " (the sandbox is removed: its guest ran "
				     "on from the snapshot)" :
				     " (the sandbox stays parked)");
	tail(s->paths.console, "console", NULL, why, sizeof(why));
	if (!logged && files__pathf(path, sizeof(path), "%s/" SANDBOX_EMBER_LOG,
				    s->info.dir) == 0)
		tail(path, "ember", "ember: ", why, sizeof(why));
	if (s->sig_fd >= 0)
		stop_ember(s);
	else if (s->info.ember > 0)
		kill(s->info.ember, SIGKILL);
	net_gone(s);
	jail_gone(s);
	if (!s->how->parked || s->loaded)
		remove_dir(s);
	snprintf(msg, sizeof(msg), "F%d %s", -rc, why);
	verdict(s, msg);
	_exit(1);
}

void supervisor__run(const struct sandbox_opts *o, const char *state,
		     const struct sandbox_info *info,
		     const struct supervisor_how *how, int lock_fd,
		     int verdict_fd)
{
	struct sup s = { .o = o,
			 .state = state,
			 .how = how,
			 .info = *info,
			 .lock_fd = lock_fd,
			 .verdict_fd = verdict_fd,
			 .sig_fd = -1,
			 .gate_fd = -1 };

	/* Paths too long were refused by `run`: this cannot fail. */
	if (jail__paths(&s.info, how->disk, &s.paths))
		_exit(125);
	supervise(&s);
}
