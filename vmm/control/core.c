// SPDX-License-Identifier: Apache-2.0
/*
 * The control interface's machinery: calls on the event thread, state
 * checks, the configuration's copy and commit, shared checks (see core.h).
 */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../devmgr.h"
#include "../event.h"

int ctl__err(struct control_err *e, int ret, const char *fmt, ...)
{
	va_list ap;

	if (e) {
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
	}
	return ret;
}

/* --- state checks -------------------------------------------------------- */

static bool ctl__started(struct control *c)
{
	bool s;

	pthread_mutex_lock(&c->lock);
	s = c->started;
	pthread_mutex_unlock(&c->lock);
	return s;
}

/* Whether a call may run now; if not, why in Firecracker's words. */
static int ctl__when_ok(struct control *c, enum ctl_when when,
			struct control_err *e)
{
	switch (when) {
	case CTL_PREBOOT:
		if (!ctl__started(c))
			return 0;
		return ctl__err(e, -EBUSY,
				"The requested operation is not supported "
				"after starting the microVM.");
	case CTL_POSTBOOT:
		if (ctl__started(c))
			return 0;
		return ctl__err(e, -EAGAIN,
				"The requested operation is not supported "
				"before starting the microVM.");
	default:
		return 0;
	}
}

/* --- running a call on the event thread ---------------------------------- */

struct ctl_call {
	int (*fn)(struct control *c, const void *args, struct control_err *e);
	enum ctl_when when;
	struct control *c;
	const void *args;
	struct control_err *e;
	int ret;
};

static void ctl__trampoline(void *p)
{
	struct ctl_call *k = p;

	k->ret = ctl__when_ok(k->c, k->when, k->e);
	if (!k->ret)
		k->ret = k->fn(k->c, k->args, k->e);
}

int ctl__run(struct control *c, enum ctl_when when,
	     int (*fn)(struct control *c, const void *args,
		       struct control_err *e),
	     const void *args, struct control_err *e)
{
	struct control_err local;
	struct ctl_call k = { fn, when, c, args, e ? e : &local, 0 };

	k.e->msg[0] = '\0';
	event__call(c->el, ctl__trampoline, &k);
	return k.ret;
}

/* --- a change of the configuration --------------------------------------- */

const char *ctl__keep(struct ctl_new *n, const char *s)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d || n->n == sizeof(n->strs) / sizeof(n->strs[0])) {
		free(d);
		n->nomem = true;
		return NULL;
	}
	n->strs[n->n++] = d;
	return d;
}

void ctl__begin(const struct control *c, struct ctl_new *n)
{
	unsigned int i;

	memset(n, 0, sizeof(*n));
	n->cfg = c->cfg;
	n->cfg.kernel_image_path = ctl__keep(n, c->cfg.kernel_image_path);
	n->cfg.initrd_path = ctl__keep(n, c->cfg.initrd_path);
	n->cfg.boot_args = ctl__keep(n, c->cfg.boot_args);
	n->cfg.uds_path = ctl__keep(n, c->cfg.uds_path);
	n->cfg.opts.console_path = ctl__keep(n, c->cfg.opts.console_path);
	n->cfg.opts.run_cmd = ctl__keep(n, c->cfg.opts.run_cmd);
	for (i = 0; i < c->cfg.nr_drives; i++) {
		struct control_drive *d = &n->cfg.drives[i];

		d->drive_id = ctl__keep(n, d->drive_id);
		d->path_on_host = ctl__keep(n, d->path_on_host);
		d->partuuid = ctl__keep(n, d->partuuid);
	}
	for (i = 0; i < c->cfg.nr_nets; i++) {
		struct control_net *k = &n->cfg.nets[i];

		k->iface_id = ctl__keep(n, k->iface_id);
		k->host_dev_name = ctl__keep(n, k->host_dev_name);
	}
}

void ctl__abort(struct ctl_new *n)
{
	while (n->n)
		free(n->strs[--n->n]);
}

