// SPDX-License-Identifier: Apache-2.0
/* The control interface (see control.h). */
#include "control.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "../boot/cmdline.h"
#include "../boot/layout.h"
#include "../devices/i8042.h"
#include "dev/dev.h"
#include "event.h"
#include "log.h"
#include "metrics.h"
#include "persist/persist.h"
#include "vm.h"

/* Firecracker's period for metrics lines while the VM runs. */
#define CONTROL_METRICS_PERIOD_S 60

struct control {
	struct event_loop *el; /* not owned */
	char *id;

	/* The configuration: owned copies, changed on the event thread. */
	struct control_config cfg;
	char *strs[16 + CONFIG_MAX_DRIVES * 4 +
		   CONFIG_MAX_NETS * 2]; /* what cfg points into */

	/* Logger and metrics. */
	int log_fd;
	struct metrics *metrics;
	int metrics_timer; /* timerfd; -1 until the VM starts */
	struct metrics_api api;

	/* The VM, once started; read by control__wait() under lock. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct vm *vm;
	bool started, signalled, stopped;
	int signal;
	bool dry_run;
	const struct seccomp_set *seccomp; /* not owned; NULL: none */
};

/* --- helpers ------------------------------------------------------------ */

static int ctl__err(struct control_err *e, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int ctl__err(struct control_err *e, int ret, const char *fmt, ...)
{
	va_list ap;

	if (e) {
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
	}
	return ret;
}

/*
 * A regular file @path can be opened with @flags now: 0, -EINVAL when it
 * is no regular file, or the open's -errno.
 */
static int ctl__file_ok(const char *path, int flags)
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

static const char *ctl__strerror(int ret)
{
	return ret == -EINVAL ? "not a regular file" : strerror(-ret);
}

/*
 * Swap the owned strings: the ones cfg will point at after a change
 * replace those before it.  Every configuration call builds a new cfg
 * with fresh copies, then commits it, so a failure changes nothing.
 */
struct ctl_new {
	struct control_config cfg;
	char *strs[16 + CONFIG_MAX_DRIVES * 4 + CONFIG_MAX_NETS * 2];
	unsigned int n;
	bool nomem;
};

static const char *ctl__keep(struct ctl_new *n, const char *s)
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

/* A copy of @c's configuration whose strings belong to @n. */
static void ctl__begin(const struct control *c, struct ctl_new *n)
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

static void ctl__abort(struct ctl_new *n)
{
	while (n->n)
		free(n->strs[--n->n]);
}

/* Make @n the configuration; -ENOMEM (nothing changed) if a copy failed. */
static int ctl__commit(struct control *c, struct ctl_new *n,
		       struct control_err *e)
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

static bool ctl__started(struct control *c)
{
	bool s;

	pthread_mutex_lock(&c->lock);
	s = c->started;
	pthread_mutex_unlock(&c->lock);
	return s;
}

/* --- running a call on the event thread ---------------------------------- */

struct ctl_call {
	int (*fn)(struct control *c, const void *args, struct control_err *e);
	struct control *c;
	const void *args;
	struct control_err *e;
	int ret;
};

static void ctl__trampoline(void *p)
{
	struct ctl_call *k = p;

	k->ret = k->fn(k->c, k->args, k->e);
}

static int ctl__run(struct control *c,
		    int (*fn)(struct control *c, const void *args,
			      struct control_err *e),
		    const void *args, struct control_err *e)
{
	struct control_err local;
	struct ctl_call k = { fn, c, args, e ? e : &local, 0 };

	k.e->msg[0] = '\0';
	event__call(c->el, ctl__trampoline, &k);
	return k.ret;
}

/* A pre-boot call after the start: Firecracker's words. */
static int ctl__preboot(struct control *c, struct control_err *e)
{
	if (!ctl__started(c))
		return 0;
	return ctl__err(e, -EBUSY,
			"The requested operation is not supported after "
			"starting the microVM.");
}

static int ctl__postboot(struct control *c, struct control_err *e)
{
	if (ctl__started(c))
		return 0;
	return ctl__err(e, -EAGAIN,
			"The requested operation is not supported before "
			"starting the microVM.");
}

/* --- configuration ------------------------------------------------------- */

struct machine_args {
	unsigned int vcpu_count;
	uint64_t mem_size_mib;
	bool smt, track_dirty_pages;
};

static int ctl__set_machine(struct control *c, const void *args,
			    struct control_err *e)
{
	const struct machine_args *a = args;
	char why[160];
	int ret = ctl__preboot(c, e);

	if (ret)
		return ret;
	if (!a->vcpu_count || a->vcpu_count > CONFIG_MAX_VCPUS)
		return ctl__err(e, -EINVAL,
				"Machine config error: The number of vCPUs "
				"must be greater than 0 and at most %d.",
				CONFIG_MAX_VCPUS);
	if (a->smt)
		return ctl__err(e, -EINVAL,
				"Machine config error: simultaneous "
				"multithreading (smt) is not supported by "
				"ember.");
	ret = config__check_mem(a->mem_size_mib, why, sizeof(why));
	if (ret)
		return ctl__err(e, -EINVAL, "Machine config error: %s.", why);
	c->cfg.vcpu_count = a->vcpu_count;
	c->cfg.mem_size_mib = a->mem_size_mib;
	c->cfg.smt = a->smt;
	c->cfg.track_dirty_pages = a->track_dirty_pages;
	return 0;
}

int control__set_machine(struct control *c, unsigned int vcpu_count,
			 uint64_t mem_size_mib, bool smt,
			 bool track_dirty_pages, struct control_err *e)
{
	struct machine_args a = { vcpu_count, mem_size_mib, smt,
				  track_dirty_pages };

	return ctl__run(c, ctl__set_machine, &a, e);
}

struct boot_args {
	const char *kernel, *initrd, *boot_args;
};

static int ctl__set_boot_source(struct control *c, const void *args,
				struct control_err *e)
{
	const struct boot_args *a = args;
	struct ctl_new n;
	int ret = ctl__preboot(c, e);

	if (ret)
		return ret;
	if (!a->kernel || !*a->kernel)
		return ctl__err(e, -EINVAL,
				"Boot source error: kernel_image_path is "
				"empty.");
	ret = ctl__file_ok(a->kernel, O_RDONLY);
	if (ret)
		return ctl__err(e, -EINVAL, "Boot source error: kernel %s: %s",
				a->kernel, ctl__strerror(ret));
	if (a->initrd) {
		ret = ctl__file_ok(a->initrd, O_RDONLY);
		if (ret)
			return ctl__err(e, -EINVAL,
					"Boot source error: initrd %s: %s",
					a->initrd, ctl__strerror(ret));
	}
	if (a->boot_args && strlen(a->boot_args) >= LAYOUT_CMDLINE_MAX)
		return ctl__err(e, -EINVAL,
				"Boot source error: kernel command line longer "
				"than %llu bytes: shorten boot_args (--append)",
				(unsigned long long)LAYOUT_CMDLINE_MAX - 1);
	ctl__begin(c, &n);
	n.cfg.have_boot_source = true;
	n.cfg.kernel_image_path = ctl__keep(&n, a->kernel);
	n.cfg.initrd_path = ctl__keep(&n, a->initrd);
	n.cfg.boot_args = ctl__keep(&n, a->boot_args);
	return ctl__commit(c, &n, e);
}

int control__set_boot_source(struct control *c, const char *kernel,
			     const char *initrd, const char *boot_args,
			     struct control_err *e)
{
	struct boot_args a = { kernel, initrd, boot_args };

	return ctl__run(c, ctl__set_boot_source, &a, e);
}

/*
 * Drive ids: Firecracker's [A-Za-z0-9_] (the API's paths allow no more)
 * and, for ember's --drive id=, '-' and '.'; 1 to 64 bytes.
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

static int ctl__set_drive(struct control *c, const void *args,
			  struct control_err *e)
{
	const struct control_drive *d = args;
	struct control_drive *slot = NULL;
	struct ctl_new n;
	unsigned int i;
	char why[160];
	int ret = ctl__preboot(c, e);

	if (ret)
		return ret;
	if (!ctl__id_ok(d->drive_id))
		return ctl__err(e, -EINVAL,
				"Drive config error: drive_id must be 1 to %d "
				"letters, digits, '_', '-' or '.'.",
				DEVMGR_ID_MAX);
	if (!d->path_on_host || !*d->path_on_host)
		return ctl__err(
			e, -EINVAL,
			"Drive config error: path_on_host is required.");
	ret = ctl__file_ok(d->path_on_host,
			   d->is_read_only ? O_RDONLY : O_RDWR);
	if (ret)
		return ctl__err(e, -EINVAL, "Drive config error: drive %s: %s",
				d->path_on_host, ctl__strerror(ret));
	if (d->partuuid && (!*d->partuuid || strlen(d->partuuid) > 64 ||
			    strpbrk(d->partuuid, " \t\n\"")))
		return ctl__err(e, -EINVAL,
				"Drive config error: partuuid is not a "
				"partition UUID.");
	if (config__check_rate_limiter(&d->rate_limiter, why, sizeof(why)))
		return ctl__err(e, -EINVAL,
				"Drive config error: rate_limiter: %s.", why);
	for (i = 0; i < c->cfg.nr_drives; i++) {
		const struct control_drive *o = &c->cfg.drives[i];

		if (!strcmp(o->drive_id, d->drive_id))
			continue;
		if (o->is_root_device && d->is_root_device)
			return ctl__err(e, -EINVAL,
					"Drive config error: A root block "
					"device already exists!");
	}
	ctl__begin(c, &n);
	for (i = 0; i < n.cfg.nr_drives; i++)
		if (!strcmp(n.cfg.drives[i].drive_id, d->drive_id))
			slot = &n.cfg.drives[i];
	if (!slot) {
		if (n.cfg.nr_drives == CONFIG_MAX_DRIVES) {
			ctl__abort(&n);
			return ctl__err(
				e, -EINVAL,
				"Drive config error: at most %d drives.",
				CONFIG_MAX_DRIVES);
		}
		slot = &n.cfg.drives[n.cfg.nr_drives++];
	}
	*slot = *d;
	slot->drive_id = ctl__keep(&n, d->drive_id);
	slot->path_on_host = ctl__keep(&n, d->path_on_host);
	slot->partuuid = ctl__keep(&n, d->partuuid);
	/* The root drive first: it becomes /dev/vda. */
	for (i = 1; i < n.cfg.nr_drives; i++) {
		if (n.cfg.drives[i].is_root_device) {
			struct control_drive root = n.cfg.drives[i];

			memmove(&n.cfg.drives[1], &n.cfg.drives[0],
				i * sizeof(root));
			n.cfg.drives[0] = root;
		}
	}
	return ctl__commit(c, &n, e);
}

