// SPDX-License-Identifier: Apache-2.0
/*
 * Sandbox networking, the part that changes the host: see net.h (the
 * pure plan it follows is net_plan.c).
 *
 *   setup:    ip netns add ember-ID
 *             (nat) lease a /30 (NET_RUN_DIR/slots, under the lock),
 *                   ip link add ve-ID type veth peer name veth0 netns ...
 *             in the namespace (a child that setns()es, then execs ip):
 *                   lo, tap0 (persistent, owned by ember's uid), its
 *                   address (host-only, nat), veth0 and the default route
 *                   (nat), IPv6 off, IPv4 forwarding (nat), MASQUERADE
 *                   out of veth0 (nat)
 *             (nat) ip_forward on in the host, the host's iptables rules
 *                   (iptables-save, then one iptables-restore --noflush,
 *                   under the lock)
 *   teardown: the host's rules of the sandbox, the veth, the lease, the
 *             namespace: the reverse order, so that whatever exists
 *             implies that the namespace does (a half-made setup is
 *             found from it).
 *
 * Tools rather than netlink here: ip(8) and iptables-restore(8) are what
 * an operator reads and types, their errors say what went wrong, and the
 * nft or legacy backend is iptables' business.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "files.h"
#include "net.h"

#define NET_CMD_MS     30000 /* one ip or iptables run */
#define NET_OUT_MAX    (64u << 20) /* iptables-save's output, bytes */
#define NET_SCRIPT_MAX (1u << 20) /* what iptables-restore gets */
#define NET_WHY_MAX    512
#define NET_LOCK_NAME  "lock"
#define NET_SLOTS_NAME "slots"

/* ---- running ip and iptables -------------------------------------------- */

/* A sysctl the child writes in the namespace before it runs the tool. */
struct net_sysctl {
	const char *path; /* under /proc/sys */
	const char *value;
	bool required; /* else a missing one (no IPv6) is fine */
};

/* What a tool run gets and gives. */
struct net_cmd {
	int ns_fd; /* -1: this namespace */
	const struct net_sysctl *sysctls; /* NULL, or ended by a NULL path */
	const char *const *argv;
	const char *in; /* its stdin; NULL: /dev/null */
	bool want_out; /* keep its stdout in out */
	char *out; /* then malloc()ed, the caller's to free; else NULL */
	size_t out_len;
	char why[NET_WHY_MAX]; /* its stderr, one line, or how it ended */
};

__attribute__((noreturn)) static void net__child(const struct net_cmd *c,
						 int in, int out, int errfd)
{
	static const char *const dirs[] = { "/usr/sbin", "/sbin" };
	char path[PATH_MAX];
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(errfd, 2) < 0)
		_exit(126);
	if (c->ns_fd >= 0 && setns(c->ns_fd, CLONE_NEWNET) < 0) {
		dprintf(2, "entering the namespace: %s\n", strerror(errno));
		_exit(126);
	}
	for (const struct net_sysctl *s = c->sysctls; s && s->path; s++) {
		int fd = open(s->path, O_WRONLY | O_CLOEXEC);
		size_t n = strlen(s->value);

		if (fd >= 0 && write(fd, s->value, n) == (ssize_t)n) {
			close(fd);
			continue;
		}
		if (fd >= 0)
			close(fd);
		if (s->required) {
			dprintf(2, "%s: %s\n", s->path, strerror(errno));
			_exit(126);
		}
	}
	close_range(3, ~0U, 0);
	execvp(c->argv[0], (char *const *)c->argv);
	for (size_t i = 0; errno == ENOENT && i < 2; i++)
		if (files__pathf(path, sizeof(path), "%s/%s", dirs[i],
				 c->argv[0]) == 0)
			execv(path, (char *const *)c->argv);
	dprintf(2, "cannot run %s: %s\n", c->argv[0], strerror(errno));
	_exit(127);
}

/* Append what came on @fd to the malloc()ed *@buf (*@len bytes). */
static int net__slurp(int fd, char **buf, size_t *len, size_t max)
{
	char chunk[16384];
	ssize_t n = read(fd, chunk, sizeof(chunk));
	char *nb;

	if (n <= 0)
		return n < 0 && (errno == EAGAIN || errno == EINTR) ? 1 : 0;
	if (*len + (size_t)n > max)
		return -EFBIG;
	nb = realloc(*buf, *len + (size_t)n + 1);
	if (!nb)
		return -ENOMEM;
	memcpy(nb + *len, chunk, (size_t)n);
	*len += (size_t)n;
	nb[*len] = '\0';
	*buf = nb;
	return 1;
}

