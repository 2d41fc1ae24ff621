// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for vmm/backends/vsock_uds.c, the Unix-socket host side of
 * virtio-vsock: a real event thread and real Unix sockets on one side, a
 * fake guest driver (rx/tx/event queues in test RAM) on the other.  No KVM.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../vmm/event.h"
#include "../../vmm/backends/vsock_uds.h"
#include "virtio_driver.h"

#define RAM_BYTES (4 << 20)
#define QSZ	  64
#define Q_GPA(q)  (0x1000 + 0x3000 * (uint64_t)(q))
#define RX_GPA	  0x100000 /* rx buffer of descriptor d at + d * 0x1000 */
#define RX_SIZE	  0x1000
#define RX_POSTED 32
#define TX_GPA	  0x200000
#define TX_SLOT	  0x1000
#define EV_GPA	  0x300000
#define CID	  42
#define HDR	  VIRTIO_VSOCK_HDR_BYTES
#define WAIT_MS	  5000

struct fixture {
	struct test_ram r; /* first: see test_ram__new_in() */
	struct event_loop *el;
	struct vsock_uds *u;
	struct virtio_mmio *t;
	struct vdrv_queue q[3];
	unsigned int tx_next;
	char dir[64], path[96];
};

struct pkt {
	uint32_t src_port, dst_port, len, flags, buf_alloc, fwd_cnt;
	uint16_t op;
	uint8_t data[RX_SIZE];
};

static void fake_irq(void *opaque, unsigned int gsi, int level)
{
	(void)opaque;
	(void)gsi;
	(void)level;
}

static void rx_post_one(struct fixture *f)
{
	struct vdrv_queue *q = &f->q[VIRTIO_VSOCK_Q_RX];
	struct vdrv_seg s;

	if (q->next_desc + 1 > q->size)
		q->next_desc = 0;
	s = (struct vdrv_seg){ RX_GPA + 0x1000 * (uint64_t)q->next_desc,
			       RX_SIZE, true };
	vdrv_post(f->r.ram, q, &s, 1);
}

