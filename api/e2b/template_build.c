// SPDX-License-Identifier: Apache-2.0
/*
 * E2B's template-build API (template_build.h): builds kept in a table,
 * each run by a thread of its own that starts `emberctl template build`
 * (its child, killed with ember-e2b: PR_SET_PDEATHSIG, which follows the
 * thread that forked, hence a thread that lives as long as the child)
 * and turns its output into log entries.
 *
 * The table is this file's state (one ember-e2b serves one set of
 * builds); a mutex guards it and every build in it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../sandbox/files.h"
#include "../sandbox/lookup.h"
#include "../sandbox/sibling.h"
#include "../sandbox/template.h"
#include "e2b.h"
#include "template_build.h"
#include "template_spec.h"

#define MAX_BUILDS  32 /* kept at once, finished or not */
#define MAX_LOG	    20000 /* log entries of a build */
#define LINE_MAX_B  4096 /* bytes of one log line */
#define PENDING_S   3600 /* a build not started, an upload, is forgotten */
#define FINISHED_S  600 /* a finished build's status is kept */
#define ID_HEX	    32
#define DIR_NAME    "e2b-builds"
#define FILES_NAME  "files"
#define REASON_LOGS 20 /* the last log entries in an error's reason */

enum build_status { CREATED, WAITING, BUILDING, READY, FAILED };

static const char *const status_names[] = {
	[CREATED] = "waiting", [WAITING] = "waiting", [BUILDING] = "building",
	[READY] = "ready",     [FAILED] = "error",
};

struct build {
	char id[ID_HEX + 1];
	char token[ID_HEX + 1];
	char name[SANDBOX_TEMPLATE_MAX + 1];
	char dir[PATH_MAX];
	enum build_status status;
	unsigned int vcpus, mem_mib; /* 0: emberctl's default */
	time_t made, finished;
	json_t *logs; /* array of BuildLogEntry */
	char reason[1024];
	char step[TEMPLATE_SPEC_STEP_MAX];
	struct template_spec spec;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t slot; /* a running build ended */
	struct build *b[MAX_BUILDS];
	unsigned int running;
	char root[PATH_MAX]; /* <state>/e2b-builds */
	char files[PATH_MAX]; /* its files/ */
	char emberctl[PATH_MAX]; /* "": not found */
	char emberctl_err[256];
} tb = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.slot = PTHREAD_COND_INITIALIZER,
};

/* ---- helpers -------------------------------------------------------------- */

