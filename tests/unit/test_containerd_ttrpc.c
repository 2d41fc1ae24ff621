// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for the containerd shim's protocol half: ttrpc frames (round
 * trips, oversized and unknown frames, garbage requests), a server and
 * client in one process (calls, concurrent requests on one connection,
 * bad frames closing only their connection, stop from a handler), the
 * events' ForwardRequest and the publisher sending it, and the shim's
 * socket address (api/containerd/{ttrpc,ttrpc_codec,events,address}.h).
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../api/containerd/address.h"
#include "../../api/containerd/events.h"
#include "../../api/containerd/ttrpc.h"
#include "../../api/containerd/ttrpc_codec.h"
#include "proto/events_ttrpc.pb-c.h"
#include "proto/ttrpc.pb-c.h"

/* --- frames ------------------------------------------------------------- */

static void test_header_round_trip(void **state)
{
	struct ttrpc_header h = { .length = 0x01020304 & 0x3fffff,
				  .stream = 0xdeadbeef,
				  .type = TTRPC_TYPE_RESPONSE,
				  .flags = 0x5a },
			    g;
	uint8_t buf[TTRPC_HEADER_LEN];

	(void)state;
	ttrpc_codec__put_header(buf, &h);
	assert_int_equal(buf[0], 0x00);
	assert_int_equal(buf[4], 0xde); /* big-endian */
	assert_int_equal(ttrpc_codec__get_header(buf, &g), 0);
	assert_int_equal(g.length, h.length);
	assert_int_equal(g.stream, h.stream);
	assert_int_equal(g.type, h.type);
	assert_int_equal(g.flags, h.flags);
}

static void test_header_bad(void **state)
{
	uint8_t buf[TTRPC_HEADER_LEN] = { 0 };
	struct ttrpc_header h = { .length = TTRPC_MAX_MESSAGE,
				  .stream = 1,
				  .type = TTRPC_TYPE_REQUEST };

	(void)state;
	ttrpc_codec__put_header(buf, &h);
	assert_int_equal(ttrpc_codec__get_header(buf, &h), 0);
	h.length = TTRPC_MAX_MESSAGE + 1;
	ttrpc_codec__put_header(buf, &h);
	assert_int_equal(ttrpc_codec__get_header(buf, &h), -EMSGSIZE);
	h.length = 0;
	h.type = 3; /* a stream's data: not spoken here */
	ttrpc_codec__put_header(buf, &h);
	assert_int_equal(ttrpc_codec__get_header(buf, &h), -EPROTO);
	h.type = 0;
	ttrpc_codec__put_header(buf, &h);
	assert_int_equal(ttrpc_codec__get_header(buf, &h), -EPROTO);
}

static void test_request_round_trip(void **state)
{
	const uint8_t payload[] = { 0x0a, 0x02, 'i', 'd', 0x00, 0xff };
	struct ttrpc_request r;
	struct ttrpc_header h;
	uint8_t *f;
	size_t n;

	(void)state;
	assert_int_equal(ttrpc_codec__request_frame(
				 7, "containerd.task.v2.Task", "Create",
				 payload, sizeof(payload), 5000000000, &f, &n),
			 0);
	assert_int_equal(ttrpc_codec__get_header(f, &h), 0);
	assert_int_equal(h.stream, 7);
	assert_int_equal(h.type, TTRPC_TYPE_REQUEST);
	assert_int_equal(h.length + TTRPC_HEADER_LEN, n);
	assert_int_equal(
		ttrpc_codec__request_decode(f + TTRPC_HEADER_LEN, h.length, &r),
		0);
	assert_string_equal(r.service, "containerd.task.v2.Task");
	assert_string_equal(r.method, "Create");
	assert_int_equal(r.len, sizeof(payload));
	assert_memory_equal(r.payload, payload, sizeof(payload));
	assert_true(r.timeout_ns == 5000000000);
	ttrpc_codec__request_free(&r);
	free(f);
}

