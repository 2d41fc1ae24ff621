// SPDX-License-Identifier: Apache-2.0
/*
 * A container's root in the guest, set up and taken down with mount(2)
 * directly (agent_ctr.h).
 */
#include "agent_ctr.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int fail(const char *what, const char *path)
{
	fprintf(stderr, "%s %s: %s\n", what, path, strerror(errno));
	return 1;
}

/* mkdir -p @path (0755). */
static int mkdirs(const char *path)
{
	char p[PATH_MAX], *s;

	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return mkdir(p, 0755) && errno != EEXIST ? -1 : 0;
}

static const struct {
	const char *name;
	unsigned long set, clear;
} opts[] = {
	{ "ro", MS_RDONLY, 0 },
	{ "rw", 0, MS_RDONLY },
	{ "nosuid", MS_NOSUID, 0 },
	{ "suid", 0, MS_NOSUID },
	{ "nodev", MS_NODEV, 0 },
	{ "dev", 0, MS_NODEV },
	{ "noexec", MS_NOEXEC, 0 },
	{ "exec", 0, MS_NOEXEC },
	{ "relatime", MS_RELATIME, 0 },
	{ "noatime", MS_NOATIME, 0 },
	{ "strictatime", MS_STRICTATIME, 0 },
	{ "sync", MS_SYNCHRONOUS, 0 },
	{ "bind", MS_BIND, 0 },
	{ "rbind", MS_BIND | MS_REC, 0 },
};

/* Propagation words mount(2) takes apart; dropped here. */
static int dropped(const char *o)
{
	return !strcmp(o, "private") || !strcmp(o, "rprivate") ||
	       !strcmp(o, "slave") || !strcmp(o, "rslave") ||
	       !strcmp(o, "shared") || !strcmp(o, "rshared");
}

/* "a,b,c" -> flags and the rest as data. */
static void parse_opts(char *text, unsigned long *flags, char *data,
		       size_t datalen)
{
	char *save = NULL, *o;
	size_t i, used = 0;

	*flags = 0;
	data[0] = '\0';
	for (o = strtok_r(text, ",", &save); o;
	     o = strtok_r(NULL, ",", &save)) {
		int known = 0;

		for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
			if (!strcmp(o, opts[i].name)) {
				*flags =
					(*flags | opts[i].set) & ~opts[i].clear;
				known = 1;
			}
		if (known || dropped(o))
			continue;
		if (used + strlen(o) + 2 > datalen)
			continue;
		used += (size_t)snprintf(data + used, datalen - used, "%s%s",
					 used ? "," : "", o);
	}
}

static int wait_size(const char *dev, const char *sectors)
{
	char path[PATH_MAX], buf[32];
	struct timespec ten_ms = { 0, 10 * 1000 * 1000 };
	int i, fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/block/%s/size", dev);
	for (i = 0; i < 1000; i++) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return fail("open", path);
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		if (!strcmp(buf, sectors))
			return 0;
		nanosleep(&ten_ms, NULL);
	}
	fprintf(stderr, "/dev/%s: %s sectors after 10 s, not %s\n", dev, buf,
		sectors);
	return 1;
}

/* One "TYPE\tSOURCE\tDEST\tOPTIONS" under @root. */
static int one_mount(const char *root, char *spec)
{
	char *type = spec, *src, *dest, *o, path[PATH_MAX], data[4096];
	unsigned long flags;
	int soft;

	src = strchr(type, '\t');
	dest = src ? strchr(src + 1, '\t') : NULL;
	o = dest ? strchr(dest + 1, '\t') : NULL;
	if (!o) {
		fprintf(stderr,
			"mount spec %s: not TYPE\\tSOURCE\\tDEST\\tOPTIONS\n",
			spec);
		return 1;
	}
	*src++ = *dest++ = *o++ = '\0';
	if (dest[0] != '/' || strstr(dest, "/../") ||
	    snprintf(path, sizeof(path), "%s%s", root, dest) >=
		    (int)sizeof(path)) {
		fprintf(stderr, "mount %s: a bad destination\n", dest);
		return 1;
	}
	if (mkdirs(path))
		return fail("mkdir", path);
	if (!strcmp(type, "devpts")) {
		/* The guest's own: a TTY exec's terminal is named there. */
		if (mount("/dev/pts", path, NULL, MS_BIND, NULL))
			return fail("mount --bind /dev/pts", path);
		return 0;
	}
	parse_opts(o, &flags, data, sizeof(data));
	soft = !strcmp(type, "cgroup") || !strcmp(type, "cgroup2") ||
	       !strcmp(type, "mqueue");
	if (mount(src[0] ? src : type, path, type, flags & ~MS_BIND,
		  data[0] ? data : NULL))
		return soft ? 0 : fail("mount", path);
	return 0;
}

