// SPDX-License-Identifier: Apache-2.0
/*
 * File operations run in the guest (guest_fs.h): one busybox shell script
 * run through the agent (guest_run.h) with every path as an argument.
 * Entries come back from `stat -c FORMAT` (one entry) or `find ... -exec
 * stat -c FORMAT {} +` (a listing), plus readlink for symbolic links, as
 * guest_stat.h's records under a random nonce fresh for the call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "../../guest-init/protocol.h"
#include "guest_fs.h"
#include "guest_run.h"

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

void guest_fs__release(struct fs_op *o)
{
	free(o->out);
	free(o->err);
	o->out = o->err = NULL;
}

int guest_fs__parse(const struct fs_op *o, fs_ent_fn fn, void *ctx)
{
	return guest_stat__parse(o->out, o->outlen, o->nonce, fn, ctx);
}

struct entries {
	struct fs_ent *v;
	size_t n, cap;
};

static int add_entry(const struct fs_ent *e, void *ctx)
{
	struct entries *l = ctx;
	struct fs_ent *v;

	if (l->n == l->cap) {
		v = realloc(l->v, (l->cap ? l->cap * 2 : 64) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = l->cap ? l->cap * 2 : 64;
	}
	l->v[l->n++] = *e;
	return 0;
}

int guest_fs__entries(const struct fs_op *o, struct fs_ent **v, size_t *n)
{
	struct entries l = { 0 };

	if (guest_fs__parse(o, add_entry, &l)) {
		free(l.v);
		return -ENOMEM;
	}
	*v = l.v;
	*n = l.n;
	return 0;
}

/*
 * A write as the user (guest_fs__put()): $1 the path; stdin the bytes.
 * Exit 3: a directory; 4: the parents could not be made; 5: the file
 * could not be opened for writing; 6: not a regular file; 7: writing
 * failed (stderr says why).
 */
static const char put_script[] =
	"PATH=/usr/sbin:/usr/bin:/sbin:/bin\n"
	"p=$1 d=${1%/*}\n"
	"[ -d \"$p\" ] && exit 3\n"
	"if [ -e \"$p\" ] && [ ! -f \"$p\" ]; then exit 6; fi\n"
	"umask 022\n"
	"[ -d \"${d:-/}\" ] || mkdir -p -- \"${d:-/}\" || exit 4\n"
	"{ cat || exit 7; } >\"$p\" || exit 5\n"
	"exit 0\n";

/*
 * Run @argv (a script's) as @user with @in_fd (0: none) as its stdin,
 * @timeout_ms at most, its stdout (GUEST_FS_OUT_MAX at most) and status
 * into @o, whose nonce is made here.
 */
static int run_script(struct pool *p, const struct sandbox_info *sb,
		      int connect_ms, const char *user, int in_fd,
		      uint32_t timeout_ms, const char **argv, struct fs_op *o,
		      char *err, size_t errlen)
{
	const struct guest_cmd cmd = {
		.argv = argv,
		.cwd = "/",
		.user = user,
		.in_fd = in_fd,
		.timeout_ms = timeout_ms,
		.out_max = GUEST_FS_OUT_MAX,
	};
	struct guest_output out;
	int rc;

	rc = guest_run__capture(p, sb, connect_ms, &cmd, &out, err, errlen);
	if (rc < 0)
		return rc;
	o->out = out.out;
	o->outlen = out.outlen;
	o->err = out.err;
	switch (out.res.kind) {
	case EMBER_AGENT_EXITED:
		o->status = out.res.code;
		break;
	case EMBER_AGENT_SIGNALLED:
		o->status = 128 + out.res.code;
		break;
	default:
		o->status = 124;
	}
	if (o->status == 124) { /* the agent's timeout */
		guest_fs__release(o);
		snprintf(err, errlen, "the operation took over %u s",
			 (unsigned int)(timeout_ms / 1000));
		return -ETIME;
	}
	if (o->outlen >= GUEST_FS_OUT_MAX) {
		guest_fs__release(o);
		snprintf(err, errlen, "the output is over %u MiB",
			 GUEST_FS_OUT_MAX >> 20);
		return -EFBIG;
	}
	return 0;
}

/* A fresh random nonce into @o (cleared first). */
static int new_op(struct fs_op *o, char *err, size_t errlen)
{
	unsigned char rnd[GUEST_NONCE_LEN / 2];
	int rc;

	memset(o, 0, sizeof(*o));
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		rc = -errno;
		snprintf(err, errlen, "getrandom: %s", strerror(errno));
		return rc;
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(o->nonce + 2 * i, 3, "%02x", rnd[i]);
	return 0;
}

int guest_fs__run(struct pool *p, const struct sandbox_info *sb, int connect_ms,
		  const char *user, const char *op, const char *a,
		  const char *b, struct fs_op *o, char *err, size_t errlen)
{
	const char *argv[] = { "/bin/sh", "-c",	       script, "sh", op,
			       o->nonce,  link_script, a,      b,    NULL };
	int rc;

	rc = new_op(o, err, errlen);
	if (rc)
		return rc;
	return run_script(p, sb, connect_ms, user, 0, GUEST_FS_RUN_MS, argv, o,
			  err, errlen);
}

int guest_fs__put(struct pool *p, const struct sandbox_info *sb, int connect_ms,
		  const char *user, int in_fd, const char *path,
		  struct fs_op *o, char *err, size_t errlen)
{
	const char *argv[] = { "/bin/sh", "-c", put_script, "sh", path, NULL };
	int rc;

	if (in_fd <= 0 || !path || path[0] != '/') {
		snprintf(err, errlen, "guest_fs__put: bad arguments");
		return -EINVAL;
	}
	rc = new_op(o, err, errlen);
	if (rc)
		return rc;
	return run_script(p, sb, connect_ms, user, in_fd, GUEST_FS_PUT_MS, argv,
			  o, err, errlen);
}