static void test_request_bad(void **state)
{
	const uint8_t garbage[] = { 0x0a, 0x7f, 'x' }; /* string past the end */
	Ttrpc__Request m = TTRPC__REQUEST__INIT;
	struct ttrpc_request r;
	uint8_t buf[64];
	size_t n;

	(void)state;
	assert_int_equal(
		ttrpc_codec__request_decode(garbage, sizeof(garbage), &r),
		-EBADMSG);
	m.service = "containerd.task.v2.Task"; /* and no method */
	n = ttrpc__request__pack(&m, buf);
	assert_int_equal(ttrpc_codec__request_decode(buf, n, &r), -EBADMSG);
	assert_null(r.priv);
}

static void test_response_round_trip(void **state)
{
	const uint8_t payload[] = { 0x08, 0x2a };
	struct ttrpc_header h;
	uint8_t *f, *p;
	size_t n, plen;
	char msg[64];
	int code;

	(void)state;
	assert_int_equal(ttrpc_codec__response_frame(9, 0, NULL, payload,
						     sizeof(payload), &f, &n),
			 0);
	assert_int_equal(ttrpc_codec__get_header(f, &h), 0);
	assert_int_equal(h.stream, 9);
	assert_int_equal(h.type, TTRPC_TYPE_RESPONSE);
	assert_int_equal(ttrpc_codec__response_decode(f + TTRPC_HEADER_LEN,
						      h.length, &code, msg,
						      sizeof(msg), &p, &plen),
			 0);
	assert_int_equal(code, 0);
	assert_int_equal(plen, sizeof(payload));
	assert_memory_equal(p, payload, plen);
	free(p);
	free(f);

	assert_int_equal(ttrpc_codec__response_frame(11, TTRPC_NOT_FOUND,
						     "no such task", NULL, 0,
						     &f, &n),
			 0);
	assert_int_equal(ttrpc_codec__get_header(f, &h), 0);
	assert_int_equal(ttrpc_codec__response_decode(f + TTRPC_HEADER_LEN,
						      h.length, &code, msg,
						      sizeof(msg), &p, &plen),
			 0);
	assert_int_equal(code, TTRPC_NOT_FOUND);
	assert_string_equal(msg, "no such task");
	assert_null(p);
	free(f);
}

static void test_response_too_big(void **state)
{
	size_t big = TTRPC_MAX_MESSAGE + 1;
	uint8_t *payload = calloc(1, big), *f, *p;
	struct ttrpc_header h;
	size_t n, plen;
	int code;

	(void)state;
	assert_non_null(payload);
	assert_int_equal(
		ttrpc_codec__response_frame(1, 0, NULL, payload, big, &f, &n),
		0);
	assert_int_equal(ttrpc_codec__get_header(f, &h), 0);
	assert_int_equal(ttrpc_codec__response_decode(f + TTRPC_HEADER_LEN,
						      h.length, &code, NULL, 0,
						      &p, &plen),
			 0);
	assert_int_equal(code, TTRPC_RESOURCE_EXHAUSTED);
	free(f);
	assert_int_equal(ttrpc_codec__request_frame(1, "s", "m", payload, big,
						    0, &f, &n),
			 -EMSGSIZE);
	free(payload);
}

/* --- server and client -------------------------------------------------- */

struct fixture {
	char dir[64], path[128], addr[160];
	struct ttrpc_server *server;
	pthread_t thread;
	int run_ret;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool released;
	int forwards; /* Events/Forward seen */
	char topic[64], type_url[64], ns[64];
};

/* Echo echoes, Block waits for the test, Stop stops, Forward records. */
static void handler(void *opaque, const struct ttrpc_call *c,
		    struct ttrpc_reply *r)
{
	struct fixture *fx = opaque;

