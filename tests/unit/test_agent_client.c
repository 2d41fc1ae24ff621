// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for emberctl's agent client (api/sandbox/agent_client.c), without a
 * VM: a fake sandbox listens on a Unix socket, answers the hybrid vsock
 * handshake (`CONNECT 1024\n` -> `OK 1\n`) and hands the connection to the
 * real agent built for this host (build/test/agent-host --fd N).  Then:
 * ping, exec (output, status, signals, timeout, stdin, env, cwd, user,
 * ENV_ADD, signal forwarding, EPIPE; ROOT, RLIMIT, TTY with RESIZE, the
 * ctl_fd records), files both ways, several operations on one
 * connection, the init step (through the agent's report hook, and for
 * real); handshake failures; and a hostile fake agent whose malformed or
 * oversized frames must end the operation with an error.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../api/sandbox/agent_client.h"
#include "../../guest-init/protocol.h"

#define AGENT_BIN "build/test/agent-host"
#define TIMEOUT	  10000

/* What the fake sandbox does with the connection after CONNECT. */
enum fake_mode {
	FAKE_AGENT, /* OK, then the real agent */
	FAKE_REFUSE, /* close: nothing listens on the guest port */
	FAKE_GARBAGE, /* a reply that is not OK */
	FAKE_SILENT, /* never answer */
	FAKE_HOSTILE, /* OK, then hostile() answers the first frame */
};

/* A hostile agent's answer to the first frame it got (header @h). */
typedef void (*hostile_fn)(int fd, const struct ember_agent_hdr *h);

struct fake {
	char dir[64];
	char sock[128];
	pid_t pid;
	struct agent_client *c;
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void put(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n <= 0)
			_exit(5);
		p += n;
		len -= (size_t)n;
	}
}

static void put_frame(int fd, uint16_t type, uint32_t stream, const void *p,
		      uint32_t len)
{
	uint8_t h[EMBER_AGENT_HDR_SIZE];

	ember_agent_hdr_encode(h, type, stream, len);
	put(fd, h, sizeof(h));
	if (len)
		put(fd, p, len);
}