static int setup(void **state)
{
	struct fixture *f = test_ram__new_in(sizeof(*f), RAM_BYTES, 0);
	struct irq_line irq = { .set = fake_irq, .gsi = 5 };
	unsigned int i;

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/ember-uds.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/v.sock", f->dir);
	f->el = event__create();
	if (!f->el)
		return -1;
	f->u = vsock_uds__create(f->el, &f->r.m, irq, CID, f->path);
	if (!f->u)
		return -1;
	f->t = vsock_uds__transport(f->u);
	for (i = 0; i < 3; i++)
		vdrv_queue_init(f->r.ram, &f->q[i], QSZ, Q_GPA(i),
				Q_GPA(i) + 0x1000, Q_GPA(i) + 0x2000);
	pthread_mutex_lock(&f->t->dev.lock);
	(void)vdrv_negotiate(f->t, vdrv_device_features(f->t) &
					   ~(1ULL << VIRTIO_F_EVENT_IDX));
	for (i = 0; i < 3; i++)
		vdrv_queue_start(f->t, i, &f->q[i]);
	vdrv_driver_ok(f->t);
	for (i = 0; i < RX_POSTED; i++)
		rx_post_one(f);
	pthread_mutex_unlock(&f->t->dev.lock);
	if (event__start(f->el))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	event__destroy(f->el);
	vsock_uds__destroy(f->u);
	/* The listener is gone with the device. */
	assert_int_equal(access(f->path, F_OK), -1);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	return test_ram__teardown(state);
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* The guest sends one packet on tx (consumed at once by the notify). */
static void guest_send(struct fixture *f, uint16_t op, uint32_t src_port,
		       uint32_t dst_port, const void *data, uint32_t len,
		       uint32_t flags, uint32_t buf_alloc, uint32_t fwd_cnt)
{
	struct vdrv_queue *q = &f->q[VIRTIO_VSOCK_Q_TX];
	uint64_t gpa = TX_GPA + TX_SLOT * (uint64_t)(f->tx_next++ % 16);
	uint8_t *b = f->r.ram + gpa;
	struct vdrv_seg s = { gpa, HDR + len, false };

	assert_true(HDR + len <= TX_SLOT);
	memset(b, 0, HDR);
	wr64(b, 0, CID);
	wr64(b, 8, VIRTIO_VSOCK_CID_HOST);
	wr32(b, 16, src_port);
	wr32(b, 20, dst_port);
	wr32(b, 24, len);
	wr16(b, 28, VIRTIO_VSOCK_TYPE_STREAM);
	wr16(b, 30, op);
	wr32(b, 32, flags);
	wr32(b, 36, buf_alloc);
	wr32(b, 40, fwd_cnt);
	if (len)
		memcpy(b + HDR, data, len);
	pthread_mutex_lock(&f->t->dev.lock);
	vdrv_post(f->r.ram, q, &s, 1);
	vdrv_wr(f->t, QUEUE_NOTIFY, VIRTIO_VSOCK_Q_TX);
	assert_int_equal(vdrv_used_idx(f->r.ram, q), q->avail_idx);
	q->used_seen = q->avail_idx;
	pthread_mutex_unlock(&f->t->dev.lock);
}

/* The next packet for the guest within @ms, or false. */
static bool guest_recv(struct fixture *f, struct pkt *p, unsigned int ms)
{
	struct vdrv_queue *q = &f->q[VIRTIO_VSOCK_Q_RX];
	unsigned int waited = 0;
	uint64_t e;
	uint32_t id, len;
	const uint8_t *b;

	for (;;) {
		pthread_mutex_lock(&f->t->dev.lock);
		if (vdrv_used_idx(f->r.ram, q) != q->used_seen)
			break;
		pthread_mutex_unlock(&f->t->dev.lock);
		if (waited >= ms)
			return false;
		sleep_ms(2);
		waited += 2;
	}
	e = vdrv_used_elem(q);
	q->used_seen++;
	id = rd32(f->r.ram, e);
	len = rd32(f->r.ram, e + 4);
	assert_true(id < QSZ && len >= HDR && len <= RX_SIZE);
	b = f->r.ram + RX_GPA + 0x1000 * (uint64_t)id;
	assert_int_equal(rd64(b, 0), VIRTIO_VSOCK_CID_HOST);
	assert_int_equal(rd64(b, 8), CID);
	p->src_port = rd32(b, 16);
	p->dst_port = rd32(b, 20);
	p->len = rd32(b, 24);
	p->op = rd16(b, 30);
	p->flags = rd32(b, 32);
	p->buf_alloc = rd32(b, 36);
	p->fwd_cnt = rd32(b, 40);
	assert_int_equal(len, HDR + p->len);
	memcpy(p->data, b + HDR, p->len);
	rx_post_one(f);
	vdrv_wr(f->t, QUEUE_NOTIFY, VIRTIO_VSOCK_Q_RX);
	pthread_mutex_unlock(&f->t->dev.lock);
	return true;
}

static struct pkt guest_expect(struct fixture *f, uint16_t op)
{
	struct pkt p;

	assert_true(guest_recv(f, &p, WAIT_MS));
	assert_int_equal(p.op, op);
	return p;
}

static int host_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static void host_write(int fd, const char *s)
{
	assert_int_equal(write(fd, s, strlen(s)), (ssize_t)strlen(s));
}

/* Read exactly @n bytes (or up to EOF) within WAIT_MS; returns the count. */
static size_t host_read(int fd, void *buf, size_t n)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t got = 0;
	ssize_t r;

	while (got < n) {
		if (poll(&p, 1, WAIT_MS) != 1)
			break;
		r = read(fd, (char *)buf + got, n - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	return got;
}

/* The host end sees EOF (or a reset) within WAIT_MS, with no bytes. */
static void host_expect_eof(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;

	assert_int_equal(poll(&p, 1, WAIT_MS), 1);
	assert_true(read(fd, &c, 1) <= 0);
}

/* CONNECT @port from the host; the guest sees the REQUEST, returns it. */
static struct pkt host_request(struct fixture *f, int fd, uint32_t port)
{
	char line[32];
	struct pkt p;

	snprintf(line, sizeof(line), "CONNECT %u\n", port);
	host_write(fd, line);
	p = guest_expect(f, VIRTIO_VSOCK_OP_REQUEST);
	assert_int_equal(p.dst_port, port);
	assert_true(p.src_port >= VSOCK_UDS_FIRST_HOST_PORT);
	return p;
}

/* The guest sees a host REQUEST for @port (the line was sent already). */
static struct pkt host_request_seen(struct fixture *f, uint32_t port)
{
	struct pkt p = guest_expect(f, VIRTIO_VSOCK_OP_REQUEST);

	assert_int_equal(p.dst_port, port);
	assert_true(p.src_port >= VSOCK_UDS_FIRST_HOST_PORT);
	return p;
}

static void test_host_connect(void **state)
{
	struct fixture *f = *state;
	int fd = host_connect(f->path);
	char line[32], got[32];
	struct pkt p, d;
	uint32_t hp;

	p = host_request(f, fd, 1024);
	hp = p.src_port;
	/* Bytes right behind the CONNECT line wait for the answer. */
	host_write(fd, "early");
	guest_send(f, VIRTIO_VSOCK_OP_RESPONSE, 1024, hp, NULL, 0, 0, 65536, 0);
	snprintf(line, sizeof(line), "OK %u\n", hp);
	assert_int_equal(host_read(fd, got, strlen(line)), strlen(line));
	assert_memory_equal(got, line, strlen(line));
	d = guest_expect(f, VIRTIO_VSOCK_OP_RW);
	assert_int_equal(d.len, 5);
	assert_memory_equal(d.data, "early", 5);
	assert_int_equal(d.dst_port, 1024);
	/* Guest -> host. */
	guest_send(f, VIRTIO_VSOCK_OP_RW, 1024, hp, "world", 5, 0, 65536, 5);
	assert_int_equal(host_read(fd, got, 5), 5);
	assert_memory_equal(got, "world", 5);
	/* The guest will send no more: EOF on the host end. */
	guest_send(f, VIRTIO_VSOCK_OP_SHUTDOWN, 1024, hp, NULL, 0,
		   VIRTIO_VSOCK_SHUTDOWN_SEND, 65536, 5);
	host_expect_eof(fd);
	/* The host is done too: SHUTDOWN(SEND) to the guest. */
	shutdown(fd, SHUT_WR);
	p = guest_expect(f, VIRTIO_VSOCK_OP_SHUTDOWN);
	assert_true(p.flags & VIRTIO_VSOCK_SHUTDOWN_SEND);
	/* The guest closes both ways and gets the RST it waits for. */
	guest_send(f, VIRTIO_VSOCK_OP_SHUTDOWN, 1024, hp, NULL, 0,
		   VIRTIO_VSOCK_SHUTDOWN_SEND | VIRTIO_VSOCK_SHUTDOWN_RCV,
		   65536, 5);
	guest_expect(f, VIRTIO_VSOCK_OP_RST);
	close(fd);
}

static void test_host_connect_refused(void **state)
{
	struct fixture *f = *state;
	int fd = host_connect(f->path), fd2;
	struct pkt p, q;

	p = host_request(f, fd, 4444);
	guest_send(f, VIRTIO_VSOCK_OP_RST, 4444, p.src_port, NULL, 0, 0, 0, 0);
	host_expect_eof(fd);
	close(fd);
	/* Two at once to one guest port get two host ports. */
	fd = host_connect(f->path);
	fd2 = host_connect(f->path);
	p = host_request(f, fd, 80);
	q = host_request(f, fd2, 80);
	assert_int_not_equal(p.src_port, q.src_port);
	close(fd);
	close(fd2);
}

static void test_bad_lines(void **state)
{
	static const char *const bad[] = {
		"GARBAGE\n",
		"CONNECT\n",
		"CONNECT 99999999999\n",
		"CONNECT -1\n",
		"connect 1\n",
		"CONNECT 1x\n",
		"CONNECT 1 2\n",
		"\n",
		"CONNECT  1\n",
		"CONNECT 1\r\n",
		"CONNECT +1\n",
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	};
	struct fixture *f = *state;
	struct pkt p;
	unsigned int i;
	int fd;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fd = host_connect(f->path);
		host_write(fd, bad[i]);
		host_expect_eof(fd);
		close(fd);
	}
	/* A client that leaves before its line. */
	close(host_connect(f->path));
	assert_false(guest_recv(f, &p, 100));
	/* The listener still serves. */
	fd = host_connect(f->path);
	host_request(f, fd, 7);
	close(fd);
}

static double cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

/*
 * A client that leaves in the middle of its CONNECT line must not leave
 * the event thread spinning on bytes it never takes, nor hold its slot;
 * silent clients are bounded.
 */
static void test_partial_lines(void **state)
{
	struct fixture *f = *state;
	int fds[80], fd;
	unsigned int i;
	double cpu;
	struct pkt p;

	fd = host_connect(f->path);
	host_write(fd, "CONNECT 10");
	close(fd);
	sleep_ms(50);
	cpu = cpu_ms();
	sleep_ms(300);
	assert_true(cpu_ms() - cpu < 150);
	/* 64 clients may owe their line at once; the next is turned away. */
	for (i = 0; i < 64; i++) {
		fds[i] = host_connect(f->path);
		host_write(fds[i], "CONNECT 1");
	}
	fd = host_connect(f->path);
	host_expect_eof(fd);
	close(fd);
	for (i = 0; i < 64; i++)
		close(fds[i]);
	sleep_ms(100);
	fd = host_connect(f->path);
	host_request(f, fd, 9);
	close(fd);
	assert_false(guest_recv(f, &p, 50));
}

static int host_listen(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 4), 0);
	return fd;
}