	if (!strcmp(c->method, "Echo")) {
		r->payload = malloc(c->len + 1);
		if (c->len)
			memcpy(r->payload, c->payload, c->len);
		r->len = c->len;
	} else if (!strcmp(c->method, "Block")) {
		pthread_mutex_lock(&fx->lock);
		while (!fx->released)
			pthread_cond_wait(&fx->cond, &fx->lock);
		pthread_mutex_unlock(&fx->lock);
	} else if (!strcmp(c->method, "Stop")) {
		ttrpc_server__stop(fx->server);
	} else if (!strcmp(c->service, SHIM_EVENTS_SERVICE) &&
		   !strcmp(c->method, "Forward")) {
		Containerd__Services__Events__Ttrpc__V1__ForwardRequest *m =
			containerd__services__events__ttrpc__v1__forward_request__unpack(
				NULL, c->len, c->payload);

		if (!m || !m->envelope || !m->envelope->event) {
			r->code = TTRPC_INVALID_ARGUMENT;
			return;
		}
		pthread_mutex_lock(&fx->lock);
		snprintf(fx->topic, sizeof(fx->topic), "%s",
			 m->envelope->topic);
		snprintf(fx->type_url, sizeof(fx->type_url), "%s",
			 m->envelope->event->type_url);
		snprintf(fx->ns, sizeof(fx->ns), "%s", m->envelope->namespace_);
		fx->forwards++;
		pthread_cond_broadcast(&fx->cond);
		pthread_mutex_unlock(&fx->lock);
		containerd__services__events__ttrpc__v1__forward_request__free_unpacked(
			m, NULL);
	} else {
		r->code = TTRPC_UNIMPLEMENTED;
		snprintf(r->message, sizeof(r->message), "no %s/%s", c->service,
			 c->method);
	}
}

static void *run_thread(void *arg)
{
	struct fixture *fx = arg;

	fx->run_ret = ttrpc_server__run(fx->server);
	return NULL;
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	assert_non_null(fx);
	strcpy(fx->dir, "/tmp/ttrpc-test.XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	snprintf(fx->path, sizeof(fx->path), "%s/s", fx->dir);
	snprintf(fx->addr, sizeof(fx->addr), "unix://%s", fx->path);
	strcpy(sa.sun_path, fx->path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 16), 0);
	pthread_mutex_init(&fx->lock, NULL);
	pthread_cond_init(&fx->cond, NULL);
	fx->server = ttrpc_server__new(fd, handler, fx);
	assert_non_null(fx->server);
	assert_int_equal(pthread_create(&fx->thread, NULL, run_thread, fx), 0);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	pthread_mutex_lock(&fx->lock);
	fx->released = true;
	pthread_cond_broadcast(&fx->cond);
	pthread_mutex_unlock(&fx->lock);
	ttrpc_server__stop(fx->server);
	pthread_join(fx->thread, NULL);
	ttrpc_server__free(fx->server);
	unlink(fx->path);
	rmdir(fx->dir);
	free(fx);
	return 0;
}

static struct ttrpc_client *connect_ok(struct fixture *fx, const char *addr)
{
	struct ttrpc_client *c;
	int err = 1;

	c = ttrpc_client__connect(addr ? addr : fx->addr, 1000, &err);
	assert_non_null(c);
	return c;
}

static void test_call(void **state)
{
	struct fixture *fx = *state;
	struct ttrpc_client *c = connect_ok(fx, NULL);
	const uint8_t req[] = { 1, 2, 3, 0, 4 };
	uint8_t *resp;
	size_t n;
	char msg[128];

	assert_int_equal(ttrpc_client__call(c, "t.S", "Echo", req, sizeof(req),
					    1000, &resp, &n, msg, sizeof(msg)),
			 0);
	assert_int_equal(n, sizeof(req));
	assert_memory_equal(resp, req, n);
	free(resp);
	/* a second call on the same connection: the next stream id */
	assert_int_equal(ttrpc_client__call(c, "t.S", "Nope", NULL, 0, 1000,
					    &resp, &n, msg, sizeof(msg)),
			 TTRPC_UNIMPLEMENTED);
	assert_string_equal(msg, "no t.S/Nope");
	assert_null(resp);
	/* an empty answer */
	assert_int_equal(ttrpc_client__call(c, "t.S", "Echo", NULL, 0, 1000,
					    &resp, &n, NULL, 0),
			 0);
	assert_null(resp);
	assert_int_equal(n, 0);
	ttrpc_client__free(c);

	/* the plain path form of the address, as TTRPC_ADDRESS */
	c = connect_ok(fx, fx->path);
	assert_int_equal(ttrpc_client__call(c, "t.S", "Echo", req, 1, 1000,
					    &resp, &n, NULL, 0),
			 0);
	free(resp);
	ttrpc_client__free(c);
}