static int random_hex(char *out, size_t hexlen)
{
	unsigned char r[64];

	if (hexlen / 2 > sizeof(r) ||
	    getrandom(r, hexlen / 2, 0) != (ssize_t)(hexlen / 2))
		return -EIO;
	for (size_t i = 0; i < hexlen / 2; i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
	return 0;
}

static bool secret_eq(const char *a, const char *b)
{
	unsigned char d = 0;
	size_t la = strlen(a), lb = strlen(b);

	for (size_t i = 0; i < lb; i++)
		d |= (unsigned char)(b[i] ^ (i < la ? a[i] : 0));
	return !d && la == lb;
}

static bool hash_ok(const char *s)
{
	return strlen(s) == TEMPLATE_SPEC_HASH_LEN &&
	       strspn(s, "0123456789abcdef") == TEMPLATE_SPEC_HASH_LEN;
}

static json_t *now_json(void)
{
	struct timespec ts;
	struct tm tm;
	char buf[96];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
	return json_string(buf);
}

/* Add a log entry to @b (the lock held). */
static void log_add(struct build *b, const char *level, const char *msg)
{
	char clean[LINE_MAX_B];

	if (json_array_size(b->logs) >= MAX_LOG)
		return;
	e2b__clean_text(clean, sizeof(clean), msg);
	if (json_array_size(b->logs) == MAX_LOG - 1)
		snprintf(clean, sizeof(clean),
			 "(the log is cut here: over %d lines)", MAX_LOG);
	json_array_append_new(b->logs, json_pack("{s:o, s:s, s:s}", "timestamp",
						 now_json(), "level", level,
						 "message", clean));
}

static struct build *find_id(const char *id)
{
	for (size_t i = 0; i < MAX_BUILDS; i++)
		if (tb.b[i] && !strcmp(tb.b[i]->id, id))
			return tb.b[i];
	return NULL;
}

/* The build of @name that is not finished, if any. */
static struct build *find_live(const char *name)
{
	for (size_t i = 0; i < MAX_BUILDS; i++)
		if (tb.b[i] && !strcmp(tb.b[i]->name, name) &&
		    tb.b[i]->status != READY && tb.b[i]->status != FAILED)
			return tb.b[i];
	return NULL;
}

static void build_free(struct build *b)
{
	if (!b)
		return;
	if (b->dir[0])
		files__rm_tree(b->dir);
	json_decref(b->logs);
	template_spec__free(&b->spec);
	free(b);
}

/* Mark @b failed (the lock held) with @msg about E2B's step @step. */
static void fail_build(struct build *b, const char *step, const char *msg)
{
	b->status = FAILED;
	b->finished = time(NULL);
	e2b__clean_text(b->reason, sizeof(b->reason), msg);
	snprintf(b->step, sizeof(b->step), "%s", step ? step : "");
	log_add(b, "error", b->reason);
	if (b->dir[0]) {
		files__rm_tree(b->dir);
		b->dir[0] = '\0';
	}
}

/* ---- set up and sweep ------------------------------------------------------ */

static int clear_old(void *arg, const char *name)
{
	char path[PATH_MAX];

	(void)arg;
	/* Build directories only: ID_HEX hex digits ("." and ".." too come). */
	if (strlen(name) == ID_HEX &&
	    strspn(name, "0123456789abcdef") == ID_HEX &&
	    !files__pathf(path, sizeof(path), "%s/%s", tb.root, name))
		files__rm_tree(path);
	return 0;
}

int template_build__init(char *err, size_t errlen)
{
	char state[PATH_MAX], tried[PATH_MAX];
	int rc;

	rc = sandbox__state_dir(state, sizeof(state), err, errlen);
	if (rc < 0)
		return rc;
	if (files__pathf(tb.root, sizeof(tb.root), "%s/" DIR_NAME, state) ||
	    files__pathf(tb.files, sizeof(tb.files), "%s/" FILES_NAME, tb.root))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "state path too long");
	if (files__mkdir_p(tb.files) || chmod(tb.root, 0700))
		return sandbox__errf(err, errlen, -errno, "%s: %s", tb.root,
				     strerror(errno));
	/* Builds a previous ember-e2b ran: their children died with it. */
	files__each_entry(tb.root, clear_old, NULL, err, errlen);
	rc = sibling__path(NULL, "EMBERCTL_BIN", "emberctl", tried,
			   sizeof(tried), tb.emberctl, sizeof(tb.emberctl));
	if (rc < 0 || access(tb.emberctl, X_OK)) {
		snprintf(tb.emberctl_err, sizeof(tb.emberctl_err),
			 "emberctl (%.200s): %s", tried,
			 strerror(rc < 0 ? -rc : errno));
		tb.emberctl[0] = '\0';
	}
	return 0;
}

static int sweep_file(void *arg, const char *name)
{
	char path[PATH_MAX];
	struct stat st;
	time_t now = *(time_t *)arg;

	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if (!files__pathf(path, sizeof(path), "%s/%s", tb.files, name) &&
	    !lstat(path, &st) && st.st_mtime + PENDING_S < now)
		unlink(path);
	return 0;
}

void template_build__sweep(void)
{
	time_t now = time(NULL);
	struct build *gone[MAX_BUILDS];
	char err[256];
	size_t n = 0;

	pthread_mutex_lock(&tb.lock);
	for (size_t i = 0; i < MAX_BUILDS; i++) {
		struct build *b = tb.b[i];

		if (!b)
			continue;
		if ((b->status == CREATED && b->made + PENDING_S < now) ||
		    ((b->status == READY || b->status == FAILED) &&
		     b->finished + FINISHED_S < now)) {
			gone[n++] = b;
			tb.b[i] = NULL;
		}
	}
	pthread_mutex_unlock(&tb.lock);
	for (size_t i = 0; i < n; i++)
		build_free(gone[i]);
	if (tb.files[0])
		files__each_entry(tb.files, sweep_file, &now, err, sizeof(err));
}

/* ---- the build's thread ---------------------------------------------------- */

