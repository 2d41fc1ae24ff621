// SPDX-License-Identifier: Apache-2.0
/*
 * envd's filesystem.Filesystem service over Connect's JSON codec (e2b.h,
 * connect_rpc.h; e2b-notes section 4): Stat, ListDir, MakeDir, Move,
 * Remove, WatchDir (server streaming), and CreateWatcher /
 * GetWatcherEvents / RemoveWatcher (the Python SDK's synchronous
 * watch_dir; the JS SDK uses WatchDir).
 *
 * Each call is one busybox shell script run through the agent (e2b.h
 * guest__run()) with every path as an argument, never in the script's
 * text.  Entries come back from `stat -c FORMAT` (one entry) or `find ...
 * -exec stat -c FORMAT {} +` (a listing), plus readlink for symbolic
 * links, as records that each begin, at the start of the output or after
 * a newline, with a random nonce fresh for the call: "<nonce> <kind>
 * <payload>".  A payload ends where the next record begins, so file names
 * may hold newlines and anything else; a name that happened to hold
 * "\n<nonce> " could only confuse the caller's own listing, never the
 * server (the parser is bounded by the output's length).
 *
 * Entries follow envd's (packages/shared/pkg/filesystem): lstat's size,
 * time and Go-style permissions ("-rw-r--r--", "drwxr-xr-x",
 * "Lrwxrwxrwx"); a symbolic link has its target's type and permission
 * bits and symlinkTarget = the resolved path (its own path when that
 * fails); other file types have no type (FILE_TYPE_UNSPECIFIED: the SDK
 * leaves them out of lists).  ListDir lists in the order of Go's WalkDir
 * (depth first, names in byte order).
 *
 * Watches poll: the directory (its whole tree when recursive) is listed
 * every WATCH_POLL_MS (WatchDir; longer for a tree whose listing takes
 * long) or at each GetWatcherEvents, and each listing is compared with
 * the one before, giving envd's events: CREATE (and WRITE for a new
 * non-empty file), WRITE (size or time changed), CHMOD (mode or owner
 * changed), REMOVE, and RENAME for an entry whose inode shows up under a
 * new name (which gets CREATE).  Changes that come and go within one poll
 * are not seen, and a directory's own time is not a WRITE.  The agent's
 * temporary files (".NAME.ember-XXXXXX", see guest-init/PROTOCOL.md) are
 * left out.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../mcp/text.h"
#include "connect_rpc.h"
#include "e2b.h"
#include "files.h"

#define PREFIX		  "/filesystem.Filesystem/"
#define RUN_MS		  60000 /* one operation in the guest, at most */
#define OUT_MAX		  (32u << 20) /* bytes of a listing */
#define NONCE_LEN	  16 /* hex digits */
#define WATCH_POLL_MS	  500 /* between listings, at least */
#define WATCH_BIG	  1000 /* entries of a tree listed less often */
#define KEEPALIVE_DEFAULT 50 /* s, envd's Keepalive-Ping-Interval */

/*
 * The operations.  $1 op, $2 nonce, $3 link_script, $4 path, $5 the
 * depth (list; "" for no limit) or the destination (move).  Exit 3: no
 * such path; 4: not a directory; 5: a directory exists; 6: something
 * else exists; 7: the command failed (stderr says why); 8: a move of a
 * directory into itself (busybox's mv copies across file systems, then
 * removes the source: "/" to "/tmp/x" would copy the root into /tmp).
 */
static const char script[] =
	"PATH=/usr/sbin:/usr/bin:/sbin:/bin\n"
	"op=$1 n=$2 ls=$3 p=$4\n"
	"F=\"$n S %f %s %Y %u %g %i\n$n U %U\n$n G %G\n$n T %y\n$n N %n\"\n"
	"emit() {\n"
	"	set -- \"$1\" -mindepth \"$2\" ${3:+-maxdepth} ${3:+\"$3\"}\n"
	/* No parentheses: busybox 1.35 loses an -exec + inside them. */
	"	find \"$@\" -type l -exec sh -c \"$ls\" sh \"$n\" \"$F\" {} + "
	"-o -exec stat -c \"$F\" -- {} +\n"
	"}\n"
	/* One entry: a process less than find. */
	"one() {\n"
	"	if [ -L \"$1\" ]; then sh -c \"$ls\" sh \"$n\" \"$F\" \"$1\"\n"
	"	else stat -c \"$F\" -- \"$1\"; fi\n"
	"}\n"
	"case $op in\n"
	"stat) [ -e \"$p\" ] || [ -L \"$p\" ] || exit 3\n"
	"	one \"$p\" ;;\n"
	"list) [ -e \"$p\" ] || exit 3\n"
	"	[ -d \"$p\" ] || exit 4\n"
	"	[ \"$p\" = / ] || p=$p/\n"
	"	emit \"$p\" 1 \"$5\" ;;\n"
	"mkdir) if [ -e \"$p\" ]; then [ -d \"$p\" ] && exit 5; exit 6; fi\n"
	"	umask 022; mkdir -p -- \"$p\" || exit 7\n"
	"	one \"$p\" ;;\n"
	"move) [ -e \"$p\" ] || [ -L \"$p\" ] || exit 3\n"
	"	d=$5 q=${5%/*}\n"
	"	if [ \"$p\" != \"$d\" ]; then\n"
	"		[ \"$p\" = / ] && exit 8\n"
	"		case $d/ in \"$p\"/*) exit 8 ;; esac\n"
	"		umask 022; mkdir -p -- \"${q:-/}\" || exit 7\n"
	"		mv -f -T -- \"$p\" \"$d\" || exit 7\n"
	"	fi\n"
	"	one \"$d\" ;;\n"
	"remove) rm -rf -- \"$p\" || exit 7 ;;\n"
	"*) exit 2 ;;\n"
	"esac\n"
	"exit 0\n";

/* Symbolic links: lstat's records, then L (the target's raw mode, "-"
   when it has none) and R (the resolved path, "" when it fails). */
static const char link_script[] =
	"n=$1 F=$2\n"
	"shift 2\n"
	"for f; do\n"
	"	stat -c \"$F\" -- \"$f\" || continue\n"
	"	m=$(stat -L -c %f -- \"$f\" 2>/dev/null)\n"
	"	printf '%s L %s\\n' \"$n\" \"${m:--}\"\n"
	"	t=$(readlink -f -- \"$f\" 2>/dev/null)\n"
	"	printf '%s R %s\\n' \"$n\" \"$t\"\n"
	"done\n";