int control__set_drive(struct control *c, const struct control_drive *d,
		       struct control_err *e)
{
	return ctl__run(c, ctl__set_drive, d, e);
}

struct vsock_args {
	uint64_t cid;
	const char *uds_path;
};

static int ctl__set_vsock(struct control *c, const void *args,
			  struct control_err *e)
{
	const struct vsock_args *a = args;
	struct ctl_new n;
	int ret = ctl__preboot(c, e);

	if (ret)
		return ret;
	if (a->cid < 3 || a->cid > UINT32_MAX)
		return ctl__err(e, -EINVAL,
				"Vsock config error: guest_cid must be 3 to "
				"4294967295.");
	if (!a->uds_path || !*a->uds_path || strlen(a->uds_path) > 100)
		return ctl__err(e, -EINVAL,
				"Vsock config error: uds_path must be 1 to 100 "
				"bytes.");
	ctl__begin(c, &n);
	n.cfg.have_vsock = true;
	n.cfg.guest_cid = a->cid;
	n.cfg.uds_path = ctl__keep(&n, a->uds_path);
	return ctl__commit(c, &n, e);
}

int control__set_vsock(struct control *c, uint64_t cid, const char *uds_path,
		       struct control_err *e)
{
	struct vsock_args a = { cid, uds_path };

