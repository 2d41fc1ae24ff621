// SPDX-License-Identifier: Apache-2.0
/* Unit tests for api/jailer/jailer_args.c: ember-jailer's command line. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../api/jailer/jailer.h"

#define MAX_ARGS 64

/* A temporary directory holding an executable-looking regular file. */
struct fixture {
	char dir[64];
	char exec[96];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	int fd;

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_jailer_args.XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->exec, sizeof(f->exec), "%s/ember", f->dir);
	fd = open(f->exec, O_WRONLY | O_CREAT | O_EXCL, 0755);
	if (fd < 0) {
		rmdir(f->dir);
		free(f);
		return -1;
	}
	close(fd);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	unlink(f->exec);
	rmdir(f->dir);
	free(f);
	return 0;
}

/*
 * Parse "ember-jailer" + the NULL-terminated words, where "@EXEC" stands
 * for the fixture's exec file.  The words must outlive @a.
 */
static int parse_v(struct fixture *f, struct jail_args *a, struct jail_err *e,
		   const char *const *words)
{
	static char *argv[MAX_ARGS];
	int argc = 0;

	argv[argc++] = (char *)"ember-jailer";
	for (; *words && argc < MAX_ARGS - 1; words++)
		argv[argc++] =
			(char *)(strcmp(*words, "@EXEC") ? *words : f->exec);
	argv[argc] = NULL;
	memset(e, 0, sizeof(*e));
	return jail_args__parse(a, argc, argv, e);
}

#define PARSE(f, a, e, ...) \
	parse_v(f, a, e, (const char *const[]){ __VA_ARGS__, NULL })

/* The four required options, then more. */
#define REQ \
	"--id", "vm-1", "--exec-file", "@EXEC", "--uid", "1000", "--gid", "1000"

/* Refused with EINVAL, the step naming @opt. */
static void assert_refused(int ret, const struct jail_err *e, const char *opt)
{
	assert_int_equal(ret, -EINVAL);
	assert_int_equal(e->errnum, EINVAL);
	assert_non_null(strstr(e->step, opt));
}

static void test_minimal_defaults(void **state)
{
	struct fixture *f = *state;
	struct jail_args a;
	struct jail_err e;

	assert_int_equal(PARSE(f, &a, &e, REQ), 0);
	assert_int_equal(a.mode, JAIL_RUN);
	assert_string_equal(a.id, "vm-1");
	assert_string_equal(a.exec_file, f->exec);
	assert_string_equal(a.exec_name, "ember");
	assert_int_equal(a.uid, 1000);
	assert_int_equal(a.gid, 1000);
	assert_string_equal(a.chroot_base, "/srv/jailer");
	assert_string_equal(a.parent_cgroup, "ember");
	assert_int_equal(a.cgroup_version, 0);
	assert_int_equal(a.no_file, 2048);
	assert_true(a.fsize == RLIM_INFINITY);
	assert_null(a.netns);
	assert_false(a.daemonize || a.new_pid_ns || a.allow_root);
	assert_int_equal(a.n_cgroups, 0);
	assert_int_equal(a.ember_argc, 0);
}

