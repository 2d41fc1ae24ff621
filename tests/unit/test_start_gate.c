// SPDX-License-Identifier: Apache-2.0
/*
 * The start gate (api/sandbox/start_gate.h): the number of slots from
 * EMBER_START_LIMIT (and refused values falling back to the host's
 * default), and slots taken, exhausted and given back by closing.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../api/sandbox/start_gate.h"

static void limit_from_environment(void **state)
{
	unsigned int host;

	(void)state;
	unsetenv("EMBER_START_LIMIT");
	host = start_gate__slots();
	if (access("/sys/module/kvm_pvm", F_OK) == 0)
		assert_true(host >= 1);
	else
		assert_int_equal(host, 0);
	setenv("EMBER_START_LIMIT", "3", 1);
	assert_int_equal(start_gate__slots(), 3);
	setenv("EMBER_START_LIMIT", "0", 1);
	assert_int_equal(start_gate__slots(), 0);
	/* Not a number, negative or too many: the host's default. */
	setenv("EMBER_START_LIMIT", "2x", 1);
	assert_int_equal(start_gate__slots(), host);
	setenv("EMBER_START_LIMIT", "-1", 1);
	assert_int_equal(start_gate__slots(), host);
	setenv("EMBER_START_LIMIT", "1025", 1);
	assert_int_equal(start_gate__slots(), host);
	unsetenv("EMBER_START_LIMIT");
}

/* Slots in a directory of the test's own (not the host's gate). */
static void slots_taken_and_given_back(void **state)
{
	char dir[] = "/tmp/ember-gate-test.XXXXXX", path[128];
	int a, b, c;

	(void)state;
	assert_non_null(mkdtemp(dir));
	a = start_gate__try(dir, 2);
	b = start_gate__try(dir, 2);
	assert_true(a >= 0 && b >= 0);
	/* Every slot held: -EAGAIN, and again. */
	assert_int_equal(start_gate__try(dir, 2), -EAGAIN);
	assert_int_equal(start_gate__try(dir, 2), -EAGAIN);
	/* One given back is free again, and only that one. */
	close(a);
	c = start_gate__try(dir, 2);
	assert_true(c >= 0);
	assert_int_equal(start_gate__try(dir, 2), -EAGAIN);
	/* A third slot is a third file. */
	a = start_gate__try(dir, 3);
	assert_true(a >= 0);
	close(a);
	close(b);
	close(c);
	/* A directory that is not there: not -EAGAIN (no gate). */
	assert_int_equal(start_gate__try("/nonexistent/ember", 2), -ENOENT);
	for (int k = 0; k < 3; k++) {
		snprintf(path, sizeof(path), "%s/ember-start-gate.%u.%d", dir,
			 (unsigned int)geteuid(), k);
		assert_int_equal(unlink(path), 0);
	}
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(limit_from_environment),
		cmocka_unit_test(slots_taken_and_given_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