/* --- the listing's records ---------------------------------------------- */

/* One entry as parsed; the strings point into the output. */
struct ent {
	unsigned long mode; /* lstat's st_mode */
	long long size, mtime;
	long nsec;
	unsigned long uid, gid;
	unsigned long long ino;
	const char *owner, *group, *path, *target;
	size_t olen, glen, plen, tlen;
	bool tvalid; /* a link whose target exists: tmode */
	unsigned long tmode;
};

typedef int (*ent_fn)(const struct ent *e, void *ctx);

struct parse {
	struct ent e;
	bool have; /* e holds an S record */
	ent_fn fn;
	void *ctx;
};

/* Hand the entry being built, if whole, to the callback. */
static int flush(struct parse *ps)
{
	bool whole = ps->have && ps->e.path;

	ps->have = false;
	return whole ? ps->fn(&ps->e, ps->ctx) : 0;
}

/* The nanoseconds of stat's %y "2024-01-02 03:04:05.123456789 +0000". */
static long nanos(const char *s, size_t n)
{
	const char *dot = memchr(s, '.', n);
	long v = 0;
	int i;

	if (!dot)
		return 0;
	dot++;
	for (i = 0; i < 9; i++) {
		v *= 10;
		if (dot < s + n && *dot >= '0' && *dot <= '9')
			v += *dot++ - '0';
	}
	return v;
}

/* One record, "K payload" (@n bytes at @p).  Junk is skipped. */
static int record(struct parse *ps, const char *p, size_t n)
{
	struct ent *e = &ps->e;
	const char *d = p + 2;
	size_t dn = n - 2;
	char buf[160];
	int rc;

	if (n < 2 || p[1] != ' ')
		return 0;
	if (p[0] == 'S') {
		rc = flush(ps);
		if (rc)
			return rc;
		memset(e, 0, sizeof(*e));
		if (dn >= sizeof(buf))
			return 0;
		memcpy(buf, d, dn);
		buf[dn] = '\0';
		ps->have = sscanf(buf, "%lx %lld %lld %lu %lu %llu", &e->mode,
				  &e->size, &e->mtime, &e->uid, &e->gid,
				  &e->ino) == 6;
		return 0;
	}
	if (!ps->have)
		return 0;
	switch (p[0]) {
	case 'U':
		e->owner = d;
		e->olen = dn;
		break;
	case 'G':
		e->group = d;
		e->glen = dn;
		break;
	case 'T':
		e->nsec = nanos(d, dn);
		break;
	case 'N':
		e->path = d;
		e->plen = dn;
		break;
	case 'L':
		if (S_ISLNK(e->mode) && dn && dn < sizeof(buf) && d[0] != '-') {
			memcpy(buf, d, dn);
			buf[dn] = '\0';
			e->tvalid = sscanf(buf, "%lx", &e->tmode) == 1;
		}
		break;
	case 'R':
		if (S_ISLNK(e->mode)) {
			e->target = d;
			e->tlen = dn;
		}
		break;
	}
	return 0;
}

/*
 * Call @fn for each entry of the script's output @out (@len bytes) whose
 * records carry @nonce.  0, or what @fn returned first when not 0.
 */
static int parse_out(const char *out, size_t len, const char *nonce, ent_fn fn,
		     void *ctx)
{
	struct parse ps = { .fn = fn, .ctx = ctx };
	char needle[NONCE_LEN + 3];
	size_t nl, start, end, rend;
	const char *hit;
	int rc;

	nl = (size_t)snprintf(needle, sizeof(needle), "\n%s ", nonce);
	if (len >= nl - 1 && !memcmp(out, needle + 1, nl - 1)) {
		start = nl - 1;
	} else {
		hit = memmem(out, len, needle, nl);
		if (!hit)
			return 0;
		start = (size_t)(hit - out) + nl;
	}
	for (;;) {
		hit = memmem(out + start, len - start, needle, nl);
		end = hit ? (size_t)(hit - out) : len;
		rend = end;
		/* The last record's own newline (stat's, printf's). */
		if (!hit && rend > start && out[rend - 1] == '\n')
			rend--;
		rc = record(&ps, out + start, rend - start);
		if (rc || !hit)
			break;
		start = end + nl;
	}
	return rc ? rc : flush(&ps);
}

/* --- entries as EntryInfo ------------------------------------------------ */

/* Go's os.FileMode.String() of the Unix mode @m into @out (16 bytes). */
static void go_mode(unsigned long m, char *out)
{
	static const char rwx[] = "rwxrwxrwx";
	char *p = out;
	int i;

	switch (m & S_IFMT) {
	case S_IFDIR:
		*p++ = 'd';
		break;
	case S_IFLNK:
		*p++ = 'L';
		break;
	case S_IFBLK:
	case S_IFCHR:
		*p++ = 'D';
		break;
	case S_IFIFO:
		*p++ = 'p';
		break;
	case S_IFSOCK:
		*p++ = 'S';
		break;
	}
	if (m & S_ISUID)
		*p++ = 'u';
	if (m & S_ISGID)
		*p++ = 'g';
	if ((m & S_IFMT) == S_IFCHR)
		*p++ = 'c';
	if (m & S_ISVTX)
		*p++ = 't';
	if (p == out)
		*p++ = '-';
	for (i = 0; i < 9; i++)
		*p++ = (m & (1ul << (8 - i))) ? rwx[i] : '-';
	*p = '\0';
}

/*
 * @sec, @nsec as RFC 3339 in UTC the way protobuf's JSON writes a
 * Timestamp (0, 3, 6 or 9 fraction digits), years kept within 1-9999.
 */
static void rfc3339(long long sec, long nsec, char *out, size_t n)
{
	struct tm tm;
	time_t t;
	size_t len;

	if (sec < -62135596800LL)
		sec = -62135596800LL;
	if (sec > 253402300799LL)
		sec = 253402300799LL;
	t = (time_t)sec;
	if (!gmtime_r(&t, &tm) ||
	    !(len = strftime(out, n, "%Y-%m-%dT%H:%M:%S", &tm))) {
		snprintf(out, n, "1970-01-01T00:00:00Z");
		return;
	}
	if (nsec <= 0 || nsec >= 1000000000L)
		snprintf(out + len, n - len, "Z");
	else if (nsec % 1000000 == 0)
		snprintf(out + len, n - len, ".%03ldZ", nsec / 1000000);
	else if (nsec % 1000 == 0)
		snprintf(out + len, n - len, ".%06ldZ", nsec / 1000);
	else
		snprintf(out + len, n - len, ".%09ldZ", nsec);
}

