// SPDX-License-Identifier: Apache-2.0
/*
 * The containerd shim's pure parts: the OCI runtime spec as it honours it
 * (api/containerd/oci_spec.h) and containerd's mount options
 * (rootfs__mount_flags).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "../../api/containerd/oci_spec.h"
#include "../../api/containerd/rootfs.h"

static int parse(const char *json, struct oci_spec *s, char *err)
{
	return oci_spec__parse(json, strlen(json), s, err, 256);
}

/* What `ctr run` writes, trimmed to what matters. */
static const char ctr_spec[] =
	"{\"ociVersion\":\"1.0.2-dev\",\"process\":{\"user\":{\"uid\":1000,"
	"\"gid\":100,\"additionalGids\":[10,20]},\"args\":[\"sh\",\"-c\","
	"\"echo hi\"],\"env\":[\"PATH=/bin\",\"X=1\"],\"cwd\":\"/srv\","
	"\"terminal\":true,\"consoleSize\":{\"height\":40,\"width\":120},"
	"\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":1024,\"soft\":512}]},"
	"\"root\":{\"path\":\"rootfs\",\"readonly\":true},\"hostname\":\"h1\","
	"\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":"
	"\"proc\",\"options\":[\"nosuid\",\"noexec\",\"nodev\"]},"
	"{\"destination\":\"/etc/hosts\",\"type\":\"bind\",\"source\":"
	"\"/etc/hosts\",\"options\":[\"rbind\",\"ro\"]}],"
	"\"linux\":{\"resources\":{\"memory\":{\"limit\":536870912},\"cpu\":"
	"{\"quota\":150000,\"period\":100000}},\"namespaces\":[{\"type\":"
	"\"pid\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},{\"type\":\"mount\"},"
	"{\"type\":\"network\"}]},\"annotations\":{\"io.kubernetes.cri."
	"container-type\":\"container\",\"io.kubernetes.cri.sandbox-id\":"
	"\"abc\"}}";

static void test_ctr_spec(void **state)
{
	struct oci_spec s;
	unsigned int mem, vcpus;
	char err[256] = "";

	(void)state;
	assert_int_equal(parse(ctr_spec, &s, err), 0);
	assert_string_equal(s.process.args[0], "sh");
	assert_string_equal(s.process.args[2], "echo hi");
	assert_null(s.process.args[3]);
	assert_string_equal(s.process.env[1], "X=1");
	assert_string_equal(s.process.cwd, "/srv");
	assert_int_equal(s.process.uid, 1000);
	assert_int_equal(s.process.gid, 100);
	assert_int_equal(s.process.nr_gids, 2);
	assert_true(s.process.terminal);
	assert_int_equal(s.process.rows, 40);
	assert_int_equal(s.process.cols, 120);
	assert_int_equal(s.process.nr_rlimits, 1);
	assert_int_equal(s.process.rlimits[0].resource, RLIMIT_NOFILE);
	assert_int_equal(s.process.rlimits[0].soft, 512);
	assert_true(s.root_readonly);
	assert_string_equal(s.root_path, "rootfs");
	assert_string_equal(s.hostname, "h1");
	assert_int_equal(s.nr_mounts, 2);
	assert_false(s.mounts[0].bind);
	assert_true(s.mounts[1].bind);
	assert_true(s.mounts[1].readonly);
	assert_string_equal(s.container_type, "container");
	assert_string_equal(s.sandbox_id, "abc");
	oci_spec__vm_size(&s, 128, &mem, &vcpus);
	assert_int_equal(mem, 512);
	assert_int_equal(vcpus, 2);
	oci_spec__free(&s);
}

static void expect_refusal(const char *json, int rc, const char *words)
{
	struct oci_spec s;
	char err[256] = "";

	assert_int_equal(parse(json, &s, err), rc);
	if (!strstr(err, words))
		fail_msg("error \"%s\" lacks \"%s\"", err, words);
	oci_spec__free(&s);
}

#define PROC "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\"}"