static void test_guest_connect(void **state)
{
	struct fixture *f = *state;
	char path[128], got[8];
	struct pkt p;
	int l, c;

	snprintf(path, sizeof(path), "%s_77", f->path);
	l = host_listen(path);
	guest_send(f, VIRTIO_VSOCK_OP_REQUEST, 5000, 77, NULL, 0, 0, 65536, 0);
	p = guest_expect(f, VIRTIO_VSOCK_OP_RESPONSE);
	assert_int_equal(p.dst_port, 5000);
	assert_int_equal(p.src_port, 77);
	c = accept(l, NULL, NULL);
	assert_true(c >= 0);
	guest_send(f, VIRTIO_VSOCK_OP_RW, 5000, 77, "abc", 3, 0, 65536, 0);
	assert_int_equal(host_read(c, got, 3), 3);
	assert_memory_equal(got, "abc", 3);
	host_write(c, "xyz");
	p = guest_expect(f, VIRTIO_VSOCK_OP_RW);
	assert_int_equal(p.len, 3);
	assert_memory_equal(p.data, "xyz", 3);
	/* The guest resets: the host end is closed. */
	guest_send(f, VIRTIO_VSOCK_OP_RST, 5000, 77, NULL, 0, 0, 0, 0);
	host_expect_eof(c);
	close(c);
	close(l);
	unlink(path);
	/* Nobody listens on host port 78: RST. */
	guest_send(f, VIRTIO_VSOCK_OP_REQUEST, 5001, 78, NULL, 0, 0, 65536, 0);
	p = guest_expect(f, VIRTIO_VSOCK_OP_RST);
	assert_int_equal(p.dst_port, 5001);
}