static int raw_connect(struct fixture *fx)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	strcpy(sa.sun_path, fx->path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static void raw_send_request(int fd, uint32_t stream, const char *method)
{
	uint8_t *f;
	size_t n;

	assert_int_equal(ttrpc_codec__request_frame(stream, "t.S", method,
						    (const uint8_t *)"x", 1, 0,
						    &f, &n),
			 0);
	assert_int_equal(write(fd, f, n), (ssize_t)n);
	free(f);
}

/* The stream id of the next response on @fd, its code in *@code. */
static uint32_t raw_read_response(int fd, int *code)
{
	uint8_t hdr[TTRPC_HEADER_LEN], *body, *p;
	struct ttrpc_header h;
	size_t plen;

	assert_int_equal(recv(fd, hdr, sizeof(hdr), MSG_WAITALL), sizeof(hdr));
	assert_int_equal(ttrpc_codec__get_header(hdr, &h), 0);
	body = malloc(h.length + 1);
	if (h.length) /* recv of 0 bytes would wait */
		assert_int_equal(recv(fd, body, h.length, MSG_WAITALL),
				 (ssize_t)h.length);
	assert_int_equal(ttrpc_codec__response_decode(body, h.length, code,
						      NULL, 0, &p, &plen),
			 0);
	free(p);
	free(body);
	return h.stream;
}

static void test_concurrent_on_one_connection(void **state)
{
	struct fixture *fx = *state;
	int fd = raw_connect(fx), code;

	raw_send_request(fd, 1, "Block");
	raw_send_request(fd, 3, "Echo");
	/* the second request's answer comes while the first one blocks */
	assert_int_equal(raw_read_response(fd, &code), 3);
	assert_int_equal(code, 0);
	pthread_mutex_lock(&fx->lock);
	fx->released = true;
	pthread_cond_broadcast(&fx->cond);
	pthread_mutex_unlock(&fx->lock);
	assert_int_equal(raw_read_response(fd, &code), 1);
	assert_int_equal(code, 0);
	close(fd);
}

/* The threads of this process. */
static int nr_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* The threads once those of earlier tests are gone (steady for 200 ms). */
static int settled_threads(void)
{
	int n = nr_threads(), i, steady = 0;

	for (i = 0; i < 250 && steady < 10; i++) {
		usleep(20000);
		steady = nr_threads() == n ? steady + 1 : 0;
		n = nr_threads();
	}
	return n;
}

struct sender {
	int fd, n;
	size_t size; /* of each payload; 0: raw_send_request's */
};

/* @arg's n Block requests on its fd (blocks while the server reads none). */
static void *send_blocks(void *arg)
{
	struct sender *sd = arg;
	uint8_t *payload = calloc(1, sd->size + 1), *f;
	size_t n;
	int i;

	for (i = 0; i < sd->n; i++) {
		if (!sd->size) {
			raw_send_request(sd->fd, 2 * i + 1, "Block");
			continue;
		}
		if (ttrpc_codec__request_frame(2 * i + 1, "t.S", "Block",
					       payload, sd->size, 0, &f, &n))
			break;
		if (write(sd->fd, f, n) != (ssize_t)n)
			i = sd->n;
		free(f);
	}
	free(payload);
	return NULL;
}

/* A peer that sends and never reads gets TTRPC_MAX_INFLIGHT threads. */
static void test_inflight_bounded(void **state)
{
	struct fixture *fx = *state;
	struct sender sd = { .fd = raw_connect(fx),
			     .n = TTRPC_MAX_INFLIGHT + 200 };
	int before = settled_threads(), code, i;
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, send_blocks, &sd), 0);
	before++; /* the sender */
	/* let the reader take what it may */
	for (i = 0; i < 250 && nr_threads() < before + TTRPC_MAX_INFLIGHT; i++)
		usleep(20000);
	usleep(300000);
	/* the bound; and not vacuous: most of it was reached */
	assert_in_range(nr_threads() - before, TTRPC_MAX_INFLIGHT - 64,
			TTRPC_MAX_INFLIGHT + 2);
	/* released, every request is answered */
	pthread_mutex_lock(&fx->lock);
	fx->released = true;
	pthread_cond_broadcast(&fx->cond);
	pthread_mutex_unlock(&fx->lock);
	for (i = 0; i < sd.n; i++) {
		raw_read_response(sd.fd, &code);
		assert_int_equal(code, 0);
	}
	pthread_join(t, NULL);
	close(sd.fd);
}

