// SPDX-License-Identifier: Apache-2.0
/* virtio-net over a Linux tap (see tap.h). */
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../event.h"
#include "../log.h"

/* Frames read per readable event before the loop serves others. */
#define TAP_RX_BATCH 64

struct tap {
	struct event_loop *el;
	struct virtio_net *net;
	int fd; /* /dev/net/tun, attached to the tap */
	int wake_fd; /* eventfd: rx_ready from any thread */
	char name[IFNAMSIZ];
	bool held; /* paused: read nothing */
	bool reading; /* fd is on the event loop */
	uint64_t features; /* the driver's, as the tap offloads last set */
	bool features_set;
	uint8_t buf[VIRTIO_NET_HDR_BYTES + VIRTIO_NET_MAX_FRAME];
};

/* What TUNSETOFFLOAD allows for the features @f the driver accepted. */
static unsigned int tap__offload_flags(uint64_t f)
{
	unsigned int off = 0;

	if (!(f & (1ULL << VIRTIO_NET_F_GUEST_CSUM)))
		return 0;
	off |= TUN_F_CSUM;
	if (f & (1ULL << VIRTIO_NET_F_GUEST_TSO4))
		off |= TUN_F_TSO4;
	if (f & (1ULL << VIRTIO_NET_F_GUEST_TSO6))
		off |= TUN_F_TSO6;
	return off;
}

/* Before reading: the tap hands us only what the driver accepted. */
static void tap__sync_offloads(struct tap *t)
{
	uint64_t f = virtio_net__guest_features(t->net);

	if (t->features_set && f == t->features)
		return;
	if (ioctl(t->fd, TUNSETOFFLOAD, tap__offload_flags(f)) < 0) {
		log_warn("tap %s: TUNSETOFFLOAD: %s (offloads stay off)",
			 t->name, strerror(errno));
		f = 0;
		if (ioctl(t->fd, TUNSETOFFLOAD, 0) < 0)
			return;
	}
	t->features = f;
	t->features_set = true;
}

static void tap__rx_event(void *opaque, int fd);

static void tap__set_reading(struct tap *t, bool on)
{
	if (on == t->reading)
		return;
	if (on) {
		if (event__add(t->el, t->fd, tap__rx_event, t) < 0) {
			log_error("tap %s: cannot watch the tap", t->name);
			return;
		}
	} else {
		event__del(t->el, t->fd);
	}
	t->reading = on;
}

static void tap__rx_event(void *opaque, int fd)
{
	struct tap *t = opaque;
	unsigned int i;
	ssize_t n;

	tap__sync_offloads(t);
	for (i = 0; i < TAP_RX_BATCH; i++) {
		/* No room: the frames wait in the tap until rx_ready. */
		if (!virtio_net__rx_room(t->net)) {
			tap__set_reading(t, false);
			return;
		}
		n = read(fd, t->buf, sizeof(t->buf));
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			/* EBADFD / EIO: the tap went away; stop spinning. */
			log_error("tap %s: read: %s (receive stopped)", t->name,
				  strerror(errno));
			tap__set_reading(t, false);
			return;
		}
		/* A refused frame is counted by the device. */
		virtio_net__rx(t->net, t->buf, (uint32_t)n);
	}
}

/* The device has room again (rx_ready, maybe on a vCPU thread). */
static void tap__wake_event(void *opaque, int fd)
{
	struct tap *t = opaque;
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	if (!t->held)
		tap__set_reading(t, true);
}

static void tap__rx_ready(void *backend)
{
	struct tap *t = backend;
	uint64_t one = 1;

	/* Only fails when the counter would overflow: a wake is pending. */
	if (write(t->wake_fd, &one, sizeof(one)) < 0)
		return;
}

static int tap__tx(void *backend, const struct iovec *iov, unsigned int iovcnt)
{
	struct tap *t = backend;
	ssize_t n;

	do
		n = writev(t->fd, iov, (int)iovcnt);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : 0;
}

static const struct virtio_net_backend_ops tap_ops = {
	.tx = tap__tx,
	.rx_ready = tap__rx_ready,
};

/*
 * Attach to the tap @name with a virtio_net_hdr; *@offloads gets the
 * device features the tap can back.  Returns the fd or a negative errno
 * (logged).
 */