	return ctl__run(c, ctl__set_vsock, &a, e);
}

/* A tap name the kernel takes (dev_valid_name()): 1..15 bytes. */
static bool ctl__ifname_ok(const char *s)
{
	size_t len = s ? strlen(s) : 0;

	return len && len < 16 && strcmp(s, ".") && strcmp(s, "..") &&
	       !strpbrk(s, "/: \t\n\r\v\f");
}

static int ctl__set_net(struct control *c, const void *args,
			struct control_err *e)
{
	const struct control_net *a = args;
	struct control_net *slot = NULL;
	struct ctl_new n;
	unsigned int i;
	char why[160];
	int ret = ctl__preboot(c, e);

	if (ret)
		return ret;
	if (!ctl__id_ok(a->iface_id))
		return ctl__err(e, -EINVAL,
				"Network interface config error: iface_id must "
				"be 1 to %d letters, digits, '_', '-' or '.'.",
				DEVMGR_ID_MAX);
	if (!ctl__ifname_ok(a->host_dev_name))
		return ctl__err(e, -EINVAL,
				"Network interface config error: host_dev_name "
				"must be a tap name of 1 to 15 bytes without "
				"'/', ':' or spaces.");
	if (a->has_mac && (a->guest_mac[0] & 1))
		return ctl__err(e, -EINVAL,
				"Network interface config error: guest_mac "
				"must be a unicast address.");
	if (config__check_rate_limiter(&a->rx_rate_limiter, why, sizeof(why)) ||
	    config__check_rate_limiter(&a->tx_rate_limiter, why, sizeof(why)))
		return ctl__err(e, -EINVAL,
				"Network interface config error: %s", why);
	for (i = 0; i < c->cfg.nr_drives; i++)
		if (!strcmp(c->cfg.drives[i].drive_id, a->iface_id))
			return ctl__err(e, -EINVAL,
					"Network interface config error: "
					"iface_id %s is a drive's id.",
					a->iface_id);
	for (i = 0; i < c->cfg.nr_nets; i++) {
		const struct control_net *o = &c->cfg.nets[i];

		if (!strcmp(o->iface_id, a->iface_id))
			continue;
		if (!strcmp(o->host_dev_name, a->host_dev_name))
			return ctl__err(e, -EINVAL,
					"Network interface config error: "
					"the tap %s is already used by %s.",
					a->host_dev_name, o->iface_id);
		if (a->has_mac && o->has_mac &&
		    !memcmp(o->guest_mac, a->guest_mac, 6))
			return ctl__err(e, -EINVAL,
					"Network interface config error: "
					"the guest MAC is already used by %s.",
					o->iface_id);
	}
	ctl__begin(c, &n);
	for (i = 0; i < n.cfg.nr_nets; i++)
		if (!strcmp(n.cfg.nets[i].iface_id, a->iface_id))
			slot = &n.cfg.nets[i];
	if (!slot) {
		if (n.cfg.nr_nets == CONFIG_MAX_NETS) {
			ctl__abort(&n);
			return ctl__err(e, -EINVAL,
					"Network interface config error: at "
					"most %d network interfaces.",
					CONFIG_MAX_NETS);
		}
		slot = &n.cfg.nets[n.cfg.nr_nets++];
	}
	*slot = *a;
	slot->iface_id = ctl__keep(&n, a->iface_id);
	slot->host_dev_name = ctl__keep(&n, a->host_dev_name);
	return ctl__commit(c, &n, e);
}

int control__set_net(struct control *c, const struct control_net *n,
		     struct control_err *e)
{
	return ctl__run(c, ctl__set_net, n, e);
}

static int ctl__set_entropy(struct control *c, const void *args,
			    struct control_err *e)
{
	int ret = ctl__preboot(c, e);

	if (!ret)
		c->cfg.have_entropy = *(const bool *)args;
	return ret;
}

