// SPDX-License-Identifier: Apache-2.0
/* emberctl cp: one file into a sandbox or out of it (ID:PATH). */

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "help.h"

#define FILE_IDLE_MS 120000 /* cp: give up when no byte moves this long */

/*
 * cp's temporary file, removed by the signal handler if emberctl is
 * stopped mid-copy (the one piece of global state, for that handler).
 */
static char cp_tmp[PATH_MAX];

static void cp_stop(int sig)
{
	if (cp_tmp[0])
		unlink(cp_tmp);
	_exit(128 + sig);
}

/* Is @arg ID:PATH?  Then split it: the part before ':' has no '/'. */
static int split_remote(char *arg, char **ref, char **path)
{
	char *colon = strchr(arg, ':');

	if (!colon || colon == arg || memchr(arg, '/', (size_t)(colon - arg)))
		return 0;
	*colon = '\0';
	*ref = arg;
	*path = colon + 1;
	return 1;
}

/*
 * Not ID:PATH, but meant as one?  "a/b:/tmp/x" has a ':' after a part
 * that is no path (a local path with ':' starts with '/' or '.' there);
 * returns the length of that would-be id, else 0.
 */
static int bad_ref(const char *arg)
{
	const char *colon = strchr(arg, ':');

	if (!colon || colon == arg || arg[0] == '/' || arg[0] == '.')
		return 0;
	return (int)(colon - arg);
}

/* The last component of @p (trailing slashes ignored) in @out. */
static int base_name(const char *p, char *out, size_t outsz)
{
	size_t len = strlen(p);
	const char *b;

	while (len > 1 && p[len - 1] == '/')
		len--;
	for (b = p + len; b > p && b[-1] != '/'; b--)
		;
	len -= (size_t)(b - p);
	if (!len || len >= outsz || (len == 1 && b[0] == '/') ||
	    (len == 1 && b[0] == '.') || (len == 2 && !strncmp(b, "..", 2)))
		return -1;
	memcpy(out, b, len);
	out[len] = '\0';
	return 0;
}

static int cp_in(struct agent_client *c, const char *src, const char *gdst)
{
	char base[NAME_MAX + 1], path[PATH_MAX];
	size_t len = strlen(gdst);
	struct stat st;
	uint32_t mode;
	int fd, rc;

	fd = open(src, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "emberctl: %s: %s\n", src, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	if (S_ISDIR(st.st_mode)) {
		fprintf(stderr,
			"emberctl: %s: copying directories is not "
			"supported\n",
			src);
		close(fd);
		return 1;
	}
	if (base_name(src, base, sizeof(base)) < 0)
		snprintf(base, sizeof(base), "file");
	/* A directory destination gets the source's name. */
	if (gdst[len - 1] == '/')
		snprintf(path, sizeof(path), "%s%s", gdst, base);
	else
		snprintf(path, sizeof(path), "%s", gdst);
	/* A device or FIFO source has no mode a file should get. */
	mode = S_ISREG(st.st_mode) ? st.st_mode & 07777 : 0644;
	rc = agent_client__write_file(c, fd, path, mode, FILE_IDLE_MS);
	if (rc == -EREMOTEIO && agent_client__guest_errno(c) == EISDIR &&
	    gdst[len - 1] != '/' && lseek(fd, 0, SEEK_SET) == 0) {
		snprintf(path, sizeof(path), "%s/%s", gdst, base);
		rc = agent_client__write_file(c, fd, path, mode, FILE_IDLE_MS);
	}
	close(fd);
	if (rc < 0) {
		fprintf(stderr, "emberctl: copying to %s: %s\n", path,
			agent_client__error(c));
		return 1;
	}
	return 0;
}

/* To a device or FIFO (/dev/null, /dev/stdout): written in place. */
static int cp_out_in_place(struct agent_client *c, const char *gsrc,
			   const char *path)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC), rc;

	if (fd < 0) {
		fprintf(stderr, "emberctl: %s: %s\n", path, strerror(errno));
		return 1;
	}
	rc = agent_client__read_file(c, gsrc, fd, FILE_IDLE_MS);
	if (rc < 0)
		fprintf(stderr, "emberctl: copying %s: %s\n", gsrc,
			agent_client__error(c));
	if (close(fd) < 0 && rc == 0) {
		fprintf(stderr, "emberctl: %s: %s\n", path, strerror(errno));
		rc = -EIO;
	}
	return rc < 0 ? 1 : 0;
}