static const char *file_type(unsigned long m)
{
	switch (m & S_IFMT) {
	case S_IFREG:
		return "FILE_TYPE_FILE";
	case S_IFDIR:
		return "FILE_TYPE_DIRECTORY";
	default:
		return NULL;
	}
}

/* An owner or group name; busybox's "UNKNOWN" as the number, as envd. */
static json_t *who(const char *s, size_t n, unsigned long id)
{
	char num[24];

	if (!s || !n || (n == 7 && !memcmp(s, "UNKNOWN", 7))) {
		snprintf(num, sizeof(num), "%lu", id);
		return json_string(num);
	}
	return text__json(s, n);
}

/* The last component of @path (@n bytes) and its length. */
static const char *last(const char *path, size_t n, size_t *len)
{
	size_t i = n;

	while (i && path[i - 1] != '/')
		i--;
	if (i == n) { /* "/" (or a trailing slash, which find never gives) */
		*len = n;
		return path;
	}
	*len = n - i;
	return path + i;
}

/* Set @k of @o to @v (stolen); false once anything failed. */
static bool put(json_t *o, const char *k, json_t *v, bool ok)
{
	if (!v)
		return false;
	if (!ok) {
		json_decref(v);
		return false;
	}
	return json_object_set_new(o, k, v) == 0;
}