int control__set_entropy(struct control *c, bool on, struct control_err *e)
{
	return ctl__run(c, ctl__set_entropy, &on, e);
}

static int ctl__set_options(struct control *c, const void *args,
			    struct control_err *e)
{
	const struct control_options *o = args;
	struct ctl_new n;
	int ret = ctl__preboot(c, e);

	if (ret)
		return ret;
	if (o->console == CONSOLE_FILE &&
	    (!o->console_path || !*o->console_path))
		return ctl__err(e, -EINVAL, "console file: no path");
	/* base64 on the kernel command line: 4 bytes per 3, within 2047. */
	if (o->run_cmd && ember_b64_encoded_len(strlen(o->run_cmd)) +
					  strlen(EMBER_RUN_PARAM) >=
				  LAYOUT_CMDLINE_MAX)
		return ctl__err(
			e, -EINVAL,
			"--run: a command of %zu bytes does not fit on the "
			"kernel command line (at most %llu bytes)",
			strlen(o->run_cmd),
			(unsigned long long)((LAYOUT_CMDLINE_MAX - 1 -
					      strlen(EMBER_RUN_PARAM)) *
					     3 / 4));
	ctl__begin(c, &n);
	n.cfg.opts = *o;
	n.cfg.opts.console_path = ctl__keep(&n, o->console_path);
	n.cfg.opts.run_cmd = ctl__keep(&n, o->run_cmd);
	return ctl__commit(c, &n, e);
}

int control__set_options(struct control *c, const struct control_options *o,
			 struct control_err *e)
{
	return ctl__run(c, ctl__set_options, o, e);
}

/*
 * A log or metrics file: created 0600, appended to; a FIFO without a
 * reader does not block (O_RDWR keeps it open), a full one drops lines.
 */
static int ctl__open_sink(const char *path)
{
	int fd =
		open(path, O_RDWR | O_CREAT | O_APPEND | O_NONBLOCK | O_CLOEXEC,
		     0600);

	return fd < 0 ? -errno : fd;
}

struct logger_args {
	const char *path;
	enum control_log_level level;
};

static int ctl__set_logger(struct control *c, const void *args,
			   struct control_err *e)
{
	static const enum log_level levels[] = {
		[CONTROL_LOG_OFF] = LOG_NOTE,
		[CONTROL_LOG_ERROR] = LOG_ERROR,
		[CONTROL_LOG_WARNING] = LOG_WARN,
		[CONTROL_LOG_INFO] = LOG_INFO,
		[CONTROL_LOG_DEBUG] = LOG_DEBUG,
		[CONTROL_LOG_TRACE] = LOG_DEBUG,
	};
	const struct logger_args *a = args;
	int ret = ctl__preboot(c, e), fd;

	if (ret)
		return ret;
	if (a->level > CONTROL_LOG_TRACE)
		return ctl__err(e, -EINVAL, "Logger error: bad level.");
	if (c->dry_run)
		return 0; /* no files opened, no log level changed */
	if (a->path) {
		fd = ctl__open_sink(a->path);
		if (fd < 0)
			return ctl__err(e, -EINVAL,
					"Logger error: Failed to open target "
					"file: %s (%s)",
					strerror(-fd), a->path);
		log__set_fd(fd);
		if (c->log_fd >= 0)
			close(c->log_fd);
		c->log_fd = fd;
	}
	log__set_level(levels[a->level]);
	return 0;
}

int control__set_logger(struct control *c, const char *path,
			enum control_log_level level, struct control_err *e)
{
	struct logger_args a = { path, level };

	return ctl__run(c, ctl__set_logger, &a, e);
}

static int ctl__set_metrics(struct control *c, const void *args,
			    struct control_err *e)
{
	const char *path = args;
	int ret = ctl__preboot(c, e), fd;

	if (ret)
		return ret;
	if (c->metrics)
		return ctl__err(e, -EINVAL,
				"Metrics error: Reinitialization of metrics "
				"not allowed.");
	fd = c->dry_run ? open("/dev/null", O_WRONLY | O_CLOEXEC) :
			  ctl__open_sink(path);
	if (fd < 0)
		return ctl__err(e, -EINVAL,
				"Metrics error: Failed to open target file: %s "
				"(%s)",
				strerror(-fd), path);
	c->metrics = metrics__open(fd);
	if (!c->metrics) {
		close(fd);
		return ctl__err(e, -ENOMEM, "Metrics error: out of memory");
	}
	return 0;
}

int control__set_metrics(struct control *c, const char *path,
			 struct control_err *e)
{
	return ctl__run(c, ctl__set_metrics, path, e);
}

/* --- life ---------------------------------------------------------------- */

static void ctl__flush(struct control *c)
{
	struct vm *vm = c->vm;

	if (c->metrics && vm)
		metrics__flush(c->metrics, vm, &c->api);
}

static void ctl__on_metrics_timer(void *opaque, int fd)
{
	uint64_t n;

	if (read(fd, &n, sizeof(n)) < 0)
		return;
	/* Firecracker writes no lines while the VM is paused. */
	if (vm__state(((struct control *)opaque)->vm) == VM_STATE_RUNNING)
		ctl__flush(opaque);
}