/* ... and requests of 16 MiB in all. */
static void test_inflight_bytes_bounded(void **state)
{
	struct fixture *fx = *state;
	struct sender sd = { .fd = raw_connect(fx), .n = 40, .size = 1 << 20 };
	int before = settled_threads(), code, i;
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, send_blocks, &sd), 0);
	before++; /* the sender */
	for (i = 0; i < 250 && nr_threads() < before + 14; i++)
		usleep(20000);
	usleep(300000);
	/* 15 of about 1 MiB each fit in 16 MiB */
	assert_in_range(nr_threads() - before, 8, 16);
	pthread_mutex_lock(&fx->lock);
	fx->released = true;
	pthread_cond_broadcast(&fx->cond);
	pthread_mutex_unlock(&fx->lock);
	for (i = 0; i < sd.n; i++) {
		raw_read_response(sd.fd, &code);
		assert_int_equal(code, 0);
	}
	pthread_join(t, NULL);
	close(sd.fd);
}

static void test_bad_frames_close_one_connection(void **state)
{
	struct fixture *fx = *state;
	struct ttrpc_client *good = connect_ok(fx, NULL);
	struct ttrpc_header h = { .stream = 1, .type = 3 };
	uint8_t hdr[TTRPC_HEADER_LEN], byte;
	uint8_t *resp;
	size_t n;
	int fd, code;

	/* unknown type */
	fd = raw_connect(fx);
	ttrpc_codec__put_header(hdr, &h);
	assert_int_equal(write(fd, hdr, sizeof(hdr)), sizeof(hdr));
	assert_int_equal(read(fd, &byte, 1), 0);
	close(fd);
	/* over 4 MiB */
	fd = raw_connect(fx);
	h = (struct ttrpc_header){ .length = TTRPC_MAX_MESSAGE + 1,
				   .stream = 1,
				   .type = TTRPC_TYPE_REQUEST };
	ttrpc_codec__put_header(hdr, &h);
	assert_int_equal(write(fd, hdr, sizeof(hdr)), sizeof(hdr));
	assert_int_equal(read(fd, &byte, 1), 0);
	close(fd);
	/* an even stream id */
	fd = raw_connect(fx);
	raw_send_request(fd, 2, "Echo");
	assert_int_equal(read(fd, &byte, 1), 0);
	close(fd);
	/* a body that is no Request: answered, the connection stays */
	fd = raw_connect(fx);
	h = (struct ttrpc_header){ .length = 2,
				   .stream = 5,
				   .type = TTRPC_TYPE_REQUEST };
	ttrpc_codec__put_header(hdr, &h);
	assert_int_equal(write(fd, hdr, sizeof(hdr)), sizeof(hdr));
	assert_int_equal(write(fd, "\x0a\x7f", 2), 2);
	assert_int_equal(raw_read_response(fd, &code), 5);
	assert_int_equal(code, TTRPC_INVALID_ARGUMENT);
	raw_send_request(fd, 7, "Echo");
	assert_int_equal(raw_read_response(fd, &code), 7);
	assert_int_equal(code, 0);
	close(fd);
	/* a frame cut short */
	fd = raw_connect(fx);
	assert_int_equal(write(fd, hdr, 4), 4);
	close(fd);

	assert_int_equal(ttrpc_client__call(good, "t.S", "Echo", NULL, 0, 1000,
					    &resp, &n, NULL, 0),
			 0);
	ttrpc_client__free(good);
}