/* The EntryInfo of @e (a new reference), NULL when out of memory. */
static json_t *entry_json(const struct ent *e)
{
	bool link = S_ISLNK(e->mode), ok = true;
	unsigned long tm = link ? (e->tvalid ? e->tmode : 0) : e->mode;
	json_t *j = json_object();
	const char *name, *type = file_type(tm);
	char perm[16], when[48], size[24];
	size_t nlen;

	if (!j)
		return NULL;
	name = last(e->path, e->plen, &nlen);
	go_mode(e->mode, perm);
	rfc3339(e->mtime, e->nsec, when, sizeof(when));
	snprintf(size, sizeof(size), "%lld", e->size);
	ok = put(j, "name", text__json(name, nlen), ok);
	if (type)
		ok = put(j, "type", json_string(type), ok);
	ok = put(j, "path", text__json(e->path, e->plen), ok);
	ok = put(j, "size", json_string(size), ok);
	ok = put(j, "mode", json_integer((json_int_t)(tm & 0777)), ok);
	ok = put(j, "permissions", json_string(perm), ok);
	ok = put(j, "owner", who(e->owner, e->olen, e->uid), ok);
	ok = put(j, "group", who(e->group, e->glen, e->gid), ok);
	ok = put(j, "modifiedTime", json_string(when), ok);
	if (link)
		ok = put(j, "symlinkTarget",
			 e->tlen ? text__json(e->target, e->tlen) :
				   text__json(e->path, e->plen),
			 ok);
	if (!ok) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/* --- running an operation ------------------------------------------------ */

struct op_out {
	char nonce[NONCE_LEN + 1];
	char *out, *err;
	size_t outlen;
	int status;
};

static void op_release(struct op_out *o)
{
	free(o->out);
	free(o->err);
	o->out = o->err = NULL;
}

/*
 * Run the script's operation @op on @a (and @b, or NULL) in @g.  0 with
 * @o filled (release it), or -1 with a Connect code in *@code and a
 * message in @msg.
 */
static int run_op(struct e2b_server *srv, const struct e2b_guest *g,
		  const char *op, const char *a, const char *b,
		  struct op_out *o, const char **code, char *msg, size_t msglen)
{
	const char *argv[] = { "/bin/sh", "-c",	       script, "sh", op,
			       o->nonce,  link_script, a,      b,    NULL };
	unsigned char rnd[NONCE_LEN / 2];
	char err[512];
	int rc;

	memset(o, 0, sizeof(*o));
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		*code = "internal";
		snprintf(msg, msglen, "getrandom: %s", strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(o->nonce + 2 * i, 3, "%02x", rnd[i]);
	rc = guest__run(srv, g, argv, RUN_MS, OUT_MAX, &o->out, &o->outlen,
			&o->err, &o->status, err, sizeof(err));
	if (rc < 0) {
		op_release(o);
		/* No agent, or it went: the sandbox is going (or gone). */
		*code = rc == -ENOMEM || rc == -EREMOTEIO ? "internal" :
							    "unavailable";
		snprintf(msg, msglen, "the sandbox's agent: %.400s", err);
		return -1;
	}
	if (o->status == 124) { /* guest__run(): the agent's timeout */
		op_release(o);
		*code = "deadline_exceeded";
		snprintf(msg, msglen,
			 "the operation took over %d s in the sandbox (a "
			 "listing too deep?)",
			 RUN_MS / 1000);
		return -1;
	}
	if (o->outlen >= OUT_MAX) {
		op_release(o);
		*code = "out_of_range";
		snprintf(msg, msglen,
			 "the listing is over %u MiB: ask for less depth",
			 OUT_MAX >> 20);
		return -1;
	}
	return 0;
}

/* The first line of a command's stderr, fit for a message. */
static const char *why(const struct op_out *o, char *buf, size_t n)
{
	const char *e = o->err && *o->err ? o->err : "(no message)";
	char line[FILES_SHOWN + 1];
	size_t len = strcspn(e, "\n");

	if (len > FILES_SHOWN)
		len = FILES_SHOWN;
	memcpy(line, e, len);
	line[len] = '\0';
	return files__shown(line, buf, n);
}

/* --- replies ------------------------------------------------------------- */

/* A unary error; @fmt's arguments must be UTF-8 (see files__shown()). */
__attribute__((format(printf, 3, 4))) static int
fail(struct e2b_resp *resp, const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return e2b__reply_json(resp, connect__http_status(code),
			       connect__error(code, msg));
}

/* A server-streaming call's error: 200 with only the END_STREAM. */
static int stream_fail(struct e2b_resp *resp, const char *code, const char *msg)
{
	size_t len;
	uint8_t *b = connect__end_stream(code, msg, &len);
	int rc;

	if (!b)
		return fail(resp, "internal", "out of memory");
	rc = e2b__reply_bytes(resp, 200, "application/connect+json", b, len);
	free(b);
	return rc;
}

/*
 * The path field @key of @req resolved into @out; -1 with the error
 * reply set (invalid_argument).
 */
static int req_path(const json_t *req, const char *key, char *out,
		    struct e2b_resp *resp, bool streaming)
{
	const json_t *v = json_object_get(req, key);
	char err[256];

	if (v && !json_is_string(v)) {
		snprintf(err, sizeof(err), "%s must be a string", key);
		goto bad;
	}
	if (!files__resolve(json_string_value(v), json_string_length(v), out,
			    err, sizeof(err)))
		return 0;
bad:
	if (streaming)
		stream_fail(resp, "invalid_argument", err);
	else
		fail(resp, "invalid_argument", "%s", err);
	return -1;
}

/* --- Stat, MakeDir, Move: one entry --------------------------------------- */

static int first_entry(const struct ent *e, void *ctx)
{
	json_t **out = ctx;

	if (*out)
		return 0;
	*out = entry_json(e);
	return *out ? 1 : -ENOMEM;
}

/* Answer {"entry": the first entry of @o}, or @fallback when none. */
static int reply_entry(struct e2b_resp *resp, const struct op_out *o,
		       json_t *fallback)
{
	json_t *e = NULL;

	if (parse_out(o->out, o->outlen, o->nonce, first_entry, &e) < 0) {
		json_decref(fallback);
		return fail(resp, "internal", "out of memory");
	}
	if (e) {
		json_decref(fallback);
	} else {
		e = fallback;
		if (!e)
			return fail(resp, "not_found",
				    "the entry went away meanwhile");
	}
	return e2b__reply_json(resp, 200, json_pack("{s:o}", "entry", e));
}

static int do_stat(struct e2b_server *srv, const struct e2b_guest *g,
		   const json_t *req, struct e2b_resp *resp)
{
	char path[FILES_PATH_MAX], msg[512], p[FILES_SHOWN + 1];
	const char *code;
	struct op_out o;
	int rc;

	if (req_path(req, "path", path, resp, false))
		return 0;
	if (run_op(srv, g, "stat", path, NULL, &o, &code, msg, sizeof(msg)))
		return fail(resp, code, "%s", msg);
	if (o.status == 3)
		rc = fail(resp, "not_found", "file not found: '%s'",
			  files__shown(path, p, sizeof(p)));
	else if (o.status)
		rc = fail(resp, "internal", "stat '%s': %s",
			  files__shown(path, p, sizeof(p)),
			  why(&o, msg, sizeof(msg)));
	else
		rc = reply_entry(resp, &o, NULL);
	op_release(&o);
	return rc;
}

static int do_make_dir(struct e2b_server *srv, const struct e2b_guest *g,
		       const json_t *req, struct e2b_resp *resp)
{
	char path[FILES_PATH_MAX], msg[512], p[FILES_SHOWN + 1];
	const char *code, *name;
	struct op_out o;
	size_t nlen;
	int rc;

	if (req_path(req, "path", path, resp, false))
		return 0;
	if (run_op(srv, g, "mkdir", path, NULL, &o, &code, msg, sizeof(msg)))
		return fail(resp, code, "%s", msg);
	files__shown(path, p, sizeof(p));
	switch (o.status) {
	case 0:
		name = last(path, strlen(path), &nlen);
		rc = reply_entry(resp, &o,
				 json_pack("{s:o, s:s, s:o}", "name",
					   text__json(name, nlen), "type",
					   "FILE_TYPE_DIRECTORY", "path",
					   text__json(path, strlen(path))));
		break;
	case 5:
		rc = fail(resp, "already_exists",
			  "directory already exists: '%s'", p);
		break;
	case 6:
		rc = fail(resp, "invalid_argument",
			  "path already exists but it is not a directory: "
			  "'%s'",
			  p);
		break;
	default:
		rc = fail(resp, "internal", "cannot make directory '%s': %s", p,
			  why(&o, msg, sizeof(msg)));
	}
	op_release(&o);
	return rc;
}

static int do_move(struct e2b_server *srv, const struct e2b_guest *g,
		   const json_t *req, struct e2b_resp *resp)
{
	char src[FILES_PATH_MAX], dst[FILES_PATH_MAX], msg[512];
	char p[FILES_SHOWN + 1], q[FILES_SHOWN + 1];
	const char *code;
	struct op_out o;
	int rc;

	if (req_path(req, "source", src, resp, false) ||
	    req_path(req, "destination", dst, resp, false))
		return 0;
	if (run_op(srv, g, "move", src, dst, &o, &code, msg, sizeof(msg)))
		return fail(resp, code, "%s", msg);
	files__shown(src, p, sizeof(p));
	files__shown(dst, q, sizeof(q));
	if (o.status == 3)
		rc = fail(resp, "not_found", "source file not found: '%s'", p);
	else if (o.status == 8)
		rc = fail(resp, "invalid_argument",
			  "cannot move '%s' into itself ('%s')", p, q);
	else if (o.status)
		rc = fail(resp, "internal", "cannot move '%s' to '%s': %s", p,
			  q, why(&o, msg, sizeof(msg)));
	else
		rc = reply_entry(resp, &o, NULL);
	op_release(&o);
	return rc;
}

static int do_remove(struct e2b_server *srv, const struct e2b_guest *g,
		     const json_t *req, struct e2b_resp *resp)
{
	char path[FILES_PATH_MAX], msg[512], p[FILES_SHOWN + 1];
	const char *code;
	struct op_out o;
	int rc;

	if (req_path(req, "path", path, resp, false))
		return 0;
	if (run_op(srv, g, "remove", path, NULL, &o, &code, msg, sizeof(msg)))
		return fail(resp, code, "%s", msg);
	if (o.status)
		rc = fail(resp, "internal", "cannot remove '%s': %s",
			  files__shown(path, p, sizeof(p)),
			  why(&o, msg, sizeof(msg)));
	else
		rc = e2b__reply_json(resp, 200, json_object());
	op_release(&o);
	return rc;
}

/* --- ListDir -------------------------------------------------------------- */

struct listed {
	char *key; /* the raw path, for sorting */
	json_t *entry;
};

struct list_ctx {
	struct listed *v;
	size_t n, cap;
};

static int add_listed(const struct ent *e, void *ctx)
{
	struct list_ctx *l = ctx;
	struct listed *v;

	if (l->n == l->cap) {
		v = realloc(l->v, (l->cap ? l->cap * 2 : 64) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = l->cap ? l->cap * 2 : 64;
	}
	l->v[l->n].key = strndup(e->path, e->plen);
	l->v[l->n].entry = entry_json(e);
	if (!l->v[l->n].key || !l->v[l->n].entry) {
		free(l->v[l->n].key);
		json_decref(l->v[l->n].entry);
		return -ENOMEM;
	}
	l->n++;
	return 0;
}

/* WalkDir's order: byte order with '/' before every other byte. */
static int walk_order(const void *a, const void *b)
{
	const unsigned char *x = (const void *)((const struct listed *)a)->key;
	const unsigned char *y = (const void *)((const struct listed *)b)->key;
	int cx, cy;

	while (*x && *x == *y) {
		x++;
		y++;
	}
	cx = !*x ? 0 : *x == '/' ? 1 : *x + 2;
	cy = !*y ? 0 : *y == '/' ? 1 : *y + 2;
	return cx - cy;
}

static void list_release(struct list_ctx *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].key);
		json_decref(l->v[i].entry);
	}
	free(l->v);
}