static void test_refusals(void **state)
{
	(void)state;
	/* ctr run --net-host: no network namespace. */
	expect_refusal("{" PROC ",\"linux\":{\"namespaces\":[{\"type\":"
		       "\"pid\"},{\"type\":\"ipc\"}]}}",
		       -ENOTSUP, "network namespace");
	expect_refusal("{" PROC ",\"linux\":{\"devices\":[{\"path\":"
		       "\"/dev/sda\"}]}}",
		       -ENOTSUP, "host devices");
	expect_refusal("{" PROC ",\"hooks\":{\"prestart\":[{\"path\":"
		       "\"/bin/x\"}]}}",
		       -ENOTSUP, "hooks.prestart");
	expect_refusal("{\"process\":{\"args\":[],\"cwd\":\"/\"}}", -EINVAL,
		       "nothing to run");
	expect_refusal("{\"process\":{\"args\":[\"x\"],\"cwd\":\"rel\"}}",
		       -EINVAL, "cwd");
	expect_refusal("{\"process\":{\"args\":[\"x\"],\"cwd\":\"/\","
		       "\"env\":[\"NOEQUALS\"]}}",
		       -EINVAL, "NAME=value");
	expect_refusal("{\"process\":{\"args\":[\"x\"],\"cwd\":\"/\","
		       "\"rlimits\":[{\"type\":\"RLIMIT_BOGUS\"}]}}",
		       -EINVAL, "RLIMIT_");
	expect_refusal("{\"process\":{\"args\":[\"x\"],\"cwd\":\"/\","
		       "\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"soft\":9,"
		       "\"hard\":1}]}}",
		       -EINVAL, "soft over hard");
	expect_refusal("{\"process\":{\"args\":[\"x\"],\"cwd\":\"/\"},"
		       "\"mounts\":[{\"destination\":\"rel\"}]}",
		       -EINVAL, "destination");
	expect_refusal("{\"process\":{\"args\":[\"x\\u0000y\"],\"cwd\":\"/\"}}",
		       -EINVAL, "not allowed");
	expect_refusal("[1]", -EINVAL, "not an object");
	expect_refusal("{", -EINVAL, "config.json");
	expect_refusal("{}", -EINVAL, "process");
}

/* A mount's destination cannot climb out of the container's root. */
static void test_destination_clean(void **state)
{
	static const char *const cases[][2] = {
		{ "/../../../etc/shadow", "/etc/shadow" },
		{ "/a/./b//c/", "/a/b/c" },
		{ "/a/../../b", "/b" },
		{ "/..", "/" },
		{ "//", "/" },
		{ "/a/b/..", "/a" },
		{ "/.../..x/.", "/.../..x" },
		{ "/x", "/x" },
	};
	char json[256], err[256];
	struct oci_spec s;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(json, sizeof(json),
			 "{" PROC ",\"mounts\":[{\"destination\":\"%s\","
			 "\"type\":\"tmpfs\"}]}",
			 cases[i][0]);
		assert_int_equal(parse(json, &s, err), 0);
		assert_string_equal(s.mounts[0].destination, cases[i][1]);
		oci_spec__free(&s);
	}
}

static void test_exec_process(void **state)
{
	static const char p[] = "{\"args\":[\"ls\",\"-l\"],\"cwd\":\"/tmp\","
				"\"env\":[\"A=b\"],\"user\":{\"uid\":0,"
				"\"gid\":0}}";
	struct oci_process pr;
	char err[256];

	(void)state;
	assert_int_equal(
		oci_process__parse(p, strlen(p), &pr, err, sizeof(err)), 0);
	assert_string_equal(pr.args[1], "-l");
	assert_string_equal(pr.cwd, "/tmp");
	oci_process__free(&pr);
	assert_int_equal(oci_process__parse("nope", 4, &pr, err, sizeof(err)),
			 -EINVAL);
	oci_process__free(&pr);
}

static void test_no_limits(void **state)
{
	struct oci_spec s;
	unsigned int mem = 1, vcpus = 1;
	char err[256];

	(void)state;
	assert_int_equal(parse("{" PROC ",\"linux\":{\"resources\":{"
			       "\"memory\":{\"limit\":-1}}}}",
			       &s, err),
			 0);
	oci_spec__vm_size(&s, 128, &mem, &vcpus);
	assert_int_equal(mem, 0);
	assert_int_equal(vcpus, 0);
	oci_spec__free(&s);
	/* A tiny limit gets the least a guest needs. */
	assert_int_equal(parse("{" PROC ",\"linux\":{\"resources\":{"
			       "\"memory\":{\"limit\":1048576}}}}",
			       &s, err),
			 0);
	oci_spec__vm_size(&s, 128, &mem, &vcpus);
	assert_int_equal(mem, 128);
	oci_spec__free(&s);
}

static void test_mount_flags(void **state)
{
	const char *o1[] = { "ro",	    "nosuid", "lowerdir=/a:/b",
			     "upperdir=/u", "rbind",  NULL };
	const char *o2[] = { "rw", "ro", "rw", NULL };
	const char *o3[] = { "a-long-option-for-a-small-buffer", NULL };
	unsigned long flags;
	char data[64];

	(void)state;
	assert_int_equal(rootfs__mount_flags(o1, &flags, data, sizeof(data)),
			 0);
	assert_int_equal(flags, MS_RDONLY | MS_NOSUID | MS_BIND | MS_REC);
	assert_string_equal(data, "lowerdir=/a:/b,upperdir=/u");
	assert_int_equal(rootfs__mount_flags(o2, &flags, data, sizeof(data)),
			 0);
	assert_int_equal(flags, 0);
	assert_string_equal(data, "");
	assert_int_equal(rootfs__mount_flags(o3, &flags, data, 8), -E2BIG);
	assert_int_equal(rootfs__mount_flags(NULL, &flags, data, sizeof(data)),
			 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ctr_spec),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_destination_clean),
		cmocka_unit_test(test_exec_process),
		cmocka_unit_test(test_no_limits),
		cmocka_unit_test(test_mount_flags),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