static void test_stop_from_handler(void **state)
{
	struct fixture *fx = *state;
	struct ttrpc_client *c = connect_ok(fx, NULL);
	uint8_t *resp;
	size_t n;

	/* the reply to the call that stops the server still arrives */
	assert_int_equal(ttrpc_client__call(c, "t.S", "Stop", NULL, 0, 2000,
					    &resp, &n, NULL, 0),
			 0);
	pthread_join(fx->thread, NULL);
	assert_int_equal(fx->run_ret, 0);
	/* and the connection is closed */
	assert_true(ttrpc_client__call(c, "t.S", "Echo", NULL, 0, 1000, &resp,
				       &n, NULL, 0) < 0);
	ttrpc_client__free(c);
	assert_int_equal(pthread_create(&fx->thread, NULL, run_thread, fx), 0);
}

static void test_client_errors(void **state)
{
	int err = 0;

	(void)state;
	assert_null(
		ttrpc_client__connect("unix:///nonexistent/sock", 100, &err));
	assert_int_equal(err, -ENOENT);
	assert_null(ttrpc_client__connect("", 100, &err));
	assert_int_equal(err, -EINVAL);
}

/* --- events ------------------------------------------------------------- */

static void test_forward_encoding(void **state)
{
	const uint8_t ev[] = { 0x0a, 0x02, 'c', '1' }; /* TaskOOM{"c1"} */
	Containerd__Services__Events__Ttrpc__V1__ForwardRequest *m;
	uint8_t *out;
	size_t n;

	(void)state;
	assert_int_equal(shim_events__forward_request(
				 "default", "/tasks/oom",
				 "containerd.events.TaskOOM", ev, sizeof(ev),
				 1700000000, 123, &out, &n),
			 0);
	m = containerd__services__events__ttrpc__v1__forward_request__unpack(
		NULL, n, out);
	assert_non_null(m);
	assert_non_null(m->envelope);
	assert_string_equal(m->envelope->namespace_, "default");
	assert_string_equal(m->envelope->topic, "/tasks/oom");
	assert_non_null(m->envelope->timestamp);
	assert_true(m->envelope->timestamp->seconds == 1700000000);
	assert_int_equal(m->envelope->timestamp->nanos, 123);
	assert_string_equal(m->envelope->event->type_url,
			    "containerd.events.TaskOOM");
	assert_int_equal(m->envelope->event->value.len, sizeof(ev));
	assert_memory_equal(m->envelope->event->value.data, ev, sizeof(ev));
	containerd__services__events__ttrpc__v1__forward_request__free_unpacked(
		m, NULL);
	/* field 1 (envelope), then its timestamp as field 1 */
	assert_int_equal(out[0], 0x0a);
	free(out);
}

static void test_publisher(void **state)
{
	struct fixture *fx = *state;
	struct shim_events *ev = shim_events__new(fx->path, "k8s.io");
	int i;

	assert_non_null(ev);
	for (i = 0; i < 3; i++)
		assert_int_equal(
			shim_events__publish(ev, "/tasks/exit",
					     "containerd.events.TaskExit",
					     (const uint8_t *)"", 0),
			0);
	shim_events__free(ev, 5000);
	assert_int_equal(fx->forwards, 3);
	assert_string_equal(fx->topic, "/tasks/exit");
	assert_string_equal(fx->type_url, "containerd.events.TaskExit");
	assert_string_equal(fx->ns, "k8s.io");
	/* no address: dropped, not an error */
	ev = shim_events__new(NULL, "default");
	assert_non_null(ev);
	assert_int_equal(shim_events__publish(ev, "/t", "x.Y", NULL, 0), 0);
	shim_events__free(ev, 0);
}

