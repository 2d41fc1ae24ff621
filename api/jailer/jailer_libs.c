// SPDX-License-Identifier: Apache-2.0
/*
 * The loader and the shared libraries of the exec file, found on the host
 * as ld.so(8) finds them ("Search order" there), so that the jail can
 * hold exactly those files: Kata and other Firecracker callers pass only
 * Firecracker's flags, and a dynamically linked ember in an empty chroot
 * would fail its exec with ENOENT (the missing loader).  ld.so.cache is
 * not read: the directories it is built from (/etc/ld.so.conf and the
 * trusted ones) are searched in its order instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jailer.h"

#define ELF_FILE_MAX   (512UL << 20) /* a larger "library" is refused */
#define CONF_DIRS_MAX  64
#define CONF_DEPTH_MAX 8

#ifdef __x86_64__
#define TRIPLET "x86_64-linux-gnu"
#else
#define TRIPLET "aarch64-linux-gnu"
#endif

static const char *const default_dirs[] = {
	"/lib/" TRIPLET, "/usr/lib/" TRIPLET, "/lib64", "/usr/lib64",
	"/lib",		 "/usr/lib",
};

/* ld.so searches @dir without its cache. */
static bool is_default(const char *dir)
{
	size_t i;

	for (i = 0; i < sizeof(default_dirs) / sizeof(default_dirs[0]); i++)
		if (!strcmp(dir, default_dirs[i]))
			return true;
	return false;
}

/* ld.so.conf's directories, in its order. */
struct conf_dirs {
	char dir[CONF_DIRS_MAX][PATH_MAX];
	size_t n;
};

static void conf_read(struct conf_dirs *cd, const char *path, int depth);

static void conf_include(struct conf_dirs *cd, const char *pattern,
			 const char *from, int depth)
{
	char full[PATH_MAX];
	glob_t g;
	size_t i;

	if (pattern[0] == '/') {
		snprintf(full, sizeof(full), "%s", pattern);
	} else {
		const char *slash = strrchr(from, '/');

		snprintf(full, sizeof(full), "%.*s/%s",
			 slash ? (int)(slash - from) : 0, from, pattern);
	}
	if (glob(full, 0, NULL, &g))
		return;
	for (i = 0; i < g.gl_pathc; i++)
		conf_read(cd, g.gl_pathv[i], depth + 1);
	globfree(&g);
}

/* One ld.so.conf file: "include GLOB" lines, directories, # comments. */
static void conf_read(struct conf_dirs *cd, const char *path, int depth)
{
	char line[PATH_MAX + 16];
	FILE *f;

	if (depth > CONF_DEPTH_MAX)
		return;
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end;

		line[strcspn(line, "#\n")] = '\0';
		p += strspn(p, " \t");
		end = p + strlen(p);
		while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		if (!strncmp(p, "include", 7) &&
		    (p[7] == ' ' || p[7] == '\t')) {
			p += 7 + strspn(p + 7, " \t");
			conf_include(cd, p, path, depth);
		} else if (p[0] == '/' && cd->n < CONF_DIRS_MAX) {
			snprintf(cd->dir[cd->n++], PATH_MAX, "%s", p);
		}
	}
	fclose(f);
}

/*
 * Read the regular file @path whole (at most ELF_FILE_MAX bytes).
 * Returns the buffer (*@len bytes; the caller frees it) or NULL with
 * errno set.
 */
static void *read_file(const char *path, size_t *len)
{
	struct stat st;
	size_t done = 0;
	char *buf;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		err = errno;
		goto fail;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > ELF_FILE_MAX) {
		err = S_ISREG(st.st_mode) ? EFBIG : EINVAL;
		goto fail;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		err = ENOMEM;
		goto fail;
	}
	while (done < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + done, (size_t)st.st_size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* shrunk meanwhile: parse what there is */
		done += (size_t)n;
	}
	close(fd);
	*len = done;
	return buf;
fail:
	close(fd);
	errno = err;
	return NULL;
}

/* The directory of @path ("/" for "/x"). */
static void dir_of(const char *path, char *dir, size_t size)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash && slash != path ? (size_t)(slash - path) : 1;

	snprintf(dir, size, "%.*s", (int)n, path);
}

/*
 * One entry of a RUNPATH/RPATH list with $ORIGIN (or ${ORIGIN}) replaced
 * by @origin.  Returns false for an entry ld.so would not use here (other
 * tokens, relative, too long).
 */
