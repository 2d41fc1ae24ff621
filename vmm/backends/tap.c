// SPDX-License-Identifier: Apache-2.0
/* virtio-net over a Linux tap (see tap.h). */
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "../../devices/rate_limiter.h"
#include "../event.h"
#include "../log.h"
#include "../timer.h"

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
	/* Receive limiter: event thread only. */
	struct rate_limiter rx_rl;
	int rx_timer; /* timerfd: the held frame may go */
	bool rx_pending; /* buf holds a frame read but not delivered */
	uint32_t rx_len;
	/* Transmit limiter: under the device's lock (ops->tx). */
	struct rate_limiter tx_rl;
	int tx_timer; /* timerfd: take frames again */
	bool tx_waiting; /* tx_timer is armed */
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

/*
 * Move frames from the tap into the device: a bounded batch, stopping
 * (reading off) while the device has no room or the receive limiter
 * holds a frame back (its timer brings us back), reading on otherwise.
 */
static void tap__rx_pump(struct tap *t)
{
	unsigned int i;
	ssize_t n;

	if (t->held)
		return;
	tap__sync_offloads(t);
	for (i = 0; i < TAP_RX_BATCH; i++) {
		/* No room: the frames wait in the tap until rx_ready. */
		if (!virtio_net__rx_room(t->net)) {
			tap__set_reading(t, false);
			return;
		}
		if (!t->rx_pending) {
			n = read(t->fd, t->buf, sizeof(t->buf));
			if (n < 0) {
				if (errno == EAGAIN || errno == EINTR)
					break;
				/* EBADFD / EIO: the tap went away. */
				log_error("tap %s: read: %s (receive stopped)",
					  t->name, strerror(errno));
				tap__set_reading(t, false);
				return;
			}
			t->rx_len = (uint32_t)n;
			t->rx_pending = true;
		}
		if (rate_limiter__on(&t->rx_rl)) {
			uint64_t now = timer__now_ns();
			uint64_t bytes =
				t->rx_len > VIRTIO_NET_HDR_BYTES ?
					t->rx_len - VIRTIO_NET_HDR_BYTES :
					0;

			if (!rate_limiter__consume(&t->rx_rl, bytes, 1, now)) {
				timer__arm(t->rx_timer,
					   rate_limiter__wait_ns(
						   &t->rx_rl, bytes, 1, now));
				tap__set_reading(t, false);
				return;
			}
		}
		t->rx_pending = false;
		/* A refused frame is counted by the device. */
		virtio_net__rx(t->net, t->buf, t->rx_len);
	}
	tap__set_reading(t, true);
}

/*
 * The tap is readable; or (their counts read) the receive limiter's
 * timer fired, the held frame may go now; or the device has room again
 * (wake_fd: rx_ready, maybe on a vCPU thread).
 */
static void tap__rx_event(void *opaque, int fd)
{
	(void)fd;
	tap__rx_pump(opaque);
}

