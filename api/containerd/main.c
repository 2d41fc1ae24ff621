// SPDX-License-Identifier: Apache-2.0
/*
 * containerd-shim-ember-v1: containerd's runtime v2 shim for ember
 * (containerd 1.6, runtime/v2/README.md).  containerd runs it as
 *
 *   shim -namespace NS -address GRPC -publish-binary BIN -id ID [-debug] start
 *	cwd the bundle, TTRPC_ADDRESS in the environment: starts the daemon
 *	(or finds the pod's) and prints its address on stdout;
 *   shim -namespace NS -address GRPC -publish-binary BIN -id ID -bundle B delete
 *	cleans up after a shim that is gone, prints a packed DeleteResponse;
 *
 * and start runs the daemon as this binary without the action, its
 * listening socket as fd 3: it serves containerd.task.v2.Task over ttrpc
 * until Shutdown or SIGTERM/SIGINT.  Like 1.6's shims it outlives
 * containerd (a restarted containerd reconnects to it).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "address.h"
#include "events.h"
#include "proto/shim.pb-c.h"
#include "shim.h"
#include "ttrpc.h"

#define SHIM_NAME	"containerd-shim-ember-v1"
#define SHIM_VERSION	"0.1"
#define LISTEN_FD	3
#define SPEC_MAX	(16u << 20)
#define EVENTS_FLUSH_MS 5000

struct flags {
	const char *ns, *id, *address, *publish_binary, *bundle, *socket;
	bool debug, version;
	const char *action;
};

static void usage(void)
{
	fprintf(stderr,
		"usage: " SHIM_NAME " -namespace NS -id ID -address ADDR "
		"[-publish-binary BIN] [-bundle DIR] [-socket PATH] [-debug] "
		"[-v] [start|delete]\n");
}

/* Go's flag package: -f / --f, "-f value" or "-f=value"; stops at "--" or
 * the first argument that is not a flag.  0 or -EINVAL. */
static int parse_flags(int argc, char **argv, struct flags *f)
{
	static const struct {
		const char *name;
		size_t off;
	} strs[] = {
		{ "namespace", offsetof(struct flags, ns) },
		{ "id", offsetof(struct flags, id) },
		{ "address", offsetof(struct flags, address) },
		{ "publish-binary", offsetof(struct flags, publish_binary) },
		{ "bundle", offsetof(struct flags, bundle) },
		{ "socket", offsetof(struct flags, socket) },
	};
	int i;

	memset(f, 0, sizeof(*f));
	f->publish_binary = "containerd";
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		char name[64];
		size_t n, k;
		bool found = false;

		if (a[0] != '-' || !a[1])
			break;
		a++;
		if (a[0] == '-') {
			if (!a[1]) {
				i++;
				break;
			}
			a++;
		}
		n = strcspn(a, "=");
		if (n >= sizeof(name) || !n || a[0] == '-')
			goto bad;
		memcpy(name, a, n);
		name[n] = 0;
		if (a[n] == '=')
			val = a + n + 1;
		if (!strcmp(name, "debug") || !strcmp(name, "v")) {
			bool on = !val || !strcmp(val, "true") ||
				  !strcmp(val, "1") || !strcmp(val, "t");

			if (val && !on && strcmp(val, "false") &&
			    strcmp(val, "0") && strcmp(val, "f"))
				goto bad;
			if (name[0] == 'd')
				f->debug = on;
			else
				f->version = on;
			continue;
		}
		for (k = 0; k < sizeof(strs) / sizeof(strs[0]); k++) {
			if (strcmp(name, strs[k].name))
				continue;
			if (!val) {
				if (i + 1 >= argc)
					goto bad;
				val = argv[++i];
			}
			*(const char **)((char *)f + strs[k].off) = val;
			found = true;
		}
		if (!found)
			goto bad;
	}
	if (i < argc)
		f->action = argv[i];
	return 0;
bad:
	fprintf(stderr, SHIM_NAME ": bad flag %s\n", argv[i]);
	usage();
	return -EINVAL;
}

/*
 * The whole of the regular file @path, NUL-terminated, in a malloc'd
 * *@out; -EINVAL for anything else (a FIFO must not hang `start`).
 */