/* @c->why from the tool's stderr @e: its lines joined by "; ". */
static void net__why(struct net_cmd *c, const char *e, int st)
{
	size_t len = 0;

	c->why[0] = '\0';
	for (const char *l = e; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);

		if (n && len < sizeof(c->why) - 1) {
			snprintf(c->why + len, sizeof(c->why) - len, "%s%.*s",
				 len ? "; " : "", (int)n, l);
			len = strlen(c->why);
		}
		l = nl ? nl + 1 : NULL;
	}
	if (len)
		return;
	if (WIFEXITED(st))
		snprintf(c->why, sizeof(c->why), "%s exited with status %d",
			 c->argv[0], WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(c->why, sizeof(c->why), "%s was killed by signal %d",
			 c->argv[0], WTERMSIG(st));
}

/*
 * Run @c: 0 when the tool exited 0 (its stdout in @c->out when asked
 * for), else -EIO (-ETIMEDOUT past NET_CMD_MS) or the failing call's
 * negative errno, with @c->why.
 */
static int net__run(struct net_cmd *c)
{
	int pin[2] = { -1, -1 }, pout[2] = { -1, -1 }, perr[2] = { -1, -1 };
	int64_t end = clock__mono_ms() + NET_CMD_MS;
	size_t in_len = c->in ? strlen(c->in) : 0, in_off = 0, elen = 0;
	char *ebuf = NULL;
	int rc = 0, st = 0;
	pid_t pid;

	c->out = NULL;
	c->out_len = 0;
	c->why[0] = '\0';
	if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 ||
	    pipe2(perr, O_CLOEXEC) < 0) {
		rc = -errno;
		snprintf(c->why, sizeof(c->why), "pipe: %s", strerror(-rc));
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		snprintf(c->why, sizeof(c->why), "fork: %s", strerror(-rc));
		goto out;
	}
	if (pid == 0)
		net__child(c, pin[0], pout[1], perr[1]);
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	pin[0] = pout[1] = perr[1] = -1;
	fcntl(pin[1], F_SETFL, O_NONBLOCK);
	if (!in_len) {
		close(pin[1]);
		pin[1] = -1;
	}
	while (pout[0] >= 0 || perr[0] >= 0) {
		struct pollfd p[3] = {
			{ .fd = pin[1], .events = POLLOUT },
			{ .fd = pout[0], .events = POLLIN },
			{ .fd = perr[0], .events = POLLIN },
		};
		int64_t left = end - clock__mono_ms();
		int r;

		if (left <= 0) {
			kill(pid, SIGKILL);
			rc = -ETIMEDOUT;
			break;
		}
		if (poll(p, 3, (int)left) < 0 && errno != EINTR)
			break;
		if (p[0].revents) {
			ssize_t n =
				write(pin[1], c->in + in_off, in_len - in_off);

			if (n > 0)
				in_off += (size_t)n;
			if ((n < 0 && errno != EAGAIN && errno != EINTR) ||
			    in_off == in_len) {
				close(pin[1]);
				pin[1] = -1;
			}
		}
		if (p[1].revents) {
			r = net__slurp(pout[0], &c->out, &c->out_len,
				       NET_OUT_MAX);
			if (!c->want_out) {
				free(c->out);
				c->out = NULL;
				c->out_len = 0;
			}
			if (r < 0 && !rc)
				rc = r;
			if (r <= 0) {
				close(pout[0]);
				pout[0] = -1;
			}
		}
		if (p[2].revents) {
			r = net__slurp(perr[0], &ebuf, &elen, NET_WHY_MAX * 4);
			if (r <= 0) {
				close(perr[0]);
				perr[0] = -1;
			}
		}
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!rc && (!WIFEXITED(st) || WEXITSTATUS(st)))
		rc = -EIO;
	if (rc) {
		net__why(c, ebuf, st);
		if (rc == -ETIMEDOUT)
			snprintf(c->why, sizeof(c->why),
				 "%s did not end within %d s", c->argv[0],
				 NET_CMD_MS / 1000);
	}
out:
	for (int i = 0; i < 2; i++) {
		if (pin[i] >= 0)
			close(pin[i]);
		if (pout[i] >= 0)
			close(pout[i]);
		if (perr[i] >= 0)
			close(perr[i]);
	}
	free(ebuf);
	if (rc) {
		free(c->out);
		c->out = NULL;
		c->out_len = 0;
	}
	return rc;
}

/* ---- the host-wide lock and the leases ---------------------------------- */