/* The child: emberctl template build, output on @out. */
static void exec_emberctl(const struct build *b, int out, pid_t parent)
{
	char df[PATH_MAX], ctx[PATH_MAX], vcpus[16], mem[16];
	const char *argv[20];
	size_t n = 0;
	sigset_t none;
	int null;

	/* ember-e2b blocks SIGTERM (sigwait) and ignores SIGPIPE: both are
	   inherited, and emberctl would not end with it. */
	sigemptyset(&none);
	if (sigprocmask(SIG_SETMASK, &none, NULL) ||
	    signal(SIGPIPE, SIG_DFL) == SIG_ERR)
		_exit(125);
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) || getppid() != parent ||
	    setpgid(0, 0))
		_exit(125);
	null = open("/dev/null", O_RDONLY);
	if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 ||
	    dup2(out, 2) < 0)
		_exit(126);
	if (files__pathf(df, sizeof(df), "%s/Dockerfile", b->dir) ||
	    files__pathf(ctx, sizeof(ctx), "%s/context", b->dir))
		_exit(124);
	argv[n++] = tb.emberctl;
	argv[n++] = "template";
	argv[n++] = "build";
	argv[n++] = b->name;
	argv[n++] = "--dockerfile";
	argv[n++] = df;
	argv[n++] = "--context";
	argv[n++] = ctx;
	/* The code interpreter is not warmed (it starts when first used):
	   its start takes minutes where a build takes seconds. */
	argv[n++] = "--no-interp";
	/*
	 * E2B builds a template again under its name: the new one replaces
	 * it once built (until then, or if it fails, the old one stays).
	 */
	argv[n++] = "--replace";
	if (b->spec.start_cmd) {
		argv[n++] = "--start-cmd";
		argv[n++] = b->spec.start_cmd;
	}
	if (b->spec.ready_cmd) {
		argv[n++] = "--ready-cmd";
		argv[n++] = b->spec.ready_cmd;
	}
	if (b->vcpus) {
		snprintf(vcpus, sizeof(vcpus), "%u", b->vcpus);
		argv[n++] = "--vcpus";
		argv[n++] = vcpus;
	}
	if (b->mem_mib) {
		snprintf(mem, sizeof(mem), "%u", b->mem_mib);
		argv[n++] = "--mem";
		argv[n++] = mem;
	}
	argv[n] = NULL;
	execv(argv[0], (char *const *)argv);
	dprintf(2, "emberctl: %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/*
 * The E2B step an emberctl error line names: "step I/N (line L, ..." is
 * the Dockerfile's line L; "FROM" the base; else @dflt.
 */
static void step_of(const struct build *b, const char *msg, const char *dflt,
		    char *step, size_t steplen)
{
	const char *p = strstr(msg, "(line ");
	unsigned int line;

	if (!p)
		p = strstr(msg, "line ");
	else
		p++;
	if (p && sscanf(p, "line %u", &line) == 1 && line) {
		template_spec__step_name(&b->spec, line, step, steplen);
		return;
	}
	snprintf(step, steplen, "%s", strstr(msg, "FROM") ? "base" : dflt);
}

/* One line of emberctl's output @line into @b's log and @last. */
static void take_line(struct build *b, const char *line, char *last,
		      size_t lastlen, bool *stepped)
{
	if (!strncmp(line, "+ step ", 7))
		*stepped = true;
	/* The reason: emberctl's last error line (after a command's output
	   that did not end its line), else the last line. */
	if (strstr(line, "emberctl: "))
		snprintf(last, lastlen, "%s", strstr(line, "emberctl: "));
	else if (line[0] && strncmp(last, "emberctl: ", 10))
		snprintf(last, lastlen, "%s", line);
	pthread_mutex_lock(&tb.lock);
	log_add(b, "info", line);
	pthread_mutex_unlock(&tb.lock);
}

/*
 * emberctl's output on @fd into @b's log until it ends; emberctl @pid's
 * wait status into @status.  emberctl leads a process group of its own:
 * once it has ended, what is left of the group is killed, and the output
 * is read only a little longer (a process that left the group may hold
 * the pipe: the build does not wait on it).
 */
static void read_output(struct build *b, int fd, pid_t pid, int *status,
			char *last, size_t lastlen, bool *stepped)
{
	char buf[LINE_MAX_B];
	size_t have = 0;
	time_t ended = 0; /* when emberctl ended (CLOCK_MONOTONIC s) */
	struct timespec now;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		siginfo_t si = { 0 };
		ssize_t r;
		char *nl;
		int pr = poll(&pfd, 1, ended ? 200 : 1000);

		if (pr < 0 && errno != EINTR)
			break;
		if (pr > 0) {
			r = read(fd, buf + have, sizeof(buf) - 1 - have);
			if (r == 0 || (r < 0 && errno != EINTR))
				break;
			have += r > 0 ? (size_t)r : 0;
			buf[have] = '\0';
			while ((nl = memchr(buf, '\n', have))) {
				*nl = '\0';
				take_line(b, buf, last, lastlen, stepped);
				have -= (size_t)(nl + 1 - buf);
				memmove(buf, nl + 1, have);
				buf[have] = '\0';
			}
			if (have == sizeof(buf) - 1) { /* a line too long */
				take_line(b, buf, last, lastlen, stepped);
				have = 0;
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (ended) {
			/* Not for long: a process that left the group. */
			if (pr == 0 || now.tv_sec > ended + 2)
				break;
			continue;
		}
		/* Ended?  Its group is killed while it is a zombie (the
		   group's id is still its). */
		if (!waitid(P_PID, (id_t)pid, &si,
			    WEXITED | WNOHANG | WNOWAIT) &&
		    si.si_pid == pid) {
			kill(-pid, SIGKILL);
			ended = now.tv_sec ? now.tv_sec : 1;
		}
	}
	if (have) { /* a last line without its newline */
		buf[have] = '\0';
		take_line(b, buf, last, lastlen, stepped);
		snprintf(last, lastlen, "%s", buf);
	}
	if (!ended) { /* its output ended: it ends too, then its group */
		siginfo_t si;

		while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0 &&
		       errno == EINTR)
			;
		kill(-pid, SIGKILL);
	}
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
}

static void *build_thread(void *arg)
{
	struct build *b = arg;
	char last[LINE_MAX_B] = "", step[32];
	bool stepped = false;
	int fds[2] = { -1, -1 }, status = 0;
	pid_t pid = -1, parent = getpid();

	pthread_mutex_lock(&tb.lock);
	while (tb.running >= TEMPLATE_BUILD_RUNNING) {
		if (b->status != WAITING) {
			b->status = WAITING;
			log_add(b, "info",
				"waiting for a running build to end");
		}
		pthread_cond_wait(&tb.slot, &tb.lock);
	}
	tb.running++;
	b->status = BUILDING;
	if (!tb.emberctl[0]) {
		fail_build(b, "base", tb.emberctl_err);
		goto out;
	}
	if (pipe2(fds, O_CLOEXEC)) {
		fail_build(b, "base", "pipe failed");
		goto out;
	}
	pid = fork();
	if (pid == 0)
		exec_emberctl(b, fds[1], parent);
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		fail_build(b, "base", "fork failed");
		goto out;
	}
	setpgid(pid, pid); /* as the child does: no race with a kill */
	pthread_mutex_unlock(&tb.lock);
	read_output(b, fds[0], pid, &status, last, sizeof(last), &stepped);
	close(fds[0]);
	pthread_mutex_lock(&tb.lock);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		b->status = READY;
		b->finished = time(NULL);
		log_add(b, "info", "the template is built");
		files__rm_tree(b->dir);
		b->dir[0] = '\0';
	} else {
		const char *msg = last[0] ? last : "emberctl failed";

		if (!strncmp(msg, "emberctl: ", 10))
			msg += 10;
		step_of(b, msg, stepped ? "finalize" : "base", step,
			sizeof(step));
		fail_build(b, step, msg);
	}