/* The vm_config the builder takes, pointing into the configuration. */
static void ctl__vm_config(const struct control *c, struct vm_config *v)
{
	const struct control_config *k = &c->cfg;
	unsigned int i;

	memset(v, 0, sizeof(*v));
	v->kernel_path = k->kernel_image_path;
	v->initrd_path = k->initrd_path;
	v->append = k->boot_args;
	v->mem_mib = k->mem_size_mib;
	v->vcpus = k->vcpu_count;
	v->console = k->opts.console;
	v->console_path = k->opts.console_path;
	v->run_cmd = k->opts.run_cmd;
	v->run_len = k->opts.run_cmd ? strlen(k->opts.run_cmd) : 0;
	v->boot_timer = k->opts.boot_timer;
	v->stats = k->opts.stats;
	v->pvm = k->opts.pvm;
	for (i = 0; i < k->nr_drives; i++) {
		const struct control_drive *d = &k->drives[i];

		v->drives[i] = (struct drive_config){
			.path = d->path_on_host,
			.id = d->drive_id,
			.read_only = d->is_read_only,
			.root = d->is_root_device,
			.partuuid = d->partuuid,
			.rate_limiter = d->rate_limiter,
		};
	}
	v->nr_drives = k->nr_drives;
	for (i = 0; i < k->nr_nets; i++) {
		const struct control_net *n = &k->nets[i];

		v->nets[i] = (struct net_config){
			.iface_id = n->iface_id,
			.host_dev_name = n->host_dev_name,
			.has_mac = n->has_mac,
			.rx_rate_limiter = n->rx_rate_limiter,
			.tx_rate_limiter = n->tx_rate_limiter,
		};
		memcpy(v->nets[i].guest_mac, n->guest_mac, 6);
	}
	v->nr_nets = k->nr_nets;
	v->no_rng = !k->have_entropy;
	if (k->have_vsock) {
		v->vsock.guest_cid = k->guest_cid;
		v->vsock.uds_path = k->uds_path;
	}
}

static void ctl__start_metrics(struct control *c);

static int ctl__start(struct control *c, const void *args,
		      struct control_err *e)
{
	struct vm_config v;
	struct vm *vm;
	int ret = ctl__preboot(c, e);

	(void)args;
	if (ret)
		return ret;
	if (!c->cfg.have_boot_source)
		return ctl__err(e, -EINVAL,
				"Start microvm error: Cannot start microvm "
				"without kernel configuration.");
	if (c->dry_run)
		return ctl__err(e, -ENOTSUP,
				"Start microvm error: a dry run builds no VM.");
	ctl__vm_config(c, &v);
	/*
	 * The VM owns copies of its strings: calls after the start (PATCH
	 * /drives) replace this configuration's, and snapshots save the VM's.
	 */
	if (config__dup_strings(&v))
		return ctl__err(e, -ENOMEM,
				"Internal VMM error: out of memory");
	log__clear_error();
	ret = vm__create(&v, c->el, &vm);
	if (ret) {
		config__free_strings(&v);
		return ctl__err(e, ret, "Start microvm error: %s",
				*log__last_error() ? log__last_error() :
						     strerror(-ret));
	}
	vm->cfg_owned = true;
	pthread_mutex_lock(&c->lock);
	c->vm = vm;
	c->started = true;
	if (c->signalled)
		vm__stop_by_signal(vm, c->signal);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	/* Its timer before the start: seccomp allows no new one then. */
	ctl__start_metrics(c);
	vm__set_seccomp(vm, c->seccomp);
	if (!c->signalled)
		vm__start(vm); /* a failure requests the stop itself */
	return 0;
}

/* Metrics once the VM exists: a line at once, then every 60 s. */
static void ctl__start_metrics(struct control *c)
{
	struct itimerspec period = {
		.it_value.tv_sec = CONTROL_METRICS_PERIOD_S,
		.it_interval.tv_sec = CONTROL_METRICS_PERIOD_S,
	};

	if (c->metrics) {
		/* One line at once, then every 60 s, as Firecracker. */
		ctl__flush(c);
		c->metrics_timer = timerfd_create(CLOCK_MONOTONIC,
						  TFD_CLOEXEC | TFD_NONBLOCK);
		if (c->metrics_timer < 0 ||
		    timerfd_settime(c->metrics_timer, 0, &period, NULL) < 0 ||
		    event__add(c->el, c->metrics_timer, ctl__on_metrics_timer,
			       c) < 0)
			log_warn("metrics: no periodic flush: %s",
				 strerror(errno));
	}
}

int control__start(struct control *c, struct control_err *e)
{
	return ctl__run(c, ctl__start, NULL, e);
}

void control__dry_run(struct control *c)
{
	c->dry_run = true;
}

void control__set_seccomp(struct control *c, const struct seccomp_set *s)
{
	c->seccomp = s;
}

struct update_args {
	const char *id, *path;
	const struct rate_limiter_config *rl;
};

static int ctl__update_drive(struct control *c, const void *args,
			     struct control_err *e)
{
	const struct update_args *a = args;
	struct control_drive *d = NULL;
	char *vm_path = NULL;
	struct ctl_new n;
	unsigned int i, at = 0;
	char why[160];
	int ret = ctl__postboot(c, e);