static void test_everything(void **state)
{
	struct fixture *f = *state;
	struct jail_args a;
	struct jail_err e;

	assert_int_equal(PARSE(f, &a, &e, REQ, "--chroot-base-dir=/var/jail",
			       "--netns", "/var/run/netns/n1", "--cgroup",
			       "memory.limit_in_bytes=536870912", "--cgroup",
			       "cpuset.cpus=0-1", "--cgroup-version", "1",
			       "--parent-cgroup", "vms/ember",
			       "--resource-limit", "no-file=1024",
			       "--resource-limit=fsize=1000000", "--ro-bind",
			       "/tmp", "--daemonize", "--new-pid-ns", "--",
			       "--api-sock", "/api.sock", "--id", "ignored"),
			 0);
	assert_string_equal(a.chroot_base, "/var/jail");
	assert_string_equal(a.netns, "/var/run/netns/n1");
	assert_int_equal(a.n_cgroups, 2);
	assert_string_equal(a.cgroups[0].file, "memory.limit_in_bytes");
	assert_string_equal(a.cgroups[0].controller, "memory");
	assert_string_equal(a.cgroups[0].value, "536870912");
	assert_string_equal(a.cgroups[1].controller, "cpuset");
	assert_string_equal(a.cgroups[1].value, "0-1");
	assert_int_equal(a.cgroup_version, 1);
	assert_string_equal(a.parent_cgroup, "vms/ember");
	assert_int_equal(a.no_file, 1024);
	assert_int_equal(a.fsize, 1000000);
	assert_int_equal(a.n_ro_binds, 1);
	assert_string_equal(a.ro_binds[0], "/tmp");
	assert_true(a.daemonize && a.new_pid_ns);
	/* Everything after "--" is ember's, options included. */
	assert_int_equal(a.ember_argc, 4);
	assert_string_equal(a.ember_argv[0], "--api-sock");
	assert_string_equal(a.ember_argv[3], "ignored");
	assert_null(a.ember_argv[4]);
}

static void test_id(void **state)
{
	struct fixture *f = *state;
	char max[JAIL_ID_MAX + 2];
	struct jail_args a;
	struct jail_err e;

	memset(max, 'a', JAIL_ID_MAX);
	max[JAIL_ID_MAX] = '\0';
	assert_int_equal(PARSE(f, &a, &e, "--id", max, "--exec-file", "@EXEC",
			       "--uid", "1", "--gid", "1"),
			 0);
	max[JAIL_ID_MAX] = 'a'; /* 65 */
	max[JAIL_ID_MAX + 1] = '\0';
	assert_refused(PARSE(f, &a, &e, "--id", max, "--exec-file", "@EXEC",
			     "--uid", "1", "--gid", "1"),
		       &e, "--id");
	assert_refused(PARSE(f, &a, &e, "--id", "a/b", "--exec-file", "@EXEC",
			     "--uid", "1", "--gid", "1"),
		       &e, "--id");
	assert_non_null(strstr(e.why, "'/'"));
	assert_refused(PARSE(f, &a, &e, "--id", "..", "--exec-file", "@EXEC",
			     "--uid", "1", "--gid", "1"),
		       &e, "--id");
	assert_non_null(strstr(e.why, "'..'"));
	assert_refused(PARSE(f, &a, &e, "--id", "../../etc", "--exec-file",
			     "@EXEC", "--uid", "1", "--gid", "1"),
		       &e, "--id");
	assert_refused(PARSE(f, &a, &e, "--id", "", "--exec-file", "@EXEC",
			     "--uid", "1", "--gid", "1"),
		       &e, "--id");
	assert_refused(PARSE(f, &a, &e, "--id", "a_b", "--exec-file", "@EXEC",
			     "--uid", "1", "--gid", "1"),
		       &e, "--id");
	assert_refused(PARSE(f, &a, &e, "--id", "a.b", "--exec-file", "@EXEC",
			     "--uid", "1", "--gid", "1"),
		       &e, "--id");
	assert_refused(PARSE(f, &a, &e, "--id", "a b", "--exec-file", "@EXEC",
			     "--uid", "1", "--gid", "1"),
		       &e, "--id");
}

static void test_uid_gid(void **state)
{
	static const char *const bad[] = {
		"",    "x",	     "-1",
		"+5",  " 5",	     "5 ",
		"1e3", "4294967295", "99999999999999999999"
	};
	struct fixture *f = *state;
	struct jail_args a;
	struct jail_err e;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_refused(PARSE(f, &a, &e, "--id", "x", "--exec-file",
				     "@EXEC", "--uid", bad[i], "--gid", "1"),
			       &e, "--uid");
		assert_refused(PARSE(f, &a, &e, "--id", "x", "--exec-file",
				     "@EXEC", "--uid", "1", "--gid", bad[i]),
			       &e, "--gid");
	}
	assert_int_equal(PARSE(f, &a, &e, "--id", "x", "--exec-file", "@EXEC",
			       "--uid", "4294967294", "--gid", "7"),
			 0);
	assert_int_equal(a.uid, 4294967294U);
}