static int tap__open(const char *name, uint64_t *offloads)
{
	struct ifreq ifr = { 0 };
	int fd, hdr = VIRTIO_NET_HDR_BYTES, err;

	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		log_error("tap %s: /dev/net/tun: %s", name, strerror(errno));
		return err;
	}
	memcpy(ifr.ifr_name, name, strlen(name));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		err = -errno;
		log_error("tap %s: TUNSETIFF: %s%s", name, strerror(errno),
			  errno == EPERM ?
				  " (no such tap here and no right to "
				  "create it, or it belongs to another "
				  "user: create it with `ip tuntap add "
				  "NAME mode tap user UID`)" :
			  errno == EBUSY ? " (another process has it open)" :
					   "");
		goto fail;
	}
	if (ioctl(fd, TUNSETVNETHDRSZ, &hdr) < 0) {
		err = -errno;
		log_error("tap %s: TUNSETVNETHDRSZ: %s", name, strerror(errno));
		goto fail;
	}
	/*
	 * The tap takes checksum-offloaded and TSO frames from us whatever
	 * its offloads say (those say what it may give us): offer the
	 * guest's side always, and ours where the tap can do them.
	 */
	*offloads = (1ULL << VIRTIO_NET_F_CSUM) |
		    (1ULL << VIRTIO_NET_F_HOST_TSO4) |
		    (1ULL << VIRTIO_NET_F_HOST_TSO6);
	if (!ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6))
		*offloads |= (1ULL << VIRTIO_NET_F_GUEST_CSUM) |
			     (1ULL << VIRTIO_NET_F_GUEST_TSO4) |
			     (1ULL << VIRTIO_NET_F_GUEST_TSO6);
	else if (!ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM))
		*offloads |= 1ULL << VIRTIO_NET_F_GUEST_CSUM;
	/* Off until the driver says what it takes. */
	if (ioctl(fd, TUNSETOFFLOAD, 0) < 0) {
		err = -errno;
		log_error("tap %s: TUNSETOFFLOAD: %s", name, strerror(errno));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return err;
}

struct tap *tap__create(struct event_loop *el, const struct guest_mem *m,
			struct irq_line irq, const struct net_config *c)
{
	struct virtio_net_config nc = { 0 };
	size_t len = c->host_dev_name ? strlen(c->host_dev_name) : 0;
	struct tap *t;

	if (!len || len >= IFNAMSIZ) {
		log_error("tap '%s': the name must be 1 to %d bytes",
			  c->host_dev_name ? c->host_dev_name : "",
			  IFNAMSIZ - 1);
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		log_error("tap %s: out of memory", c->host_dev_name);
		return NULL;
	}
	t->el = el;
	t->wake_fd = -1;
	memcpy(t->name, c->host_dev_name, len);
	t->fd = tap__open(t->name, &nc.offloads);
	if (t->fd < 0)
		goto fail;
	t->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (t->wake_fd < 0) {
		log_error("tap %s: eventfd: %s", t->name, strerror(errno));
		goto fail;
	}
	nc.has_mac = c->has_mac;
	memcpy(nc.mac, c->guest_mac, sizeof(nc.mac));
	t->net = virtio_net__create(m, irq, &nc, &tap_ops, t);
	if (!t->net) {
		log_error("tap %s: cannot create the device (a multicast "
			  "guest_mac?)",
			  t->name);
		goto fail;
	}
	if (event__add(el, t->wake_fd, tap__wake_event, t) < 0) {
		log_error("tap %s: cannot watch its eventfd", t->name);
		goto fail;
	}
	tap__set_reading(t, true);
	if (!t->reading) {
		event__del(el, t->wake_fd);
		goto fail;
	}
	return t;
fail:
	virtio_net__destroy(t->net);
	if (t->wake_fd >= 0)
		close(t->wake_fd);
	if (t->fd >= 0)
		close(t->fd);
	free(t);
	return NULL;
}

struct virtio_net *tap__net(struct tap *t)
{
	return t->net;
}

const char *tap__name(const struct tap *t)
{
	return t->name;
}

int tap__hold(struct tap *t, bool hold)
{
	t->held = hold;
	if (hold) {
		tap__set_reading(t, false);
		return 0;
	}
	/* rx_ready may have come while held: read, the room is checked. */
	tap__set_reading(t, true);
	return t->reading ? 0 : -EIO;
}

int tap__set_rate_limiters(struct tap *t, const struct rate_limiter_config *rx,
			   const struct rate_limiter_config *tx)
{
	(void)t;
	(void)rx;
	(void)tx;
	return -EOPNOTSUPP;
}

void tap__destroy(struct tap *t)
{
	if (!t)
		return;
	virtio_net__destroy(t->net);
	close(t->wake_fd);
	close(t->fd);
	free(t);
}