/* --- the socket address ------------------------------------------------- */

static void test_join(void **state)
{
	static const struct {
		const char *a, *b, *c, *want;
	} cases[] = {
		{ "/run/containerd/containerd.sock", "default", "abc",
		  "/run/containerd/containerd.sock/default/abc" },
		{ "/a//b/./c/", "ns", "id", "/a/b/c/ns/id" },
		{ "/a/b/../c", "", "id", "/a/c/id" },
		{ "/../x", "ns", "../id", "/x/id" },
		{ "rel", "..", "..", ".." },
		{ "", "ns", "id", "ns/id" },
		{ "", "", "", "" },
		{ "/", "ns", "id", "/ns/id" },
	};
	char out[128];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(shim_address__join(cases[i].a, cases[i].b,
						    cases[i].c, out,
						    sizeof(out)),
				 0);
		assert_string_equal(out, cases[i].want);
	}
	assert_int_equal(shim_address__join("/aaaa", "b", "c", out, 6),
			 -ENAMETOOLONG);
}

static void test_socket_address(void **state)
{
	char out[256];

	(void)state;
	/* sha256("/run/containerd/containerd.sock/default/abc") */
	assert_int_equal(shim_address__socket("/run/containerd/containerd.sock",
					      "default", "abc", SHIM_SOCKET_DIR,
					      out, sizeof(out)),
			 0);
	assert_string_equal(out, "unix:///run/containerd/s/"
				 "8cb244a719603fe00870d5ce1d8e1f1d"
				 "b43a654cb993d107df1f1ae23ddffa59");
	assert_string_equal(shim_address__path(out),
			    "/run/containerd/s/8cb244a719603fe00870d5ce1d8e1f1d"
			    "b43a654cb993d107df1f1ae23ddffa59");
	assert_int_equal(
		shim_address__socket("/x", "", "abc", "/s", out, sizeof(out)),
		-EINVAL);
	assert_int_equal(
		shim_address__socket("/x", "default", "abc",
				     "/a/very/long/directory/name/that/"
				     "does/not/fit/a/sockaddr_un/path",
				     out, sizeof(out)),
		-ENAMETOOLONG);
	assert_null(shim_address__path("unix://@abstract"));
}

static void test_group(void **state)
{
	const char *pod = "{\"annotations\":{"
			  "\"io.kubernetes.cri.container-type\":\"container\","
			  "\"io.kubernetes.cri.sandbox-id\":\"sb1\"}}";
	const char *plain = "{\"ociVersion\":\"1.0.2\",\"annotations\":{}}";
	char out[64];

	(void)state;
	assert_int_equal(
		shim_address__group(pod, strlen(pod), "c1", out, sizeof(out)),
		0);
	assert_string_equal(out, "sb1");
	assert_int_equal(shim_address__group(plain, strlen(plain), "c1", out,
					     sizeof(out)),
			 0);
	assert_string_equal(out, "c1");
	assert_int_equal(shim_address__group("{", 1, "c1", out, sizeof(out)),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_round_trip),
		cmocka_unit_test(test_header_bad),
		cmocka_unit_test(test_request_round_trip),
		cmocka_unit_test(test_request_bad),
		cmocka_unit_test(test_response_round_trip),
		cmocka_unit_test(test_response_too_big),
		cmocka_unit_test_setup_teardown(test_call, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_concurrent_on_one_connection, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_bad_frames_close_one_connection, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inflight_bounded, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_inflight_bytes_bounded,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_from_handler, setup,
						teardown),
		cmocka_unit_test(test_client_errors),
		cmocka_unit_test(test_forward_encoding),
		cmocka_unit_test_setup_teardown(test_publisher, setup,
						teardown),
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_socket_address),
		cmocka_unit_test(test_group),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