/* Firecracker's flags alone: Kata passes --uid 0 --gid 0 and no more. */
static void test_root_as_kata(void **state)
{
	struct fixture *f = *state;
	struct jail_args a;
	struct jail_err e;

	assert_int_equal(PARSE(f, &a, &e, "--id", "x", "--exec-file", "@EXEC",
			       "--uid", "0", "--gid", "0", "--chroot-base-dir",
			       "/run/vc", "--daemonize", "--", "--config-file",
			       "/fcConfig.json"),
			 0);
	assert_int_equal(a.uid, 0);
	assert_int_equal(a.gid, 0);
	assert_false(a.allow_root);
	assert_true(a.daemonize);
	assert_int_equal(a.ember_argc, 2);
	/* Still accepted from older callers. */
	assert_int_equal(PARSE(f, &a, &e, "--id", "x", "--exec-file", "@EXEC",
			       "--uid", "0", "--gid", "0", "--allow-root"),
			 0);
	assert_true(a.allow_root);
}

static void test_cgroup_syntax(void **state)
{
	static const char *const bad[] = {
		"memory",	  "memory.max",	     "=1",
		"memory.max=",	  ".max=1",	     "memory.=1",
		"memory=1",	  "Memory.max=1",    "mem0ry.max=1",
		"memory/x.max=1", "../memory.max=1", "memory..max=1",
		"memory.max/x=1", "memory.max=1\n2", "memory.m-x=1",
	};
	struct fixture *f = *state;
	struct jail_args a;
	struct jail_err e;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_refused(PARSE(f, &a, &e, REQ, "--cgroup", bad[i]), &e,
			       "--cgroup");
	assert_int_equal(PARSE(f, &a, &e, REQ, "--cgroup", "net_cls.classid=1",
			       "--cgroup", "memory.max=max", "--cgroup",
			       "cgroup.max.depth=2"),
			 0);
	assert_string_equal(a.cgroups[0].controller, "net_cls");
	assert_string_equal(a.cgroups[1].file, "memory.max");
	assert_string_equal(a.cgroups[2].controller, "cgroup");
	/* The value may itself hold '='. */
	assert_int_equal(PARSE(f, &a, &e, REQ, "--cgroup", "io.max=8:0 rbps=1"),
			 0);
	assert_string_equal(a.cgroups[0].value, "8:0 rbps=1");
}

static void test_cgroup_limit(void **state)
{
	struct fixture *f = *state;
	static const char *words[8 + 2 * (JAIL_MAX_CGROUPS + 1) + 1] = { REQ };
	struct jail_args a;
	struct jail_err e;
	size_t i, n = 8;

	for (i = 0; i < JAIL_MAX_CGROUPS; i++) {
		words[n++] = "--cgroup";
		words[n++] = "pids.max=10";
	}
	assert_int_equal(parse_v(f, &a, &e, words), 0);
	assert_int_equal(a.n_cgroups, JAIL_MAX_CGROUPS);
	words[n++] = "--cgroup";
	words[n++] = "pids.max=10";
	assert_refused(parse_v(f, &a, &e, words), &e, "--cgroup");
}

static void test_cgroup_version_parent(void **state)
{
	static const char *const bad_parent[] = { "/abs", "a/../b",  "a//b",
						  "a/",	  ".hidden", "a/./b",
						  "",	  "a b" };
	struct fixture *f = *state;
	struct jail_args a;
	struct jail_err e;
	size_t i;

	assert_int_equal(PARSE(f, &a, &e, REQ, "--cgroup-version", "2"), 0);
	assert_int_equal(a.cgroup_version, 2);
	assert_refused(PARSE(f, &a, &e, REQ, "--cgroup-version", "3"), &e,
		       "--cgroup-version");
	assert_refused(PARSE(f, &a, &e, REQ, "--cgroup-version", "v1"), &e,
		       "--cgroup-version");
	for (i = 0; i < sizeof(bad_parent) / sizeof(bad_parent[0]); i++)
		assert_refused(
			PARSE(f, &a, &e, REQ, "--parent-cgroup", bad_parent[i]),
			&e, "--parent-cgroup");
	assert_int_equal(
		PARSE(f, &a, &e, REQ, "--parent-cgroup", "a.slice/b_c"), 0);
}