/*
 * List @path in @g to @depth ("" for all) into @l, sorted.  0, or -1 with
 * a Connect code and message.
 */
static int list(struct e2b_server *srv, const struct e2b_guest *g,
		const char *path, const char *depth, struct list_ctx *l,
		const char **code, char *msg, size_t msglen)
{
	char p[FILES_SHOWN + 1], w[256];
	struct op_out o;
	int rc = -1;

	memset(l, 0, sizeof(*l));
	if (run_op(srv, g, "list", path, depth, &o, code, msg, msglen))
		return -1;
	files__shown(path, p, sizeof(p));
	if (o.status == 3) {
		*code = "not_found";
		snprintf(msg, msglen, "directory not found: '%s'", p);
	} else if (o.status == 4) {
		*code = "invalid_argument";
		snprintf(msg, msglen, "path is not a directory: '%s'", p);
	} else if (o.status) {
		*code = "internal";
		snprintf(msg, msglen, "cannot list '%s': %s", p,
			 why(&o, w, sizeof(w)));
	} else if (parse_out(o.out, o.outlen, o.nonce, add_listed, l)) {
		*code = "internal";
		snprintf(msg, msglen, "out of memory");
	} else {
		qsort(l->v, l->n, sizeof(*l->v), walk_order);
		rc = 0;
	}
	op_release(&o);
	if (rc)
		list_release(l);
	return rc;
}

static int do_list_dir(struct e2b_server *srv, const struct e2b_guest *g,
		       const json_t *req, struct e2b_resp *resp)
{
	const json_t *jd = json_object_get(req, "depth");
	char path[FILES_PATH_MAX], msg[512], depth[24];
	struct list_ctx l;
	const char *code;
	uint64_t d = 0;
	json_t *arr;

	if (req_path(req, "path", path, resp, false))
		return 0;
	if (jd && !json_is_null(jd) && connect__json_uint(jd, UINT32_MAX, &d))
		return fail(resp, "invalid_argument",
			    "depth must be an unsigned 32-bit integer");
	/* busybox's find takes an int; no path is deeper than this. */
	if (d > FILES_PATH_MAX / 2)
		d = FILES_PATH_MAX / 2;
	snprintf(depth, sizeof(depth), "%llu", (unsigned long long)(d ? d : 1));
	if (list(srv, g, path, depth, &l, &code, msg, sizeof(msg)))
		return fail(resp, code, "%s", msg);
	arr = json_array();
	for (size_t i = 0; arr && i < l.n; i++) {
		if (json_array_append(arr, l.v[i].entry)) {
			json_decref(arr);
			arr = NULL;
		}
	}
	list_release(&l);
	if (!arr)
		return fail(resp, "internal", "out of memory");
	return e2b__reply_json(resp, 200, json_pack("{s:o}", "entries", arr));
}

/* --- WatchDir ------------------------------------------------------------- */

/*
 * A watch: WatchDir's (a thread polls and streams) or CreateWatcher's
 * (each GetWatcherEvents polls once and answers the events).
 */