out:
	tb.running--;
	pthread_cond_signal(&tb.slot);
	pthread_mutex_unlock(&tb.lock);
	return NULL;
}

/* ---- the calls ------------------------------------------------------------- */

/*
 * With the table full (the lock held): the slot of the build that has
 * waited longest for nothing, a finished one (its status kept for a
 * poll) or one never started for FINISHED_S (an SDK starts its build at
 * once); MAX_BUILDS when none.  So that builds that failed, or clients
 * that gave up, do not keep new builds out.
 */
static size_t oldest_idle(void)
{
	time_t now = time(NULL), best = 0;
	size_t slot = MAX_BUILDS;

	for (size_t i = 0; i < MAX_BUILDS; i++) {
		const struct build *o = tb.b[i];
		bool done = o && (o->status == READY || o->status == FAILED);
		time_t since = done ? o->finished : o ? o->made : 0;

		if (!done &&
		    !(o && o->status == CREATED && o->made + FINISHED_S < now))
			continue;
		if (slot == MAX_BUILDS || since < best) {
			slot = i;
			best = since;
		}
	}
	return slot;
}

/* POST /v3/templates (also /v2/templates, /templates: the same body). */
static int request_build(const struct e2b_req *r, struct e2b_resp *resp)
{
	json_t *body, *v, *tags;
	const char *name = NULL;
	char err[512];
	struct build *b = NULL;
	struct build *evicted = NULL;
	json_int_t cpu = 0, mem = 0;
	size_t slot = MAX_BUILDS;

	body = json_loadb(r->body ? r->body : "", r->len, 0, NULL);
	if (!json_is_object(body)) {
		json_decref(body);
		return reply__error(resp, 400, "The body is not a JSON object");
	}
	v = json_object_get(body, "name");
	if (!json_is_string(v))
		v = json_object_get(body, "alias");
	name = json_string_value(v);
	tags = json_object_get(body, "tags");
	if (!name || !*name) {
		reply__error(resp, 400, "A template name is needed");
		goto out;
	}
	if (strchr(name, ':') ||
	    (json_is_array(tags) && json_array_size(tags))) {
		reply__error(resp, 400,
			     "Not supported by ember: tags (%.128s): an ember "
			     "template has one build; give a name without :tag",
			     name);
		goto out;
	}
	/* emberctl takes it as an argument: never one that reads as an
	   option. */
	if (name[0] == '-' || template__name_ok(name, err, sizeof(err))) {
		if (name[0] == '-')
			snprintf(err, sizeof(err), "it starts with '-'");
		reply__error(resp, 400,
			     "%.128s is not an ember template name: %s", name,
			     err);
		goto out;
	}
	if (template_spec__is_default(name)) {
		reply__error(resp, 400,
			     "%s is E2B's name for ember's default template: "
			     "build under another name",
			     name);
		goto out;
	}
	v = json_object_get(body, "cpuCount");
	if (json_is_integer(v))
		cpu = json_integer_value(v);
	else if (v && !json_is_null(v))
		cpu = -1;
	v = json_object_get(body, "memoryMB");
	if (json_is_integer(v))
		mem = json_integer_value(v);
	else if (v && !json_is_null(v))
		mem = -1;
	if (cpu < 0 || cpu > 64 || mem < 0 || mem > (1 << 20)) {
		reply__error(resp, 400,
			     "cpuCount: an integer 1-64, memoryMB: one up to "
			     "1048576");
		goto out;
	}
	b = calloc(1, sizeof(*b));
	if (!b || !(b->logs = json_array()) || random_hex(b->id, ID_HEX) ||
	    random_hex(b->token, ID_HEX)) {
		reply__error(resp, 500, "out of memory or no randomness");
		goto out;
	}
	snprintf(b->name, sizeof(b->name), "%s", name);
	b->vcpus = (unsigned int)cpu;
	b->mem_mib = (unsigned int)mem;
	b->made = time(NULL);
	b->status = CREATED;
	if (files__pathf(b->dir, sizeof(b->dir), "%s/%s", tb.root, b->id) ||
	    mkdir(b->dir, 0700) ||
	    files__pathf(err, sizeof(err), "%s/context", b->dir) ||
	    mkdir(err, 0700)) {
		reply__error(resp, 500, "%s: %s", b->dir, strerror(errno));
		goto out;
	}
	pthread_mutex_lock(&tb.lock);
	if (find_live(name)) {
		pthread_mutex_unlock(&tb.lock);
		reply__error(resp, 409, "The template %s is being built", name);
		goto out;
	}
	for (size_t i = 0; i < MAX_BUILDS && slot == MAX_BUILDS; i++)
		if (!tb.b[i])
			slot = i;
	if (slot == MAX_BUILDS) {
		slot = oldest_idle();
		if (slot < MAX_BUILDS) {
			evicted = tb.b[slot];
			tb.b[slot] = NULL;
		}
	}
	if (slot < MAX_BUILDS)
		tb.b[slot] = b;
	pthread_mutex_unlock(&tb.lock);
	build_free(evicted);
	if (slot == MAX_BUILDS) {
		reply__error(resp, 429,
			     "Too many builds (%d) are kept: try again later",
			     MAX_BUILDS);
		goto out;
	}
	reply__json(resp, 202,
		    json_pack("{s:s, s:s, s:[s], s:[s], s:b, s:[]}",
			      "templateID", b->name, "buildID", b->id,
			      "aliases", b->name, "names", b->name, "public", 0,
			      "tags"));
	b = NULL;
out:
	build_free(b);
	json_decref(body);
	return 0;
}

