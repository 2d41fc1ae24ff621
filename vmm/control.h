/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control interface: typed, synchronous calls that configure, start,
 * pause, resume, query and stop the one VM of this process.  Every caller
 * goes through here: ember's command-line flags and a --config-file
 * (api/server/main.c, api/server/config_file.c), the control socket
 * (api/server/routes.c).  Each call is validated here, in one place, and
 * runs on the event thread (a call from another thread is handed to it and
 * waited for), so device state is stable while one runs.
 *
 * The configuration follows Firecracker's API (machine config, boot
 * source, drives, network interfaces, vsock, entropy, logger, metrics;
 * then InstanceStart), with ember's own options (console, --run, PVM
 * profile) beside it.  Calls that only make sense before the start fail
 * with -EBUSY after it, and the reverse with -EAGAIN, each with the reason
 * in struct control_err.
 *
 * The module is the folder vmm/control/, this header its only public face
 * (its files share vmm/control/core.h, private to it): core.c the
 * machinery (a call handed to the event thread, the state checks, the
 * configuration's copy and commit, lists of named devices), instance.c
 * the instance's life, then one file per kind of configuration or action,
 * as Firecracker's vmm_config/ (machine, boot_source, drives, net, vsock,
 * entropy, options, logger, metrics, actions, snapshot) and vm_config.c,
 * the configuration as the builder takes it.  It sits on top of vmm/: it
 * may include the rest of vmm/ (vm, the configuration, devmgr and dev/
 * for the calls after the start, persist, metrics, log, event), and
 * boot/layout.h and guest-init/protocol.h for the command line's limits;
 * never api/ (which calls it) nor a device model (devices/): a device is
 * reached through the device manager (vmm/devmgr.h) or vmm/dev/.
 */
#ifndef EMBER_VMM_CONTROL_H
#define EMBER_VMM_CONTROL_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

struct control;
struct event_loop;
struct seccomp_set;

/* Why a call failed: one line, Firecracker-style ("Machine config error: ..."). */
struct control_err {
	char msg[512];
};

/* The instance's state, as GET / names it. */
enum control_state {
	CONTROL_NOT_STARTED = 0,
	CONTROL_RUNNING,
	CONTROL_PAUSED,
	CONTROL_STOPPED, /* the guest ended; the process is about to exit */
};

/* A drive (PUT /drives/{drive_id}, --drive). Strings are copied. */
struct control_drive {
	const char *drive_id; /* [A-Za-z0-9_.-]{1,64} (the API: no '.', '-') */
	const char *path_on_host;
	bool is_root_device;
	bool is_read_only;
	const char *partuuid; /* NULL: none; root=PARTUUID= for the root */
	bool cache_writeback; /* "Writeback" (else "Unsafe"); flushes go
			       * to the disk either way */
	struct rate_limiter_config rate_limiter; /* all zero: none */
};

/*
 * A network interface (PUT /network-interfaces/{iface_id}, --net): a
 * virtio-net device over the tap @host_dev_name.  Strings are copied.
 */
struct control_net {
	const char *iface_id; /* [A-Za-z0-9_]{1,64} (ember's --net: '-', '.') */
	const char *host_dev_name; /* 1..15 bytes, no '/', ':' or space */
	uint8_t guest_mac[6]; /* unicast */
	bool has_mac; /* else the guest's driver picks a random MAC */
	struct rate_limiter_config rx_rate_limiter, tx_rate_limiter;
};

/* ember's own options (its flags), beside Firecracker's configuration. */
struct control_options {
	enum console_kind console;
	const char *console_path; /* CONSOLE_FILE */
	const char *run_cmd; /* --run; NULL: none */
	bool boot_timer;
	bool stats;
	enum pvm_mode pvm;
};

/* Log levels of PUT /logger, Firecracker's names. */
enum control_log_level {
	CONTROL_LOG_OFF = 0,
	CONTROL_LOG_ERROR,
	CONTROL_LOG_WARNING,
	CONTROL_LOG_INFO,
	CONTROL_LOG_DEBUG,
	CONTROL_LOG_TRACE,
};

/* The whole configuration, as GET /vm/config reports it (read-only). */
struct control_config {
	unsigned int vcpu_count; /* 1..CONFIG_MAX_VCPUS */
	uint64_t mem_size_mib;
	bool smt, track_dirty_pages;
	bool have_boot_source;
	const char *kernel_image_path, *initrd_path, *boot_args;
	unsigned int nr_drives; /* the root drive first */
	struct control_drive drives[CONFIG_MAX_DRIVES];
	unsigned int nr_nets; /* in the order they were first set */
	struct control_net nets[CONFIG_MAX_NETS];
	bool have_vsock;
	uint64_t guest_cid;
	const char *uds_path;
	bool have_entropy;
	struct control_options opts;
};

/*
 * control__create() - the control of a VM yet to be configured, whose
 * host-side work runs on @el (not owned; it must be started before calls
 * arrive from other threads, and outlive the control).  @instance_id is
 * GET /'s id (copied).  Returns it, or NULL without memory.
 */
