// SPDX-License-Identifier: Apache-2.0
/*
 * The file operations of envd's filesystem service as run in the guest
 * (fs_script.h): each is one busybox shell script run through the agent
 * (e2b.h guest__run()) with every path as an argument, never in the
 * script's text.  Entries come back from `stat -c FORMAT` (one entry) or
 * `find ... -exec stat -c FORMAT {} +` (a listing), plus readlink for
 * symbolic links, as records that each begin, at the start of the output
 * or after a newline, with a random nonce fresh for the call: "<nonce>
 * <kind> <payload>".  A payload ends where the next record begins, so
 * file names may hold newlines and anything else; a name that happened to
 * hold "\n<nonce> " could only confuse the caller's own listing, never the
 * server (the parser is bounded by the output's length).
 *
 * Entries follow envd's (packages/shared/pkg/filesystem): lstat's size,
 * time and Go-style permissions ("-rw-r--r--", "drwxr-xr-x",
 * "Lrwxrwxrwx"); a symbolic link has its target's type and permission
 * bits and symlinkTarget = the resolved path (its own path when that
 * fails); other file types have no type (FILE_TYPE_UNSPECIFIED: the SDK
 * leaves them out of lists).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "../sandbox/utf8.h"
#include "envd_path.h"
#include "fs_script.h"

#define RUN_MS	60000 /* one operation in the guest, at most */
#define OUT_MAX (32u << 20) /* bytes of a listing */

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

struct parse {
	struct fs_ent e;
	bool have; /* e holds an S record */
	fs_ent_fn fn;
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
	struct fs_ent *e = &ps->e;
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

int fs_script__parse(const struct fs_op *o, fs_ent_fn fn, void *ctx)
{
	const char *out = o->out, *nonce = o->nonce;
	size_t len = o->outlen;
	struct parse ps = { .fn = fn, .ctx = ctx };
	char needle[FS_NONCE_LEN + 3];
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
	return utf8__json(s, n);
}

const char *fs_script__last(const char *path, size_t n, size_t *len)
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

json_t *fs_script__entry_json(const struct fs_ent *e)
{
	bool link = S_ISLNK(e->mode), ok = true;
	unsigned long tm = link ? (e->tvalid ? e->tmode : 0) : e->mode;
	json_t *j = json_object();
	const char *name, *type = file_type(tm);
	char perm[16], when[48], size[24];
	size_t nlen;

	if (!j)
		return NULL;
	name = fs_script__last(e->path, e->plen, &nlen);
	go_mode(e->mode, perm);
	rfc3339(e->mtime, e->nsec, when, sizeof(when));
	snprintf(size, sizeof(size), "%lld", e->size);
	ok = put(j, "name", utf8__json(name, nlen), ok);
	if (type)
		ok = put(j, "type", json_string(type), ok);
	ok = put(j, "path", utf8__json(e->path, e->plen), ok);
	ok = put(j, "size", json_string(size), ok);
	ok = put(j, "mode", json_integer((json_int_t)(tm & 0777)), ok);
	ok = put(j, "permissions", json_string(perm), ok);
	ok = put(j, "owner", who(e->owner, e->olen, e->uid), ok);
	ok = put(j, "group", who(e->group, e->glen, e->gid), ok);
	ok = put(j, "modifiedTime", json_string(when), ok);
	if (link)
		ok = put(j, "symlinkTarget",
			 e->tlen ? utf8__json(e->target, e->tlen) :
				   utf8__json(e->path, e->plen),
			 ok);
	if (!ok) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/* --- running an operation ------------------------------------------------ */

void fs_script__release(struct fs_op *o)
{
	free(o->out);
	free(o->err);
	o->out = o->err = NULL;
}

int fs_script__run(struct e2b_server *srv, const struct e2b_guest *g,
		   const char *op, const char *a, const char *b,
		   struct fs_op *o, const char **code, char *msg, size_t msglen)
{
	const char *argv[] = { "/bin/sh", "-c",	       script, "sh", op,
			       o->nonce,  link_script, a,      b,    NULL };
	unsigned char rnd[FS_NONCE_LEN / 2];
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
		fs_script__release(o);
		/* No agent, or it went: the sandbox is going (or gone). */
		*code = rc == -ENOMEM || rc == -EREMOTEIO ? "internal" :
							    "unavailable";
		snprintf(msg, msglen, "the sandbox's agent: %.400s", err);
		return -1;
	}
	if (o->status == 124) { /* guest__run(): the agent's timeout */
		fs_script__release(o);
		*code = "deadline_exceeded";
		snprintf(msg, msglen,
			 "the operation took over %d s in the sandbox (a "
			 "listing too deep?)",
			 RUN_MS / 1000);
		return -1;
	}
	if (o->outlen >= OUT_MAX) {
		fs_script__release(o);
		*code = "out_of_range";
		snprintf(msg, msglen,
			 "the listing is over %u MiB: ask for less depth",
			 OUT_MAX >> 20);
		return -1;
	}
	return 0;
}

const char *fs_script__why(const struct fs_op *o, char *buf, size_t n)
{
	const char *e = o->err && *o->err ? o->err : "(no message)";
	char line[ENVD_SHOWN + 1];
	size_t len = strcspn(e, "\n");

	if (len > ENVD_SHOWN)
		len = ENVD_SHOWN;
	memcpy(line, e, len);
	line[len] = '\0';
	return envd_path__shown(line, buf, n);
}
