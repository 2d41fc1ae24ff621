/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the files of the control interface share; private to vmm/control/
 * (the rest of ember sees only vmm/control.h).  core.c holds the
 * machinery: a typed call handed to the event thread and waited for
 * (ctl__run()), the state checks every call starts with (before or after
 * the start), the copy of the configuration a call changes and commits
 * whole, and the checks that more than one kind of configuration makes
 * (ids, lists of named devices, host files).  instance.c holds the
 * instance's life; every other file is one kind of configuration or
 * action, as Firecracker's vmm_config/: machine.c, boot_source.c,
 * drives.c, net.c, vsock.c, entropy.c, options.c (ember's own), logger.c,
 * metrics.c, actions.c (start, pause, resume, Ctrl-Alt-Del), snapshot.c
 * (create, load); vm_config.c turns the configuration into the builder's
 * and back.
 */
#ifndef EMBER_VMM_CONTROL_CORE_H
#define EMBER_VMM_CONTROL_CORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "../control.h"
#include "../metrics.h"

struct vm;
struct vm_config;

/* Owned strings of one configuration: every one it may point at. */
#define CTL_STRS (16 + CONFIG_MAX_DRIVES * 4 + CONFIG_MAX_NETS * 2)

/* Firecracker's period for metrics lines while the VM runs. */
#define CONTROL_METRICS_PERIOD_S 60

struct control {
	struct event_loop *el; /* not owned */
	char *id;

	/* The configuration: owned copies, changed on the event thread. */
	struct control_config cfg;
	char *strs[CTL_STRS]; /* what cfg points into */

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

/* --- core.c: the machinery ---------------------------------------------- */

/*
 * ctl__err() - fill @e (NULL: none) with the message @fmt and return @ret,
 * so that a call can `return ctl__err(e, -EINVAL, ...)`.
 */
int ctl__err(struct control_err *e, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* When a call may run: before the start, after it, or at any time. */
enum ctl_when {
	CTL_ANY = 0,
	CTL_PREBOOT, /* after the start: -EBUSY */
	CTL_POSTBOOT, /* before the start: -EAGAIN */
};

/*
 * ctl__run() - the typed call: on the event thread (at once when called
 * there), check that the call may run now (@when; if not, the error with
 * Firecracker's words in @e), then run @fn(@c, @args, @e) and return what
 * it returned.  @args is the call's argument struct; @e (NULL: none)
 * starts empty.
 */
int ctl__run(struct control *c, enum ctl_when when,
	     int (*fn)(struct control *c, const void *args,
		       struct control_err *e),
	     const void *args, struct control_err *e);

/*
 * A change of the configuration: a copy of it whose strings are owned by
 * the change.  Every call that changes strings begins one
 * (ctl__begin()), changes the copy, then commits it (ctl__commit()) or
 * drops it (ctl__abort()), so that a failure changes nothing.
 */
struct ctl_new {
	struct control_config cfg;
	char *strs[CTL_STRS];
	unsigned int n;
	bool nomem;
};

/* ctl__begin() - @n becomes a copy of @c's configuration. */
void ctl__begin(const struct control *c, struct ctl_new *n);

/*
 * ctl__keep() - a copy of @s (NULL: NULL) owned by @n; a failed copy is
 * reported by ctl__commit().
 */
const char *ctl__keep(struct ctl_new *n, const char *s);

/* ctl__abort() - drop @n, nothing changed. */
void ctl__abort(struct ctl_new *n);

/*
 * ctl__commit() - @n becomes @c's configuration (its old strings freed).
 * Returns 0, or -ENOMEM when a copy failed (@n dropped, nothing changed).
 */
int ctl__commit(struct control *c, struct ctl_new *n, struct control_err *e);

/*
 * A list of named devices in the configuration (drives, network
 * interfaces), as Firecracker keeps them: where it is, the size of an
 * entry and where its id is, how its errors read, and the two steps that
 * differ between lists when an entry is put (ctl__put()).
 */
struct ctl_list {
	const char *err; /* "Drive config error" */
	const char *id_name; /* "drive_id" */
	const char *plural; /* "drives" */
	unsigned int max; /* entries at most */
	size_t array_off, nr_off; /* the list and its count in the config */
	size_t size; /* of an entry */
	size_t id_off; /* offset of its id, a const char * */
	/*
	 * check() - whether @entry may join @c's configuration (or replace
	 * the entry with its id), beyond its id: 0, or -EINVAL with the
	 * reason in @e.  keep() - fill @slot, in the change @n, from @entry,
	 * its strings copied with ctl__keep(); then put the list in order.
	 */
	int (*check)(const struct control *c, const void *entry,
		     struct control_err *e);
	void (*keep)(struct ctl_new *n, void *slot, const void *entry);
};

extern const struct ctl_list ctl_drives; /* drives.c */
extern const struct ctl_list ctl_nets; /* net.c */

/*
 * ctl__put() - before the start: add @entry (of list @l) to the
 * configuration, or replace the entry with its id.  Its id must be 1 to
 * DEVMGR_ID_MAX letters, digits, '_', '-' or '.' (Firecracker's ids, and
 * ember's --drive id=, --net id=), else "<err>: <id_name> must be ...";
 * then @l->check() must pass, and a new entry must fit ("<err>: at most
 * <max> <plural>.").  Returns 0, -EINVAL or -ENOMEM; nothing changes on
 * an error.
 */
int ctl__put(struct control *c, const struct ctl_list *l, const void *entry,
	     struct control_err *e);

/* ctl__find() - the index of the entry with id @id in @cfg, or -1. */
int ctl__find(const struct ctl_list *l, const struct control_config *cfg,
	      const char *id);

/*
 * ctl__lookup() - the index of the entry with id @id in @cfg, or -ENOENT
 * with "<err>: Device not found: <id>." in @e.
 */
int ctl__lookup(const struct ctl_list *l, const struct control_config *cfg,
		const char *id, struct control_err *e);

/*
 * ctl__file_ok() - a regular file @path can be opened with @flags now: 0,
 * -EINVAL when it is no regular file, or the open's -errno.
 * ctl__strerror() says that error in words.
 */
int ctl__file_ok(const char *path, int flags);
const char *ctl__strerror(int ret);

/*
 * ctl__open_sink() - open the log or metrics file @path: created 0600,
 * appended to; a FIFO without a reader does not block (O_RDWR keeps it
 * open), a full one drops lines.  Returns the fd or a negative errno.
 */
int ctl__open_sink(const char *path);

/* --- instance.c ---------------------------------------------------------- */

/*
 * ctl__adopt() - @vm, just built (InstanceStart) or loaded from a snapshot
 * (@loaded: the configuration becomes the snapshot's), is the instance's
 * VM: control__wait() wakes, a signal that came first stops it, its
 * metrics timer and seccomp filters are set (before its vCPUs start:
 * seccomp allows no new timer then).  Returns true when it may run now,
 * false when a signal came first.
 */
bool ctl__adopt(struct control *c, struct vm *vm, bool loaded);

/* --- metrics.c ----------------------------------------------------------- */

/* ctl__flush() - one metrics line now (none without PUT /metrics or VM). */
void ctl__flush(struct control *c);

/*
 * ctl__start_metrics() - once the VM exists: a metrics line at once, then
 * one every CONTROL_METRICS_PERIOD_S while it runs (nothing without PUT
 * /metrics).
 */
void ctl__start_metrics(struct control *c);

/* --- vm_config.c --------------------------------------------------------- */

/*
 * ctl__vm_config() - the vm_config the builder takes (vmm/builder.h),
 * pointing into @c's configuration.
 */
void ctl__vm_config(const struct control *c, struct vm_config *v);

/*
 * ctl__config_from_vm() - after a snapshot load, GET /vm/config says the
 * snapshot's configuration: @c's points into @vm's.
 */
void ctl__config_from_vm(struct control *c, const struct vm *vm);

#endif /* EMBER_VMM_CONTROL_CORE_H */