static int cp_out(struct agent_client *c, const char *gsrc, const char *dst)
{
	char base[NAME_MAX + 1], path[PATH_MAX], dir[PATH_MAX], name[PATH_MAX];
	size_t len = strlen(dst);
	struct stat st;
	mode_t mask, mode;
	int fd, rc;

	if (base_name(gsrc, base, sizeof(base)) < 0 ||
	    gsrc[strlen(gsrc) - 1] == '/') {
		fprintf(stderr, "emberctl: %s: not a file name\n", gsrc);
		return 1;
	}
	/* A directory destination gets the source's name. */
	if (dst[len - 1] == '/' || (stat(dst, &st) == 0 && S_ISDIR(st.st_mode)))
		rc = snprintf(path, sizeof(path), "%s%s%s", dst,
			      dst[len - 1] == '/' ? "" : "/", base);
	else
		rc = snprintf(path, sizeof(path), "%s", dst);
	if (rc < 0 || (size_t)rc >= sizeof(path)) {
		fprintf(stderr, "emberctl: %s: path too long\n", dst);
		return 1;
	}
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return cp_out_in_place(c, gsrc, path);
	/* Through a symbolic link: the file it names is replaced. */
	if (realpath(path, dir))
		snprintf(path, sizeof(path), "%s", dir);
	snprintf(dir, sizeof(dir), "%s", path);
	snprintf(name, sizeof(name), "%s", path);
	rc = snprintf(cp_tmp, sizeof(cp_tmp), "%s/.%s.emberctl-XXXXXX",
		      dirname(dir), basename(name));
	if (rc < 0 || (size_t)rc >= sizeof(cp_tmp)) {
		cp_tmp[0] = '\0';
		fprintf(stderr, "emberctl: %s: path too long\n", path);
		return 1;
	}
	fd = mkostemp(cp_tmp, O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "emberctl: %s: %s\n", path, strerror(errno));
		cp_tmp[0] = '\0';
		return 1;
	}
	rc = agent_client__read_file(c, gsrc, fd, FILE_IDLE_MS);
	if (rc < 0) {
		fprintf(stderr, "emberctl: copying %s: %s\n", gsrc,
			agent_client__error(c));
		goto fail;
	}
	/* An existing file keeps its mode; a new one gets 0666 - umask. */
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
		mode = st.st_mode & 07777;
	} else {
		mask = umask(0);
		umask(mask);
		mode = 0666 & ~mask;
	}
	if (fchmod(fd, mode) < 0 || fsync(fd) < 0) {
		fprintf(stderr, "emberctl: %s: %s\n", cp_tmp, strerror(errno));
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		fprintf(stderr, "emberctl: %s: %s\n", cp_tmp, strerror(errno));
		goto fail;
	}
	fd = -1;
	if (rename(cp_tmp, path) < 0) {
		fprintf(stderr, "emberctl: %s: %s\n", path, strerror(errno));
		goto fail;
	}
	cp_tmp[0] = '\0';
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlink(cp_tmp);
	cp_tmp[0] = '\0';
	return 1;
}

int cmd_cp(int argc, char **argv)
{
	char *sref, *spath, *dref, *dpath;
	struct sigaction sa = { .sa_handler = cp_stop };
	struct agent_client *c;
	struct sandbox_info sb;
	int in, out, bad, rc;

	if (argc == 2 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		help__usage(stdout);
		return 0;
	}
	if (argc != 3) {
		fprintf(stderr, "emberctl: usage: emberctl cp SRC DST (one of "
				"them ID:PATH)\n");
		return 2;
	}
	out = split_remote(argv[1], &sref, &spath);
	in = split_remote(argv[2], &dref, &dpath);
	bad = bad_ref(argv[1]) ? 1 : bad_ref(argv[2]) ? 2 : 0;
	if (!in && !out && bad) {
		fprintf(stderr, "emberctl: cp: not a sandbox id: %.*s\n",
			bad_ref(argv[bad]), argv[bad]);
		return 2;
	}
	if (in == out) {
		fprintf(stderr, "emberctl: cp: exactly one of SRC and DST must "
				"be ID:PATH\n");
		return 2;
	}
	if (!*(in ? dpath : spath) || !*argv[in ? 1 : 2]) {
		fprintf(stderr, "emberctl: cp: empty path\n");
		return 2;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	c = cli__open_agent(in ? dref : sref, &sb);
	if (!c)
		return 1;
	rc = in ? cp_in(c, argv[1], dpath) : cp_out(c, spath, argv[2]);
	agent_client__free(c);
	return rc;
}