static void test_resource_limit(void **state)
{
	static const char *const bad[] = {
		"nofile=3", "no-file", "no-file=", "no-file=abc", "no-file=-1",
		"fsize=1k", "=5",      "cpu=5",	   "fsize= 5"
	};
	struct fixture *f = *state;
	struct jail_args a;
	struct jail_err e;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_refused(
			PARSE(f, &a, &e, REQ, "--resource-limit", bad[i]), &e,
			"--resource-limit");
	/* Repeatable; the last one of a resource wins. */
	assert_int_equal(PARSE(f, &a, &e, REQ, "--resource-limit", "no-file=10",
			       "--resource-limit", "no-file=20"),
			 0);
	assert_int_equal(a.no_file, 20);
}

static void test_paths(void **state)
{
	struct fixture *f = *state;
	struct jail_args a;
	struct jail_err e;

	assert_refused(PARSE(f, &a, &e, REQ, "--chroot-base-dir", "rel/dir"),
		       &e, "--chroot-base-dir");
	assert_refused(
		PARSE(f, &a, &e, REQ, "--chroot-base-dir", "/srv/../etc"), &e,
		"--chroot-base-dir");
	assert_refused(PARSE(f, &a, &e, REQ, "--chroot-base-dir", "/srv/./x"),
		       &e, "--chroot-base-dir");
	assert_int_equal(
		PARSE(f, &a, &e, REQ, "--chroot-base-dir", "/srv/..x/"), 0);
	assert_refused(PARSE(f, &a, &e, REQ, "--netns", ""), &e, "--netns");
	/* --ro-bind: absolute directories only, not /, nothing of /dev. */
	assert_refused(PARSE(f, &a, &e, REQ, "--ro-bind", "lib"), &e,
		       "--ro-bind");
	assert_refused(PARSE(f, &a, &e, REQ, "--ro-bind", "/"), &e,
		       "--ro-bind");
	assert_refused(PARSE(f, &a, &e, REQ, "--ro-bind", "/dev/shm"), &e,
		       "--ro-bind");
	assert_refused(PARSE(f, &a, &e, REQ, "--ro-bind", "/tmp/"), &e,
		       "--ro-bind");
	assert_refused(PARSE(f, &a, &e, REQ, "--ro-bind", "/tmp/../etc"), &e,
		       "--ro-bind");
	assert_refused(PARSE(f, &a, &e, REQ, "--ro-bind", f->exec), &e,
		       "--ro-bind");
	assert_non_null(strstr(e.why, "not a directory"));
	assert_int_equal(PARSE(f, &a, &e, REQ, "--ro-bind", "/nonexistent-dir"),
			 -ENOENT);
	assert_non_null(strstr(e.step, "--ro-bind"));
}

static void test_exec_file(void **state)
{
	struct fixture *f = *state;
	char hidden[128];
	struct jail_args a;
	struct jail_err e;
	int fd;

	assert_int_equal(PARSE(f, &a, &e, "--id", "x", "--exec-file",
			       "/nonexistent/ember", "--uid", "1", "--gid",
			       "1"),
			 -ENOENT);
	assert_int_equal(e.errnum, ENOENT);
	assert_non_null(strstr(e.step, "--exec-file /nonexistent/ember"));
	assert_refused(PARSE(f, &a, &e, "--id", "x", "--exec-file", f->dir,
			     "--uid", "1", "--gid", "1"),
		       &e, "--exec-file");
	assert_refused(PARSE(f, &a, &e, "--id", "x", "--exec-file", "/tmp/",
			     "--uid", "1", "--gid", "1"),
		       &e, "--exec-file");
	snprintf(hidden, sizeof(hidden), "%s/.ember", f->dir);
	fd = open(hidden, O_WRONLY | O_CREAT, 0755);
	assert_true(fd >= 0);
	close(fd);
	assert_refused(PARSE(f, &a, &e, "--id", "x", "--exec-file", hidden,
			     "--uid", "1", "--gid", "1"),
		       &e, "--exec-file");
	unlink(hidden);
}