static int read_file(const char *path, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	char *buf = NULL;
	size_t n = 0, cap = 0, r;
	struct stat st;
	FILE *fp;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	fp = fdopen(fd, "r");
	if (!fp) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		if (cap - n < 4096) {
			char *nb;

			if (cap >= SPEC_MAX) {
				free(buf);
				fclose(fp);
				return -EFBIG;
			}
			cap = cap ? cap * 2 : 8192;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				fclose(fp);
				return -ENOMEM;
			}
			buf = nb;
		}
		r = fread(buf + n, 1, cap - n, fp);
		n += r;
		if (!r)
			break;
	}
	fclose(fp);
	buf[n] = 0;
	*out = buf;
	*len = n;
	return 0;
}

/* containerd's WriteAddress: "address" in the cwd, written atomically. */
static int write_address(const char *address)
{
	size_t n = strlen(address);
	int fd, err = 0;

	fd = open(".address", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, address, n) != (ssize_t)n || fsync(fd))
		err = errno ? -errno : -EIO;
	close(fd);
	if (!err && rename(".address", "address"))
		err = -errno;
	if (err)
		unlink(".address");
	return err;
}

static int mkdir_p(const char *dir, mode_t mode)
{
	char p[PATH_MAX];
	char *s;

	if (snprintf(p, sizeof(p), "%s", dir) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	for (s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, mode) && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(p, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

static bool can_connect(const char *address)
{
	struct ttrpc_client *c;
	int err;

	c = ttrpc_client__connect(address, 100, &err);
	ttrpc_client__free(c);
	return c != NULL;
}

/* Listen on the socket file @path: fd, or -errno (-EADDRINUSE). */
static int listen_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(fd, SOMAXCONN)) {
		err = -errno;
		close(fd);
		return err;
	}
	if (chmod(path, 0600)) {
		err = -errno;
		close(fd);
		unlink(path);
		return err;
	}
	return fd;
}

/* containerd writes the runtime options to start's stdin; not used yet. */
static void drain_stdin(void)
{
	char buf[4096];

	if (isatty(0))
		return;
	while (read(0, buf, sizeof(buf)) > 0)
		;
}

/*
 * The daemon: this binary without the action, @lfd as fd 3, a session of
 * its own.  0 once it runs (its exec succeeded), or -errno.
 */
static int spawn_daemon(const struct flags *f, int lfd)
{
	char self[PATH_MAX];
	const char *argv[16];
	int i = 0, nul, p[2], e;
	ssize_t n;
	pid_t pid;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return -errno;
	self[n] = 0;
	argv[i++] = self;
	argv[i++] = "-namespace";
	argv[i++] = f->ns;
	argv[i++] = "-id";
	argv[i++] = f->id;
	argv[i++] = "-address";
	argv[i++] = f->address ? f->address : "";
	argv[i++] = "-publish-binary";
	argv[i++] = f->publish_binary;
	if (f->debug)
		argv[i++] = "-debug";
	argv[i] = NULL;
	/* the exec's errno comes back on a close-on-exec pipe */
	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		e = -errno;
		close(p[0]);
		close(p[1]);
		return e;
	}
	if (!pid) {
		/* child: only async-signal-safe calls until exec */
		close(p[0]);
		setsid();
		if (lfd == LISTEN_FD)
			fcntl(lfd, F_SETFD, 0);
		else if (dup2(lfd, LISTEN_FD) < 0)
			goto fail;
		nul = open("/dev/null", O_RDWR);
		if (nul < 0)
			goto fail;
		/* containerd reads start's stdout to EOF: the daemon keeps
		 * none of it */
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(nul, 2);
		if (nul > LISTEN_FD)
			close(nul);
		execv(self, (char *const *)argv);
	fail:
		e = errno;
		if (write(p[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(p[1]);
	do
		n = read(p[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(p[0]);
	return n == sizeof(e) ? -e : 0;
}

static int cmd_start(const struct flags *f)
{
	char group[512], address[256], cwd[PATH_MAX];
	const char *dir, *path;
	char *spec = NULL;
	size_t speclen = 0;
	int lfd, err;

	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	err = read_file("config.json", &spec, &speclen);
	if (err) {
		fprintf(stderr, SHIM_NAME ": %s/config.json: %s\n", cwd,
			err == -EINVAL ? "not a regular file" : strerror(-err));
		return err;
	}
	err = shim_address__group(spec, speclen, f->id, group, sizeof(group));
	free(spec);
	if (err) {
		fprintf(stderr, SHIM_NAME ": config.json: bad spec\n");
		return err;
	}
	dir = getenv(SHIM_SOCKET_DIR_ENV);
	if (!dir || !dir[0])
		dir = SHIM_SOCKET_DIR;
	err = shim_address__socket(f->address, f->ns, group, dir, address,
				   sizeof(address));
	if (err) {
		fprintf(stderr, SHIM_NAME ": socket address: %s\n",
			strerror(-err));
		return err;
	}
	path = address + strlen("unix://");
	err = mkdir_p(dir, 0711);
	if (err) {
		fprintf(stderr, SHIM_NAME ": %s: %s\n", dir, strerror(-err));
		return err;
	}
	lfd = listen_unix(path);
	if (lfd == -EADDRINUSE) {
		/* the pod's shim, or one that died and left its socket */
		if (can_connect(address)) {
			err = write_address(address);
			if (err)
				return err;
			drain_stdin();
			fputs(address, stdout);
			return fflush(stdout) ? -EIO : 0;
		}
		unlink(path);
		lfd = listen_unix(path);
	}
	if (lfd < 0) {
		fprintf(stderr, SHIM_NAME ": listen on %s: %s\n", path,
			strerror(-lfd));
		return lfd;
	}
	err = write_address(address);
	if (err)
		goto fail;
	drain_stdin();
	err = spawn_daemon(f, lfd);
	if (err)
		goto fail;
	close(lfd);
	fputs(address, stdout);
	return fflush(stdout) ? -EIO : 0;
fail:
	fprintf(stderr, SHIM_NAME ": start: %s\n", strerror(-err));
	close(lfd);
	unlink(path);
	return err;
}

/*
 * The socket of a shim that died (BUNDLE/address, as `start` wrote it):
 * removed when nothing listens on it any more and it is a socket in the
 * shims' socket directory; a live one (a pod's shim serving its other
 * containers) stays.
 */
static void remove_dead_socket(const char *bundle)
{
	char file[PATH_MAX], address[256];
	const char *dir = getenv(SHIM_SOCKET_DIR_ENV), *path;
	size_t dlen;
	struct stat st;
	ssize_t n;
	int fd;

	if (!dir || !dir[0])
		dir = SHIM_SOCKET_DIR;
	if ((size_t)snprintf(file, sizeof(file), "%s/address", bundle) >=
	    sizeof(file))
		return;
	fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return;
	n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ?
		    read(fd, address, sizeof(address) - 1) :
		    -1;
	close(fd);
	if (n <= 0)
		return;
	address[n] = '\0';
	address[strcspn(address, "\r\n")] = '\0';
	path = shim_address__path(address);
	dlen = strlen(dir);
	if (!path || strncmp(path, dir, dlen) || path[dlen] != '/' ||
	    strchr(path + dlen + 1, '/') || lstat(path, &st) ||
	    !S_ISSOCK(st.st_mode) || can_connect(address))
		return;
	unlink(path);
}

static int cmd_delete(const struct flags *f)
{
	Containerd__Task__V2__DeleteResponse resp =
		CONTAINERD__TASK__V2__DELETE_RESPONSE__INIT;
	Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
	char cwd[PATH_MAX], msg[512] = "";
	const char *bundle = f->bundle;
	struct timespec now;
	uint8_t *buf;
	size_t n;
	int err;

	if (!bundle || !bundle[0]) {
		if (!getcwd(cwd, sizeof(cwd)))
			return -errno;
		bundle = cwd;
	}
	remove_dead_socket(bundle);
	err = shim_service__cleanup_bundle(bundle, f->ns, f->id, msg,
					   sizeof(msg));
	if (err) {
		fprintf(stderr, SHIM_NAME ": delete %s: %s\n", f->id,
			msg[0] ? msg : strerror(-err));
		return err;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	ts.seconds = now.tv_sec;
	ts.nanos = now.tv_nsec;
	resp.exit_status = 128 + SIGKILL;
	resp.exited_at = &ts;
	n = containerd__task__v2__delete_response__get_packed_size(&resp);
	buf = malloc(n ? n : 1);
	if (!buf)
		return -ENOMEM;
	containerd__task__v2__delete_response__pack(&resp, buf);
	if (fwrite(buf, 1, n, stdout) != n || fflush(stdout))
		err = -EIO;
	free(buf);
	return err;
}

struct holder {
	struct shim_service *svc;
};

static void dispatch(void *opaque, const struct ttrpc_call *c,
		     struct ttrpc_reply *r)
{
	struct holder *h = opaque;

	shim_service__handle(h->svc, c, r);
}

static void *signal_thread(void *arg)
{
	struct ttrpc_server *s = arg;
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	for (;;) {
		if (sigwait(&set, &sig))
			continue;
		ttrpc_server__stop(s);
	}
	return NULL;
}

/* stderr to the bundle's "log" fifo when containerd reads it. */
static void open_log(void)
{
	int fd = open("log", O_WRONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	dup2(fd, 2);
	close(fd);
}

/*
 * The path of the socket file @fd is bound to, in @out (@outlen bytes),
 * or "" (abstract or unknown): unlinked at exit as 1.6's shims do (they
 * read the bundle's "address", which containerd may have removed by then).
 */
static void socket_path(int fd, char *out, size_t outlen)
{
	struct sockaddr_un sa;
	socklen_t len = sizeof(sa);
	size_t n;

	out[0] = 0;
	if (getsockname(fd, (struct sockaddr *)&sa, &len) ||
	    sa.sun_family != AF_UNIX ||
	    len <= offsetof(struct sockaddr_un, sun_path) || !sa.sun_path[0])
		return;
	n = strnlen(sa.sun_path, len - offsetof(struct sockaddr_un, sun_path));
	if (n < outlen) {
		memcpy(out, sa.sun_path, n);
		out[n] = 0;
	}
}

static int cmd_serve(const struct flags *f)
{
	struct shim_ctx ctx = { 0 };
	struct holder holder = { 0 };
	char cwd[PATH_MAX],
		sock[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
	pthread_t sigt;
	sigset_t set;
	struct stat st;
	int lfd = LISTEN_FD, ret;

	open_log();
	if (f->socket && f->socket[0]) {
		lfd = listen_unix(f->socket);
		if (lfd < 0) {
			fprintf(stderr, SHIM_NAME ": listen on %s: %s\n",
				f->socket, strerror(-lfd));
			return lfd;
		}
	} else if (fstat(lfd, &st) || !S_ISSOCK(st.st_mode)) {
		fprintf(stderr, SHIM_NAME ": fd 3 is not the shim's socket "
					  "(run by `start`)\n");
		return -EBADF;
	}
	fcntl(lfd, F_SETFD, FD_CLOEXEC);
	socket_path(lfd, sock, sizeof(sock));
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	ctx.ns = f->ns;
	ctx.id = f->id;
	ctx.bundle = f->bundle && f->bundle[0] ? f->bundle : cwd;
	ctx.address = f->address ? f->address : "";
	ctx.ttrpc_address = getenv("TTRPC_ADDRESS");
	if (!ctx.ttrpc_address)
		ctx.ttrpc_address = "";
	ctx.events = shim_events__new(ctx.ttrpc_address, ctx.ns);
	if (!ctx.events)
		return -ENOMEM;
	ctx.server = ttrpc_server__new(lfd, dispatch, &holder);
	if (!ctx.server) {
		shim_events__free(ctx.events, 0);
		return -ENOMEM;
	}
	holder.svc = shim_service__new(&ctx);
	if (!holder.svc) {
		fprintf(stderr, SHIM_NAME ": the task service did not start\n");
		ret = -EIO;
		goto out;
	}
	if (pthread_create(&sigt, NULL, signal_thread, ctx.server)) {
		ret = -EAGAIN;
		goto out_svc;
	}
	pthread_detach(sigt);
	if (f->debug)
		fprintf(stderr, SHIM_NAME ": %s/%s: serving on %s\n", ctx.ns,
			ctx.id, sock[0] ? sock : "an inherited socket");
	ret = ttrpc_server__run(ctx.server);
	if (ret)
		fprintf(stderr, SHIM_NAME ": serve: %s\n", strerror(-ret));
out_svc:
	shim_service__free(holder.svc);
out:
	shim_events__free(ctx.events, EVENTS_FLUSH_MS);
	ttrpc_server__free(ctx.server);
	if (sock[0])
		unlink(sock);
	return ret;
}

int main(int argc, char **argv)
{
	struct flags f;
	int err;

	if (parse_flags(argc, argv, &f))
		return 2;
	if (f.version) {
		printf("%s:\n  Version: %s\n", argv[0], SHIM_VERSION);
		return 0;
	}
	if (!f.ns || !f.ns[0]) {
		fprintf(stderr, SHIM_NAME ": shim namespace cannot be empty\n");
		return 1;
	}
	if (!f.id || !f.id[0]) {
		fprintf(stderr, SHIM_NAME ": -id is required\n");
		return 1;
	}
	if (!f.action)
		err = cmd_serve(&f);
	else if (!strcmp(f.action, "start"))
		err = cmd_start(&f);
	else if (!strcmp(f.action, "delete"))
		err = cmd_delete(&f);
	else {
		fprintf(stderr, SHIM_NAME ": unknown action %s\n", f.action);
		usage();
		return 2;
	}
	return err ? 1 : 0;
}