/* The URL's host for an upload link: the Host the client used. */
static void host_of(const struct e2b_req *r, char *out, size_t outlen)
{
	const char *h = e2b__header(r, "Host");

	if (!h || !*h || strlen(h) >= outlen ||
	    strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		      "0123456789.-:[]") != strlen(h))
		h = "127.0.0.1";
	snprintf(out, outlen, "%s", h);
}

/* GET /templates/{templateID}/files/{hash} */
static int file_link(const struct e2b_req *r, const char *tid, const char *hash,
		     struct e2b_resp *resp)
{
	char path[PATH_MAX], host[256], url[512], token[ID_HEX + 1] = "";

	if (!hash_ok(hash))
		return reply__error(resp, 400,
				    "The files hash %.80s is not 64 hex digits",
				    hash);
	pthread_mutex_lock(&tb.lock);
	for (size_t i = 0; i < MAX_BUILDS; i++)
		if (tb.b[i] && tb.b[i]->status == CREATED &&
		    !strcmp(tb.b[i]->name, tid))
			snprintf(token, sizeof(token), "%s", tb.b[i]->token);
	pthread_mutex_unlock(&tb.lock);
	if (!token[0])
		return reply__error(
			resp, 404,
			"No build of the template %.128s is waiting "
			"for files",
			tid);
	host_of(r, host, sizeof(host));
	snprintf(url, sizeof(url), "http://%s" TEMPLATE_BUILD_UPLOADS "%s/%s",
		 host, token, hash);
	if (files__pathf(path, sizeof(path), "%s/%s.tar", tb.files, hash))
		return reply__error(resp, 500, "path too long");
	/* Present: kept another hour from now (the sweep goes by mtime). */
	return reply__json(resp, 200,
			   json_pack("{s:b, s:s}", "present",
				     utimensat(AT_FDCWD, path, NULL, 0) == 0,
				     "url", url));
}