struct control *control__create(struct event_loop *el, const char *instance_id);

/* control__id() - the instance id given at creation. */
const char *control__id(const struct control *c);

/*
 * Configuration, before InstanceStart (each returns 0, -EBUSY once started,
 * or -EINVAL with @e filled; nothing changes on an error):
 *
 * control__set_machine() - vCPUs (1..32; with @smt 1 or even) and RAM
 * (CONFIG_MEM_MIN_MIB..CONFIG_MEM_MAX_MIB, no more than the host's).
 * ember runs no SMT siblings: @smt true is refused.  @track_dirty_pages is
 * kept for the snapshot issue (dirty tracking is not done yet).
 */
int control__set_machine(struct control *c, unsigned int vcpu_count,
			 uint64_t mem_size_mib, bool smt,
			 bool track_dirty_pages, struct control_err *e);

/*
 * control__set_boot_source() - the kernel (ELF vmlinux or bzImage) and the
 * initrd (NULL: none) must be readable regular files now; @boot_args (NULL:
 * none) are added to the kernel command line ahead of ember's defaults,
 * which they override.  Strings are copied.
 */
int control__set_boot_source(struct control *c, const char *kernel,
			     const char *initrd, const char *boot_args,
			     struct control_err *e);

/*
 * control__set_drive() - add drive @d, or replace the drive with its id.
 * At most CONFIG_MAX_DRIVES, one root; the image must be a readable (and,
 * unless read-only, writable) regular file now.  Strings are copied.
 */
int control__set_drive(struct control *c, const struct control_drive *d,
		       struct control_err *e);

/*
 * control__set_vsock() - the virtio-vsock device for guest CID @cid
 * (3..UINT32_MAX), its host side on the Unix socket @uds_path (bound when
 * the VM starts; at most 100 bytes).  Replaces an earlier one.
 */
int control__set_vsock(struct control *c, uint64_t cid, const char *uds_path,
		       struct control_err *e);

/*
 * control__set_net() - add network interface @n, or replace the one with
 * its iface_id (Firecracker's PUT /network-interfaces/{iface_id}).  At
 * most CONFIG_MAX_NETS; the tap name and the MAC must not be another
 * interface's, the id not a drive's; the MAC must be unicast.  The tap is
 * opened at the start, not now.  Strings are copied.
 */
int control__set_net(struct control *c, const struct control_net *n,
		     struct control_err *e);

/*
 * control__update_net() - PATCH /network-interfaces/{iface_id} after the
 * start: the interface's receive (@rx) and transmit (@tx) rate limiters
 * (NULL keeps one) take effect at once.  -EAGAIN before the start,
 * -ENOENT for an unknown interface, -EINVAL for a refused limiter.
 */
int control__update_net(struct control *c, const char *iface_id,
			const struct rate_limiter_config *rx,
			const struct rate_limiter_config *tx,
			struct control_err *e);

/* control__set_entropy() - the virtio-rng device on (@on) or off. */
int control__set_entropy(struct control *c, bool on, struct control_err *e);

/* control__set_options() - ember's own options (copied). */
int control__set_options(struct control *c, const struct control_options *o,
			 struct control_err *e);

/*
 * control__set_logger() - ember's log goes to @path (NULL: unchanged; a
 * file, created 0600 and appended to, or a FIFO) at @level.  Before the
 * start only, as Firecracker has it.
 */
int control__set_logger(struct control *c, const char *path,
			enum control_log_level level, struct control_err *e);

/*
 * control__set_metrics() - metrics go to @path (a file, created 0600 and
 * appended to, or a FIFO): one JSON object per line on FlushMetrics and
 * every 60 s while the VM runs (vmm/metrics.h).  Once only; before the
 * start only.
 */
int control__set_metrics(struct control *c, const char *path,
			 struct control_err *e);

/*
 * control__update_drive() - PATCH /drives after the start: drive @drive_id
 * now uses the image @path_on_host (opened and locked as at the start;
 * the guest sees the new capacity) unless it is NULL, and is limited by
 * @rl (checked by config__check_rate_limiter(); it replaces the drive's
 * limiter and takes effect at once, see devices/rate_limiter.h) unless it
 * is NULL.  The limiter is checked before the image changes, so a refused
 * one changes nothing.  -EAGAIN before the start, -ENOENT for an unknown
 * drive, -EINVAL for a bad image or limiter or for neither given.
 */
int control__update_drive(struct control *c, const char *drive_id,
			  const char *path_on_host,
			  const struct rate_limiter_config *rl,
			  struct control_err *e);

/*
 * control__dry_run() - for tests and fuzzing: from now on InstanceStart
 * checks the configuration and fails with -ENOTSUP instead of building a
 * VM, and the logger and metrics calls open no file (metrics go to
 * /dev/null, the log level stays).
 */
void control__dry_run(struct control *c);