	if (ret)
		return ret;
	for (i = 0; i < c->cfg.nr_drives; i++) {
		if (!strcmp(c->cfg.drives[i].drive_id, a->id)) {
			d = &c->cfg.drives[i];
			at = i;
		}
	}
	if (!d)
		return ctl__err(e, -ENOENT,
				"Drive config error: Device not found: %s.",
				a->id);
	if (!a->path && !a->rl)
		return ctl__err(e, -EINVAL,
				"Drive config error: Please specify at least "
				"one property to patch: path_on_host, "
				"rate_limiter.");
	if (a->rl && config__check_rate_limiter(a->rl, why, sizeof(why)))
		return ctl__err(e, -EINVAL,
				"Drive config error: rate_limiter: %s.", why);
	if (a->path) {
		/* The VM's own copy, for its snapshots (ctl__start()). */
		vm_path = strdup(a->path);
		if (!vm_path)
			return ctl__err(e, -ENOMEM,
					"Internal VMM error: out of memory");
		ret = dev_blk__update(&c->vm->dm, a->id, a->path,
				      d->is_read_only, why, sizeof(why));
		if (ret) {
			free(vm_path);
			return ctl__err(e, ret,
					"Drive config error: Unable to patch "
					"the block device: %s (%s)",
					why, a->path);
		}
	}
	if (a->rl) {
		ret = dev_blk__set_limiter(&c->vm->dm, a->id, a->rl, why,
					   sizeof(why));
		if (ret)
			return ctl__err(e, ret,
					"Drive config error: Unable to patch "
					"the block device: %s",
					why);
		/*
		 * No string changes: in place, here and in the VM's own
		 * configuration that snapshots save.  The VM's drives are
		 * in this configuration's order (ctl__vm_config(),
		 * ctl__config_from_vm(); none is added after the start).
		 */
		d->rate_limiter = *a->rl;
		if (at < c->vm->cfg.nr_drives)
			c->vm->cfg.drives[at].rate_limiter = *a->rl;
	}
	if (!a->path)
		return 0;
	ctl__begin(c, &n);
	for (i = 0; i < n.cfg.nr_drives; i++)
		if (!strcmp(n.cfg.drives[i].drive_id, a->id))
			n.cfg.drives[i].path_on_host = ctl__keep(&n, a->path);
	ret = ctl__commit(c, &n, e);
	/*
	 * Only now may the VM's old path go: after a snapshot load this
	 * configuration pointed into the VM's strings until the commit.
	 */
	if (!ret && at < c->vm->cfg.nr_drives) {
		free((char *)c->vm->cfg.drives[at].path);
		c->vm->cfg.drives[at].path = vm_path;
		vm_path = NULL;
	}
	free(vm_path);
	return ret;
}

int control__update_drive(struct control *c, const char *drive_id,
			  const char *path_on_host,
			  const struct rate_limiter_config *rl,
			  struct control_err *e)
{
	struct update_args a = { drive_id, path_on_host, rl };

	return ctl__run(c, ctl__update_drive, &a, e);
}

struct update_net_args {
	const char *id;
	const struct rate_limiter_config *rx, *tx;
};

static int ctl__update_net(struct control *c, const void *args,
			   struct control_err *e)
{
	const struct update_net_args *a = args;
	struct control_net *k = NULL;
	unsigned int i;
	char why[160];
	int ret = ctl__postboot(c, e);

	if (ret)
		return ret;
	for (i = 0; i < c->cfg.nr_nets; i++)
		if (!strcmp(c->cfg.nets[i].iface_id, a->id))
			k = &c->cfg.nets[i];
	if (!k)
		return ctl__err(e, -ENOENT,
				"Network interface config error: Device not "
				"found: %s.",
				a->id);
	if ((a->rx && config__check_rate_limiter(a->rx, why, sizeof(why))) ||
	    (a->tx && config__check_rate_limiter(a->tx, why, sizeof(why))))
		return ctl__err(e, -EINVAL,
				"Network interface config error: %s", why);
	ret = dev_net__update(&c->vm->dm, a->id, a->rx, a->tx);
	if (ret)
		return ctl__err(e, ret,
				"Network interface config error: Unable to "
				"update the rate limiters of %s: %s",
				a->id, strerror(-ret));
	/*
	 * No strings change: the configuration is updated in place, and
	 * the VM's own copy (what a snapshot saves), same index.
	 */
	if (a->rx)
		k->rx_rate_limiter = *a->rx;
	if (a->tx)
		k->tx_rate_limiter = *a->tx;
	i = (unsigned int)(k - c->cfg.nets);
	if (i < c->vm->cfg.nr_nets) {
		if (a->rx)
			c->vm->cfg.nets[i].rx_rate_limiter = *a->rx;
		if (a->tx)
			c->vm->cfg.nets[i].tx_rate_limiter = *a->tx;
	}
	return 0;
}

int control__update_net(struct control *c, const char *iface_id,
			const struct rate_limiter_config *rx,
			const struct rate_limiter_config *tx,
			struct control_err *e)
{
	struct update_net_args a = { iface_id, rx, tx };

	return ctl__run(c, ctl__update_net, &a, e);
}

static int ctl__pause(struct control *c, const void *args,
		      struct control_err *e)
{
	bool pause = *(const bool *)args;
	enum vm_state s;
	int ret = ctl__postboot(c, e);