static int get(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The payload of the first frame a hostile agent got. */
static uint8_t hostile_pl[EMBER_AGENT_MAX_PAYLOAD];

/* The fake sandbox's side; runs in a child. */
__attribute__((noreturn)) static void fake_serve(int lfd, enum fake_mode mode,
						 hostile_fn hostile)
{
	char line[32];
	size_t n = 0;
	int fd = accept(lfd, NULL, NULL);

	if (fd < 0)
		_exit(2);
	close(lfd);
	while (n < sizeof(line) - 1 && read(fd, line + n, 1) == 1)
		if (line[n++] == '\n')
			break;
	line[n] = '\0';
	if (strcmp(line, "CONNECT 1024\n"))
		_exit(3);
	switch (mode) {
	case FAKE_AGENT:
		put(fd, "OK 1\n", 5);
		if (dup2(fd, 3) < 0)
			_exit(4);
		execl(AGENT_BIN, "agent-host", "--fd", "3", (char *)NULL);
		_exit(127);
	case FAKE_REFUSE:
		_exit(0);
	case FAKE_GARBAGE:
		put(fd, "HELLO 1024\n", 11);
		break;
	case FAKE_SILENT:
		break;
	case FAKE_HOSTILE: {
		uint8_t hb[EMBER_AGENT_HDR_SIZE];
		struct ember_agent_hdr h;

		put(fd, "OK 1\n", 5);
		if (get(fd, hb, sizeof(hb)) ||
		    ember_agent_hdr_decode(hb, sizeof(hb), &h) ||
		    get(fd, hostile_pl, h.len))
			_exit(6);
		hostile(fd, &h);
		break;
	}
	}
	/* Hold the connection until the client lets go. */
	while (read(fd, line, sizeof(line)) > 0)
		;
	_exit(0);
}

static void fake_start(struct fake *f, enum fake_mode mode, hostile_fn hostile)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int lfd;

	snprintf(f->dir, sizeof(f->dir), "/tmp/ember-ac-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->sock, sizeof(f->sock), "%s/vsock.sock", f->dir);
	strcpy(sa.sun_path, f->sock);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	f->pid = fork();
	assert_true(f->pid >= 0);
	if (f->pid == 0)
		fake_serve(lfd, mode, hostile);
	close(lfd);
	f->c = agent_client__new();
	assert_non_null(f->c);
}

/* Stop the fake; with @agent, the agent must have exited 0 by itself. */
static void fake_stop(struct fake *f, int agent)
{
	int st = 0;

	agent_client__free(f->c);
	f->c = NULL;
	if (!agent)
		kill(f->pid, SIGKILL);
	assert_int_equal(waitpid(f->pid, &st, 0), f->pid);
	f->pid = -1; /* reaped: fake_abandon() must not signal the number */
	if (agent) {
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	unlink(f->sock);
	rmdir(f->dir);
}

/*
 * What a test that failed half-way (cmocka jumps out of it) left of its
 * fake: the client, the child, the socket.  For a teardown; asserts
 * nothing.  @f must have been zeroed with pid -1 before fake_start().
 */
static void fake_abandon(struct fake *f)
{
	agent_client__free(f->c);
	f->c = NULL;
	if (f->pid > 0) {
		kill(f->pid, SIGKILL);
		waitpid(f->pid, NULL, 0);
		f->pid = -1;
	}
	if (f->sock[0])
		unlink(f->sock);
	if (f->dir[0])
		rmdir(f->dir);
}

/*
 * A fake sandbox with the real agent, connected and answering.  The fake
 * says OK before it execs the agent, where ember's vsock says it only once
 * the guest's agent holds the connection: the PING waits until the agent
 * runs, as emberctl's supervisor does before it sends INIT.
 */
static void agent_up(struct fake *f)
{
	fake_start(f, FAKE_AGENT, NULL);
	assert_int_equal(
		agent_client__connect(f->c, f->sock, EMBER_AGENT_PORT, TIMEOUT),
		0);
	assert_int_equal(agent_client__ping(f->c, TIMEOUT), 0);
}

/* ---- exec helpers ------------------------------------------------------- */

struct run {
	char out[1 << 16], err[1 << 16];
	size_t out_len, err_len;
	struct agent_exec_result res;
};

static size_t slurp(int fd, char *buf, size_t cap)
{
	ssize_t n;
	size_t len = 0;

	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	while (len < cap - 1 && (n = read(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	return len;
}

/* Run @argv with @req's other fields; output captured in @r. */
static int run_req(struct agent_client *c, struct agent_exec_req *req,
		   struct run *r)
{
	int out = memfd_create("out", MFD_CLOEXEC);
	int err = memfd_create("err", MFD_CLOEXEC);
	int rc;

	assert_true(out >= 0 && err >= 0);
	req->stdout_fd = out;
	req->stderr_fd = err;
	memset(&r->res, 0xff, sizeof(r->res));
	rc = agent_client__exec(c, req, &r->res);
	r->out_len = slurp(out, r->out, sizeof(r->out));
	r->err_len = slurp(err, r->err, sizeof(r->err));
	close(out);
	close(err);
	return rc;
}

static int run_argv(struct agent_client *c, const char *const *argv,
		    struct run *r)
{
	struct agent_exec_req req = { .argv = argv,
				      .stdin_fd = -1,
				      .sig_fd = -1 };

	return run_req(c, &req, r);
}

static struct run R;

/* ---- the real agent ----------------------------------------------------- */

static void test_ping(void **state)
{
	struct fake f;

	(void)state;
	agent_up(&f);
	for (int i = 0; i < 3; i++)
		assert_int_equal(agent_client__ping(f.c, TIMEOUT), 0);
	assert_int_equal(agent_client__connect(f.c, f.sock, 1024, TIMEOUT),
			 -EISCONN);
	fake_stop(&f, 1);
}

static void test_exec_output_and_status(void **state)
{
	const char *echo[] = { "echo", "hi", NULL };
	const char *oops[] = { "sh", "-c", "echo out; echo oops >&2; exit 3",
			       NULL };
	const char *sig[] = { "sh", "-c", "kill -TERM $$", NULL };
	struct fake f;

	(void)state;
	agent_up(&f);
	assert_int_equal(run_argv(f.c, echo, &R), 0);
	assert_int_equal(R.res.kind, EMBER_AGENT_EXITED);
	assert_int_equal(R.res.code, 0);
	assert_string_equal(R.out, "hi\n");
	assert_int_equal(R.err_len, 0);
	assert_int_equal(run_argv(f.c, oops, &R), 0);
	assert_int_equal(R.res.kind, EMBER_AGENT_EXITED);
	assert_int_equal(R.res.code, 3);
	assert_string_equal(R.out, "out\n");
	assert_string_equal(R.err, "oops\n");
	assert_int_equal(run_argv(f.c, sig, &R), 0);
	assert_int_equal(R.res.kind, EMBER_AGENT_SIGNALLED);
	assert_int_equal(R.res.code, SIGTERM);
	fake_stop(&f, 1);
}

/* Output larger than pipes and frames, in order, byte for byte. */
static void test_exec_big_output(void **state)
{
	const char *argv[] = { "sh", "-c", "seq 1 9000; seq 1 5000 >&2", NULL };
	char want[1 << 16];
	size_t len = 0;
	struct fake f;

	(void)state;
	agent_up(&f);
	assert_int_equal(run_argv(f.c, argv, &R), 0);
	for (int i = 1; i <= 9000; i++)
		len += (size_t)snprintf(want + len, sizeof(want) - len, "%d\n",
					i);
	assert_int_equal(R.out_len, len);
	assert_memory_equal(R.out, want, len);
	assert_int_equal(R.err_len, 23893);
	fake_stop(&f, 1);
}

/* out_max keeps that much of each stream; the rest is read and dropped. */
static void test_exec_out_max(void **state)
{
	const char *argv[] = { "sh", "-c",
			       "seq 1 20000; seq 1 20000 >&2; echo done",
			       NULL };
	struct agent_exec_req req = {
		.argv = argv, .stdin_fd = -1, .sig_fd = -1, .out_max = 1000
	};
	struct fake f;

	(void)state;
	agent_up(&f);
	assert_int_equal(run_req(f.c, &req, &R), 0);
	assert_int_equal(R.res.kind, EMBER_AGENT_EXITED);
	assert_int_equal(R.res.code, 0);
	assert_int_equal(R.out_len, 1000);
	assert_int_equal(R.err_len, 1000);
	assert_memory_equal(R.out, "1\n2\n3\n", 6);
	/* The connection is in step: the next exec works. */
	req.out_max = 0;
	assert_int_equal(run_req(f.c, &req, &R), 0);
	assert_true(R.out_len > 1000);
	fake_stop(&f, 1);
}

static void test_exec_timeout(void **state)
{
	const char *argv[] = { "sleep", "10", NULL };
	struct agent_exec_req req = {
		.argv = argv, .stdin_fd = -1, .sig_fd = -1, .timeout_ms = 300
	};
	int64_t t0 = mono_ms();
	struct fake f;

	(void)state;
	agent_up(&f);
	assert_int_equal(run_req(f.c, &req, &R), 0);
	assert_int_equal(R.res.kind, EMBER_AGENT_TIMEOUT);
	assert_int_equal(R.res.code, SIGKILL);
	assert_true(mono_ms() - t0 >= 250);
	assert_true(mono_ms() - t0 < 5000);
	fake_stop(&f, 1);
}

static void test_exec_not_found(void **state)
{
	const char *argv[] = { "no-such-command-xyz", NULL };
	const char *ok[] = { "true", NULL };
	struct fake f;

	(void)state;
	agent_up(&f);
	assert_int_equal(run_argv(f.c, argv, &R), -EREMOTEIO);
	assert_int_equal(agent_client__guest_errno(f.c), ENOENT);
	assert_non_null(strstr(agent_client__error(f.c),
			       "no-such-command-xyz: No such file"));
	/* The connection goes on. */
	assert_int_equal(run_argv(f.c, ok, &R), 0);
	assert_int_equal(R.res.code, 0);
	assert_int_equal(agent_client__guest_errno(f.c), 0);
	fake_stop(&f, 1);
}

static void test_exec_env_cwd(void **state)
{
	const char *argv[] = { "sh", "-c", "echo \"$FOO\"; pwd; echo $HOME",
			       NULL };
	const char *env[] = { "FOO=bar baz", NULL };
	struct agent_exec_req req = { .argv = argv,
				      .env = env,
				      .cwd = "/tmp",
				      .stdin_fd = -1,
				      .sig_fd = -1 };
	struct fake f;

	(void)state;
	agent_up(&f);
	assert_int_equal(run_req(f.c, &req, &R), 0);
	assert_string_equal(R.out, "bar baz\n/tmp\n\n");
	req.cwd = "/nonexistent-dir";
	assert_int_equal(run_req(f.c, &req, &R), -EREMOTEIO);
	assert_int_equal(agent_client__guest_errno(f.c), ENOENT);
	fake_stop(&f, 1);
}

/*
 * USER and ENV_ADD with the real agent: ENV added over the default
 * environment; an unknown user is the guest's EINVAL, a malformed spec
 * refused before anything is sent; as root, the command runs as the
 * account.
 */
static void test_exec_user_env_add(void **state)
{
	const char *argv[] = { "sh", "-c",
			       "echo \"$FOO\" ${PATH:+path}; id -un", NULL };
	const char *env[] = { "FOO=bar baz", NULL };
	struct agent_exec_req req = { .argv = argv,
				      .env = env,
				      .env_add = true,
				      .stdin_fd = -1,
				      .sig_fd = -1 };
	struct fake f;

	(void)state;
	agent_up(&f);
	assert_int_equal(run_req(f.c, &req, &R), 0);
	assert_int_equal(R.res.code, 0);
	if (geteuid() == 0)
		assert_string_equal(R.out, "bar baz path\nroot\n");
	req.user = "ember-no-such-user";
	assert_int_equal(run_req(f.c, &req, &R), -EREMOTEIO);
	assert_int_equal(agent_client__guest_errno(f.c), EINVAL);
	assert_non_null(strstr(agent_client__error(f.c),
			       "user ember-no-such-user: no such user"));
	req.user = "a:b:c";
	assert_int_equal(run_req(f.c, &req, &R), -EINVAL);
	assert_non_null(strstr(agent_client__error(f.c), "a:b:c"));
	/* The connection goes on. */
	req.user = geteuid() == 0 ? "nobody" : NULL;
	assert_int_equal(run_req(f.c, &req, &R), 0);
	assert_int_equal(R.res.code, 0);
	if (geteuid() == 0)
		assert_string_equal(R.out, "bar baz path\nnobody\n");
	fake_stop(&f, 1);
}

/*
 * What goes on the wire: a hostile agent checks the EXEC it got and
 * answers EXIT 0 when it is as expected, else EXIT 1.
 */
static void h_exec_user(int fd, const struct ember_agent_hdr *h)
{
	static struct ember_agent_exec e;
	uint8_t p[EMBER_AGENT_EXIT_SIZE];
	int ok;

	ok = h->type == EMBER_AGENT_EXEC &&
	     ember_agent_exec_decode(hostile_pl, h->len, &e) == 0 && e.user &&
	     !strcmp(e.user, "app:staff") && e.envc == 1 &&
	     !strcmp(e.env[0], "A=1") && e.flags == EMBER_AGENT_F_ENV_ADD;
	ember_agent_exit_encode(p, EMBER_AGENT_EXITED, ok ? 0 : 1);
	put_frame(fd, EMBER_AGENT_EXIT, h->stream, p, sizeof(p));
}

/* An EXEC with no user, no env: no USER field, no FLAGS field at all. */
static void h_exec_plain(int fd, const struct ember_agent_hdr *h)
{
	static struct ember_agent_exec e;
	uint8_t p[EMBER_AGENT_EXIT_SIZE];
	int ok;

	ok = h->type == EMBER_AGENT_EXEC &&
	     ember_agent_exec_decode(hostile_pl, h->len, &e) == 0 && !e.user &&
	     !e.env_given && e.flags == 0 &&
	     h->len == 2 * EMBER_AGENT_TLV_HDR + 5 + 2;
	ember_agent_exit_encode(p, EMBER_AGENT_EXITED, ok ? 0 : 1);
	put_frame(fd, EMBER_AGENT_EXIT, h->stream, p, sizeof(p));
}

static void test_exec_user_wire(void **state)
{
	const char *argv[] = { "true", "x", NULL };
	const char *env[] = { "A=1", NULL };
	struct agent_exec_req req = { .argv = argv,
				      .env = env,
				      .env_add = true,
				      .user = "app:staff",
				      .stdin_fd = -1,
				      .sig_fd = -1 };
	struct fake f;

	(void)state;
	fake_start(&f, FAKE_HOSTILE, h_exec_user);
	assert_int_equal(agent_client__connect(f.c, f.sock, 1024, TIMEOUT), 0);
	assert_int_equal(run_req(f.c, &req, &R), 0);
	assert_int_equal(R.res.code, 0);
	fake_stop(&f, 0);
	/* env_add without env: nothing to add, no flag. */
	req.env = NULL;
	req.user = NULL;
	fake_start(&f, FAKE_HOSTILE, h_exec_plain);
	assert_int_equal(agent_client__connect(f.c, f.sock, 1024, TIMEOUT), 0);
	assert_int_equal(run_req(f.c, &req, &R), 0);
	assert_int_equal(R.res.code, 0);
	fake_stop(&f, 0);
}

static int fill_memfd(const uint8_t *data, size_t len)
{
	int fd = memfd_create("in", MFD_CLOEXEC);
	size_t off = 0;

	assert_true(fd >= 0);
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);

		assert_true(n > 0);
		off += (size_t)n;
	}
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

static void test_exec_stdin(void **state)
{
	const char *cat[] = { "cat", NULL };
	const char *wc[] = { "wc", "-c", NULL };
	const size_t big = 1U << 20;
	struct agent_exec_req req = { .argv = cat, .sig_fd = -1 };
	uint8_t *data = malloc(big);
	int pfd[2];
	struct fake f;

	(void)state;
	assert_non_null(data);
	agent_up(&f);
	/* A pipe. */
	assert_int_equal(pipe(pfd), 0);
	assert_int_equal(write(pfd[1], "hello world", 11), 11);
	close(pfd[1]);
	req.stdin_fd = pfd[0];
	assert_int_equal(run_req(f.c, &req, &R), 0);
	close(pfd[0]);
	assert_int_equal(R.res.code, 0);
	assert_string_equal(R.out, "hello world");
	/* 1 MiB counted in the guest. */
	assert_int_equal(getrandom(data, big, 0), (ssize_t)big);
	req.argv = wc;
	req.stdin_fd = fill_memfd(data, big);
	assert_int_equal(run_req(f.c, &req, &R), 0);
	close(req.stdin_fd);
	assert_string_equal(R.out, "1048576\n");
	/* Empty stdin. */
	req.argv = cat;
	req.stdin_fd = fill_memfd(data, 0);
	assert_int_equal(run_req(f.c, &req, &R), 0);
	close(req.stdin_fd);
	assert_int_equal(R.out_len, 0);
	/* No stdin at all: /dev/null, cat ends. */
	req.stdin_fd = -1;
	assert_int_equal(run_req(f.c, &req, &R), 0);
	assert_int_equal(R.out_len, 0);
	free(data);
	fake_stop(&f, 1);
}

/* stdin streamed while output streams back: 256 KiB through cat. */
static void test_exec_stdin_echo(void **state)
{
	const char *cat[] = { "cat", NULL };
	const size_t len = 256U << 10;
	struct agent_exec_req req = { .argv = cat, .sig_fd = -1 };
	int out = memfd_create("out", MFD_CLOEXEC), err;
	uint8_t *data = malloc(len), *back = malloc(len);
	struct agent_exec_result res;
	struct fake f;

	(void)state;
	assert_non_null(data);
	assert_non_null(back);
	err = memfd_create("err", MFD_CLOEXEC);
	for (size_t i = 0; i < len; i++)
		data[i] = (uint8_t)(i * 2654435761U >> 11);
	agent_up(&f);
	req.stdin_fd = fill_memfd(data, len);
	req.stdout_fd = out;
	req.stderr_fd = err;
	assert_int_equal(agent_client__exec(f.c, &req, &res), 0);
	assert_int_equal(res.code, 0);
	assert_int_equal(lseek(out, 0, SEEK_END), (off_t)len);
	assert_int_equal(pread(out, back, len, 0), (ssize_t)len);
	assert_memory_equal(back, data, len);
	close(req.stdin_fd);
	close(out);
	close(err);
	free(data);
	free(back);
	fake_stop(&f, 1);
}

/* ---- ROOT, RLIMIT, TTY, ctl_fd --------------------------------------- */

static void put_file(const char *dir, const char *rel, const char *text)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	f = fopen(p, "w");
	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(p, 0644), 0);
}

/*
 * A container root in @dir: a static busybox (Debian's busybox-static)
 * as bin/busybox and its sh, cat, id and env, an etc/passwd and etc/group of its own, a
 * marker file, a home and a work directory.
 */
static void make_root(char *dir, size_t cap)
{
	char p[256], cmd[512];

	snprintf(dir, cap, "/tmp/ember-root-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/bin %s/etc %s/home/app %s/work && "
		 "cp /usr/bin/busybox %s/bin/busybox && "
		 "for a in sh cat id env; do ln -s busybox %s/bin/$a; done",
		 dir, dir, dir, dir, dir, dir);
	assert_int_equal(system(cmd), 0);
	put_file(dir, "etc/passwd",
		 "root:x:0:0:root:/root:/bin/sh\n"
		 "app:x:1234:1235:App:/home/app:/bin/sh\n");
	put_file(dir, "etc/group",
		 "root:x:0:\napp:x:1235:\nextra:x:777:other,app\n");
	put_file(dir, "etc/marker", "inside the root\n");
	snprintf(p, sizeof(p), "%s/work", dir);
	assert_int_equal(chmod(p, 0777), 0);
	assert_int_equal(chmod(dir, 0755), 0); /* mkdtemp's 0700 */
}

static void remove_root(const char *dir)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/*
 * ROOT: the command, its user (the root's etc/passwd and etc/group: an
 * account the host lacks), its cwd and its files are the root's; the
 * environment is ENV alone, with the account's HOME; a root that is
 * missing or not a directory is the guest's ENOENT / ENOTDIR naming it.
 */
static void test_exec_root(void **state)
{
	const char *argv[] = { "sh", "-c",
			       "cat /etc/marker; pwd; id; echo \"$HOME\" $A",
			       NULL };
	const char *envv[] = { "/bin/busybox", "env", NULL };
	const char *env[] = { "PATH=/bin", "A=1", NULL };
	const char *missing[] = { "no-such-cmd", NULL };
	struct agent_exec_req req = {
		.argv = argv, .env = env, .stdin_fd = -1, .sig_fd = -1
	};
	char dir[64], file[96];
	struct fake f;

	(void)state;
	if (geteuid() != 0) {
		print_message("ok # skip ROOT needs root (chroot)\n");
		skip();
	}
	make_root(dir, sizeof(dir));
	agent_up(&f);
	req.root = dir;
	req.user = "app";
	req.cwd = "/work";
	assert_int_equal(run_req(f.c, &req, &R), 0);
	assert_int_equal(R.res.code, 0);
	assert_string_equal(R.out,
			    "inside the root\n/work\n"
			    "uid=1234(app) gid=1235(app) "
			    "groups=777(extra),1235(app)\n/home/app 1\n");
	/* As root, no user: the ids stay; ENV is the whole environment. */
	req.user = NULL;
	req.cwd = NULL;
	req.argv = envv;
	assert_int_equal(run_req(f.c, &req, &R), 0);
	assert_string_equal(R.out, "PATH=/bin\nA=1\n");
	/* The command is looked up in the root's PATH. */
	req.argv = missing;
	assert_int_equal(run_req(f.c, &req, &R), -EREMOTEIO);
	assert_int_equal(agent_client__guest_errno(f.c), ENOENT);
	assert_non_null(strstr(agent_client__error(f.c), "no-such-cmd"));
	req.argv = argv;
	req.user = "nobody"; /* the host's, not the root's */
	assert_int_equal(run_req(f.c, &req, &R), -EREMOTEIO);
	assert_int_equal(agent_client__guest_errno(f.c), EINVAL);
	req.user = NULL;
	snprintf(file, sizeof(file), "%s/no-such-dir", dir);
	req.root = file;
	assert_int_equal(run_req(f.c, &req, &R), -EREMOTEIO);
	assert_int_equal(agent_client__guest_errno(f.c), ENOENT);
	assert_non_null(strstr(agent_client__error(f.c), file));
	snprintf(file, sizeof(file), "%s/etc/marker", dir);
	req.root = file;
	assert_int_equal(run_req(f.c, &req, &R), -EREMOTEIO);
	assert_int_equal(agent_client__guest_errno(f.c), ENOTDIR);
	/* Refused before sending: relative, or with env_add. */
	req.root = "relative/root";
	assert_int_equal(run_req(f.c, &req, &R), -EINVAL);
	req.root = dir;
	req.env_add = true;
	assert_int_equal(run_req(f.c, &req, &R), -EINVAL);
	/* The connection goes on. */
	req.env_add = false;
	assert_int_equal(run_req(f.c, &req, &R), 0);
	assert_int_equal(R.res.code, 0);
	fake_stop(&f, 1);
	remove_root(dir);
}

/* RLIMIT: set before the command runs; the guest's refusal names it. */
static void test_exec_rlimit(void **state)
{
	const char *argv[] = { "sh", "-c", "ulimit -n; ulimit -Hn; ulimit -c",
			       NULL };
	struct agent_rlimit rl[] = {
		{ .resource = RLIMIT_NOFILE, .soft = 77, .hard = 99 },
		{ .resource = RLIMIT_CORE,
		  .soft = AGENT_RLIM_INFINITY,
		  .hard = AGENT_RLIM_INFINITY },
	};
	struct agent_exec_req req = { .argv = argv,
				      .stdin_fd = -1,
				      .sig_fd = -1,
				      .rlimits = rl,
				      .nr_rlimits = 2 };
	struct fake f;

	(void)state;
	agent_up(&f);
	if (geteuid() == 0) {
		assert_int_equal(run_req(f.c, &req, &R), 0);
		assert_int_equal(R.res.code, 0);
		assert_string_equal(R.out, "77\n99\nunlimited\n");
		/* Over fs.nr_open: the kernel refuses it. */
		rl[0].soft = rl[0].hard = 1ULL << 40;
		assert_int_equal(run_req(f.c, &req, &R), -EREMOTEIO);
		assert_non_null(strstr(agent_client__error(f.c),
				       "setrlimit RLIMIT_NOFILE"));
	}
	/* Refused before sending. */
	rl[0].soft = 100;
	rl[0].hard = 99;
	assert_int_equal(run_req(f.c, &req, &R), -EINVAL);
	rl[0].soft = 1;
	rl[0].resource = 16;
	assert_int_equal(run_req(f.c, &req, &R), -EINVAL);
	rl[0].resource = RLIMIT_CORE;
	assert_int_equal(run_req(f.c, &req, &R), -EINVAL); /* twice */
	req.nr_rlimits = 17;
	assert_int_equal(run_req(f.c, &req, &R), -EINVAL);
	/* A soft limit the command may lower, as root or not. */
	rl[0].resource = RLIMIT_NOFILE;
	rl[0].soft = 50;
	rl[0].hard = 64;
	req.nr_rlimits = 1;
	assert_int_equal(run_req(f.c, &req, &R), 0);
	assert_memory_equal(R.out, "50\n64\n", 6);
	fake_stop(&f, 1);
}

/* Write the record @op, @a, @b to @fd after @delay_ms, from a child. */
static pid_t ctl_later(int fd, int delay_ms, uint32_t op, uint32_t a,
		       uint32_t b)
{
	struct agent_exec_ctl r = { .op = op, .a = a, .b = b };
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		usleep((useconds_t)delay_ms * 1000);
		put(fd, &r, sizeof(r));
		_exit(0);
	}
	return pid;
}

/*
 * TTY: the command on a terminal of its own, the size given, stdout and
 * stderr both on stdout; RESIZE through ctl_fd changes the size and
 * signals SIGWINCH; stdin's end is the terminal's EOF.
 */
static void test_exec_tty(void **state)
{
	const char *argv[] = { "sh", "-c", "tty; stty size; echo err >&2",
			       NULL };
	const char *winch[] = { "sh", "-c",
				"trap 'stty size; exit 7' WINCH; echo ready; "
				"sleep 5 & wait; echo no-winch",
				NULL };
	const char *cat[] = { "cat", NULL };
	struct agent_exec_req req = { .argv = argv,
				      .stdin_fd = -1,
				      .sig_fd = -1,
				      .tty = true,
				      .rows = 24,
				      .cols = 80 };
	int ctl[2], in;
	pid_t pid;
	struct fake f;

	(void)state;
	agent_up(&f);
	assert_int_equal(run_req(f.c, &req, &R), 0);
	assert_int_equal(R.res.code, 0);
	assert_non_null(strstr(R.out, "/dev/pts/"));
	assert_non_null(strstr(R.out, "24 80\r\n"));
	assert_non_null(strstr(R.out, "err\r\n"));
	assert_int_equal(R.err_len, 0);
	/* RESIZE: the new size, and SIGWINCH for the foreground group. */
	assert_int_equal(pipe(ctl), 0);
	req.argv = winch;
	req.ctl_fd = ctl[0];
	pid = ctl_later(ctl[1], 700, AGENT_EXEC_CTL_RESIZE, 50, 132);
	close(ctl[1]);
	assert_int_equal(run_req(f.c, &req, &R), 0);
	waitpid(pid, NULL, 0);
	close(ctl[0]);
	assert_int_equal(R.res.kind, EMBER_AGENT_EXITED);
	assert_int_equal(R.res.code, 7);
	assert_non_null(strstr(R.out, "50 132"));
	assert_null(strstr(R.out, "no-winch"));
	/* stdin to the terminal; its end the EOF character: cat ends. */
	in = fill_memfd((const uint8_t *)"hello\n", 6);
	req.argv = cat;
	req.ctl_fd = -1;
	req.stdin_fd = in;
	req.timeout_ms = 5000;
	assert_int_equal(run_req(f.c, &req, &R), 0);
	assert_int_equal(R.res.kind, EMBER_AGENT_EXITED);
	assert_int_equal(R.res.code, 0);
	assert_non_null(strstr(R.out, "hello\r\n"));
	close(in);
	/* CLOSE_STDIN without stdin_fd: the same EOF. */
	assert_int_equal(pipe(ctl), 0);
	req.stdin_fd = -1;
	req.ctl_fd = ctl[0];
	pid = ctl_later(ctl[1], 200, AGENT_EXEC_CTL_CLOSE_STDIN, 0, 0);
	close(ctl[1]);
	assert_int_equal(run_req(f.c, &req, &R), 0);
	waitpid(pid, NULL, 0);
	close(ctl[0]);
	assert_int_equal(R.res.kind, EMBER_AGENT_EXITED);
	assert_int_equal(R.res.code, 0);
	fake_stop(&f, 1);
}

/*
 * ctl_fd KILL: the signal as-is (a fourth SIGTERM is still SIGTERM);
 * records that do not apply are ignored; CLOSE_STDIN ends a pipe's
 * stdin; EOF on ctl_fd changes nothing.
 */
static void test_exec_ctl_kill(void **state)
{
	const char *argv[] = { "sleep", "10", NULL };
	const char *cat[] = { "sh", "-c", "cat; echo closed", NULL };
	struct agent_exec_req req = { .argv = argv,
				      .stdin_fd = -1,
				      .sig_fd = -1 };
	struct agent_exec_ctl junk[] = {
		{ .op = AGENT_EXEC_CTL_RESIZE, .a = 1, .b = 1 }, /* no tty */
		{ .op = AGENT_EXEC_CTL_KILL, .a = 0 },
		{ .op = AGENT_EXEC_CTL_KILL, .a = 65 },
		{ .op = 99 },
	};
	int ctl[2], in[2];
	pid_t pid;
	struct fake f;

	(void)state;
	agent_up(&f);
	assert_int_equal(pipe(ctl), 0);
	put(ctl[1], junk, sizeof(junk));
	req.ctl_fd = ctl[0];
	pid = ctl_later(ctl[1], 300, AGENT_EXEC_CTL_KILL, SIGTERM, 0);
	close(ctl[1]);
	assert_int_equal(run_req(f.c, &req, &R), 0);
	waitpid(pid, NULL, 0);
	close(ctl[0]);
	assert_int_equal(R.res.kind, EMBER_AGENT_SIGNALLED);
	assert_int_equal(R.res.code, SIGTERM);
	/* CLOSE_STDIN: the pipe's writer end stays open, stdin ends. */
	assert_int_equal(pipe(ctl), 0);
	assert_int_equal(pipe(in), 0);
	put(in[1], "data\n", 5);
	req.argv = cat;
	req.stdin_fd = in[0];
	req.ctl_fd = ctl[0];
	req.timeout_ms = 5000;
	pid = ctl_later(ctl[1], 300, AGENT_EXEC_CTL_CLOSE_STDIN, 0, 0);
	close(ctl[1]);
	assert_int_equal(run_req(f.c, &req, &R), 0);
	waitpid(pid, NULL, 0);
	assert_int_equal(R.res.kind, EMBER_AGENT_EXITED);
	assert_string_equal(R.out, "data\nclosed\n");
	close(ctl[0]);
	close(in[0]);
	close(in[1]);
	fake_stop(&f, 1);
}

/* A signal read from sig_fd becomes KILL for the guest process group. */
static void test_exec_signal_forward(void **state)
{
	const char *argv[] = { "sleep", "10", NULL };
	struct agent_exec_req req = { .argv = argv, .stdin_fd = -1 };
	sigset_t set, old;
	struct fake f;

	(void)state;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, &old);
	req.sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	assert_true(req.sig_fd >= 0);
	agent_up(&f);
	raise(SIGUSR1); /* pending: readable from the signalfd at once */
	assert_int_equal(run_req(f.c, &req, &R), 0);
	assert_int_equal(R.res.kind, EMBER_AGENT_SIGNALLED);
	assert_int_equal(R.res.code, SIGUSR1);
	close(req.sig_fd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	fake_stop(&f, 1);
}

/* The third SIGINT sends SIGKILL: for commands that ignore SIGINT. */
static void test_exec_third_interrupt_kills(void **state)
{
	const char *argv[] = { "sh", "-c", "trap '' INT; sleep 10", NULL };
	struct agent_exec_req req = { .argv = argv, .stdin_fd = -1 };
	sigset_t set, old;
	pid_t me = getpid(), pid;
	struct fake f;

	(void)state;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, &old);
	req.sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	agent_up(&f);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (int i = 0; i < 3; i++) {
			usleep(300000);
			kill(me, SIGINT);
		}
		_exit(0);
	}
	assert_int_equal(run_req(f.c, &req, &R), 0);
	assert_int_equal(R.res.kind, EMBER_AGENT_SIGNALLED);
	assert_int_equal(R.res.code, SIGKILL);
	waitpid(pid, NULL, 0);
	close(req.sig_fd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	fake_stop(&f, 1);
}