struct watch {
	struct e2b_server *srv;
	const struct e2b_guest *gp; /* &g, or the current request's */
	struct e2b_guest g; /* WatchDir's copy, its record's objects
			       deep-copied */
	char path[FILES_PATH_MAX];
	size_t prefix; /* bytes of an entry's path before its name */
	bool recursive, include_entry;
	uint64_t deadline_ms; /* CLOCK_MONOTONIC; 0: none */
	struct e2b_stream *s; /* the producer's reference (WatchDir) */
	json_t *events; /* GetWatcherEvents' answer while it runs */
	json_t *snap; /* relative name -> {e, t, k, c, i} */
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Whether @name (@n bytes) is an agent's ".NAME.ember-XXXXXX". */
static bool agent_temp(const char *name, size_t n)
{
	return n > 15 && name[0] == '.' && !memcmp(name + n - 13, ".ember-", 7);
}

struct snap_ctx {
	struct watch *w;
	json_t *snap;
};

/* One entry of a listing into the snapshot, keyed by its name there. */
static int add_snap(const struct ent *e, void *ctx)
{
	struct snap_ctx *sc = ctx;
	size_t pre = sc->w->prefix, nlen;
	const char *name;
	char k[96], c[64], ino[24];
	json_t *rel, *o;
	int rc;

	name = last(e->path, e->plen, &nlen);
	if (agent_temp(name, nlen))
		return 0;
	if (e->plen <= pre)
		return 0;
	rel = text__json(e->path + pre, e->plen - pre);
	if (!rel)
		return -ENOMEM;
	snprintf(k, sizeof(k), "%lld %lld %ld", e->size, e->mtime, e->nsec);
	snprintf(c, sizeof(c), "%lo %lu %lu", e->mode & 07777, e->uid, e->gid);
	snprintf(ino, sizeof(ino), "%llu", e->ino);
	o = json_pack("{s:o, s:i, s:s, s:s, s:s}", "e", entry_json(e), "t",
		      (int)(e->mode & S_IFMT), "k", k, "c", c, "i", ino);
	rc = o ? json_object_set_new(sc->snap, json_string_value(rel), o) : -1;
	json_decref(rel);
	return rc ? -ENOMEM : 0;
}

/*
 * A listing of the watched directory as a snapshot (new reference), or
 * NULL with a Connect code and message.
 */
static json_t *snapshot(struct watch *w, const char **code, char *msg,
			size_t msglen)
{
	struct snap_ctx sc = { .w = w, .snap = json_object() };
	char p[FILES_SHOWN + 1], why_buf[256];
	struct op_out o;

	if (!sc.snap) {
		*code = "internal";
		snprintf(msg, msglen, "out of memory");
		return NULL;
	}
	if (run_op(w->srv, w->gp, "list", w->path, w->recursive ? "" : "1", &o,
		   code, msg, msglen)) {
		json_decref(sc.snap);
		return NULL;
	}
	files__shown(w->path, p, sizeof(p));
	if (o.status == 3 || o.status == 4) {
		*code = o.status == 3 ? "not_found" : "invalid_argument";
		snprintf(msg, msglen,
			 o.status == 3 ? "path '%s' not found" :
					 "path '%s' is not a directory",
			 p);
	} else if (o.status) {
		*code = "internal";
		snprintf(msg, msglen, "cannot list '%s': %s", p,
			 why(&o, why_buf, sizeof(why_buf)));
	} else if (parse_out(o.out, o.outlen, o.nonce, add_snap, &sc)) {
		*code = "internal";
		snprintf(msg, msglen, "out of memory");
	} else {
		op_release(&o);
		return sc.snap;
	}
	op_release(&o);
	json_decref(sc.snap);
	return NULL;
}

/* Send one envelope with @msg (stolen).  0, -EPIPE, -ENOMEM. */
static int send_msg(struct watch *w, json_t *msg)
{
	uint8_t *b;
	size_t len;
	int rc;

	if (!msg)
		return -ENOMEM;
	b = connect__envelope(0, msg, &len);
	json_decref(msg);
	if (!b)
		return -ENOMEM;
	rc = e2b_stream__write(w->s, b, len);
	free(b);
	return rc;
}

static int send_event(struct watch *w, const char *name, const char *type,
		      const json_t *snap_ent)
{
	json_t *fs = json_pack("{s:s, s:s}", "name", name, "type", type);
	const json_t *e = json_object_get(snap_ent, "e");

	if (fs && w->include_entry && e)
		json_object_set(fs, "entry", (json_t *)e);
	if (w->events)
		return json_array_append_new(w->events, fs) ? -ENOMEM : 0;
	return send_msg(w, fs ? json_pack("{s:o}", "filesystem", fs) : NULL);
}

static bool same_field(const json_t *a, const json_t *b, const char *k)
{
	return json_equal(json_object_get(a, k), json_object_get(b, k));
}

/*
 * Events between the snapshots @prev and @cur.  0, or -EPIPE / -ENOMEM
 * (stop).
 */
static int diff(struct watch *w, json_t *prev, json_t *cur)
{
	json_t *born = json_object(), *moved = json_object(), *v, *o;
	const char *k, *ino;
	int rc = 0;

	if (!born || !moved) {
		rc = -ENOMEM;
		goto out;
	}
	/* Inodes of the new names, for renames. */
	json_object_foreach(cur, k, v)
	{
		o = json_object_get(prev, k);
		if ((!o || !same_field(o, v, "t")) &&
		    json_object_set_new(
			    born, json_string_value(json_object_get(v, "i")),
			    json_string(k))) {
			rc = -ENOMEM;
			goto out;
		}
	}
	json_object_foreach(prev, k, v)
	{
		o = json_object_get(cur, k);
		if (o && same_field(o, v, "t"))
			continue;
		ino = json_string_value(json_object_get(v, "i"));
		if (json_object_get(born, ino)) {
			rc = send_event(w, k, "EVENT_TYPE_RENAME", NULL);
			if (!rc && json_object_set_new(moved, ino, json_true()))
				rc = -ENOMEM;
		} else {
			rc = send_event(w, k, "EVENT_TYPE_REMOVE", NULL);
		}
		if (rc)
			goto out;
	}
	json_object_foreach(cur, k, v)
	{
		o = json_object_get(prev, k);
		if (!o || !same_field(o, v, "t")) {
			rc = send_event(w, k, "EVENT_TYPE_CREATE", v);
			ino = json_string_value(json_object_get(v, "i"));
			/* envd sees a new file's writes too. */
			if (!rc &&
			    json_integer_value(json_object_get(v, "t")) ==
				    S_IFREG &&
			    !json_object_get(moved, ino) &&
			    strncmp(json_string_value(json_object_get(v, "k")),
				    "0 ", 2))
				rc = send_event(w, k, "EVENT_TYPE_WRITE", v);
		} else {
			if (json_integer_value(json_object_get(v, "t")) !=
				    S_IFDIR &&
			    !same_field(o, v, "k"))
				rc = send_event(w, k, "EVENT_TYPE_WRITE", v);
			if (!rc && !same_field(o, v, "c"))
				rc = send_event(w, k, "EVENT_TYPE_CHMOD", v);
		}
		if (rc)
			goto out;
	}
out:
	json_decref(born);
	json_decref(moved);
	return rc;
}

static void watch_free(struct watch *w)
{
	if (!w)
		return;
	record__release(&w->g.rec);
	json_decref(w->snap);
	free(w);
}

static void *watch_main(void *arg)
{
	struct watch *w = arg;
	const char *code = NULL;
	char msg[512] = "";
	json_t *cur;
	uint8_t *end;
	uint64_t t0, pause_ms = WATCH_POLL_MS;
	size_t len;
	int rc;

	while (!e2b_stream__gone(w->s)) {
		t0 = now_ms();
		while (now_ms() - t0 < pause_ms && !e2b_stream__gone(w->s))
			usleep(50000);
		if (e2b_stream__gone(w->s))
			break;
		if (w->deadline_ms && now_ms() >= w->deadline_ms) {
			code = "deadline_exceeded";
			snprintf(msg, sizeof(msg),
				 "the watch ran its time out "
				 "(Connect-Timeout-Ms)");
			break;
		}
		t0 = now_ms();
		cur = snapshot(w, &code, msg, sizeof(msg));
		/* A big tree: the guest busy at most a third of the time
		   (a small one's listing is slow only on a busy host). */
		pause_ms = WATCH_POLL_MS;
		if (cur && json_object_size(cur) > WATCH_BIG &&
		    2 * (now_ms() - t0) > pause_ms)
			pause_ms = 2 * (now_ms() - t0);
		if (!cur) {
			if (strcmp(code, "not_found") &&
			    strcmp(code, "invalid_argument"))
				break;
			/* The directory went: its entries went with it. */
			cur = json_object();
			if (cur)
				diff(w, w->snap, cur);
			json_decref(cur);
			code = "not_found";
			files__shown(w->path, msg, sizeof(msg) / 2);
			snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
				 ": the watched directory is gone");
			break;
		}
		rc = diff(w, w->snap, cur);
		if (rc) {
			json_decref(cur);
			code = rc == -EPIPE ? NULL : "internal";
			snprintf(msg, sizeof(msg), "out of memory");
			break;
		}
		json_decref(w->snap);
		w->snap = cur;
	}
	if (!e2b_stream__gone(w->s)) {
		end = connect__end_stream(code, msg, &len);
		if (end)
			e2b_stream__write(w->s, end, len);
		free(end);
	}
	e2b_stream__end(w->s);
	e2b_stream__put(w->s);
	watch_free(w);
	return NULL;
}