	if (ret)
		return ret;
	s = vm__state(c->vm);
	if (s == VM_STATE_STOPPED)
		return ctl__err(e, -ESRCH, "The microVM has stopped.");
	if (pause ? s == VM_STATE_PAUSED : s == VM_STATE_RUNNING)
		return 0; /* idempotent, as Firecracker */
	ret = pause ? vm__pause(c->vm) : vm__resume(c->vm);
	if (ret == -ETIMEDOUT)
		return ctl__err(e, ret,
				"Internal VMM error: a vCPU did not stop "
				"within %d ms; the microVM runs on",
				VM_PAUSE_TIMEOUT_MS);
	if (ret)
		return ctl__err(e, ret, "Internal VMM error: %s",
				strerror(-ret));
	return 0;
}

int control__pause(struct control *c, struct control_err *e)
{
	bool pause = true;

	return ctl__run(c, ctl__pause, &pause, e);
}

int control__resume(struct control *c, struct control_err *e)
{
	bool pause = false;

	return ctl__run(c, ctl__pause, &pause, e);
}

/* --- snapshots ------------------------------------------------------------ */

static int ctl__snapshot_create(struct control *c, const void *args,
				struct control_err *e)
{
	const struct control_snapshot_create *r = args;
	struct persist_create req = {
		.state_path = r->snapshot_path,
		.mem_path = r->mem_file_path,
		.kind = r->diff ? PERSIST_DIFF : PERSIST_FULL,
		.compress = r->compress,
	};
	char why[PERSIST_WHY_MAX];
	int ret = ctl__postboot(c, e);

	if (ret)
		return ret;
	switch (vm__state(c->vm)) {
	case VM_STATE_PAUSED:
		break;
	case VM_STATE_STOPPED:
		return ctl__err(e, -ESRCH, "The microVM has stopped.");
	default:
		return ctl__err(e, -EBUSY,
				"Create snapshot error: the microVM must be "
				"paused first (PATCH /vm {\"state\": "
				"\"Paused\"})");
	}
	ret = persist__create(c->vm, &req, NULL, why);
	if (ret)
		return ctl__err(e, ret, "Create snapshot error: %s", why);
	return 0;
}

int control__snapshot_create(struct control *c,
			     const struct control_snapshot_create *req,
			     struct control_err *e)
{
	return ctl__run(c, ctl__snapshot_create, req, e);
}

/* GET /vm/config after a load: the snapshot's configuration. */
static void ctl__config_from_vm(struct control *c, const struct vm *vm)
{
	const struct vm_config *v = &vm->cfg;
	struct control_config *k = &c->cfg;
	unsigned int i;

	k->vcpu_count = v->vcpus;
	k->mem_size_mib = v->mem_mib;
	k->have_boot_source = v->kernel_path != NULL;
	k->kernel_image_path = v->kernel_path;
	k->initrd_path = v->initrd_path;
	k->boot_args = v->append;
	k->nr_drives = v->nr_drives;
	for (i = 0; i < v->nr_drives; i++)
		k->drives[i] = (struct control_drive){
			.drive_id = v->drives[i].id,
			.path_on_host = v->drives[i].path,
			.is_root_device = v->drives[i].root,
			.is_read_only = v->drives[i].read_only,
			.partuuid = v->drives[i].partuuid,
			.rate_limiter = v->drives[i].rate_limiter,
		};
	k->nr_nets = v->nr_nets;
	for (i = 0; i < v->nr_nets; i++) {
		k->nets[i] = (struct control_net){
			.iface_id = v->nets[i].iface_id,
			.host_dev_name = v->nets[i].host_dev_name,
			.has_mac = v->nets[i].has_mac,
			.rx_rate_limiter = v->nets[i].rx_rate_limiter,
			.tx_rate_limiter = v->nets[i].tx_rate_limiter,
		};
		memcpy(k->nets[i].guest_mac, v->nets[i].guest_mac, 6);
	}
	k->have_vsock = v->vsock.uds_path != NULL;
	k->guest_cid = v->vsock.guest_cid;
	k->uds_path = v->vsock.uds_path;
	k->have_entropy = !v->no_rng;
}

static int ctl__snapshot_load(struct control *c, const void *args,
			      struct control_err *e)
{
	const struct control_snapshot_load *r = args;
	struct persist_load req = {
		.state_path = r->snapshot_path,
		.backend =
			r->uffd ? PERSIST_BACKEND_UFFD : PERSIST_BACKEND_FILE,
		.backend_path = r->mem_backend_path,
		.vsock_uds = r->vsock_uds_path,
	};
	char why[PERSIST_WHY_MAX];
	struct vm_config local;
	struct vm *vm;
	unsigned int i;
	int ret = ctl__preboot(c, e);