static bool expand(const char *ent, size_t n, const char *origin, char *out,
		   size_t size)
{
	size_t o = 0, i = 0;

	while (i < n) {
		const char *tok = NULL;
		size_t tlen = 0;

		if (!strncmp(ent + i, "$ORIGIN", 7) && n - i >= 7)
			tok = origin, tlen = 7;
		else if (!strncmp(ent + i, "${ORIGIN}", 9) && n - i >= 9)
			tok = origin, tlen = 9;
		else if (ent[i] == '$')
			return false;
		if (tok) {
			size_t l = strlen(tok);

			if (o + l >= size)
				return false;
			memcpy(out + o, tok, l);
			o += l;
			i += tlen;
		} else {
			if (o + 1 >= size)
				return false;
			out[o++] = ent[i++];
		}
	}
	out[o] = '\0';
	return out[0] == '/';
}

enum found { FOUND, NOT_HERE, BROKEN };

/*
 * Is @dir/@name a library for this machine?  FOUND with @out set and its
 * headers in @elf; NOT_HERE (absent, another class or machine); BROKEN
 * (unreadable or malformed: errno and *@why say why).
 */
static enum found try_dir(const char *dir, const char *name, char *out,
			  struct jail_elf *elf, const char **why)
{
	size_t len;
	void *buf;
	int ret;

	if (snprintf(out, PATH_MAX, "%s%s%s", dir,
		     dir[strlen(dir) - 1] == '/' ? "" : "/", name) >= PATH_MAX)
		return NOT_HERE;
	buf = read_file(out, &len);
	if (!buf) {
		*why = NULL;
		return errno == ENOENT || errno == ENOTDIR ? NOT_HERE : BROKEN;
	}
	ret = jail_elf__parse(buf, len, elf, why);
	free(buf);
	if (ret == -ENOEXEC)
		return NOT_HERE;
	errno = -ret;
	return ret ? BROKEN : FOUND;
}

/* Search the ':'-separated @list for @name. */
static enum found try_list(const char *list, const char *origin,
			   const char *name, char *out, struct jail_elf *elf,
			   const char **why)
{
	char dir[PATH_MAX];
	const char *p = list;

	for (;;) {
		size_t n = strcspn(p, ":");

		if (n && expand(p, n, origin, dir, sizeof(dir))) {
			enum found f = try_dir(dir, name, out, elf, why);

			if (f != NOT_HERE)
				return f;
		}
		if (!p[n])
			return NOT_HERE;
		p += n + 1;
	}
}

struct resolver {
	struct jail_libs *l;
	struct conf_dirs conf;
	struct jail_elf elf; /* scratch: the object being searched for */
	char exec_rpath[JAIL_ELF_PATHS_MAX]; /* "" with a RUNPATH */
	char exec_origin[PATH_MAX];
	const char *exec_file;
	const struct jail_args *a;
	bool need_cache; /* a library came from an ld.so.conf directory */
	/* Each object's name (its DT_NEEDED), to load a name once. */
	char names[JAIL_MAX_LIBS][NAME_MAX + 1];
};

static bool known(const struct resolver *r, const char *path)
{
	size_t i;

	for (i = 0; i < r->l->n; i++)
		if (!strcmp(r->l->path[i], path))
			return true;
	return false;
}

/* @name, needed by the object at @from whose headers are @from_elf. */
static int find_one(struct resolver *r, const char *name, const char *from,
		    const struct jail_elf *from_elf, struct jail_err *e)
{
	char origin[PATH_MAX], *out;
	enum found f = NOT_HERE;
	const char *why = NULL;
	size_t i;

	for (i = 1; i < r->l->n; i++)
		if (!strcmp(r->names[i], name))
			return 0;
	if (r->l->n == JAIL_MAX_LIBS)
		return jail_err__set(e, E2BIG, "more than 128 libraries",
				     "find the libraries of %s", r->exec_file);
	out = r->l->path[r->l->n];
	dir_of(from, origin, sizeof(origin));
	if (strchr(name, '/')) {
		f = name[0] == '/' ?
			    try_dir("/", name + 1, out, &r->elf, &why) :
			    NOT_HERE;
	} else if (from_elf->has_runpath) {
		f = try_list(from_elf->runpath, origin, name, out, &r->elf,
			     &why);
	} else {
		if (from_elf->has_rpath)
			f = try_list(from_elf->rpath, origin, name, out,
				     &r->elf, &why);
		if (f == NOT_HERE && r->exec_rpath[0])
			f = try_list(r->exec_rpath, r->exec_origin, name, out,
				     &r->elf, &why);
	}
	for (i = 0; f == NOT_HERE && !strchr(name, '/') && i < r->conf.n; i++) {
		f = try_dir(r->conf.dir[i], name, out, &r->elf, &why);
		/* Found through ld.so.cache only: the jail needs it too. */
		r->need_cache |= f == FOUND && !is_default(r->conf.dir[i]);
	}
	for (i = 0; f == NOT_HERE && !strchr(name, '/') &&
		    i < sizeof(default_dirs) / sizeof(default_dirs[0]);
	     i++)
		f = try_dir(default_dirs[i], name, out, &r->elf, &why);
	for (i = 0; f == NOT_HERE && i < r->a->n_ro_binds; i++) {
		struct stat st;

		/* In a directory the caller binds: the jail has it. */
		if (snprintf(out, PATH_MAX, "%s/%s", r->a->ro_binds[i], name) <
			    PATH_MAX &&
		    !stat(out, &st))
			return 0;
	}
	if (f == NOT_HERE)
		return jail_err__set(e, ENOENT,
				     "not found where ld.so looks (RUNPATH, "
				     "/etc/ld.so.conf, the default "
				     "directories): give its directory with "
				     "--ro-bind DIR",
				     "library %s needed by %s", name, from);
	if (f == BROKEN)
		return jail_err__set(e, errno ? errno : EINVAL, why,
				     "read library %s needed by %s (give its "
				     "directory with --ro-bind DIR)",
				     out, from);
	if (known(r, out))
		return 0; /* the same file by another name */
	snprintf(r->names[r->l->n], sizeof(r->names[0]), "%s", name);
	r->l->n++;
	return 0;
}