static int do_watch_dir(struct e2b_server *srv, const struct e2b_req *r,
			const struct e2b_guest *g, const json_t *req,
			struct e2b_resp *resp)
{
	uint64_t ka_s = e2b__header_num(r, "Keepalive-Ping-Interval", 6,
					KEEPALIVE_DEFAULT);
	uint64_t timeout_ms = e2b__header_num(r, "Connect-Timeout-Ms", 10, 0);
	json_t *ka = NULL, *start = NULL;
	struct watch *w = calloc(1, sizeof(*w));
	const char *code = "internal";
	char msg[512] = "out of memory";
	uint8_t *kab = NULL;
	pthread_t th;
	size_t klen;
	int rc;

	if (!w)
		return stream_fail(resp, code, msg);
	if (req_path(req, "path", w->path, resp, true)) {
		free(w);
		return 0;
	}
	w->srv = srv;
	w->gp = &w->g;
	w->g = *g;
	w->g.rec.metadata = json_deep_copy(g->rec.metadata);
	w->g.rec.env_vars = json_deep_copy(g->rec.env_vars);
	w->recursive = json_is_true(json_object_get(req, "recursive"));
	w->include_entry = json_is_true(json_object_get(req, "includeEntry"));
	w->prefix = strcmp(w->path, "/") ? strlen(w->path) + 1 : 1;
	if (timeout_ms)
		w->deadline_ms = now_ms() + timeout_ms;
	if ((g->rec.metadata && !w->g.rec.metadata) ||
	    (g->rec.env_vars && !w->g.rec.env_vars))
		goto fail;
	/* The first listing, before "start": no change after it is lost. */
	w->snap = snapshot(w, &code, msg, sizeof(msg));
	if (!w->snap)
		goto fail;
	code = "internal";
	snprintf(msg, sizeof(msg), "out of memory");
	ka = json_pack("{s:{}}", "keepalive");
	kab = ka ? connect__envelope(0, ka, &klen) : NULL;
	if (!kab)
		goto fail;
	if (ka_s < 1)
		ka_s = 1;
	if (ka_s > 3600)
		ka_s = 3600;
	w->s = e2b_stream__new(kab, klen, (unsigned int)(ka_s * 1000));
	start = json_pack("{s:{}}", "start");
	if (!w->s || !start)
		goto fail;
	rc = send_msg(w, start); /* takes start */
	start = NULL;
	if (rc)
		goto fail;
	e2b__reply_stream(resp, "application/connect+json", w->s);
	if (pthread_create(&th, NULL, watch_main, w) == 0) {
		pthread_detach(th);
	} else {
		/* The client got "start": end its stream with the error. */
		uint8_t *end = connect__end_stream(
			"internal", "cannot start a watch thread", &klen);

		if (end)
			e2b_stream__write(w->s, end, klen);
		free(end);
		e2b_stream__end(w->s);
		e2b_stream__put(w->s);
		w->s = NULL;
		watch_free(w);
	}
	json_decref(ka);
	free(kab);
	return 0;
fail:
	if (w->s) { /* never given to a response: both references */
		e2b_stream__put(w->s);
		e2b_stream__put(w->s);
	}
	json_decref(start);
	json_decref(ka);
	free(kab);
	watch_free(w);
	return stream_fail(resp, code, msg);
}

/* --- CreateWatcher, GetWatcherEvents, RemoveWatcher ------------------------ */

#define MAX_WATCHERS	64
#define WATCHER_IDLE_MS (10 * 60 * 1000) /* unpolled this long: dropped */
#define WATCHER_ID_LEN	32 /* hex digits */

struct watcher {
	char id[WATCHER_ID_LEN + 1]; /* "": a free slot */
	char sandbox[SANDBOX_ID_LEN + 1];
	struct watch *w; /* NULL while a GetWatcherEvents uses it */
	uint64_t used_ms;
};

/*
 * The server's watchers.  Global, the one table of this file: a watcher
 * outlives the request that made it and struct e2b_server has no slot
 * for it; watchers_lock guards it (never held across guest calls).
 */
static pthread_mutex_t watchers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct watcher watchers[MAX_WATCHERS];

/* The slot of watcher @id of sandbox @sb, or NULL.  Under the lock. */
static struct watcher *watcher_find(const char *id, const char *sb)
{
	for (size_t i = 0; id && *id && i < MAX_WATCHERS; i++)
		if (!strcmp(watchers[i].id, id) &&
		    !strcmp(watchers[i].sandbox, sb))
			return &watchers[i];
	return NULL;
}

/*
 * A slot for a new watcher: a free one, else the longest unused idle
 * one (its watcher freed).  NULL when all are in use.  Under the lock.
 */
static struct watcher *watcher_slot(void)
{
	struct watcher *best = NULL;
	uint64_t now = now_ms();

	for (size_t i = 0; i < MAX_WATCHERS; i++) {
		struct watcher *x = &watchers[i];

		if (x->id[0] && x->w && now - x->used_ms > WATCHER_IDLE_MS) {
			watch_free(x->w);
			memset(x, 0, sizeof(*x));
		}
		if (!x->id[0])
			return x;
		if (x->w && (!best || x->used_ms < best->used_ms))
			best = x;
	}
	if (best) {
		watch_free(best->w);
		memset(best, 0, sizeof(*best));
	}
	return best;
}