	if (ret)
		return ret;
	if (c->cfg.have_boot_source || c->cfg.nr_drives)
		return ctl__err(e, -EBUSY,
				"Loading a microVM snapshot not allowed after "
				"configuring boot-specific resources.");
	if (c->dry_run)
		return ctl__err(e, -ENOTSUP,
				"Load snapshot error: a dry run builds no "
				"VM.");
	if (r->nr_drive_overrides > CONTROL_MAX_OVERRIDES)
		return ctl__err(e, -EINVAL,
				"Load snapshot error: at most %u "
				"drive_overrides",
				CONTROL_MAX_OVERRIDES);
	for (i = 0; i < r->nr_drive_overrides; i++) {
		req.drives[i].drive_id = r->drive_id[i];
		req.drives[i].path = r->drive_path[i];
	}
	req.nr_drives = r->nr_drive_overrides;
	if (r->nr_net_overrides > CONFIG_MAX_NETS)
		return ctl__err(e, -EINVAL,
				"Load snapshot error: at most %u "
				"network_overrides",
				CONFIG_MAX_NETS);
	for (i = 0; i < r->nr_net_overrides; i++) {
		req.nets[i].iface_id = r->net_iface_id[i];
		req.nets[i].host_dev_name = r->net_tap[i];
	}
	req.nr_nets = r->nr_net_overrides;
	ctl__vm_config(c, &local);
	req.local = &local;
	ret = persist__load(&req, c->el, &vm, why);
	if (ret)
		return ctl__err(e, ret, "Load snapshot error: %s", why);
	pthread_mutex_lock(&c->lock);
	c->vm = vm;
	c->started = true;
	ctl__config_from_vm(c, vm);
	if (c->signalled)
		vm__stop_by_signal(vm, c->signal);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	/* Its timer before the vCPUs start: seccomp allows no new one then. */
	ctl__start_metrics(c);
	vm__set_seccomp(vm, c->seccomp);
	if (r->resume_vm && !c->signalled)
		vm__resume(vm); /* a failure requests the stop itself */
	return 0;
}

int control__snapshot_load(struct control *c,
			   const struct control_snapshot_load *req,
			   struct control_err *e)
{
	return ctl__run(c, ctl__snapshot_load, req, e);
}

static int ctl__ctrl_alt_del(struct control *c, const void *args,
			     struct control_err *e)
{
	struct devmgr_dev *d;
	int ret = ctl__postboot(c, e);

	(void)args;
	if (ret)
		return ret;
	d = devmgr__find(&c->vm->dm, "i8042");
	if (!d || !d->dev)
		return ctl__err(e, -ENODEV, "Internal VMM error: no i8042");
	i8042__ctrl_alt_del(d->dev);
	return 0;
}

int control__ctrl_alt_del(struct control *c, struct control_err *e)
{
	return ctl__run(c, ctl__ctrl_alt_del, NULL, e);
}

static int ctl__flush_metrics(struct control *c, const void *args,
			      struct control_err *e)
{
	int ret = ctl__postboot(c, e);

	(void)args;
	if (!ret)
		ctl__flush(c);
	return ret;
}

int control__flush_metrics(struct control *c, struct control_err *e)
{
	return ctl__run(c, ctl__flush_metrics, NULL, e);
}

enum control_state control__state(struct control *c)
{
	struct vm *vm;

	pthread_mutex_lock(&c->lock);
	vm = c->vm;
	pthread_mutex_unlock(&c->lock);
	if (!vm)
		return CONTROL_NOT_STARTED;
	switch (vm__state(vm)) {
	case VM_STATE_PAUSED:
		return CONTROL_PAUSED;
	case VM_STATE_STOPPED:
		return CONTROL_STOPPED;
	default:
		return CONTROL_RUNNING;
	}
}

static int ctl__config(struct control *c, const void *args,
		       struct control_err *e)
{
	(void)e;
	*(struct control_config *)args = c->cfg;
	return 0;
}

void control__config(struct control *c, struct control_config *out)
{
	ctl__run(c, ctl__config, out, NULL);
}

void control__count_api(struct control *c, const char *method,
			const char *endpoint, bool failed)
{
	metrics__count_api(&c->api, method, endpoint, failed);
}

void control__signal(struct control *c, int sig)
{
	pthread_mutex_lock(&c->lock);
	if (!c->signalled) {
		c->signalled = true;
		c->signal = sig;
	}
	if (c->vm)
		vm__stop_by_signal(c->vm, sig);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

int control__wait(struct control *c)
{
	struct vm *vm;
	int status;

	pthread_mutex_lock(&c->lock);
	while (!c->started && !c->signalled)
		pthread_cond_wait(&c->cond, &c->lock);
	vm = c->vm;
	pthread_mutex_unlock(&c->lock);
	if (!vm) {
		log_warn("stopped by signal %d", c->signal);
		return 128 + c->signal;
	}
	status = vm__wait(vm);
	if (c->cfg.opts.stats)
		metrics__print(vm);
	return status;
}

/* --- life of the control itself ----------------------------------------- */

struct control *control__create(struct event_loop *el, const char *instance_id)
{
	struct control *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->el = el;
	c->id = strdup(instance_id ? instance_id : "anonymous-instance");
	c->log_fd = -1;
	c->metrics_timer = -1;
	/* Firecracker's defaults: 1 vCPU, 128 MiB; no devices. */
	c->cfg.vcpu_count = 1;
	c->cfg.mem_size_mib = 128;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	metrics__api_init(&c->api);
	if (!c->id) {
		free(c);
		return NULL;
	}
	return c;
}

const char *control__id(const struct control *c)
{
	return c->id;
}

void control__destroy(struct control *c)
{
	unsigned int i;

	if (!c)
		return;
	vm__destroy(c->vm);
	if (c->metrics_timer >= 0)
		close(c->metrics_timer);
	metrics__close(c->metrics);
	if (c->log_fd >= 0) {
		log__set_fd(-1);
		close(c->log_fd);
	}
	for (i = 0; i < sizeof(c->strs) / sizeof(c->strs[0]); i++)
		free(c->strs[i]);
	metrics__api_destroy(&c->api);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c->id);
	free(c);
}