int jail_libs__resolve(struct jail_libs *l, const struct jail_args *a,
		       struct jail_err *e)
{
	struct jail_elf *obj = NULL;
	struct resolver *r;
	const char *why = NULL;
	size_t len, i, k;
	void *buf;
	int ret;

	l->n = 0;
	r = calloc(1, sizeof(*r));
	obj = malloc(sizeof(*obj));
	if (!r || !obj) {
		ret = jail_err__set(e, ENOMEM, NULL, "find the libraries");
		goto out;
	}
	r->l = l;
	r->a = a;
	r->exec_file = a->exec_file;
	buf = read_file(a->exec_file, &len);
	if (!buf) {
		ret = jail_err__set(e, errno, NULL, "read --exec-file %s",
				    a->exec_file);
		goto out;
	}
	ret = jail_elf__parse(buf, len, obj, &why);
	free(buf);
	if (ret == -ENOEXEC) {
		ret = 0; /* a script or another machine's: exec will say */
		goto out;
	}
	if (ret) {
		ret = jail_err__set(e, -ret, why, "read the ELF headers of %s",
				    a->exec_file);
		goto out;
	}
	if (!obj->interp[0])
		goto out; /* static: nothing to bind */
	/* [0]: the loader, which must be there and readable. */
	snprintf(l->path[0], PATH_MAX, "%s", obj->interp);
	buf = read_file(obj->interp, &len);
	if (!buf) {
		ret = jail_err__set(e, errno,
				    errno == ENOENT ?
					    "no such loader on this host: give "
					    "its directory with --ro-bind DIR" :
					    NULL,
				    "ELF interpreter (loader) %s of %s",
				    obj->interp, a->exec_file);
		goto out;
	}
	free(buf);
	l->n = 1;
	if (!obj->has_runpath && obj->has_rpath)
		snprintf(r->exec_rpath, sizeof(r->exec_rpath), "%s",
			 obj->rpath);
	dir_of(a->exec_file, r->exec_origin, sizeof(r->exec_origin));
	conf_read(&r->conf, "/etc/ld.so.conf", 0);
	/* Breadth first, as ld.so loads them: the exec file, then [1..]. */
	for (k = 0;; k++) {
		const char *from = k ? l->path[k] : a->exec_file;

		if (k) {
			if (k >= l->n)
				break;
			buf = read_file(from, &len);
			if (!buf) {
				ret = jail_err__set(e, errno, NULL, "read %s",
						    from);
				goto out;
			}
			ret = jail_elf__parse(buf, len, obj, &why);
			free(buf);
			if (ret) {
				ret = jail_err__set(e, -ret, why,
						    "read the ELF headers of "
						    "%s",
						    from);
				goto out;
			}
		}
		for (i = 0; i < obj->n_needed; i++) {
			ret = find_one(r, obj->needed[i], from, obj, e);
			if (ret)
				goto out;
		}
	}
	if (r->need_cache && l->n < JAIL_MAX_LIBS &&
	    !access("/etc/ld.so.cache", R_OK))
		snprintf(l->path[l->n++], PATH_MAX, "/etc/ld.so.cache");
out:
	free(obj);
	free(r);
	if (ret)
		l->n = 0;
	return ret;
}