/* NET_RUN_DIR's lock, held: its fd, or a negative errno with @err. */
static int net__lock(char *err, size_t errlen)
{
	int rc = files__mkdir_p(NET_RUN_DIR "/" NET_SLOTS_NAME);

	if (rc)
		return sandbox__errf(err, errlen, rc, "%s: %s", NET_RUN_DIR,
				     strerror(-rc));
	return files__lock(NET_RUN_DIR "/" NET_LOCK_NAME,
			   O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600,
			   LOCK_EX, err, errlen);
}

/* Does sandbox @id have a namespace? */
static bool net__ns_exists(const char *id)
{
	char ns[NET_NAME_MAX], path[PATH_MAX];

	return net__names(id, ns, NULL) == 0 &&
	       files__pathf(path, sizeof(path), NET_NETNS_DIR "/%s", ns) == 0 &&
	       access(path, F_OK) == 0;
}

/*
 * Under the lock: the leases in @used (NET_SLOTS bits), @id's own in
 * *@mine (-1: none).  A lease whose sandbox has no namespace any more is
 * stale (a lease is taken after the namespace is made and given back
 * before it goes) and removed.
 */
static void net__leases(const char *id, uint8_t *used, int *mine)
{
	struct dirent *e;
	DIR *d = opendir(NET_RUN_DIR "/" NET_SLOTS_NAME);

	*mine = -1;
	memset(used, 0, NET_SLOTS / 8);
	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[PATH_MAX], who[NET_ID_LEN + 2], *end;
		unsigned long slot;
		ssize_t n;
		int fd;

		errno = 0;
		slot = strtoul(e->d_name, &end, 10);
		if (errno || *end || end == e->d_name || slot >= NET_SLOTS ||
		    files__pathf(path, sizeof(path), "%s/%s",
				 NET_RUN_DIR "/" NET_SLOTS_NAME, e->d_name))
			continue;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		n = fd < 0 ? -1 : read(fd, who, sizeof(who) - 1);
		if (fd >= 0)
			close(fd);
		if (n < NET_ID_LEN) {
			used[slot / 8] |= (uint8_t)(1u << (slot % 8));
			continue;
		}
		who[NET_ID_LEN] = '\0';
		if (!strcmp(who, id)) {
			*mine = (int)slot;
		} else if (!net__ns_exists(who)) {
			unlink(path);
			continue;
		}
		used[slot / 8] |= (uint8_t)(1u << (slot % 8));
	}
	closedir(d);
}

/* Under the lock: @id's lease (its own if it has one) into *@slot. */
static int net__lease(const char *id, unsigned int *slot, char *err,
		      size_t errlen)
{
	char path[PATH_MAX], line[NET_ID_LEN + 2];
	uint8_t *used = malloc(NET_SLOTS / 8);
	int mine, fd, rc = 0;
	unsigned int s;

	if (!used)
		return sandbox__errf(err, errlen, -ENOMEM, "out of memory");
	net__leases(id, used, &mine);
	s = mine >= 0 ? (unsigned int)mine :
			net__slot_pick(used, net__slot_start(id));
	free(used);
	if (s == NET_SLOTS)
		return sandbox__errf(err, errlen, -ENOSPC,
				     "no /30 of " NET_POOL " is free (%u "
				     "sandboxes with nat)",
				     NET_SLOTS);
	*slot = s;
	if (mine >= 0)
		return 0;
	snprintf(line, sizeof(line), "%s\n", id);
	if (files__pathf(path, sizeof(path), "%s/%u",
			 NET_RUN_DIR "/" NET_SLOTS_NAME, s))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "lease path too long");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || files__write_all(fd, line, strlen(line)) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	if (rc) {
		if (fd >= 0)
			unlink(path);
		return sandbox__errf(err, errlen, rc, "%s: %s", path,
				     strerror(-rc));
	}
	return 0;
}

/* ---- the host's iptables ------------------------------------------------ */

/*
 * Under the lock: bring the host's rules to what @id needs (@add) or to
 * none of its own (NULL).  0, or a negative errno with @why.
 */
