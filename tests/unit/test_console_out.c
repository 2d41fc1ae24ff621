// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for vmm/backends/console_out.c: guest console output to a pipe whose
 * reader goes away or stalls, and the panic-line watch.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../vmm/backends/console_out.h"

static void send_str(struct console_out *c, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		console_out__tx(c, (uint8_t)s[i]);
}

static void send(struct console_out *c, const char *s)
{
	send_str(c, s, strlen(s));
}

static void test_to_pipe(void **state)
{
	struct console_out *c;
	char buf[16];
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	c = console_out__create(p[1]);
	assert_non_null(c);
	send(c, "hello\n");
	assert_int_equal(read(p[0], buf, sizeof(buf)), 6);
	assert_memory_equal(buf, "hello\n", 6);
	assert_int_equal(console_out__dropped(c), 0);
	assert_null(console_out__panic(c));
	console_out__destroy(c);
	close(p[0]);
	close(p[1]);
}

/*
 * `ember ... | true`: the reader has gone.  The bytes are dropped and
 * counted, the VM goes on (SIGPIPE is ignored, as ember's main does).
 */
static void test_reader_gone(void **state)
{
	struct console_out *c;
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	c = console_out__create(p[1]);
	assert_non_null(c);
	close(p[0]);
	send(c, "lost\n");
	assert_int_equal(console_out__dropped(c), 5);
	send(c, "x");
	assert_int_equal(console_out__dropped(c), 6);
	console_out__destroy(c);
	close(p[1]);
}

struct stalled {
	struct console_out *c;
	int done; /* atomic */
};

static void *fill(void *arg)
{
	struct stalled *s = arg;
	unsigned int i;

	/* More than any pipe holds: the writer waits for the reader. */
	for (i = 0; i < 2 * 1024 * 1024; i++)
		console_out__tx(s->c, 'y');
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * `ember ... | (sleep 60)`: a reader that does not read holds the vCPU
 * back (flow control) but never past console_out__stop().
 */
static void test_reader_stalled(void **state)
{
	struct timespec t = { .tv_nsec = 300 * 1000 * 1000 };
	struct stalled s = { 0 };
	pthread_t th;
	int p[2], i;

	(void)state;
	assert_int_equal(pipe(p), 0);
	s.c = console_out__create(p[1]);
	assert_non_null(s.c);
	assert_int_equal(pthread_create(&th, NULL, fill, &s), 0);
	nanosleep(&t, NULL);
	assert_int_equal(__atomic_load_n(&s.done, __ATOMIC_ACQUIRE), 0);
	console_out__stop(s.c);
	/* At most one 100 ms wait, then every byte is dropped at once. */
	for (i = 0; i < 100 && !__atomic_load_n(&s.done, __ATOMIC_ACQUIRE); i++)
		nanosleep(&t, NULL);
	assert_int_equal(__atomic_load_n(&s.done, __ATOMIC_ACQUIRE), 1);
	pthread_join(th, NULL);
	assert_true(console_out__dropped(s.c) > 0);
	console_out__destroy(s.c);
	close(p[0]);
	close(p[1]);
}

static void test_panic_line(void **state)
{
	struct console_out *c = console_out__create(-1);

	(void)state;
	assert_non_null(c);
	send(c, "[    0.1] booting\r\n");
	assert_null(console_out__panic(c));
	/* Only a whole line counts. */
	send(c, "[    1.23] Kernel panic - not syncing: VFS: Unable to mount "
		"root fs on unknown-block(0,0)\r");
	assert_null(console_out__panic(c));
	send(c, "\n");
	assert_non_null(console_out__panic(c));
	assert_string_equal(
		console_out__panic(c),
		"VFS: Unable to mount root fs on unknown-block(0,0)");
	/* The first panic is the one kept. */
	send(c, "Kernel panic - not syncing: second\n");
	assert_string_equal(
		console_out__panic(c),
		"VFS: Unable to mount root fs on unknown-block(0,0)");
	assert_int_equal(console_out__dropped(c), 0);
	console_out__destroy(c);
}

/* The guest writes this text: escapes, NULs and floods stay harmless. */
static void test_panic_line_hostile(void **state)
{
	struct console_out *c = console_out__create(-1);
	static const char esc[] =
		"Kernel panic - not syncing: \x1b[2J\x07ok\xff\n";
	char big[1000];
	size_t i;

	(void)state;
	assert_non_null(c);
	/* A line longer than the watch keeps is skipped, not cut. */
	memset(big, 'a', sizeof(big));
	send_str(c, big, sizeof(big));
	send(c, "Kernel panic - not syncing: too late in a long line\n");
	assert_null(console_out__panic(c));
	/* A NUL before the marker hides it. */
	send_str(c, "x\0Kernel panic - not syncing: hidden\n", 37);
	assert_null(console_out__panic(c));
	send_str(c, esc, sizeof(esc) - 1);
	assert_string_equal(console_out__panic(c), "?[2J?ok?");
	console_out__destroy(c);

	/* The reason is cut at CONSOLE_OUT_PANIC_MAX. */
	c = console_out__create(-1);
	assert_non_null(c);
	send(c, "Kernel panic - not syncing: ");
	for (i = 0; i < 220; i++)
		console_out__tx(c, 'r');
	send(c, "\n");
	assert_int_equal(strlen(console_out__panic(c)), CONSOLE_OUT_PANIC_MAX);
	console_out__destroy(c);
	console_out__destroy(NULL);
	assert_int_equal(console_out__dropped(NULL), 0);
	assert_null(console_out__panic(NULL));
}

/* A console file: everything arrives, in order. */
static void test_to_file(void **state)
{
	char path[] = "/tmp/ember-console-out-XXXXXX", buf[32];
	struct console_out *c;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	unlink(path);
	c = console_out__create(fd);
	assert_non_null(c);
	send(c, "to the file\n");
	assert_int_equal(pread(fd, buf, sizeof(buf), 0), 12);
	assert_memory_equal(buf, "to the file\n", 12);
	console_out__destroy(c);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_to_pipe),
		cmocka_unit_test(test_reader_gone),
		cmocka_unit_test(test_reader_stalled),
		cmocka_unit_test(test_panic_line),
		cmocka_unit_test(test_panic_line_hostile),
		cmocka_unit_test(test_to_file),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("console_out", tests, NULL, NULL);
}