int ctl__commit(struct control *c, struct ctl_new *n, struct control_err *e)
{
	unsigned int i;

	if (n->nomem) {
		ctl__abort(n);
		return ctl__err(e, -ENOMEM,
				"Internal VMM error: out of memory");
	}
	for (i = 0; i < sizeof(c->strs) / sizeof(c->strs[0]); i++) {
		free(c->strs[i]);
		c->strs[i] = i < n->n ? n->strs[i] : NULL;
	}
	c->cfg = n->cfg;
	return 0;
}

/* --- lists of named devices ---------------------------------------------- */

/*
 * Firecracker's [A-Za-z0-9_] (the API's paths allow no more) and, for
 * ember's --drive id= and --net id=, '-' and '.'; 1 to 64 bytes.
 */
static bool ctl__id_ok(const char *id)
{
	size_t i, len = id ? strlen(id) : 0;

	if (!len || len > DEVMGR_ID_MAX)
		return false;
	for (i = 0; i < len; i++) {
		char ch = id[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' ||
		      ch == '.'))
			return false;
	}
	return true;
}

/* The list @l in @cfg, its count, and the id of entry @entry. */
static void *ctl__array(const struct ctl_list *l,
			const struct control_config *cfg)
{
	return (char *)cfg + l->array_off;
}

static unsigned int *ctl__nr(const struct ctl_list *l,
			     const struct control_config *cfg)
{
	return (unsigned int *)((char *)cfg + l->nr_off);
}

static const char *ctl__id(const struct ctl_list *l, const void *entry)
{
	const char *const *id = (const void *)((const char *)entry + l->id_off);

	return *id;
}

int ctl__find(const struct ctl_list *l, const struct control_config *cfg,
	      const char *id)
{
	const char *base = ctl__array(l, cfg);
	unsigned int i, nr = *ctl__nr(l, cfg);

	for (i = 0; i < nr; i++)
		if (!strcmp(ctl__id(l, base + i * l->size), id))
			return (int)i;
	return -1;
}

int ctl__lookup(const struct ctl_list *l, const struct control_config *cfg,
		const char *id, struct control_err *e)
{
	int i = ctl__find(l, cfg, id);

	if (i < 0)
		return ctl__err(e, -ENOENT, "%s: Device not found: %s.", l->err,
				id);
	return i;
}

int ctl__put(struct control *c, const struct ctl_list *l, const void *entry,
	     struct control_err *e)
{
	const char *id = ctl__id(l, entry);
	struct ctl_new n;
	unsigned int *nr;
	int i;

	if (!ctl__id_ok(id))
		return ctl__err(e, -EINVAL,
				"%s: %s must be 1 to %d letters, digits, '_', "
				"'-' or '.'.",
				l->err, l->id_name, DEVMGR_ID_MAX);
	i = l->check(c, entry, e);
	if (i)
		return i;
	ctl__begin(c, &n);
	i = ctl__find(l, &n.cfg, id);
	if (i < 0) {
		nr = ctl__nr(l, &n.cfg);
		if (*nr == l->max) {
			ctl__abort(&n);
			return ctl__err(e, -EINVAL, "%s: at most %u %s.",
					l->err, l->max, l->plural);
		}
		i = (int)(*nr)++;
	}
	l->keep(&n, (char *)ctl__array(l, &n.cfg) + (size_t)i * l->size, entry);
	return ctl__commit(c, &n, e);
}

/* --- host files ---------------------------------------------------------- */

int ctl__file_ok(const char *path, int flags)
{
	struct stat st;
	int fd;

	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	fd = open(path, flags | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

const char *ctl__strerror(int ret)
{
	return ret == -EINVAL ? "not a regular file" : strerror(-ret);
}

int ctl__open_sink(const char *path)
{
	int fd =
		open(path, O_RDWR | O_CREAT | O_APPEND | O_NONBLOCK | O_CLOEXEC,
		     0600);

	return fd < 0 ? -errno : fd;
}