static void test_command_line_shape(void **state)
{
	struct fixture *f = *state;
	struct jail_args a;
	struct jail_err e;

	/* ember's arguments need "--" before them. */
	assert_refused(PARSE(f, &a, &e, REQ, "--api-sock"), &e, "--api-sock");
	assert_refused(PARSE(f, &a, &e, REQ, "/api.sock"), &e, "/api.sock");
	assert_non_null(strstr(e.why, "after --"));
	assert_int_equal(PARSE(f, &a, &e, REQ, "--"), 0);
	assert_int_equal(a.ember_argc, 0);
	/* Missing values, duplicates, values on flags, unknown options. */
	assert_refused(PARSE(f, &a, &e, REQ, "--netns"), &e, "--netns");
	assert_non_null(strstr(e.why, "needs a value"));
	assert_refused(PARSE(f, &a, &e, REQ, "--id", "y"), &e, "--id");
	assert_non_null(strstr(e.why, "twice"));
	assert_refused(PARSE(f, &a, &e, REQ, "--daemonize=yes"), &e,
		       "--daemonize");
	assert_refused(PARSE(f, &a, &e, REQ, "--node", "0"), &e, "--node");
	assert_refused(PARSE(f, &a, &e, REQ, "-d"), &e, "-d");
	/* The required options. */
	assert_refused(PARSE(f, &a, &e, "--id", "x", "--exec-file", "@EXEC",
			     "--uid", "1"),
		       &e, "--gid");
	assert_refused(PARSE(f, &a, &e, "--exec-file", "@EXEC", "--uid", "1",
			     "--gid", "1"),
		       &e, "--id");
	assert_int_equal(PARSE(f, &a, &e, "-h"), 0);
	assert_int_equal(a.mode, JAIL_HELP);
	assert_int_equal(PARSE(f, &a, &e, "--version"), 0);
	assert_int_equal(a.mode, JAIL_VERSION);
}

static void test_cleanup_mode(void **state)
{
	struct fixture *f = *state;
	struct jail_args a;
	struct jail_err e;

	assert_int_equal(PARSE(f, &a, &e, "--cleanup", "--id", "vm-1"), 0);
	assert_int_equal(a.mode, JAIL_CLEANUP);
	assert_string_equal(a.exec_name, "ember");
	/* The exec file is only a name here: it need not exist. */
	assert_int_equal(PARSE(f, &a, &e, "--cleanup", "--id", "vm-1",
			       "--exec-file", "/gone/ember-x",
			       "--chroot-base-dir", "/j", "--parent-cgroup",
			       "p", "--cgroup-version", "2"),
			 0);
	assert_string_equal(a.exec_name, "ember-x");
	assert_int_equal(a.cgroup_version, 2);
	assert_refused(PARSE(f, &a, &e, "--cleanup"), &e, "--id");
	assert_refused(PARSE(f, &a, &e, "--cleanup", "--id", "a/b"), &e,
		       "--id");
	assert_refused(PARSE(f, &a, &e, "--cleanup", "--id", "x", "--uid", "1"),
		       &e, "--uid");
	assert_refused(PARSE(f, &a, &e, "--cleanup", "--id", "x", "--cgroup",
			     "memory.max=1"),
		       &e, "--cgroup");
	assert_refused(PARSE(f, &a, &e, "--cleanup", "--id", "x", "--", "y"),
		       &e, "--");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_minimal_defaults),
		cmocka_unit_test(test_everything),
		cmocka_unit_test(test_id),
		cmocka_unit_test(test_uid_gid),
		cmocka_unit_test(test_root_as_kata),
		cmocka_unit_test(test_cgroup_syntax),
		cmocka_unit_test(test_cgroup_limit),
		cmocka_unit_test(test_cgroup_version_parent),
		cmocka_unit_test(test_resource_limit),
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_exec_file),
		cmocka_unit_test(test_command_line_shape),
		cmocka_unit_test(test_cleanup_mode),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
