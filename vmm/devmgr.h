/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device manager: every device of a VM, each with a stable id (a
 * drive's id such as "rootfs", or "serial", "vsock", "rng"), its class,
 * its address ranges on the PIO and MMIO buses and its interrupt.  For a
 * device carried by virtio-mmio it does the transport's wiring once for
 * every class: the next slot's MMIO range and GSI (boot/layout.h), the
 * irqfd the device raises, one ioeventfd per queue delivered to the event
 * thread.  Classes (struct devmgr_class) are registered in one place,
 * vmm/dev/classes.c; the snapshot code (vmm/persist/dev_state.c) saves
 * and restores each device through its class's ops.
 */
#ifndef EMBER_VMM_DEVMGR_H
#define EMBER_VMM_DEVMGR_H

#include <stdbool.h>
#include <stdint.h>

#include "../devices/device.h"
#include "../devices/virtio_mmio.h"
#include "bus.h"

#define DEVMGR_ID_MAX	   64 /* bytes, as Firecracker's ids */
#define DEVMGR_MAX_DEVICES 32

struct event_loop;
struct kvm_vm;
struct snap_buf;
struct snap_cur;

/* One device class: the ops the manager calls for a device of it. */
struct devmgr_class {
	const char *name; /* "virtio-blk", "serial", ...: stable */
	bool virtio; /* carried by virtio-mmio: transport() is set */
	/* The device's transport (virtio classes), owned by the device. */
	struct virtio_mmio *(*transport)(void *dev);
	/*
	 * The device's counters for the metrics (NULL: none); @metrics_key
	 * names its group in a metrics line, "%s" standing for the device id
	 * ("block_%s" for a drive, as Firecracker has it).
	 */
	void (*stats)(void *dev, struct dev_stats *out);
	const char *metrics_key;
	/*
	 * Stop (@hold) or restart the device's own host-side event sources
	 * (sockets, taps) for a pause; NULL when it has none.  Queue
	 * notifications are the manager's: devmgr__hold().
	 */
	int (*hold)(void *dev, bool hold);
	/*
	 * Press and release Ctrl-Alt-Del on the device's keyboard
	 * (SendCtrlAltDel); NULL for a class without a keyboard.  Keys that
	 * find the device's queue full are dropped, as a real controller
	 * would.  Called on the event thread; takes the device's own lock.
	 */
	void (*ctrl_alt_del)(void *dev);
	/*
	 * Snapshots (vmm/persist/).  save() writes the device's own state,
	 * beyond its virtio transport (the manager saves that), into the
	 * open section of @b, while the VM is paused; @version is the
	 * section version it writes.  restore() reads it back into a device
	 * just created from the same configuration, before any vCPU runs,
	 * checking every value as if the guest had written it; it returns 0
	 * or a negative errno (-EINVAL for a refused value).  restored()
	 * runs once every device is restored (a vsock transport reset, a
	 * queue processed once).  Any of them may be NULL: nothing to do.
	 */
	uint32_t version;
	void (*save)(void *dev, struct snap_buf *b);
	int (*restore)(void *dev, struct snap_cur *c);
	void (*restored)(void *dev);
	/*
	 * Free the device.  Called by devmgr__destroy() once the vCPUs and
	 * the event thread have stopped.
	 */
	void (*destroy)(void *dev);
};

/* A queue notification arriving on an ioeventfd. */
struct devmgr_notify {
	struct virtio_mmio *t;
	unsigned int queue;
	int fd; /* the ioeventfd; -1 when unused */
};

struct devmgr_dev {
	char id[DEVMGR_ID_MAX + 1];
	const struct devmgr_class *cls;
	void *dev; /* the class's device; NULL until attached */
	int gsi; /* IOAPIC pin, -1 for none */
	uint64_t mmio_base, mmio_len; /* virtio: its slot; else 0 */
	int irqfd; /* virtio: the eventfd its irq line writes; -1 */
	struct irq_line irq; /* virtio: the line to create the device with */
	struct devmgr_notify notify[VIRTIO_MMIO_MAX_QUEUES];
};

struct devmgr {
	const struct kvm_vm *kvm; /* not owned */
	struct event_loop *el; /* not owned */
	struct bus pio, mmio;
	struct devmgr_dev dev[DEVMGR_MAX_DEVICES];
	unsigned int nr;
	unsigned int nr_virtio; /* slots taken */
};

/*
 * devmgr__init() - an empty manager for the VM @kvm whose queue
 * notifications go to the loop @el (both not owned, outliving @dm).
 */
void devmgr__init(struct devmgr *dm, const struct kvm_vm *kvm,
		  struct event_loop *el);

/*
 * devmgr__add() - a device of class @cls with id @id (1 to DEVMGR_ID_MAX
 * bytes, unique in @dm): its entry, to be given its device and ranges with
 * devmgr__map().  For a virtio class the entry also gets the next
 * virtio-mmio slot, its GSI and irqfd: create the device with @d->irq,
 * then call devmgr__attach_virtio().  Returns the entry, or NULL after an
 * error line (duplicate or bad id, no room, no slot, no irqfd).
 */
struct devmgr_dev *devmgr__add(struct devmgr *dm, const char *id,
			       const struct devmgr_class *cls);

/*
 * devmgr__map() - route [@base, @base + @len) of the PIO (@pio) or MMIO
 * bus to @regs (a device's register file, owned by @d's device) and
 * record @dev as @d's device.  Returns 0 or a negative errno (logged).
 */
int devmgr__map(struct devmgr *dm, struct devmgr_dev *d, void *dev,
		struct device *regs, bool pio, uint64_t base, uint64_t len);

/*
 * devmgr__attach_virtio() - @dev (created on @d->irq) becomes @d's device:
 * its transport goes on the MMIO bus at @d's slot and each of its queues
 * gets an ioeventfd on QueueNotify, delivered to virtio_mmio__notify() on
 * the event thread.  Returns 0 or a negative errno (logged); on error @dev
 * still belongs to @d (devmgr__destroy() frees it).
 */
int devmgr__attach_virtio(struct devmgr *dm, struct devmgr_dev *d, void *dev);

/*
 * devmgr__hold() - a pause (@hold true): queue notifications are no longer
 * taken from their ioeventfds (they wait there), and each class's own
 * host-side sources stop, so no device touches guest memory or raises an
 * interrupt; @hold false restarts it all.  Requests already being served
 * finish first: this runs on the event thread, between handlers.  Returns
 * 0 or the first negative errno (the rest is still done).
 */
int devmgr__hold(struct devmgr *dm, bool hold);

/*
 * devmgr__ctrl_alt_del() - SendCtrlAltDel: the keys go to the first device
 * whose class has a keyboard (its ctrl_alt_del op).  Returns 0, or -ENODEV
 * when no device has one.
 */
int devmgr__ctrl_alt_del(struct devmgr *dm);

/* devmgr__find() - the device with id @id, or NULL. */
struct devmgr_dev *devmgr__find(struct devmgr *dm, const char *id);

/*
 * devmgr__destroy() - free every device through its class, close the
 * ioeventfds and irqfds.  After the vCPUs and the event thread stopped.
 */
void devmgr__destroy(struct devmgr *dm);

#endif /* EMBER_VMM_DEVMGR_H */