static int do_create_watcher(struct e2b_server *srv, const struct e2b_guest *g,
			     const json_t *req, struct e2b_resp *resp)
{
	struct watch *w = calloc(1, sizeof(*w));
	unsigned char rnd[WATCHER_ID_LEN / 2];
	char msg[512], id[WATCHER_ID_LEN + 1];
	struct watcher *x;
	const char *code;

	if (!w)
		return fail(resp, "internal", "out of memory");
	if (req_path(req, "path", w->path, resp, false)) {
		free(w);
		return 0;
	}
	w->srv = srv;
	w->gp = g;
	w->recursive = json_is_true(json_object_get(req, "recursive"));
	w->include_entry = json_is_true(json_object_get(req, "includeEntry"));
	w->prefix = strcmp(w->path, "/") ? strlen(w->path) + 1 : 1;
	w->snap = snapshot(w, &code, msg, sizeof(msg));
	if (!w->snap) {
		watch_free(w);
		return fail(resp, code, "%s", msg);
	}
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		watch_free(w);
		return fail(resp, "internal", "getrandom failed");
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(id + 2 * i, 3, "%02x", rnd[i]);
	w->gp = NULL;
	pthread_mutex_lock(&watchers_lock);
	x = watcher_slot();
	if (x) {
		memcpy(x->id, id, sizeof(x->id));
		snprintf(x->sandbox, sizeof(x->sandbox), "%s", g->info.id);
		x->w = w;
		x->used_ms = now_ms();
	}
	pthread_mutex_unlock(&watchers_lock);
	if (!x) {
		watch_free(w);
		return fail(resp, "resource_exhausted",
			    "%d watchers are being polled: remove one first",
			    MAX_WATCHERS);
	}
	return e2b__reply_json(resp, 200, json_pack("{s:s}", "watcherId", id));
}

static int do_get_watcher_events(struct e2b_server *srv,
				 const struct e2b_guest *g, const json_t *req,
				 struct e2b_resp *resp)
{
	const char *id = json_string_value(json_object_get(req, "watcherId"));
	const char *code = NULL;
	struct watcher *x;
	struct watch *w;
	json_t *cur, *events;
	char msg[512] = "";
	bool gone;
	int rc = 0;

	pthread_mutex_lock(&watchers_lock);
	x = watcher_find(id, g->info.id);
	w = x ? x->w : NULL;
	if (w)
		x->w = NULL; /* busy */
	pthread_mutex_unlock(&watchers_lock);
	if (!x)
		return fail(resp, "not_found", "no such watcher");
	if (!w)
		return fail(resp, "failed_precondition",
			    "the watcher is being polled already");
	events = json_array();
	w->srv = srv;
	w->gp = g;
	w->events = events;
	cur = events ? snapshot(w, &code, msg, sizeof(msg)) : NULL;
	/* A directory that went: its entries' events, then no watcher. */
	gone = !cur && code && !strcmp(code, "not_found");
	if (cur || gone) {
		json_t *now = cur ? cur : json_object();

		rc = now ? diff(w, w->snap, now) : -ENOMEM;
		json_decref(w->snap);
		w->snap = now;
	}
	w->events = NULL;
	w->gp = NULL;
	pthread_mutex_lock(&watchers_lock);
	if (!x->w && !strcmp(x->id, id)) { /* not removed meanwhile */
		if (gone) {
			memset(x, 0, sizeof(*x));
		} else {
			x->w = w;
			x->used_ms = now_ms();
			w = NULL;
		}
	}
	pthread_mutex_unlock(&watchers_lock);
	watch_free(w);
	if (!events || rc) {
		json_decref(events);
		return fail(resp, "internal", "out of memory");
	}
	if (!cur && !(gone && json_array_size(events))) {
		json_decref(events);
		return fail(resp, code ? code : "internal", "%s", msg);
	}
	return e2b__reply_json(resp, 200, json_pack("{s:o}", "events", events));
}

static int do_remove_watcher(const struct e2b_guest *g, const json_t *req,
			     struct e2b_resp *resp)
{
	const char *id = json_string_value(json_object_get(req, "watcherId"));
	struct watch *w = NULL;
	struct watcher *x;

	pthread_mutex_lock(&watchers_lock);
	x = watcher_find(id, g->info.id);
	if (x) {
		/* A busy one is freed by its GetWatcherEvents. */
		w = x->w;
		memset(x, 0, sizeof(*x));
	}
	pthread_mutex_unlock(&watchers_lock);
	watch_free(w);
	if (!x)
		return fail(resp, "not_found", "no such watcher");
	return e2b__reply_json(resp, 200, json_object());
}

/* --- the service --------------------------------------------------------- */

int filesystem__handle(struct e2b_server *srv, const struct e2b_req *r,
		       struct e2b_guest *g, struct e2b_resp *resp)
{
	const char *m = r->path + strlen(PREFIX), *code = NULL;
	bool streaming = !strcmp(m, "WatchDir");
	char err[512];
	json_t *req;
	int rc;

	if (strcmp(r->method, "POST"))
		return fail(resp, "unimplemented",
			    "Connect calls are POST requests");
	if (!streaming && strcmp(m, "Stat") && strcmp(m, "ListDir") &&
	    strcmp(m, "MakeDir") && strcmp(m, "Move") && strcmp(m, "Remove") &&
	    strcmp(m, "CreateWatcher") && strcmp(m, "GetWatcherEvents") &&
	    strcmp(m, "RemoveWatcher")) {
		files__shown(m, err, sizeof(err));
		return fail(resp, "unimplemented",
			    "filesystem.Filesystem has no method %s", err);
	}
	if (files__user_ok(r, NULL, err, sizeof(err)))
		return streaming ? stream_fail(resp, "unauthenticated", err) :
				   fail(resp, "unauthenticated", "%s", err);
	req = r->body ? connect__request(r->body, r->len, streaming, &code, err,
					 sizeof(err)) :
			NULL;
	if (!req || !json_is_object(req)) {
		if (req || !code) {
			code = "invalid_argument";
			snprintf(err, sizeof(err),
				 "the request is not a JSON object");
		}
		json_decref(req);
		return streaming ? stream_fail(resp, code, err) :
				   fail(resp, code, "%s", err);
	}
	if (streaming)
		rc = do_watch_dir(srv, r, g, req, resp);
	else if (!strcmp(m, "Stat"))
		rc = do_stat(srv, g, req, resp);
	else if (!strcmp(m, "ListDir"))
		rc = do_list_dir(srv, g, req, resp);
	else if (!strcmp(m, "MakeDir"))
		rc = do_make_dir(srv, g, req, resp);
	else if (!strcmp(m, "Move"))
		rc = do_move(srv, g, req, resp);
	else if (!strcmp(m, "Remove"))
		rc = do_remove(srv, g, req, resp);
	else if (!strcmp(m, "CreateWatcher"))
		rc = do_create_watcher(srv, g, req, resp);
	else if (!strcmp(m, "GetWatcherEvents"))
		rc = do_get_watcher_events(srv, g, req, resp);
	else
		rc = do_remove_watcher(g, req, resp);
	json_decref(req);
	return rc;
}