/* The transmit limiter's timer: take frames from the ring again. */
static void tap__tx_timer_event(void *opaque, int fd)
{
	struct tap *t = opaque;
	struct virtio_mmio *tr = virtio_net__transport(t->net);

	(void)fd;
	pthread_mutex_lock(&tr->dev.lock);
	t->tx_waiting = false;
	pthread_mutex_unlock(&tr->dev.lock);
	if (!t->held)
		virtio_net__tx_resume(t->net);
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
	unsigned int i;
	uint64_t bytes = 0;
	ssize_t n;

	if (rate_limiter__on(&t->tx_rl)) {
		uint64_t now = timer__now_ns();

		for (i = 1; i < iovcnt; i++)
			bytes += iov[i].iov_len;
		if (t->tx_waiting)
			return VIRTIO_NET_TX_LATER;
		if (!rate_limiter__consume(&t->tx_rl, bytes, 1, now)) {
			timer__arm(t->tx_timer,
				   rate_limiter__wait_ns(&t->tx_rl, bytes, 1,
							 now));
			t->tx_waiting = true;
			return VIRTIO_NET_TX_LATER;
		}
	}
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
	t->wake_fd = t->rx_timer = t->tx_timer = -1;
	memcpy(t->name, c->host_dev_name, len);
	t->fd = tap__open(t->name, &nc.offloads);
	if (t->fd < 0)
		goto fail;
	t->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	t->rx_timer =
		timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	t->tx_timer =
		timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (t->wake_fd < 0 || t->rx_timer < 0 || t->tx_timer < 0) {
		log_error("tap %s: eventfd/timerfd: %s", t->name,
			  strerror(errno));
		goto fail;
	}
	rate_limiter__init(&t->rx_rl, &c->rx_rate_limiter, timer__now_ns());
	rate_limiter__init(&t->tx_rl, &c->tx_rate_limiter, timer__now_ns());
	nc.has_mac = c->has_mac;
	memcpy(nc.mac, c->guest_mac, sizeof(nc.mac));
	t->net = virtio_net__create(m, irq, &nc, &tap_ops, t);
	if (!t->net) {
		log_error("tap %s: cannot create the device (a multicast "
			  "guest_mac?)",
			  t->name);
		goto fail;
	}
	if (event__add_counter(el, t->wake_fd, tap__rx_event, t) < 0) {
		log_error("tap %s: cannot watch its eventfd", t->name);
		goto fail;
	}
	if (event__add_counter(el, t->rx_timer, tap__rx_event, t) < 0 ||
	    event__add_counter(el, t->tx_timer, tap__tx_timer_event, t) < 0) {
		log_error("tap %s: cannot watch its timers", t->name);
		goto fail_events;
	}
	tap__set_reading(t, true);
	if (!t->reading)
		goto fail_events;
	return t;
fail_events:
	event__del(el, t->wake_fd);
	event__del(el, t->rx_timer);
	event__del(el, t->tx_timer);
fail:
	virtio_net__destroy(t->net);
	if (t->tx_timer >= 0)
		close(t->tx_timer);
	if (t->rx_timer >= 0)
		close(t->rx_timer);
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
	int ret = 0;

	t->held = hold;
	if (hold) {
		/* Nothing of ours on the loop: a failed start frees us next. */
		tap__set_reading(t, false);
		event__del(t->el, t->wake_fd);
		event__del(t->el, t->rx_timer);
		event__del(t->el, t->tx_timer);
		return 0;
	}
	/* A wake or a timer that came meanwhile fires when watched again. */
	if (event__add_counter(t->el, t->wake_fd, tap__rx_event, t) < 0 ||
	    event__add_counter(t->el, t->rx_timer, tap__rx_event, t) < 0 ||
	    event__add_counter(t->el, t->tx_timer, tap__tx_timer_event, t) < 0)
		ret = -ENOSPC;
	tap__rx_pump(t);
	virtio_net__tx_resume(t->net);
	return ret;
}

int tap__set_rate_limiters(struct tap *t, const struct rate_limiter_config *rx,
			   const struct rate_limiter_config *tx)
{
	struct virtio_mmio *tr = virtio_net__transport(t->net);
	char why[160];
	uint64_t now = timer__now_ns();

	if ((rx && config__check_rate_limiter(rx, why, sizeof(why))) ||
	    (tx && config__check_rate_limiter(tx, why, sizeof(why))))
		return -EINVAL;
	if (rx) {
		rate_limiter__update(&t->rx_rl, rx, now);
		/* A held frame is tried again at once under the new rate. */
		if (t->rx_pending)
			timer__arm(t->rx_timer, 1);
	}
	if (tx) {
		pthread_mutex_lock(&tr->dev.lock);
		rate_limiter__update(&t->tx_rl, tx, now);
		pthread_mutex_unlock(&tr->dev.lock);
		timer__arm(t->tx_timer, 1);
	}
	return 0;
}

void tap__destroy(struct tap *t)
{
	if (!t)
		return;
	virtio_net__destroy(t->net);
	close(t->tx_timer);
	close(t->rx_timer);
	close(t->wake_fd);
	close(t->fd);
	free(t);
}
