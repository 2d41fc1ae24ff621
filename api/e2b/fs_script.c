// SPDX-License-Identifier: Apache-2.0
/*
 * envd's file operations (fs_script.h): the sandbox library's
 * (../sandbox/guest_fs.h), its errors as Connect codes and its entries as
 * EntryInfo.  Entries follow envd's (packages/shared/pkg/filesystem):
 * lstat's size, time and Go-style permissions ("-rw-r--r--",
 * "drwxr-xr-x", "Lrwxrwxrwx"); a symbolic link has its target's type and
 * permission bits and symlinkTarget = the resolved path (its own path
 * when that fails); other file types have no type (FILE_TYPE_UNSPECIFIED:
 * the SDK leaves them out of lists).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../sandbox/guest_stat.h"
#include "../sandbox/utf8.h"
#include "envd_path.h"
#include "fs_script.h"

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
	name = guest_stat__last(e->path, e->plen, &nlen);
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

int fs_script__run(struct e2b_server *srv, const struct e2b_guest *g,
		   const char *op, const char *a, const char *b,
		   struct fs_op *o, const char **code, char *msg, size_t msglen)
{
	char err[512];
	int rc;

	rc = guest_fs__run(srv->pool, &g->info, E2B_AGENT_TIMEOUT_MS,
			   g->user[0] ? g->user : NULL, op, a, b, o, err,
			   sizeof(err));
	/*
	 * Its connection may be in the pool now: noted for the sweep, as
	 * guest__agent_done() notes (a note too many costs nothing).
	 */
	guest__note_pooled(g);
	switch (rc) {
	case 0:
		return 0;
	case -ETIME:
		*code = "deadline_exceeded";
		snprintf(msg, msglen,
			 "the operation took over %d s in the sandbox (a "
			 "listing too deep?)",
			 GUEST_FS_RUN_MS / 1000);
		break;
	case -EFBIG:
		*code = "out_of_range";
		snprintf(msg, msglen,
			 "the listing is over %u MiB: ask for less depth",
			 GUEST_FS_OUT_MAX >> 20);
		break;
	case -EREMOTEIO:
		/* It could not start: the user (no such account). */
		*code = "permission_denied";
		snprintf(msg, msglen, "cannot run as user '%.64s': %.400s",
			 g->user[0] ? g->user : "(the default)", err);
		break;
	default:
		/* No agent, or it went: the sandbox is going (or gone). */
		*code = rc == -ENOMEM ? "internal" : "unavailable";
		snprintf(msg, msglen, "the sandbox's agent: %.400s", err);
	}
	return -1;
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

const char *fs_script__code(const struct fs_op *o)
{
	static const struct {
		const char *text, *code;
	} map[] = {
		{ "Not a directory", "invalid_argument" },
		{ "Permission denied", "permission_denied" },
		{ "Operation not permitted", "permission_denied" },
		{ "Read-only file system", "permission_denied" },
		{ "No such file or directory", "permission_denied" },
		{ "nonexistent directory", "permission_denied" },
		{ "Directory nonexistent", "permission_denied" }, /* dash */
		{ "No space left on device", "resource_exhausted" },
		{ "Disk quota exceeded", "resource_exhausted" },
	};
	const char *e = o->err ? o->err : "";
	size_t len = strcspn(e, "\n");

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (memmem(e, len, map[i].text, strlen(map[i].text)))
			return map[i].code;
	}
	return "internal";
}