/*
 * The guest gives 100 bytes of credit: the host's 1000 bytes arrive 100
 * at a time as the guest frees room, in order, then its EOF.  While the
 * guest has no credit the host end hangs up; the event thread must wait,
 * not spin on the hang-up.
 */
static void test_credit_stall(void **state)
{
	struct fixture *f = *state;
	uint8_t data[1000], got[1000];
	char path[128];
	uint32_t n = 0, i;
	struct pkt p;
	double cpu;
	int l, c;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7);
	snprintf(path, sizeof(path), "%s_79", f->path);
	l = host_listen(path);
	guest_send(f, VIRTIO_VSOCK_OP_REQUEST, 6000, 79, NULL, 0, 0, 100, 0);
	guest_expect(f, VIRTIO_VSOCK_OP_RESPONSE);
	c = accept(l, NULL, NULL);
	assert_true(c >= 0);
	assert_int_equal(write(c, data, sizeof(data)), sizeof(data));
	close(c);
	while (n < sizeof(data)) {
		p = guest_expect(f, VIRTIO_VSOCK_OP_RW);
		assert_true(p.len <= 100 - n % 100);
		memcpy(got + n, p.data, p.len);
		n += p.len;
		if (n % 100 || n == sizeof(data))
			continue;
		/* Out of credit: nothing more comes, and nothing spins. */
		cpu = cpu_ms();
		assert_false(guest_recv(f, &p, 300));
		assert_true(cpu_ms() - cpu < 150);
		guest_send(f, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 6000, 79, NULL, 0,
			   0, 100, n);
	}
	assert_memory_equal(got, data, sizeof(data));
	p = guest_expect(f, VIRTIO_VSOCK_OP_SHUTDOWN);
	assert_true(p.flags & VIRTIO_VSOCK_SHUTDOWN_SEND);
	close(l);
	unlink(path);
}

static void uds_reset(void *arg)
{
	vsock_uds__transport_reset(arg);
}

/*
 * After a restore: both kinds of connection are closed on the host, the
 * guest gets the transport-reset event, its old connections get RST, and
 * a client that was still sending its CONNECT line gets through.
 */