/* A reader that went away: the guest writer gets SIGPIPE, like locally. */
static void test_exec_epipe(void **state)
{
	const char *argv[] = { "yes", NULL };
	struct agent_exec_req req = { .argv = argv,
				      .stdin_fd = -1,
				      .sig_fd = -1 };
	struct agent_exec_result res;
	int pfd[2];
	struct fake f;

	(void)state;
	agent_up(&f);
	assert_int_equal(pipe(pfd), 0);
	close(pfd[0]);
	req.stdout_fd = pfd[1];
	req.stderr_fd = 2;
	assert_int_equal(agent_client__exec(f.c, &req, &res), 0);
	assert_int_equal(res.kind, EMBER_AGENT_SIGNALLED);
	assert_int_equal(res.code, SIGPIPE);
	close(pfd[1]);
	assert_int_equal(agent_client__ping(f.c, TIMEOUT), 0);
	fake_stop(&f, 1);
}

static void test_exec_too_big(void **state)
{
	static const char *argv[EMBER_AGENT_MAX_ARGS + 2];
	static char huge[EMBER_AGENT_MAX_PAYLOAD];
	struct fake f;

	(void)state;
	agent_up(&f);
	for (int i = 0; i <= EMBER_AGENT_MAX_ARGS; i++)
		argv[i] = "x";
	argv[EMBER_AGENT_MAX_ARGS + 1] = NULL;
	assert_int_equal(run_argv(f.c, argv, &R), -E2BIG);
	memset(huge, 'a', sizeof(huge) - 1);
	argv[0] = "echo";
	argv[1] = huge;
	argv[2] = NULL;
	assert_int_equal(run_argv(f.c, argv, &R), -E2BIG);
	/* Nothing was sent: the connection is fine. */
	assert_int_equal(agent_client__ping(f.c, TIMEOUT), 0);
	fake_stop(&f, 1);
}