static int net__iptables(const char *id, const struct net_rules *add, char *why,
			 size_t whylen)
{
	static const char *const save_argv[] = { "iptables-save", NULL };
	static const char *const restore_argv[] = { "iptables-restore", "-w",
						    "--noflush", NULL };
	struct net_cmd save = { .ns_fd = -1,
				.argv = save_argv,
				.want_out = true };
	struct net_cmd restore = { .ns_fd = -1, .argv = restore_argv };
	char *script;
	int rc;

	rc = net__run(&save);
	if (rc)
		return sandbox__errf(why, whylen, rc, "iptables-save: %s",
				     save.why);
	script = malloc(NET_SCRIPT_MAX);
	if (!script) {
		free(save.out);
		return sandbox__errf(why, whylen, -ENOMEM, "out of memory");
	}
	rc = net__iptables_script(save.out ? save.out : "", id, add, script,
				  NET_SCRIPT_MAX);
	free(save.out);
	if (rc > 0) {
		restore.in = script;
		rc = net__run(&restore);
		if (rc)
			sandbox__errf(why, whylen, rc, "iptables-restore: %s",
				      restore.why);
	} else if (rc < 0) {
		sandbox__errf(why, whylen, rc, "the rules do not fit");
	}
	free(script);
	return rc < 0 ? rc : 0;
}

/* ---- setup and teardown ------------------------------------------------- */