static int dev_nodes(const char *root)
{
	static const char *const nodes[] = { "null",   "zero",	  "full",
					     "random", "urandom", "tty" };
	static const char *const links[][2] = {
		{ "fd", "/proc/self/fd" },
		{ "stdin", "/proc/self/fd/0" },
		{ "stdout", "/proc/self/fd/1" },
		{ "stderr", "/proc/self/fd/2" },
		{ "ptmx", "pts/ptmx" },
	};
	char dev[PATH_MAX], path[PATH_MAX + 16], host[32];
	struct stat st;
	size_t i;
	int fd;

	snprintf(dev, sizeof(dev), "%s/dev", root);
	if (stat(dev, &st) || !S_ISDIR(st.st_mode))
		return 0;
	for (i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dev, nodes[i]);
		snprintf(host, sizeof(host), "/dev/%s", nodes[i]);
		if (!lstat(path, &st))
			continue;
		fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
		if (fd < 0)
			return fail("creat", path);
		close(fd);
		if (mount(host, path, NULL, MS_BIND, NULL))
			return fail("mount --bind", path);
	}
	for (i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dev, links[i][0]);
		if (!lstat(path, &st))
			continue;
		if (symlink(links[i][1], path))
			return fail("symlink", path);
	}
	return 0;
}

static int ctr_root(int argc, char **argv)
{
	const char *dev, *sectors, *root, *hostname;
	char devpath[PATH_MAX];
	int i, ro;

	if (argc < 7) {
		fprintf(stderr, "usage: ember-agent ctr-root DEV SECTORS ROOT "
				"RO HOSTNAME [MOUNT...]\n");
		return 2;
	}
	dev = argv[2];
	sectors = argv[3];
	root = argv[4];
	ro = atoi(argv[5]);
	hostname = argv[6];
	if (strchr(dev, '/') || root[0] != '/') {
		fprintf(stderr, "ctr-root: a bad device or root\n");
		return 2;
	}
	if (wait_size(dev, sectors))
		return 1;
	if (mkdirs(root))
		return fail("mkdir", root);
	snprintf(devpath, sizeof(devpath), "/dev/%s", dev);
	/*
	 * Read-write until the mount points exist (a read-only image, the
	 * pause container's, has no /proc or /dev); made read-only at the
	 * end, as runc does, or by ctr-ro once the host copied bind mounts
	 * in (RO "2").
	 */
	if (mount(devpath, root, "ext4", 0, NULL))
		return fail("mount ext4 on", root);
	for (i = 7; i < argc; i++)
		if (one_mount(root, argv[i]))
			return 1;
	if (dev_nodes(root))
		return 1;
	if (ro == 1 && mount(NULL, root, NULL, MS_REMOUNT | MS_RDONLY, NULL))
		return fail("remount read-only", root);
	if (hostname[0] && sethostname(hostname, strlen(hostname)))
		return fail("sethostname", hostname);
	return 0;
}

/* Processes whose root is @root (/proc/PID/root), SIGKILLed. */
static void kill_inside(const char *root)
{
	char link[300], target[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir("/proc");
	ssize_t n;

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(link, sizeof(link), "/proc/%s/root", de->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (!strcmp(target, root))
			kill(atoi(de->d_name), SIGKILL);
	}
	closedir(d);
}

/* Unmount @root and below, deepest first, as /proc/self/mounts lists. */
static int unmount_below(const char *root)
{
	char line[PATH_MAX * 2], mnt[PATH_MAX], *list[256];
	size_t n = 0, rl = strlen(root), i;
	FILE *f = fopen("/proc/self/mounts", "re");
	int rc = 0;

	if (!f)
		return fail("open", "/proc/self/mounts");
	while (n < 256 && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %4095s", mnt) != 1)
			continue;
		if (strncmp(mnt, root, rl) || (mnt[rl] && mnt[rl] != '/'))
			continue;
		list[n] = strdup(mnt);
		if (list[n])
			n++;
	}
	fclose(f);
	for (i = n; i-- > 0;) {
		if (umount2(list[i], 0) && errno != EINVAL &&
		    umount2(list[i], MNT_DETACH) && errno != EINVAL)
			rc = fail("umount", list[i]);
		free(list[i]);
	}
	return rc;
}

int agent_ctr__main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "ctr-root"))
		return ctr_root(argc, argv);
	if (argc == 3 && !strcmp(argv[1], "ctr-ro")) {
		if (mount(NULL, argv[2], NULL, MS_REMOUNT | MS_RDONLY, NULL))
			return fail("remount read-only", argv[2]);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "ctr-unroot")) {
		int rc;

		kill_inside(argv[2]);
		rc = unmount_below(argv[2]);
		rmdir(argv[2]);
		return rc;
	}
	fprintf(stderr, "usage: ember-agent ctr-root ... | ctr-ro ROOT | "
			"ctr-unroot ROOT\n");
	return 2;
}