/* Link each upload @b's spec needs into its context (the lock held). */
static int link_uploads(struct build *b)
{
	char from[PATH_MAX], to[PATH_MAX], msg[256];

	for (size_t i = 0; i < b->spec.n_hashes; i++) {
		const char *h = b->spec.hashes[i];

		if (files__pathf(from, sizeof(from), "%s/%s.tar", tb.files,
				 h) ||
		    files__pathf(to, sizeof(to), "%s/context/%s.tar", b->dir,
				 h) ||
		    link(from, to)) {
			unsigned int line = 0;
			char step[TEMPLATE_SPEC_STEP_MAX];

			/* Which step: the ADD line of this hash. */
			for (const char *p = b->spec.dockerfile; p && *p;
			     p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
				line++;
				if (!strncmp(p, "ADD ", 4) &&
				    !strncmp(p + 4, h, strlen(h)))
					break;
			}
			template_spec__step_name(&b->spec, line, step,
						 sizeof(step));
			snprintf(msg, sizeof(msg),
				 "COPY: the files (hash %.12s...) were not "
				 "uploaded: %s",
				 h, strerror(errno));
			fail_build(b, step, msg);
			return -1;
		}
	}
	return 0;
}

/* POST /v2/templates/{templateID}/builds/{buildID} */
static int start_build(struct e2b_server *srv, const struct e2b_req *r,
		       const char *tid, const char *bid, struct e2b_resp *resp)
{
	char err[1024], step[TEMPLATE_SPEC_STEP_MAX], path[PATH_MAX];
	struct template_spec spec;
	struct build *b;
	pthread_t th;
	json_t *body;
	int rc, fd;

	body = json_loadb(r->body ? r->body : "", r->len, 0, NULL);
	if (!json_is_object(body)) {
		json_decref(body);
		return reply__error(resp, 400, "The body is not a JSON object");
	}
	/* E2B's builds run as `user` (its base image's USER) by default. */
	rc = template_spec__parse(body, srv->default_template, E2B_USER, &spec,
				  err, sizeof(err), step, sizeof(step));
	json_decref(body);
	pthread_mutex_lock(&tb.lock);
	b = find_id(bid);
	if (!b || strcmp(b->name, tid)) {
		pthread_mutex_unlock(&tb.lock);
		template_spec__free(&spec);
		return reply__error(resp, 404,
				    "The build %.64s of %.128s was not found",
				    bid, tid);
	}
	if (b->status != CREATED) {
		pthread_mutex_unlock(&tb.lock);
		template_spec__free(&spec);
		return reply__error(resp, 409, "The build %s was started", bid);
	}
	b->status = BUILDING;
	if (rc) {
		fail_build(b, step, err);
		goto answer;
	}
	b->spec = spec;
	log_add(b, "info", "the template as a Dockerfile:");
	for (char *p = spec.dockerfile, *e; p && *p; p = e ? e + 1 : NULL) {
		e = strchr(p, '\n');
		snprintf(err, sizeof(err), "  %.*s",
			 (int)(e ? e - p : (ptrdiff_t)strlen(p)), p);
		log_add(b, "info", err);
	}
	if (link_uploads(b))
		goto answer;
	fd = files__pathf(path, sizeof(path), "%s/Dockerfile", b->dir) ?
		     -1 :
		     open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || files__write_all(fd, spec.dockerfile, spec.len) ||
	    close(fd)) {
		fail_build(b, "base", "writing the Dockerfile failed");
		goto answer;
	}
	b->status = WAITING;
	if (pthread_create(&th, NULL, build_thread, b)) {
		fail_build(b, "base", "no thread for the build");
		goto answer;
	}
	pthread_detach(th);