/*
 * control__set_seccomp() - the filters (vmm/seccomp/seccomp.h; not owned,
 * they outlive @c) that the VM's threads install as its vCPUs first start
 * (InstanceStart, a snapshot load with resume_vm, the first resume after
 * a load).  NULL (the default, and --no-seccomp): none.  Call before the
 * VM starts.
 */
void control__set_seccomp(struct control *c, const struct seccomp_set *s);

/*
 * control__start() - InstanceStart: build the VM from the configuration
 * (vmm/builder.h) and start it.  Returns 0, -EBUSY when already started,
 * -EINVAL for a configuration without a kernel, or the build's error (the
 * configuration stays; the call may be made again).
 */
int control__start(struct control *c, struct control_err *e);

/*
 * control__pause() / control__resume() - PATCH /vm Paused / Resumed: park
 * every vCPU (vm__pause()) or let them run.  Pausing a paused VM and
 * resuming a running one succeed.  -EAGAIN before the start, -ETIMEDOUT
 * when a vCPU did not park (the VM then stays running).
 */
int control__pause(struct control *c, struct control_err *e);
int control__resume(struct control *c, struct control_err *e);

/*
 * control__ctrl_alt_del() - SendCtrlAltDel: the keys' scancodes arrive on
 * the i8042 (a guest with an i8042 keyboard driver reboots; ember's own
 * guest kernel has none and ignores them).  -EAGAIN before the start.
 */
int control__ctrl_alt_del(struct control *c, struct control_err *e);

/*
 * control__flush_metrics() - FlushMetrics: write one metrics line now
 * (nothing without PUT /metrics).  -EAGAIN before the start.
 */
int control__flush_metrics(struct control *c, struct control_err *e);

/* PUT /snapshot/create: strings are the caller's, used during the call. */
struct control_snapshot_create {
	const char *snapshot_path;
	const char *mem_file_path;
	bool diff; /* snapshot_type "Diff" (else "Full") */
	bool compress; /* ember's extension: the memory file zlib-compressed */
};

/*
 * control__snapshot_create() - write a snapshot of the paused VM
 * (vmm/persist/persist.h: temporary files renamed into place, mode 0600).
 * Errors: -EAGAIN before the start, -EBUSY while the VM is not Paused,
 * else what the snapshot met (Firecracker's "Create snapshot error: ...").
 */
int control__snapshot_create(struct control *c,
			     const struct control_snapshot_create *req,
			     struct control_err *e);

#define CONTROL_MAX_OVERRIDES CONFIG_MAX_DRIVES

/* PUT /snapshot/load: strings are the caller's, used during the call. */
struct control_snapshot_load {
	const char *snapshot_path;
	const char *mem_backend_path; /* mem_backend.backend_path */
	bool uffd; /* backend_type "Uffd" (else "File") */
	bool resume_vm;
	const char *vsock_uds_path; /* vsock_override.uds_path; NULL: none */
	/* network_overrides [{iface_id, host_dev_name}] */
	const char *net_iface_id[CONFIG_MAX_NETS];
	const char *net_tap[CONFIG_MAX_NETS];
	unsigned int nr_net_overrides;
	/* ember's extension: drive_overrides [{drive_id, path_on_host}] */
	const char *drive_id[CONTROL_MAX_OVERRIDES];
	const char *drive_path[CONTROL_MAX_OVERRIDES];
	unsigned int nr_drive_overrides;
};

/*
 * control__snapshot_load() - the instance becomes the VM of a snapshot
 * (vmm/persist/persist.h), Paused or, with @resume_vm, Running; its
 * configuration (GET /vm/config) is the snapshot's with the overrides.
 * Only before a start, and not after a boot source or drive was set
 * (Firecracker's rule); ember's own options (console, logger, metrics)
 * apply.  A refused snapshot leaves the instance as it was: it can load
 * again or boot.  Errors: -EBUSY after a start or boot configuration,
 * else "Load snapshot error: <why>".
 */
int control__snapshot_load(struct control *c,
			   const struct control_snapshot_load *req,
			   struct control_err *e);

/* control__state() - the instance's state. */
enum control_state control__state(struct control *c);

/*
 * control__config() - copy the configuration into @out; its strings stay
 * valid until the next configuration call.
 */
void control__config(struct control *c, struct control_config *out);

/*
 * control__count_api() - the API server records a request to @endpoint
 * (a short name, "machine-config", ...) and whether it failed, for the
 * metrics.  Any thread.
 */
void control__count_api(struct control *c, const char *method,
			const char *endpoint, bool failed);

/*
 * control__signal() - a stop signal @sig arrived (on the event thread):
 * stop the VM, or end control__wait() at once when none runs.
 */
void control__signal(struct control *c, int sig);

/*
 * control__wait() - on the main thread: wait until the VM has run and
 * stopped (or a signal came first) and return the process exit status
 * (vm__wait()'s, 128 + N after a signal before the start).
 */
int control__wait(struct control *c);

/*
 * control__destroy() - free the VM and everything; after control__wait()
 * and after the event loop stopped (devices with a host side on it).
 */
void control__destroy(struct control *c);

#endif /* EMBER_VMM_CONTROL_H */