int net__ns_open(const char *id)
{
	char ns[NET_NAME_MAX], path[PATH_MAX];
	int fd;

	if (net__names(id, ns, NULL) ||
	    files__pathf(path, sizeof(path), NET_NETNS_DIR "/%s", ns))
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int net__teardown(const char *id, char *err, size_t errlen)
{
	char ns[NET_NAME_MAX], veth[NET_NAME_MAX], why[NET_WHY_MAX] = "";
	const char *del_veth[] = { "ip", "link", "del", veth, NULL };
	const char *del_ns[] = { "ip", "netns", "del", ns, NULL };
	bool has_ns, has_veth;
	int rc = 0, r, lock, mine = -1;
	uint8_t *used;

	if (net__names(id, ns, veth))
		return sandbox__errf(err, errlen, -EINVAL,
				     "not a sandbox id: %.20s", id ? id : "");
	has_ns = net__ns_exists(id);
	has_veth = if_nametoindex(veth) != 0;
	/* Whatever else there is, the namespace is: see the top. */
	if (!has_ns && !has_veth)
		return 0;
	lock = net__lock(why, sizeof(why));
	if (lock < 0) {
		rc = lock;
		sandbox__errf(err, errlen, rc, "%s", why);
	}
	used = malloc(NET_SLOTS / 8);
	if (lock >= 0 && used)
		net__leases(id, used, &mine);
	free(used);
	if (lock >= 0 && (mine >= 0 || has_veth)) {
		r = net__iptables(id, NULL, why, sizeof(why));
		if (r && !rc)
			rc = sandbox__errf(err, errlen, r,
					   "removing the iptables rules of "
					   "sandbox %s: %s",
					   id, why);
	}
	if (has_veth) {
		struct net_cmd c = { .ns_fd = -1, .argv = del_veth };

		r = net__run(&c);
		/* Gone meanwhile (its namespace went): fine. */
		if (r && if_nametoindex(veth) && !rc)
			rc = sandbox__errf(err, errlen, r, "ip link del %s: %s",
					   veth, c.why);
	}
	if (mine >= 0) {
		char path[PATH_MAX];

		if (files__pathf(path, sizeof(path), "%s/%d",
				 NET_RUN_DIR "/" NET_SLOTS_NAME, mine) == 0)
			unlink(path);
	}
	if (lock >= 0)
		close(lock);
	if (has_ns) {
		struct net_cmd c = { .ns_fd = -1, .argv = del_ns };

		r = net__run(&c);
		if (r && net__ns_exists(id) && !rc)
			rc = sandbox__errf(err, errlen, r,
					   "ip netns del %s: %s", ns, c.why);
	}
	return rc;
}

int net__setup(const struct net_setup *s, char *err, size_t errlen)
{
	static const struct net_sysctl sys_none[] = {
		{ "/proc/sys/net/ipv6/conf/all/disable_ipv6", "1", false },
		{ "/proc/sys/net/ipv6/conf/default/disable_ipv6", "1", false },
		{ NULL, NULL, false },
	};
	static const struct net_sysctl sys_nat[] = {
		{ "/proc/sys/net/ipv6/conf/all/disable_ipv6", "1", false },
		{ "/proc/sys/net/ipv6/conf/default/disable_ipv6", "1", false },
		{ "/proc/sys/net/ipv4/ip_forward", "1", true },
		{ NULL, NULL, false },
	};
	static const char ns_nat[] =
		"*nat\n-A POSTROUTING -s " NET_GUEST_CIDR " -o " NET_NS_VETH
		" -j MASQUERADE\nCOMMIT\n";
	char ns[NET_NAME_MAX], veth[NET_NAME_MAX],
		host[NET_ADDR_MAX] = "", nsaddr[NET_ADDR_MAX] = "",
		why[NET_WHY_MAX] = "", batch[1024];
	const char *add_ns[] = { "ip", "netns", "add", ns, NULL };
	const char *ip_batch[] = { "ip", "-batch", "-", NULL };
	const char *restore[] = { "iptables-restore", "-w", NULL };
	const char *step = "";
	struct net_cmd c;
	struct net_rules rules = { .veth = veth, .ns_addr = nsaddr };
	unsigned int slot = 0;
	int rc, fd = -1, lock;
	bool nat = s->mode == NET_NAT;

	if (net__names(s->id, ns, veth) || (unsigned int)s->mode > NET_NAT)
		return sandbox__errf(err, errlen, -EINVAL,
				     "bad network options");
	if (geteuid() != 0)
		return sandbox__errf(err, errlen, -EPERM,
				     "a sandbox's network (a namespace and "
				     "a tap) needs root");
	rc = net__teardown(s->id, why, sizeof(why));
	if (rc)
		return sandbox__errf(err, errlen, rc,
				     "the network an earlier run of sandbox "
				     "%s left: %s",
				     s->id, why);

	step = "creating its network namespace";
	c = (struct net_cmd){ .ns_fd = -1, .argv = add_ns };
	rc = net__run(&c);
	if (rc)
		goto fail_cmd;
	fd = net__ns_open(s->id);
	if (fd < 0) {
		rc = fd;
		snprintf(c.why, sizeof(c.why), "%s/%s: %s", NET_NETNS_DIR, ns,
			 strerror(-rc));
		goto fail_cmd;
	}
	if (nat) {
		step = "leasing a /30 of " NET_POOL;
		lock = net__lock(c.why, sizeof(c.why));
		if (lock < 0) {
			rc = lock;
			goto fail_cmd;
		}
		rc = net__lease(s->id, &slot, c.why, sizeof(c.why));
		close(lock);
		if (rc)
			goto fail_cmd;
		net__slot_addrs(slot, host, nsaddr);
		step = "creating its veth pair";
		snprintf(batch, sizeof(batch),
			 "link add %s type veth peer name " NET_NS_VETH
			 " netns %s\n"
			 "addr add %s/30 dev %s\n"
			 "link set %s up\n",
			 veth, ns, host, veth, veth);
		c = (struct net_cmd){ .ns_fd = -1,
				      .argv = ip_batch,
				      .in = batch };
		rc = net__run(&c);
		if (rc)
			goto fail_cmd;
	}
	step = "configuring its namespace (tap " NET_TAP_NAME ")";
	net__ns_batch(s->mode, s->tap_uid, s->tap_gid, nsaddr, host, batch,
		      sizeof(batch));
	c = (struct net_cmd){ .ns_fd = fd,
			      .sysctls = nat ? sys_nat : sys_none,
			      .argv = ip_batch,
			      .in = batch };
	rc = net__run(&c);
	if (rc)
		goto fail_cmd;
	if (nat) {
		step = "masquerading the guest in its namespace";
		c = (struct net_cmd){ .ns_fd = fd,
				      .argv = restore,
				      .in = ns_nat };
		rc = net__run(&c);
		if (rc)
			goto fail_cmd;
		step = "IPv4 forwarding on the host";
		{
			int f = open("/proc/sys/net/ipv4/ip_forward",
				     O_RDWR | O_CLOEXEC);
			char v = 0;

			if (f < 0 || pread(f, &v, 1, 0) != 1 ||
			    (v != '1' && pwrite(f, "1", 1, 0) != 1))
				rc = -errno;
			if (f >= 0)
				close(f);
			if (rc) {
				snprintf(c.why, sizeof(c.why),
					 "/proc/sys/net/ipv4/ip_forward: %s",
					 strerror(-rc));
				goto fail_cmd;
			}
		}
		step = "the host's iptables rules";
		lock = net__lock(c.why, sizeof(c.why));
		if (lock < 0) {
			rc = lock;
			goto fail_cmd;
		}
		rc = net__iptables(s->id, &rules, c.why, sizeof(c.why));
		close(lock);
		if (rc)
			goto fail_cmd;
	}
	close(fd);
	return 0;
fail_cmd:
	if (fd >= 0)
		close(fd);
	sandbox__errf(err, errlen, rc, "the network of sandbox %s: %s: %s",
		      s->id, step, c.why);
	net__teardown(s->id, why, sizeof(why));
	return rc;
}