answer:
	pthread_mutex_unlock(&tb.lock);
	return reply__empty(resp, 202);
}

/* GET /templates/{templateID}/builds/{buildID}/status */
static int build_status(const struct e2b_req *r, const char *tid,
			const char *bid, struct e2b_resp *resp)
{
	const char *off_s = e2b__query(r, "logsOffset");
	unsigned long off = 0;
	json_t *entries, *lines, *j;
	struct build *b;
	char *end;

	if (off_s) {
		errno = 0;
		off = strtoul(off_s, &end, 10);
		if (errno || *end || off_s[0] == '-')
			return reply__error(resp, 400,
					    "logsOffset %.32s: not a number",
					    off_s);
	}
	pthread_mutex_lock(&tb.lock);
	b = find_id(bid);
	if (!b || strcmp(b->name, tid)) {
		pthread_mutex_unlock(&tb.lock);
		return reply__error(resp, 404,
				    "The build %.64s of %.128s was not found",
				    bid, tid);
	}
	entries = json_array();
	lines = json_array();
	for (size_t i = off; i < json_array_size(b->logs); i++) {
		json_t *e = json_array_get(b->logs, i);

		json_array_append(entries, e);
		json_array_append_new(lines,
				      json_string(json_string_value(
					      json_object_get(e, "message"))));
	}
	j = json_pack("{s:s, s:s, s:s, s:o, s:o}", "buildID", b->id,
		      "templateID", b->name, "status", status_names[b->status],
		      "logEntries", entries, "logs", lines);
	if (j && b->status == FAILED) {
		json_t *tail = json_array();
		size_t n = json_array_size(b->logs);

		for (size_t i = n > REASON_LOGS ? n - REASON_LOGS : 0; i < n;
		     i++)
			json_array_append(tail, json_array_get(b->logs, i));
		json_object_set_new(j, "reason",
				    json_pack("{s:s, s:s, s:o}", "message",
					      b->reason, "step", b->step,
					      "logEntries", tail));
	}
	pthread_mutex_unlock(&tb.lock);
	return reply__json(resp, 200, j);
}

/* GET /templates/aliases/{alias} */
static int alias(struct e2b_server *srv, const char *name,
		 struct e2b_resp *resp)
{
	struct template_info t;
	char err[512];
	const char *real =
		template_spec__is_default(name) ? srv->default_template : name;

	if (template__name_ok(real, err, sizeof(err)) ||
	    template__open(real, &t, NULL, err, sizeof(err)))
		return reply__error(resp, 404,
				    "The template %.128s was not found", name);
	return reply__json(
		resp, 200,
		json_pack("{s:s, s:b}", "templateID", real, "public", 0));
}