/* The agent dies mid-exec: the exec fails cleanly. */
static void test_exec_agent_dies(void **state)
{
	const char *argv[] = { "sh", "-c", "echo x; kill -9 $PPID; sleep 5",
			       NULL };
	struct fake f;

	(void)state;
	agent_up(&f);
	assert_int_equal(run_argv(f.c, argv, &R), -ECONNRESET);
	assert_int_equal(agent_client__ping(f.c, 100), -ENOTCONN);
	agent_client__free(f.c);
	f.c = NULL;
	waitpid(f.pid, NULL, 0);
	unlink(f.sock);
	rmdir(f.dir);
}

/* ---- files -------------------------------------------------------------- */

static void test_file_roundtrip(void **state)
{
	const size_t len = 1U << 20;
	uint8_t *data = malloc(len), *back = malloc(len);
	char path[128];
	struct stat st;
	struct fake f;
	int in, out;

	(void)state;
	assert_non_null(data);
	assert_non_null(back);
	assert_int_equal(getrandom(data, len, 0), (ssize_t)len);
	agent_up(&f);
	snprintf(path, sizeof(path), "%s/file", f.dir);
	in = fill_memfd(data, len);
	assert_int_equal(agent_client__write_file(f.c, in, path, 0640, 0), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, (off_t)len);
	assert_int_equal(st.st_mode & 07777, 0640);
	out = memfd_create("back", MFD_CLOEXEC);
	assert_int_equal(agent_client__read_file(f.c, path, out, 0), 0);
	assert_int_equal(lseek(out, 0, SEEK_END), (off_t)len);
	assert_int_equal(pread(out, back, len, 0), (ssize_t)len);
	assert_memory_equal(back, data, len);
	/* An empty file, and the mode applied past the umask. */
	close(in);
	in = fill_memfd(data, 0);
	assert_int_equal(agent_client__write_file(f.c, in, path, 0777, 60000),
			 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(st.st_mode & 07777, 0777);
	unlink(path);
	close(in);
	close(out);
	free(data);
	free(back);
	fake_stop(&f, 1);
}

static void test_file_errors(void **state)
{
	char path[128];
	struct fake f;
	int in, out = memfd_create("o", MFD_CLOEXEC);

	(void)state;
	agent_up(&f);
	in = fill_memfd((const uint8_t *)"abc", 3);
	/* A directory: the guest says EISDIR after FILE_END. */
	assert_int_equal(agent_client__write_file(f.c, in, f.dir, 0644, 0),
			 -EREMOTEIO);
	assert_int_equal(agent_client__guest_errno(f.c), EISDIR);
	assert_non_null(strstr(agent_client__error(f.c), "Is a directory"));
	snprintf(path, sizeof(path), "%s/no/such/dir", f.dir);
	assert_int_equal(lseek(in, 0, SEEK_SET), 0);
	assert_int_equal(agent_client__write_file(f.c, in, path, 0644, 0),
			 -EREMOTEIO);
	assert_int_equal(agent_client__guest_errno(f.c), ENOENT);
	assert_int_equal(agent_client__read_file(f.c, path, out, 0),
			 -EREMOTEIO);
	assert_int_equal(agent_client__guest_errno(f.c), ENOENT);
	assert_int_equal(agent_client__read_file(f.c, f.dir, out, 0),
			 -EREMOTEIO);
	assert_int_equal(agent_client__guest_errno(f.c), EISDIR);
	/* Bad requests never reach the guest. */
	assert_int_equal(agent_client__write_file(f.c, in, path, 010000, 0),
			 -EINVAL);
	assert_int_equal(agent_client__read_file(f.c, "", out, 0), -EINVAL);
	assert_int_equal(agent_client__ping(f.c, TIMEOUT), 0);
	close(in);
	close(out);
	fake_stop(&f, 1);
}

/* ---- handshake failures ------------------------------------------------- */

static void test_connect_no_socket(void **state)
{
	struct agent_client *c = agent_client__new();
	char longp[200];

	(void)state;
	assert_int_equal(agent_client__connect(c, "/nonexistent/vsock.sock",
					       1024, TIMEOUT),
			 -ENOENT);
	memset(longp, 'a', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	assert_int_equal(agent_client__connect(c, longp, 1024, TIMEOUT),
			 -ENAMETOOLONG);
	assert_int_equal(agent_client__ping(c, 100), -ENOTCONN);
	agent_client__free(c);
}

/* A socket file nobody listens on: the VMM is gone. */
static void test_connect_refused(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct agent_client *c = agent_client__new();
	char dir[] = "/tmp/ember-ac-XXXXXX";
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s", dir);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	assert_int_equal(agent_client__connect(c, sa.sun_path, 1024, TIMEOUT),
			 -ECONNREFUSED);
	unlink(sa.sun_path);
	rmdir(dir);
	agent_client__free(c);
}

static void test_connect_eof(void **state)
{
	struct fake f;

	(void)state;
	fake_start(&f, FAKE_REFUSE, NULL);
	assert_int_equal(agent_client__connect(f.c, f.sock, 1024, TIMEOUT),
			 -ECONNRESET);
	assert_non_null(strstr(agent_client__error(f.c), "nothing listens"));
	fake_stop(&f, 1);
}

static void test_connect_garbage(void **state)
{
	struct fake f;

	(void)state;
	fake_start(&f, FAKE_GARBAGE, NULL);
	assert_int_equal(agent_client__connect(f.c, f.sock, 1024, TIMEOUT),
			 -EPROTO);
	assert_non_null(strstr(agent_client__error(f.c), "HELLO"));
	fake_stop(&f, 0);
}

static void test_connect_timeout(void **state)
{
	int64_t t0 = mono_ms();
	struct fake f;

	(void)state;
	fake_start(&f, FAKE_SILENT, NULL);
	assert_int_equal(agent_client__connect(f.c, f.sock, 1024, 300),
			 -ETIMEDOUT);
	assert_true(mono_ms() - t0 >= 290);
	assert_true(mono_ms() - t0 < 3000);
	fake_stop(&f, 0);
}

/* ---- init after a restore ---------------------------------------------- */

/* CLOCK_REALTIME in nanoseconds (the INIT report's clock). */
static int64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* test_init_guest_report's fake and report file, for its teardown. */
struct init_report {
	struct fake f;
	char dir[32], path[64];
	FILE *r;
};

static int init_report_setup(void **state)
{
	struct init_report *ir = calloc(1, sizeof(*ir));

	if (!ir)
		return -1;
	ir->f.pid = -1;
	snprintf(ir->dir, sizeof(ir->dir), "/tmp/ember-ac-init-XXXXXX");
	if (!mkdtemp(ir->dir)) {
		free(ir);
		return -1;
	}
	snprintf(ir->path, sizeof(ir->path), "%s/report", ir->dir);
	*state = ir;
	return 0;
}

/* Also after a failed assertion: no leak, no agent left running. */
static int init_report_teardown(void **state)
{
	struct init_report *ir = *state;

	fake_abandon(&ir->f);
	if (ir->r)
		fclose(ir->r);
	unsetenv("EMBER_AGENT_INIT_REPORT");
	unlink(ir->path);
	rmdir(ir->dir);
	free(ir);
	return 0;
}

/* INITs the report test sends at most, looking for two quick answers. */
#define INIT_TRIES 20

/*
 * Through the agent's report hook: what reached it is this host's time,
 * read during the call, and 64 bytes that differ from call to call; and
 * the agent, whose clock is this host's, would not step it.  The agent
 * compares its clock with a stamp the client took before sending, so
 * |its clock - stamp| is at most the call's round trip: whenever that fits
 * in EMBER_AGENT_CLOCK_SLACK_NS the report must say step=0.  A slower
 * answer (a busy host) proves nothing either way: INIT is sent again,
 * until two answers came within the slack.
 */
static void test_init_guest_report(void **state)
{
	struct init_report *ir = *state;
	char ent[INIT_TRIES][2 * AGENT_CLIENT_INIT_ENTROPY + 1], buf[1024];
	int64_t t0[INIT_TRIES], t1[INIT_TRIES], stamp;
	unsigned int nsec, n, i, quick = 0;
	unsigned long long sec;
	int step, pos;

	assert_int_equal(setenv("EMBER_AGENT_INIT_REPORT", ir->path, 1), 0);
	agent_up(&ir->f);
	unsetenv("EMBER_AGENT_INIT_REPORT");
	for (n = 0; n < INIT_TRIES && quick < 2; n++) {
		t0[n] = real_ns();
		assert_int_equal(agent_client__init_guest(ir->f.c, TIMEOUT), 0);
		t1[n] = real_ns();
		if (t1[n] - t0[n] <= EMBER_AGENT_CLOCK_SLACK_NS)
			quick++;
	}
	assert_int_equal(agent_client__ping(ir->f.c, TIMEOUT), 0);
	if (quick < 2)
		fail_msg("%u of %u INITs answered within %lld ns: too busy a "
			 "host to tell",
			 quick, n, (long long)EMBER_AGENT_CLOCK_SLACK_NS);
	ir->r = fopen(ir->path, "r");
	assert_non_null(ir->r);
	for (i = 0; i < n; i++) {
		assert_non_null(fgets(buf, sizeof(buf), ir->r));
		pos = 0;
		assert_int_equal(sscanf(buf,
					"init time=%llu.%u step=%d entropy=%n",
					&sec, &nsec, &step, &pos),
				 3);
		assert_true(pos > 0);
		assert_true(nsec < 1000000000U);
		assert_true(sec < (unsigned long long)INT64_MAX / 1000000000);
		stamp = (int64_t)sec * 1000000000LL + nsec;
		assert_true(stamp >= t0[i] && stamp <= t1[i]);
		assert_true(step == 0 || step == 1);
		if (t1[i] - t0[i] <= EMBER_AGENT_CLOCK_SLACK_NS)
			assert_int_equal(step, 0);
		assert_int_equal(strlen(buf + pos),
				 2 * AGENT_CLIENT_INIT_ENTROPY + 1);
		memcpy(ent[i], buf + pos, 2 * AGENT_CLIENT_INIT_ENTROPY);
		ent[i][2 * AGENT_CLIENT_INIT_ENTROPY] = '\0';
		if (i)
			assert_string_not_equal(ent[i - 1], ent[i]);
	}
	assert_null(fgets(buf, sizeof(buf), ir->r));
	fake_stop(&ir->f, 1);
}

/*
 * For real on this host: OK when privileged (CAP_SYS_ADMIN: the entropy
 * goes into this host's pool, which is harmless; the clock is within the
 * slack and not stepped), else the guest's EPERM; the connection lives.
 */
static void test_init_guest_real(void **state)
{
	struct fake f;
	int rc;

	(void)state;
	agent_up(&f);
	rc = agent_client__init_guest(f.c, TIMEOUT);
	if (rc != 0) {
		if (rc != -EREMOTEIO || agent_client__guest_errno(f.c) != EPERM)
			fail_msg("init: %d (%s)", rc, agent_client__error(f.c));
		assert_non_null(strstr(agent_client__error(f.c), "RND"));
	}
	assert_int_equal(agent_client__ping(f.c, TIMEOUT), 0);
	assert_int_equal(agent_client__init_guest(f.c, 0), -EINVAL);
	agent_client__close(f.c);
	assert_int_equal(agent_client__init_guest(f.c, TIMEOUT), -ENOTCONN);
	fake_stop(&f, 1);
}

/* ---- a hostile agent ---------------------------------------------------- */

static void h_bad_magic(int fd, const struct ember_agent_hdr *h)
{
	uint8_t b[EMBER_AGENT_HDR_SIZE];

	ember_agent_hdr_encode(b, EMBER_AGENT_PONG, h->stream, 0);
	b[0] = 'X';
	put(fd, b, sizeof(b));
}

static void h_bad_version(int fd, const struct ember_agent_hdr *h)
{
	uint8_t b[EMBER_AGENT_HDR_SIZE];

	ember_agent_hdr_encode(b, EMBER_AGENT_PONG, h->stream, 0);
	b[4] = 9;
	put(fd, b, sizeof(b));
}

static void h_oversized(int fd, const struct ember_agent_hdr *h)
{
	uint8_t b[EMBER_AGENT_HDR_SIZE];

	ember_agent_hdr_encode(b, EMBER_AGENT_STDOUT, h->stream,
			       EMBER_AGENT_MAX_PAYLOAD + 1);
	put(fd, b, sizeof(b));
	put(fd, "xxxxxxxxxxxxxxxx", 16);
}

static void h_huge_len(int fd, const struct ember_agent_hdr *h)
{
	uint8_t b[EMBER_AGENT_HDR_SIZE];

	ember_agent_hdr_encode(b, EMBER_AGENT_FILE_DATA, h->stream, UINT32_MAX);
	put(fd, b, sizeof(b));
}

static void h_unknown_type(int fd, const struct ember_agent_hdr *h)
{
	put_frame(fd, 99, h->stream, NULL, 0);
}

static void h_wrong_cookie(int fd, const struct ember_agent_hdr *h)
{
	put_frame(fd, EMBER_AGENT_PONG, h->stream, "12345678", 8);
}

static void h_other_stream(int fd, const struct ember_agent_hdr *h)
{
	put_frame(fd, EMBER_AGENT_STDOUT, h->stream + 77, "x", 1);
}

static void h_truncated(int fd, const struct ember_agent_hdr *h)
{
	uint8_t b[EMBER_AGENT_HDR_SIZE];

	ember_agent_hdr_encode(b, EMBER_AGENT_STDOUT, h->stream, 100);
	put(fd, b, sizeof(b));
	put(fd, "0123456789", 10);
	_exit(0); /* and close */
}

static void h_half_header(int fd, const struct ember_agent_hdr *h)
{
	(void)h;
	put(fd, "EMBA\x01", 5);
	_exit(0);
}

static void h_exit_short(int fd, const struct ember_agent_hdr *h)
{
	put_frame(fd, EMBER_AGENT_STDOUT, h->stream, "partial\n", 8);
	put_frame(fd, EMBER_AGENT_EXIT, h->stream, "\0\0\0\0\0\0\0", 7);
}

static void h_exit_bad_kind(int fd, const struct ember_agent_hdr *h)
{
	uint8_t p[EMBER_AGENT_EXIT_SIZE];

	ember_agent_exit_encode(p, 7, 0);
	put_frame(fd, EMBER_AGENT_EXIT, h->stream, p, sizeof(p));
}

static void h_exit_bad_code(int fd, const struct ember_agent_hdr *h)
{
	uint8_t p[EMBER_AGENT_EXIT_SIZE];

	ember_agent_exit_encode(p, EMBER_AGENT_EXITED, 300);
	put_frame(fd, EMBER_AGENT_EXIT, h->stream, p, sizeof(p));
}

static void h_exit_bad_signal(int fd, const struct ember_agent_hdr *h)
{
	uint8_t p[EMBER_AGENT_EXIT_SIZE];

	ember_agent_exit_encode(p, EMBER_AGENT_SIGNALLED, -5);
	put_frame(fd, EMBER_AGENT_EXIT, h->stream, p, sizeof(p));
}

static void h_error_short(int fd, const struct ember_agent_hdr *h)
{
	put_frame(fd, EMBER_AGENT_ERROR, h->stream, "\x02\0", 2);
}

static void h_error_zero(int fd, const struct ember_agent_hdr *h)
{
	put_frame(fd, EMBER_AGENT_ERROR, h->stream, "\0\0\0\0oops", 8);
}

static void h_error_stream0(int fd, const struct ember_agent_hdr *h)
{
	uint8_t p[64];
	long n = ember_agent_error_encode(p, sizeof(p), EPROTO, "bad magic");

	(void)h;
	put_frame(fd, EMBER_AGENT_ERROR, 0, p, (uint32_t)n);
}

static void h_error_binary(int fd, const struct ember_agent_hdr *h)
{
	static const uint8_t p[] = { 2,	  0,   0,   0,	  'a',	0,  0x1b,
				     '[', '2', 'J', 0xff, '\n', 'z' };

	put_frame(fd, EMBER_AGENT_ERROR, h->stream, p, sizeof(p));
}

static void h_ok_instead(int fd, const struct ember_agent_hdr *h)
{
	put_frame(fd, EMBER_AGENT_OK, h->stream, NULL, 0);
}

static void h_file_end_payload(int fd, const struct ember_agent_hdr *h)
{
	put_frame(fd, EMBER_AGENT_FILE_DATA, h->stream, "abc", 3);
	put_frame(fd, EMBER_AGENT_FILE_END, h->stream, "x", 1);
}

/* A full-size frame is fine, then a sound EXIT. */
static void h_max_frame(int fd, const struct ember_agent_hdr *h)
{
	static uint8_t big[EMBER_AGENT_MAX_PAYLOAD];
	uint8_t p[EMBER_AGENT_EXIT_SIZE];

	memset(big, 'z', sizeof(big));
	put_frame(fd, EMBER_AGENT_STDOUT, h->stream, big, sizeof(big));
	ember_agent_exit_encode(p, EMBER_AGENT_EXITED, 42);
	put_frame(fd, EMBER_AGENT_EXIT, h->stream, p, sizeof(p));
}

/* INIT as sent: this host's time and 64 bytes; OK, else ERROR(EINVAL). */
static void h_init_check(int fd, const struct ember_agent_hdr *h)
{
	struct ember_agent_init in;
	struct timespec now;
	uint8_t p[64];
	long n;

	clock_gettime(CLOCK_REALTIME, &now);
	if (h->type == EMBER_AGENT_INIT &&
	    ember_agent_init_decode(hostile_pl, h->len, &in) == 0 &&
	    in.have_time && in.sec <= (uint64_t)now.tv_sec &&
	    in.sec + 5 >= (uint64_t)now.tv_sec &&
	    in.entropy_len == AGENT_CLIENT_INIT_ENTROPY) {
		put_frame(fd, EMBER_AGENT_OK, h->stream, NULL, 0);
		return;
	}
	n = ember_agent_error_encode(p, sizeof(p), EINVAL, "bad INIT");
	put_frame(fd, EMBER_AGENT_ERROR, h->stream, p, (uint32_t)n);
}

static void h_ok_payload(int fd, const struct ember_agent_hdr *h)
{
	put_frame(fd, EMBER_AGENT_OK, h->stream, "x", 1);
}

/* An agent older than INIT: type 15 is unknown to it. */
static void h_old_agent(int fd, const struct ember_agent_hdr *h)
{
	uint8_t p[64];
	long n = ember_agent_error_encode(p, sizeof(p), EPROTO,
					  "unknown frame type");

	put_frame(fd, EMBER_AGENT_ERROR, h->stream, p, (uint32_t)n);
}

static void h_silent(int fd, const struct ember_agent_hdr *h)
{
	(void)fd;
	(void)h;
}

enum op_kind { OP_PING, OP_EXEC, OP_READ, OP_INIT };

/* Connect to a hostile agent, run @op, expect @want. */
static void hostile(hostile_fn fn, enum op_kind op, int want, const char *msg)
{
	const char *argv[] = { "true", NULL };
	struct fake f;
	int rc = 0, fd;

	fake_start(&f, FAKE_HOSTILE, fn);
	assert_int_equal(agent_client__connect(f.c, f.sock, 1024, TIMEOUT), 0);
	switch (op) {
	case OP_PING:
		rc = agent_client__ping(f.c, TIMEOUT);
		break;
	case OP_EXEC:
		rc = run_argv(f.c, argv, &R);
		break;
	case OP_READ:
		fd = memfd_create("r", MFD_CLOEXEC);
		rc = agent_client__read_file(f.c, "/x", fd, TIMEOUT);
		close(fd);
		break;
	case OP_INIT:
		rc = agent_client__init_guest(f.c, 1000);
		break;
	}
	if (rc != want)
		fail_msg("got %d (%s), want %d", rc, agent_client__error(f.c),
			 want);
	if (msg && !strstr(agent_client__error(f.c), msg))
		fail_msg("error '%s' lacks '%s'", agent_client__error(f.c),
			 msg);
	/* A broken connection is closed: nothing more goes over it. */
	if (rc < 0 && rc != -EREMOTEIO)
		assert_int_equal(agent_client__ping(f.c, 100), -ENOTCONN);
	fake_stop(&f, 0);
}

static void test_hostile_headers(void **state)
{
	(void)state;
	hostile(h_bad_magic, OP_PING, -EPROTO, "bad magic");
	hostile(h_bad_version, OP_PING, -EPROTO, "version");
	hostile(h_oversized, OP_EXEC, -EPROTO, "too long");
	hostile(h_huge_len, OP_READ, -EPROTO, "too long");
	hostile(h_unknown_type, OP_PING, -EPROTO, "unknown frame type");
	hostile(h_truncated, OP_EXEC, -ECONNRESET, "middle of a frame");
	hostile(h_half_header, OP_PING, -ECONNRESET, "middle of a frame");
}

static void test_hostile_payloads(void **state)
{
	(void)state;
	hostile(h_wrong_cookie, OP_PING, -EPROTO, "PONG");
	hostile(h_other_stream, OP_EXEC, -EPROTO, "unknown stream");
	hostile(h_exit_short, OP_EXEC, -EPROTO, "EXIT");
	assert_string_equal(R.out, "partial\n");
	hostile(h_exit_bad_kind, OP_EXEC, -EPROTO, "EXIT");
	hostile(h_exit_bad_code, OP_EXEC, -EPROTO, "EXIT");
	hostile(h_exit_bad_signal, OP_EXEC, -EPROTO, "EXIT");
	hostile(h_error_short, OP_EXEC, -EPROTO, "ERROR");
	hostile(h_error_zero, OP_EXEC, -EPROTO, "ERROR");
	hostile(h_error_stream0, OP_PING, -EPROTO, "framing");
	hostile(h_ok_instead, OP_EXEC, -EPROTO, "unexpected OK");
	hostile(h_ok_instead, OP_PING, -EPROTO, "unexpected OK");
	hostile(h_file_end_payload, OP_READ, -EPROTO, "FILE_END");
	/* Binary junk in a message is made printable. */
	hostile(h_error_binary, OP_EXEC, -EREMOTEIO, "a?");
	hostile(h_max_frame, OP_EXEC, 0, NULL);
	assert_int_equal(R.res.code, 42);
	assert_int_equal(R.out_len, sizeof(R.out) - 1); /* capped by slurp */
}

static void test_hostile_init(void **state)
{
	(void)state;
	hostile(h_init_check, OP_INIT, 0, NULL);
	hostile(h_ok_payload, OP_INIT, -EPROTO, "payload");
	hostile(h_old_agent, OP_INIT, -EREMOTEIO, "older");
	hostile(h_wrong_cookie, OP_INIT, -EPROTO, "unexpected PONG");
	hostile(h_other_stream, OP_INIT, -EPROTO, "unknown stream");
	hostile(h_error_zero, OP_INIT, -EPROTO, "ERROR");
	hostile(h_error_binary, OP_INIT, -EREMOTEIO, "a?");
	hostile(h_truncated, OP_INIT, -ECONNRESET, "middle of a frame");
	hostile(h_silent, OP_INIT, -ETIMEDOUT, "INIT");
}

/* ---- kept processes: KEEP, DETACH, ATTACH, LIST (issue 24) -------------- */

/* Attach to @pid on @c, its output captured in @r (stdout up to 64 KiB). */
static int attach_run(struct agent_client *c, uint32_t pid, struct run *r,
		      off_t *out_size)
{
	struct agent_exec_req req = { .stdin_fd = -1, .sig_fd = -1 };
	int out = memfd_create("out", MFD_CLOEXEC);
	int err = memfd_create("err", MFD_CLOEXEC);
	int rc;

	assert_true(out >= 0 && err >= 0);
	req.stdout_fd = out;
	req.stderr_fd = err;
	rc = agent_client__attach(c, pid, &req, &r->res);
	if (out_size)
		*out_size = lseek(out, 0, SEEK_END);
	r->out_len = slurp(out, r->out, sizeof(r->out));
	r->err_len = slurp(err, r->err, sizeof(r->err));
	close(out);
	close(err);
	return rc;
}

/* The LIST entry of @pid (asserted to be there) into @p. */
static void list_find(struct agent_client *c, uint32_t pid,
		      struct agent_proc *p)
{
	struct agent_proc *all;
	size_t n, i;

	assert_int_equal(agent_client__list(c, &all, &n, TIMEOUT), 0);
	for (i = 0; i < n && all[i].pid != pid; i++)
		;
	assert_true(i < n);
	*p = all[i];
	free(all);
}

/*
 * A detached process: STARTED with its pid at once, listed by another
 * connection, its output kept and its exit status given to that
 * connection's ATTACH; then its keeper (the first connection's agent
 * process, whose host left) exits by itself.  A second one attached from
 * its own connection.
 */
static void test_keep_detach_attach(void **state)
{
	const char *cmd[] = { "sh", "-c",
			      "echo early; echo warn >&2; sleep 1; echo done; "
			      "exit 7",
			      NULL };
	const char *self[] = { "sh", "-c", "sleep 0.3; echo self", NULL };
	struct agent_exec_req req = { .argv = cmd,
				      .stdin_fd = -1,
				      .sig_fd = -1,
				      .keep = true,
				      .detach = true };
	struct fake a, b;
	struct agent_proc p;
	uint32_t pid;

	(void)state;
	agent_up(&a);
	assert_int_equal(run_req(a.c, &req, &R), 0);
	assert_true(R.res.running);
	assert_true(R.res.pid > 0);
	assert_int_equal(R.out_len, 0);
	pid = R.res.pid;
	/* Its own connection can attach too (and gets the output). */
	req.argv = self;
	assert_int_equal(run_req(a.c, &req, &R), 0);
	assert_true(R.res.running);
	assert_int_equal(attach_run(a.c, R.res.pid, &R, NULL), 0);
	assert_string_equal(R.out, "self\n");
	assert_int_equal(R.res.code, 0);
	agent_client__free(a.c); /* the host goes: the process stays */
	a.c = NULL;
	agent_up(&b);
	list_find(b.c, pid, &p);
	assert_false(p.exited);
	assert_false(p.attached);
	assert_string_equal(p.cmd, "sh -c echo early; echo warn >&2; sleep 1; "
				   "echo done; exit 7");
	assert_int_equal(attach_run(b.c, pid, &R, NULL), 0);
	assert_int_equal(R.res.pid, pid);
	assert_int_equal(R.res.dropped, 0);
	assert_string_equal(R.out, "early\ndone\n");
	assert_string_equal(R.err, "warn\n");
	assert_int_equal(R.res.kind, EMBER_AGENT_EXITED);
	assert_int_equal(R.res.code, 7);
	/* Collected: no longer kept, and its keeper is gone. */
	assert_int_equal(attach_run(b.c, pid, &R, NULL), -EREMOTEIO);
	assert_int_equal(agent_client__guest_errno(b.c), ESRCH);
	fake_stop(&a, 1);
	fake_stop(&b, 1);
}

/*
 * A kept process whose connection is cut while it runs (what a park and
 * resume does): it runs on, and an attach gets the rest and its status;
 * one without keep is killed as before.
 */
static void test_keep_cut(void **state)
{
	const char *cmd[] = { "sh", "-c", "echo $$; sleep 1; echo done", NULL };
	struct agent_exec_req req = {
		.argv = cmd, .stdin_fd = -1, .sig_fd = -1, .keep = true
	};
	struct agent_exec_result res;
	struct fake a, b;
	char line[32] = { 0 };
	int pfd[2];
	pid_t kid;
	uint32_t pid;

	(void)state;
	agent_up(&a);
	assert_int_equal(pipe(pfd), 0);
	kid = fork();
	assert_true(kid >= 0);
	if (kid == 0) {
		req.stdout_fd = pfd[1];
		req.stderr_fd = 2;
		agent_client__exec(a.c, &req, &res);
		_exit(0);
	}
	close(pfd[1]);
	for (size_t n = 0; n < sizeof(line) - 1 && !strchr(line, '\n');) {
		ssize_t k = read(pfd[0], line + n, sizeof(line) - 1 - n);

		assert_true(k > 0);
		n += (size_t)k;
	}
	close(pfd[0]);
	pid = (uint32_t)strtoul(line, NULL, 10);
	assert_true(pid > 0);
	/* The connection is cut: the client dies, its socket closes. */
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	agent_client__free(a.c);
	a.c = NULL;
	agent_up(&b);
	assert_int_equal(attach_run(b.c, pid, &R, NULL), 0);
	assert_string_equal(R.out, "done\n");
	assert_int_equal(R.res.code, 0);
	fake_stop(&a, 1);
	fake_stop(&b, 1);
}

/* Bad attaches: an unknown pid, pid 0, a process attached elsewhere. */
static void test_keep_bad_attach(void **state)
{
	const char *cmd[] = { "sleep", "1", NULL };
	struct agent_exec_req req = { .argv = cmd,
				      .stdin_fd = -1,
				      .sig_fd = -1,
				      .keep = true,
				      .detach = true };
	struct fake a, b, c;
	uint32_t pid;

	(void)state;
	agent_up(&a);
	assert_int_equal(attach_run(a.c, 0x7ffffff0, &R, NULL), -EREMOTEIO);
	assert_int_equal(agent_client__guest_errno(a.c), ESRCH);
	assert_non_null(strstr(agent_client__error(a.c), "no process"));
	assert_int_equal(attach_run(a.c, 0, &R, NULL), -EINVAL);
	assert_int_equal(run_req(a.c, &req, &R), 0);
	pid = R.res.pid;
	agent_client__free(a.c);
	a.c = NULL;
	/* b attaches; c, meanwhile, is refused with EBUSY. */
	agent_up(&b);
	agent_up(&c);
	{
		pid_t kid = fork();

		assert_true(kid >= 0);
		if (kid == 0)
			_exit(attach_run(b.c, pid, &R, NULL) == 0 &&
					      R.res.code == 0 ?
				      0 :
				      1);
		usleep(300 * 1000);
		assert_int_equal(attach_run(c.c, pid, &R, NULL), -EREMOTEIO);
		assert_int_equal(agent_client__guest_errno(c.c), EBUSY);
		{
			int st;

			assert_int_equal(waitpid(kid, &st, 0), kid);
			assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		}
	}
	fake_stop(&a, 1);
	fake_stop(&b, 1);
	fake_stop(&c, 1);
}

/*
 * An attach relays STDIN and KILL to the keeper: a detached cat with its
 * stdin kept open reads an attach's input to its end; a detached sleep
 * gets an attach's SIGTERM.
 */
static void test_keep_attach_input(void **state)
{
	const char *cat[] = { "sh", "-c", "cat; echo closed", NULL };
	const char *slp[] = { "sleep", "10", NULL };
	struct agent_exec_req req = { .argv = cat,
				      .stdin_fd = 0, /* not read: detach */
				      .sig_fd = -1,
				      .keep = true,
				      .detach = true };
	struct agent_exec_req at = { .sig_fd = -1 };
	struct agent_exec_result res;
	struct fake a, b;
	int out, err, ctl[2];
	uint32_t pid, spid;
	pid_t kid;

	(void)state;
	agent_up(&a);
	assert_int_equal(run_req(a.c, &req, &R), 0);
	pid = R.res.pid;
	req.argv = slp;
	req.stdin_fd = -1;
	assert_int_equal(run_req(a.c, &req, &R), 0);
	spid = R.res.pid;
	agent_client__free(a.c);
	a.c = NULL;
	agent_up(&b);
	out = memfd_create("out", MFD_CLOEXEC);
	err = memfd_create("err", MFD_CLOEXEC);
	at.stdout_fd = out;
	at.stderr_fd = err;
	at.stdin_fd = fill_memfd((const uint8_t *)"hello\n", 6);
	assert_int_equal(agent_client__attach(b.c, pid, &at, &res), 0);
	assert_int_equal(res.code, 0);
	R.out_len = slurp(out, R.out, sizeof(R.out));
	assert_string_equal(R.out, "hello\nclosed\n");
	close(at.stdin_fd);
	/* KILL through the relay. */
	assert_int_equal(pipe(ctl), 0);
	at.stdin_fd = -1;
	at.ctl_fd = ctl[0];
	kid = ctl_later(ctl[1], 300, AGENT_EXEC_CTL_KILL, SIGTERM, 0);
	close(ctl[1]);
	assert_int_equal(agent_client__attach(b.c, spid, &at, &res), 0);
	waitpid(kid, NULL, 0);
	close(ctl[0]);
	assert_int_equal(res.kind, EMBER_AGENT_SIGNALLED);
	assert_int_equal(res.code, SIGTERM);
	close(out);
	close(err);
	fake_stop(&a, 1);
	fake_stop(&b, 1);
}

/* More than EMBER_AGENT_KEEP_BUF of output while detached: the oldest go. */
static void test_keep_overflow(void **state)
{
	const char *cmd[] = { "sh", "-c",
			      "head -c 3000000 /dev/zero | tr '\\0' x; echo; "
			      "echo end",
			      NULL };
	struct agent_exec_req req = { .argv = cmd,
				      .stdin_fd = -1,
				      .sig_fd = -1,
				      .keep = true,
				      .detach = true };
	struct agent_proc p;
	struct fake a;
	int64_t end = mono_ms() + TIMEOUT;
	off_t size = 0;
	uint32_t pid;

	(void)state;
	agent_up(&a);
	assert_int_equal(run_req(a.c, &req, &R), 0);
	pid = R.res.pid;
	do {
		usleep(100 * 1000);
		list_find(a.c, pid, &p);
	} while (!p.exited && mono_ms() < end);
	assert_true(p.exited);
	assert_int_equal(p.kind, EMBER_AGENT_EXITED);
	assert_int_equal(p.dropped, 3000005 - EMBER_AGENT_KEEP_BUF);
	assert_int_equal(attach_run(a.c, pid, &R, &size), 0);
	assert_int_equal(size, EMBER_AGENT_KEEP_BUF);
	assert_int_equal(R.res.dropped, 3000005 - EMBER_AGENT_KEEP_BUF);
	assert_int_equal(R.res.code, 0);
	assert_int_equal(R.out[0], 'x');
	fake_stop(&a, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ping),
		cmocka_unit_test(test_exec_output_and_status),
		cmocka_unit_test(test_exec_big_output),
		cmocka_unit_test(test_exec_out_max),
		cmocka_unit_test(test_exec_timeout),
		cmocka_unit_test(test_exec_not_found),
		cmocka_unit_test(test_exec_env_cwd),
		cmocka_unit_test(test_exec_user_env_add),
		cmocka_unit_test(test_exec_user_wire),
		cmocka_unit_test(test_exec_stdin),
		cmocka_unit_test(test_exec_stdin_echo),
		cmocka_unit_test(test_exec_signal_forward),
		cmocka_unit_test(test_exec_third_interrupt_kills),
		cmocka_unit_test(test_exec_epipe),
		cmocka_unit_test(test_exec_root),
		cmocka_unit_test(test_exec_rlimit),
		cmocka_unit_test(test_exec_tty),
		cmocka_unit_test(test_exec_ctl_kill),
		cmocka_unit_test(test_exec_too_big),
		cmocka_unit_test(test_exec_agent_dies),
		cmocka_unit_test(test_keep_detach_attach),
		cmocka_unit_test(test_keep_cut),
		cmocka_unit_test(test_keep_bad_attach),
		cmocka_unit_test(test_keep_attach_input),
		cmocka_unit_test(test_keep_overflow),
		cmocka_unit_test(test_file_roundtrip),
		cmocka_unit_test(test_file_errors),
		cmocka_unit_test_setup_teardown(test_init_guest_report,
						init_report_setup,
						init_report_teardown),
		cmocka_unit_test(test_init_guest_real),
		cmocka_unit_test(test_connect_no_socket),
		cmocka_unit_test(test_connect_refused),
		cmocka_unit_test(test_connect_eof),
		cmocka_unit_test(test_connect_garbage),
		cmocka_unit_test(test_connect_timeout),
		cmocka_unit_test(test_hostile_headers),
		cmocka_unit_test(test_hostile_payloads),
		cmocka_unit_test(test_hostile_init),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
