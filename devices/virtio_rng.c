// SPDX-License-Identifier: Apache-2.0
/* virtio entropy device (see virtio_rng.h). */
#include "virtio_rng.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

/*
 * getrandom(GRND_NONBLOCK) fails with EAGAIN only until the host's pool is
 * initialised (early host boot).  Then wait this many times this long, so
 * the event thread is never stuck; if it is still not ready the request
 * completes with the bytes gathered, possibly none (the driver asks again).
 */
#define RNG_WAIT_TRIES 10
#define RNG_WAIT_NS    (10 * 1000 * 1000)

struct virtio_rng {
	struct virtio_mmio t;
	struct dev_stats stats;
	struct virtq_chain chain; /* ~6 KiB: not on the event thread's stack */
	uint8_t buf[VIRTIO_RNG_MAX_BYTES];
};

/* Fill @buf with up to @len random bytes; returns how many it got. */
static size_t virtio_rng__gather(uint8_t *buf, size_t len)
{
	const struct timespec wait = { .tv_nsec = RNG_WAIT_NS };
	unsigned int tries = 0;
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = getrandom(buf + got, len - got, GRND_NONBLOCK);
		if (n > 0) {
			got += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN && !got &&
		    tries++ < RNG_WAIT_TRIES) {
			nanosleep(&wait, NULL);
			continue;
		}
		break;
	}
	return got;
}

static void virtio_rng__notify(void *opaque, struct virtio_mmio *t,
			       unsigned int idx)
{
	struct virtio_rng *rng = opaque;
	struct virtq *q = &t->vq[idx];
	struct virtq_chain *c = &rng->chain;
	bool pushed = false;
	uint64_t want;
	size_t got;
	int r;

	while ((r = virtq__pop(q, t->mem, c)) > 0) {
		want = c->in_bytes < VIRTIO_RNG_MAX_BYTES ?
			       c->in_bytes :
			       VIRTIO_RNG_MAX_BYTES;
		got = virtio_rng__gather(rng->buf, want);
		got = virtq__write(c, t->mem, 0, rng->buf, got);
		rng->stats.requests++;
		rng->stats.read_bytes += got;
		if (virtq__push(q, t->mem, c->head, (uint32_t)got)) {
			r = -EFAULT;
			break;
		}
		pushed = true;
	}
	if (r < 0)
		virtio_mmio__needs_reset(t);
	if (pushed)
		virtio_mmio__used(t, idx);
}

static const struct virtio_dev_ops virtio_rng_ops = {
	.name = "virtio-rng",
	.device_id = VIRTIO_ID_RNG,
	.nr_queues = 1,
	.notify = virtio_rng__notify,
	/* No features, no config space (5.4.3, 5.4.4), no in-flight state. */
};

struct virtio_rng *virtio_rng__create(const struct guest_mem *m,
				      struct irq_line irq)
{
	struct virtio_rng *rng = calloc(1, sizeof(*rng));

	if (!rng)
		return NULL;
	if (virtio_mmio__init(&rng->t, &virtio_rng_ops, rng, m, irq)) {
		free(rng);
		return NULL;
	}
	return rng;
}

struct virtio_mmio *virtio_rng__transport(struct virtio_rng *rng)
{
	return &rng->t;
}

void virtio_rng__destroy(struct virtio_rng *rng)
{
	if (!rng)
		return;
	virtio_mmio__destroy(&rng->t);
	free(rng);
}

void virtio_rng__stats(struct virtio_rng *rng, struct dev_stats *out)
{
	*out = rng->stats;
}