/*
 * Split @p after @prefix into up to @max segments of at most @seglen - 1
 * bytes: the number of them, -1 when one is empty or too long.
 */
static int segments(const char *p, const char *prefix, char seg[][160], int max)
{
	int n = 0;

	if (strncmp(p, prefix, strlen(prefix)))
		return -1;
	p += strlen(prefix);
	while (*p && n < max) {
		size_t l = strcspn(p, "/");

		if (!l || l >= 160)
			return -1;
		snprintf(seg[n++], 160, "%.*s", (int)l, p);
		p += l;
		if (*p == '/' && !*++p)
			return -1;
	}
	return *p ? -1 : n;
}

int template_build__route(struct e2b_server *srv, const struct e2b_req *r,
			  struct e2b_resp *resp)
{
	bool get = !strcmp(r->method, "GET"), post = !strcmp(r->method, "POST");
	char s[4][160];
	int n;

	if (post && (!strcmp(r->path, "/v3/templates") ||
		     !strcmp(r->path, "/v2/templates") ||
		     !strcmp(r->path, "/templates"))) {
		request_build(r, resp);
		return 1;
	}
	n = segments(r->path, "/v2/templates/", s, 4);
	if (post && n == 3 && !strcmp(s[1], "builds")) {
		start_build(srv, r, s[0], s[2], resp);
		return 1;
	}
	n = segments(r->path, "/templates/", s, 4);
	if (get && n == 2 && !strcmp(s[0], "aliases")) {
		alias(srv, s[1], resp);
		return 1;
	}
	if (get && n == 3 && !strcmp(s[1], "files")) {
		file_link(r, s[0], s[2], resp);
		return 1;
	}
	if (get && n == 4 && !strcmp(s[1], "builds") &&
	    !strcmp(s[3], "status")) {
		build_status(r, s[0], s[2], resp);
		return 1;
	}
	return 0;
}

/* ---- uploads ------------------------------------------------------------- */

bool template_build__is_upload(const char *path)
{
	return !strncmp(path, TEMPLATE_BUILD_UPLOADS,
			strlen(TEMPLATE_BUILD_UPLOADS));
}

int template_build__upload_check(const char *method, const char *path,
				 struct e2b_resp *resp)
{
	char s[2][160];
	bool ok = false;

	if (strcmp(method, "PUT")) {
		reply__error(resp, 405, "Uploads are PUT");
		return -1;
	}
	if (segments(path, TEMPLATE_BUILD_UPLOADS, s, 2) != 2 ||
	    !hash_ok(s[1])) {
		reply__error(resp, 404, "No such upload");
		return -1;
	}
	pthread_mutex_lock(&tb.lock);
	for (size_t i = 0; i < MAX_BUILDS; i++)
		if (tb.b[i] && tb.b[i]->status == CREATED &&
		    secret_eq(s[0], tb.b[i]->token))
			ok = true;
	pthread_mutex_unlock(&tb.lock);
	if (!ok) {
		reply__error(resp, 401,
			     "Invalid upload link (its build started or "
			     "was forgotten)");
		return -1;
	}
	return 0;
}

int template_build__upload_fd(void)
{
	int fd = open(tb.files, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	return fd < 0 ? -errno : fd;
}

int template_build__upload(const struct e2b_req *r, struct e2b_resp *resp)
{
	char s[2][160], proc[64], tmp[PATH_MAX], path[PATH_MAX];

	if (template_build__upload_check(r->method, r->path, resp))
		return 0;
	segments(r->path, TEMPLATE_BUILD_UPLOADS, s, 2);
	if (r->body_fd < 0)
		return reply__error(resp, 500, "The upload was not stored");
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", r->body_fd);
	if (files__pathf(tmp, sizeof(tmp), "%s/.%s.%d.%lx", tb.files, s[1],
			 (int)getpid(), (unsigned long)pthread_self()) ||
	    files__pathf(path, sizeof(path), "%s/%s.tar", tb.files, s[1]))
		return reply__error(resp, 500, "path too long");
	unlink(tmp);
	if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) ||
	    rename(tmp, path)) {
		int e = errno;

		unlink(tmp);
		return reply__error(resp, 507, "Storing the upload: %s",
				    strerror(e));
	}
	return reply__empty(resp, 200);
}
