/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How each kind of device gets into a VM: one file per device class, each
 * with its class (struct devmgr_class, registered in classes.c) and the
 * function that creates such a device from its configuration, registers it
 * with the device manager and opens the host files it needs (a drive's
 * image is opened beforehand, before /dev/kvm: dev_blk__open()).  The
 * builder (vmm/builder.c) calls these; nothing else does.
 *
 * A new device class means: its model in devices/, a file here, one line
 * in classes.c, and the call in the builder for its configuration.
 */
#ifndef EMBER_VMM_DEV_DEV_H
#define EMBER_VMM_DEV_DEV_H

#include "../../devices/device.h"
#include "../../devices/virtio_blk.h"
#include "../config.h"
#include "../devmgr.h"

struct console_out;
struct event_loop;
struct guest_mem;

/* What a device's creation may use; all of it outlives the devices. */
struct dev_env {
	struct devmgr *dm;
	const struct guest_mem *mem;
	struct event_loop *el;
	int *vm_fd; /* for lines driven with KVM_IRQ_LINE */
	struct device_events events; /* reset, exit status, boot timer */
	struct console_out *console; /* where the UART's output goes */
};

/* The classes, each defined in its own file. */
extern const struct devmgr_class dev_class_serial;
extern const struct devmgr_class dev_class_i8042;
extern const struct devmgr_class dev_class_cmos;
extern const struct devmgr_class dev_class_guest_signal;
extern const struct devmgr_class dev_class_virtio_blk;
extern const struct devmgr_class dev_class_virtio_rng;
extern const struct devmgr_class dev_class_virtio_vsock;
extern const struct devmgr_class dev_class_virtio_net;

/*
 * dev__class() - the registered class named @name, or NULL (the snapshot
 * code finds a saved device's class this way).
 */
const struct devmgr_class *dev__class(const char *name);

/*
 * dev_legacy__add() - the PC platform every VM has: the 16550 UART at
 * COM1 ("serial", IRQ 4, output to @env->console), the i8042 reset line
 * ("i8042"), the CMOS clock ("cmos"), and the boot-timer and exit-status
 * devices ("boot-timer", "exit-status").  Returns 0 or a negative errno
 * (logged).
 */
int dev_legacy__add(const struct dev_env *env);

/*
 * A drive's image, open and locked, not yet a device's: what
 * dev_blk__open() makes before the VM exists and dev_blk__add() takes.
 * Zeroed: none.
 */
struct dev_blk_image {
	struct virtio_blk_backing bk; /* bk.ops NULL: none */
	bool overlay; /* a copy-on-write overlay (snapshot/overlay.h) */
};

/*
 * dev_blk__open() - open drive @d's image into @img, host files only (no
 * VM needed, so that a bad drive is reported before /dev/kvm is opened):
 * read-only with @d->read_only, O_NONBLOCK so that a FIFO fails instead
 * of hanging; it must be a regular file of at least one sector; it is
 * locked (flock: shared read-only, else exclusive) against a second
 * writer.  A file that starts with the overlay magic is opened as a
 * copy-on-write overlay over its base (snapshot/overlay.h: the base
 * read-only, its identity checked).  Returns 0 with @img owning the image
 * (give it to dev_blk__add() or dev_blk__close()), or a negative errno
 * after one error line naming the file, @img then zeroed.
 */
int dev_blk__open(const struct drive_config *d, struct dev_blk_image *img);

/* dev_blk__close() - close @img's image and zero it; safe on a zeroed one. */
void dev_blk__close(struct dev_blk_image *img);

/*
 * dev_blk__add() - a virtio-blk device with device id @id for drive @d,
 * on the image @img that dev_blk__open() opened for @d: taken over
 * (zeroed here, closed on failure too).  GET_ID answers @d->id or @id.
 * @d->rate_limiter limits it (devices/rate_limiter.h), woken by a timerfd
 * on the event loop; the timerfd exists even without a limiter, for PATCH.
 * Returns 0 or a negative errno (-EBADF for no image) after one error
 * line.
 */
int dev_blk__add(const struct dev_env *env, const char *id,
		 const struct drive_config *d, struct dev_blk_image *img);

/*
 * dev_blk__update() - drive @id now reads and writes the image @path
 * (PATCH /drives: opened and locked as by dev_blk__add(), read-only when
 * @read_only); the guest sees the new capacity.  On the event thread.
 * Returns 0, -ENOENT for no such drive, or another negative errno with
 * the reason in @why (@whylen bytes).
 */
int dev_blk__update(struct devmgr *dm, const char *id, const char *path,
		    bool read_only, char *why, size_t whylen);

/*
 * dev_blk__set_limiter() - drive @id is now limited as @rl says (PATCH
 * /drives; checked by config__check_rate_limiter() before): the device's
 * limiter is updated (virtio_blk__set_limiter()) and a request waiting
 * for it is looked at again.  The drive's timerfd, on the event loop
 * since dev_blk__add(), wakes it.  On the event thread.  Returns 0, or
 * -ENOENT for no such drive with the reason in @why (@whylen bytes).
 */
int dev_blk__set_limiter(struct devmgr *dm, const char *id,
			 const struct rate_limiter_config *rl, char *why,
			 size_t whylen);

/* dev_rng__add() - the virtio-rng entropy device ("rng").  0 or -errno. */
int dev_rng__add(const struct dev_env *env);

/*
 * dev_vsock__add() - the virtio-vsock device ("vsock") with its Unix-socket
 * host side (vmm/backends/vsock_uds.h) for @v.  Returns 0 or a negative
 * errno (logged).
 */
int dev_vsock__add(const struct dev_env *env, const struct vsock_config *v);

/*
 * dev_net__add() - a virtio-net device for network interface @n with
 * device id @id, over its tap (vmm/backends/tap.h: attached by name, with
 * a virtio_net_hdr and the offloads it supports).  Returns 0 or a
 * negative errno after one error line naming the tap.
 */
int dev_net__add(const struct dev_env *env, const char *id,
		 const struct net_config *n);

/*
 * dev_net__update() - PATCH /network-interfaces at run time: interface
 * @id's receive (@rx) and transmit (@tx) rate limiters, NULL keeping
 * one.  On the event thread.  Returns 0, -ENOENT for no such interface,
 * -EINVAL for a refused limiter.
 */
int dev_net__update(struct devmgr *dm, const char *id,
		    const struct rate_limiter_config *rx,
		    const struct rate_limiter_config *tx);

#endif /* EMBER_VMM_DEV_DEV_H */