static void test_transport_reset(void **state)
{
	struct fixture *f = *state;
	struct vdrv_queue *eq = &f->q[VIRTIO_VSOCK_Q_EVENT];
	struct vdrv_seg ev = { EV_GPA, 8, true };
	char path[128], line[32], got[32];
	int fd, l, c, late;
	uint16_t head;
	struct pkt p;
	uint32_t hp;

	/* Host -> guest, established. */
	fd = host_connect(f->path);
	p = host_request(f, fd, 1024);
	hp = p.src_port;
	guest_send(f, VIRTIO_VSOCK_OP_RESPONSE, 1024, hp, NULL, 0, 0, 65536, 0);
	snprintf(line, sizeof(line), "OK %u\n", hp);
	assert_int_equal(host_read(fd, got, strlen(line)), strlen(line));
	/* Guest -> host, established. */
	snprintf(path, sizeof(path), "%s_81", f->path);
	l = host_listen(path);
	guest_send(f, VIRTIO_VSOCK_OP_REQUEST, 5000, 81, NULL, 0, 0, 65536, 0);
	guest_expect(f, VIRTIO_VSOCK_OP_RESPONSE);
	c = accept(l, NULL, NULL);
	assert_true(c >= 0);
	/* A client still owing its line. */
	late = host_connect(f->path);
	host_write(late, "CONN");
	sleep_ms(50);

	pthread_mutex_lock(&f->t->dev.lock);
	memset(f->r.ram + EV_GPA, 0xee, 8);
	head = vdrv_post(f->r.ram, eq, &ev, 1);
	pthread_mutex_unlock(&f->t->dev.lock);
	event__call(f->el, uds_reset, f->u);
	pthread_mutex_lock(&f->t->dev.lock);
	assert_int_equal(vdrv_take_used(f->r.ram, eq, head),
			 VIRTIO_VSOCK_EVENT_BYTES);
	assert_int_equal(rd32(f->r.ram, EV_GPA),
			 VIRTIO_VSOCK_EVENT_TRANSPORT_RESET);
	assert_true(vdrv_rd(f->t, INT_STATUS) & VIRTIO_MMIO_INT_VRING);
	/* The driver handled it: its buffer refilled, the queue kicked. */
	vdrv_post(f->r.ram, eq, &ev, 1);
	pthread_mutex_unlock(&f->t->dev.lock);
	virtio_mmio__notify(f->t, VIRTIO_VSOCK_Q_EVENT);
	host_expect_eof(fd);
	host_expect_eof(c);
	close(fd);
	close(c);
	close(l);
	unlink(path);
	/* The guest's late packets on old connections: RST. */
	guest_send(f, VIRTIO_VSOCK_OP_RW, 5000, 81, "x", 1, 0, 65536, 0);
	p = guest_expect(f, VIRTIO_VSOCK_OP_RST);
	assert_int_equal(p.dst_port, 5000);
	/* The late client gets its connection (its REQUEST came after). */
	host_write(late, "ECT 1024\n");
	p = host_request_seen(f, 1024);
	guest_send(f, VIRTIO_VSOCK_OP_RESPONSE, 1024, p.src_port, NULL, 0, 0,
		   65536, 0);
	snprintf(line, sizeof(line), "OK %u\n", p.src_port);
	assert_int_equal(host_read(late, got, strlen(line)), strlen(line));
	assert_memory_equal(got, line, strlen(line));
	close(late);
}

static void test_create_errors(void **state)
{
	struct test_ram *r = test_ram__new(4096, 0);
	struct irq_line irq = { .set = fake_irq, .gsi = 5 };
	struct event_loop *el = event__create();
	char dir[] = "/tmp/ember-uds.XXXXXX", path[256];
	int l;

	(void)state;
	assert_non_null(r);
	assert_non_null(el);
	assert_non_null(mkdtemp(dir));
	/* A path too long for "<path>_<port>" in sun_path. */
	memset(path, 'a', sizeof(path));
	path[0] = '/';
	path[101] = '\0';
	assert_null(vsock_uds__create(el, &r->m, irq, CID, path));
	assert_null(vsock_uds__create(el, &r->m, irq, CID, ""));
	snprintf(path, sizeof(path), "%s/v.sock", dir);
	assert_null(vsock_uds__create(el, &r->m, irq, 2, path));
	/* Someone listens there already. */
	l = host_listen(path);
	assert_null(vsock_uds__create(el, &r->m, irq, CID, path));
	close(l);
	/* A stale socket file (nobody listening) is replaced. */
	vsock_uds__destroy(vsock_uds__create(el, &r->m, irq, CID, path));
	assert_int_equal(access(path, F_OK), -1);
	/* A regular file is not ours to replace. */
	close(creat(path, 0600));
	assert_null(vsock_uds__create(el, &r->m, irq, CID, path));
	assert_int_equal(access(path, F_OK), 0);
	unlink(path);
	rmdir(dir);
	vsock_uds__destroy(NULL);
	event__destroy(el);
	test_ram__free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_host_connect, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_host_connect_refused,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_lines, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_partial_lines, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_guest_connect, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_credit_stall, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_transport_reset, setup,
						teardown),
		cmocka_unit_test(test_create_errors),
	};

	return cmocka_run_group_tests_name("vsock_uds", tests, NULL, NULL);
}
