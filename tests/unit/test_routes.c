// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for the control socket's routes (api/server/routes.c, body.c)
 * over a dry-run control: Firecracker's paths, status codes, error shape
 * and messages, schema checks, the configuration GET /vm/config reports.
 * No socket, no KVM.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../api/server/routes.h"
#include "../../vmm/control.h"
#include "../../vmm/event.h"
#include "../../vmm/log.h"

struct fixture {
	struct event_loop *el;
	struct control *c;
	char img[64];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	int fd;

	if (!f)
		return -1;
	f->el = event__create(); /* not started: control calls run inline */
	f->c = control__create(f->el, "unit");
	control__dry_run(f->c);
	snprintf(f->img, sizeof(f->img), "/tmp/ember-routes-XXXXXX");
	fd = mkstemp(f->img);
	if (!f->el || !f->c || fd < 0 || ftruncate(fd, 1 << 20))
		return -1;
	close(fd);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	control__destroy(f->c);
	event__destroy(f->el);
	unlink(f->img);
	free(f);
	return 0;
}

/* One request; returns the status, the body in @out (or ""). */
static int req(struct fixture *f, const char *method, const char *path,
	       const char *body, char *out, size_t outlen)
{
	struct routes_reply r;
	int status;

	routes__handle(f->c, method, path, body, body ? strlen(body) : 0, &r);
	snprintf(out, outlen, "%s", r.body ? r.body : "");
	status = r.status;
	free(r.body);
	return status;
}

#define EXPECT(f, st, sub, m, p, b)                                           \
	do {                                                                  \
		char out_[4096];                                              \
		assert_int_equal(req(f, m, p, b, out_, sizeof(out_)), st);    \
		if (!strstr(out_, sub))                                       \
			fail_msg("%s %s: '%s' has no '%s'", m, p, out_, sub); \
	} while (0)

static void test_gets(void **state)
{
	struct fixture *f = *state;

	EXPECT(f, 200, "\"id\":\"unit\",\"state\":\"Not started\"", "GET", "/",
	       NULL);
	EXPECT(f, 200, "\"firecracker_version\":\"1.", "GET", "/version", NULL);
	EXPECT(f, 200, "{\"vcpu_count\":1,\"mem_size_mib\":128,\"smt\":false",
	       "GET", "/machine-config", NULL);
	/* Only the first token picks the resource, as Firecracker. */
	EXPECT(f, 200, "\"mem_size_mib\":128", "GET", "/machine-config/x",
	       NULL);
	EXPECT(f, 200, "\"boot-source\":{\"kernel_image_path\":\"\"", "GET",
	       "/vm/config", NULL);
	EXPECT(f, 400,
	       "{\"fault_message\":\"GET request cannot have a body.\"}", "GET",
	       "/", "{}");
}

static void test_unknown(void **state)
{
	struct fixture *f = *state;

	EXPECT(f, 400, "Invalid request method and/or path: GET foo.", "GET",
	       "/foo/bar", NULL);
	EXPECT(f, 400, "Invalid request method and/or path: POST actions.",
	       "POST", "/actions", "{}");
	EXPECT(f, 400, "Invalid request method and/or path: GET vm.", "GET",
	       "/vm", NULL);
	/* Bytes that are no UTF-8 are quoted as '?', in valid JSON. */
	EXPECT(f, 400, "Invalid request method and/or path: GET a??b.", "GET",
	       "/a\xff\x01"
	       "b",
	       NULL);
	EXPECT(f, 400, "Empty PUT request.", "PUT", "/machine-config", NULL);
	EXPECT(f, 400, "Empty PATCH request.", "PATCH", "/vm", NULL);
	EXPECT(f, 400, "missing field `iface_id`", "PUT",
	       "/network-interfaces/eth0", "{}");
	EXPECT(f, 400, "use /snapshot/create or /snapshot/load", "PUT",
	       "/snapshot/take", "{}");
}

/* The snapshot bodies' checks, before anything reaches a VM. */
static void test_snapshot_bodies(void **state)
{
	struct fixture *f = *state;

	EXPECT(f, 400, "missing field `snapshot_path`", "PUT", "/snapshot/load",
	       "{}");
	EXPECT(f, 400, "give either mem_backend or the deprecated", "PUT",
	       "/snapshot/load",
	       "{\"snapshot_path\":\"s\",\"mem_file_path\":\"m\","
	       "\"mem_backend\":{\"backend_type\":\"File\","
	       "\"backend_path\":\"m\"}}");
	EXPECT(f, 400, "give either mem_backend or the deprecated", "PUT",
	       "/snapshot/load", "{\"snapshot_path\":\"s\"}");
	EXPECT(f, 400, "unknown variant `Disk`, expected `File` or `Uffd`",
	       "PUT", "/snapshot/load",
	       "{\"snapshot_path\":\"s\",\"mem_backend\":{\"backend_type\":"
	       "\"Disk\",\"backend_path\":\"m\"}}");
	EXPECT(f, 400, "missing field `backend_path`", "PUT", "/snapshot/load",
	       "{\"snapshot_path\":\"s\",\"mem_backend\":{\"backend_type\":"
	       "\"File\"}}");
	EXPECT(f, 400, "missing field `host_dev_name`", "PUT", "/snapshot/load",
	       "{\"snapshot_path\":\"s\",\"mem_file_path\":\"m\","
	       "\"network_overrides\":[{\"iface_id\":\"eth0\"}]}");
	EXPECT(f, 400, "expected a sequence for network_overrides", "PUT",
	       "/snapshot/load",
	       "{\"snapshot_path\":\"s\",\"mem_file_path\":\"m\","
	       "\"network_overrides\":{}}");
	EXPECT(f, 400, "expected a sequence for drive_overrides", "PUT",
	       "/snapshot/load",
	       "{\"snapshot_path\":\"s\",\"mem_file_path\":\"m\","
	       "\"drive_overrides\":{}}");
	EXPECT(f, 400, "missing field `path_on_host`", "PUT", "/snapshot/load",
	       "{\"snapshot_path\":\"s\",\"mem_file_path\":\"m\","
	       "\"drive_overrides\":[{\"drive_id\":\"rootfs\"}]}");
	EXPECT(f, 400, "must not be empty", "PUT", "/snapshot/load",
	       "{\"snapshot_path\":\"\",\"mem_file_path\":\"m\"}");
	EXPECT(f, 400, "unknown variant `Half`, expected `Full` or `Diff`",
	       "PUT", "/snapshot/create",
	       "{\"snapshot_type\":\"Half\",\"snapshot_path\":\"s\","
	       "\"mem_file_path\":\"m\"}");
	EXPECT(f, 400, "missing field `mem_file_path`", "PUT",
	       "/snapshot/create", "{\"snapshot_path\":\"s\"}");
	EXPECT(f, 400, "not supported before starting", "PUT",
	       "/snapshot/create",
	       "{\"snapshot_path\":\"s\",\"mem_file_path\":\"m\"}");
}

static void test_machine_config(void **state)
{
	struct fixture *f = *state;

	EXPECT(f, 204, "", "PUT", "/machine-config",
	       "{\"vcpu_count\":2,\"mem_size_mib\":64}");
	EXPECT(f, 200, "\"vcpu_count\":2,\"mem_size_mib\":64", "GET",
	       "/machine-config", NULL);
	EXPECT(f, 204, "", "PATCH", "/machine-config", "{\"vcpu_count\":1}");
	EXPECT(f, 200, "\"vcpu_count\":1,\"mem_size_mib\":64", "GET",
	       "/machine-config", NULL);
	EXPECT(f, 400, "missing field `vcpu_count`", "PUT", "/machine-config",
	       "{\"mem_size_mib\":64}");
	EXPECT(f, 400,
	       "unknown field `x`, expected one of `vcpu_count`, "
	       "`mem_size_mib`",
	       "PUT", "/machine-config",
	       "{\"vcpu_count\":1,\"mem_size_mib\":64,\"x\":1}");
	EXPECT(f, 400, "invalid type: negative integer", "PUT",
	       "/machine-config", "{\"vcpu_count\":-1,\"mem_size_mib\":64}");
	EXPECT(f, 400, "invalid type: floating point", "PUT", "/machine-config",
	       "{\"vcpu_count\":1.5,\"mem_size_mib\":64}");
	EXPECT(f, 400, "expected u8", "PUT", "/machine-config",
	       "{\"vcpu_count\":256,\"mem_size_mib\":64}");
	EXPECT(f, 400, "Machine config error: The number of vCPUs", "PUT",
	       "/machine-config", "{\"vcpu_count\":33,\"mem_size_mib\":64}");
	EXPECT(f, 400, "Machine config error: guest RAM must be", "PUT",
	       "/machine-config", "{\"vcpu_count\":1,\"mem_size_mib\":0}");
	EXPECT(f, 400, "smt", "PUT", "/machine-config",
	       "{\"vcpu_count\":2,\"mem_size_mib\":64,\"smt\":true}");
	EXPECT(f, 400, "duplicate", "PUT", "/machine-config",
	       "{\"vcpu_count\":1,\"vcpu_count\":2,\"mem_size_mib\":64}");
	EXPECT(f, 400, "deserializing the json body of a request: ", "PUT",
	       "/machine-config", "{\"vcpu_count\":");
	EXPECT(f, 400, "Empty PATCH request.", "PATCH", "/machine-config",
	       "{}");
	/* A refused call changed nothing. */
	EXPECT(f, 200, "\"vcpu_count\":1,\"mem_size_mib\":64", "GET",
	       "/machine-config", NULL);
}

static void test_drives_and_devices(void **state)
{
	struct fixture *f = *state;
	char body[512];

	snprintf(body, sizeof(body),
		 "{\"drive_id\":\"rootfs\",\"path_on_host\":\"%s\","
		 "\"is_root_device\":true,\"is_read_only\":true}",
		 f->img);
	EXPECT(f, 204, "", "PUT", "/drives/rootfs", body);
	EXPECT(f, 400, "does not match the id from the body", "PUT",
	       "/drives/other", body);
	EXPECT(f, 400, "alphanumeric characters and underscores", "PUT",
	       "/drives/a-b", body);
	EXPECT(f, 400, "The ID cannot be empty.", "PUT", "/drives/", body);
	snprintf(body, sizeof(body),
		 "{\"drive_id\":\"two\",\"path_on_host\":\"%s\","
		 "\"is_root_device\":true}",
		 f->img);
	EXPECT(f, 400, "A root block device already exists!", "PUT",
	       "/drives/two", body);
	snprintf(body, sizeof(body),
		 "{\"drive_id\":\"two\",\"path_on_host\":\"%s\","
		 "\"is_root_device\":false,\"io_engine\":\"Async\"}",
		 f->img);
	EXPECT(f, 400, "Async", "PUT", "/drives/two", body);
	EXPECT(f, 400, "unknown variant `Fast`", "PUT", "/drives/two",
	       "{\"drive_id\":\"two\",\"path_on_host\":\"/x\","
	       "\"is_root_device\":false,\"cache_type\":\"Fast\"}");
	EXPECT(f, 400, "not supported before starting", "PATCH",
	       "/drives/rootfs", "{\"drive_id\":\"rootfs\"}");
	EXPECT(f, 204, "", "PUT", "/vsock",
	       "{\"guest_cid\":3,\"uds_path\":\"/tmp/v.sock\"}");
	EXPECT(f, 400, "guest_cid must be 3", "PUT", "/vsock",
	       "{\"guest_cid\":2,\"uds_path\":\"/tmp/v.sock\"}");
	EXPECT(f, 204, "", "PUT", "/entropy", "{}");
	EXPECT(f, 204, "", "PUT", "/metrics",
	       "{\"metrics_path\":\"/x\",\"extra\":1}");
	EXPECT(f, 400, "Reinitialization", "PUT", "/metrics",
	       "{\"metrics_path\":\"/x\"}");
	EXPECT(f, 204, "", "PUT", "/logger", "{\"level\":\"debug\"}");
	EXPECT(f, 400, "Invalid LevelFilter", "PUT", "/logger",
	       "{\"level\":\"loud\"}");
	EXPECT(f, 200,
	       "\"drives\":[{\"drive_id\":\"rootfs\",\"partuuid\":null,"
	       "\"is_root_device\":true,\"cache_type\":\"Unsafe\","
	       "\"is_read_only\":true",
	       "GET", "/vm/config", NULL);
	EXPECT(f, 200,
	       "\"vsock\":{\"guest_cid\":3,\"uds_path\":\"/tmp/v.sock\"}",
	       "GET", "/vm/config", NULL);
	EXPECT(f, 200, "\"entropy\":{\"rate_limiter\":null}", "GET",
	       "/vm/config", NULL);
}

/* A drive's rate limiter: the RateLimiter object, refusals, GET. */
static void test_drive_rate_limiter(void **state)
{
	struct fixture *f = *state;
	char body[512];
	/* Bodies of PUT /drives/d with a rate_limiter of @rl. */
#define DRIVE(rl)                                                  \
	(snprintf(body, sizeof(body),                              \
		  "{\"drive_id\":\"d\",\"path_on_host\":\"%s\","   \
		  "\"is_root_device\":false,\"rate_limiter\":%s}", \
		  f->img, rl),                                     \
	 body)

	EXPECT(f, 204, "", "PUT", "/drives/d",
	       DRIVE("{\"bandwidth\":{\"size\":1048576,\"refill_time\":1000},"
		     "\"ops\":{\"size\":100,\"one_time_burst\":10,"
		     "\"refill_time\":1000}}"));
	EXPECT(f, 200,
	       "\"rate_limiter\":{\"bandwidth\":{\"size\":1048576,"
	       "\"one_time_burst\":0,\"refill_time\":1000},\"ops\":{\"size\":"
	       "100,\"one_time_burst\":10,\"refill_time\":1000}},"
	       "\"io_engine\":\"Sync\"",
	       "GET", "/vm/config", NULL);
	EXPECT(f, 400, "unknown field `burst`, expected one of `size`", "PUT",
	       "/drives/d",
	       DRIVE("{\"ops\":{\"size\":1,\"refill_time\":1,\"burst\":1}}"));
	EXPECT(f, 400, "unknown field `iops`, expected one of `bandwidth`",
	       "PUT", "/drives/d", DRIVE("{\"iops\":{}}"));
	EXPECT(f, 400, "invalid type: negative integer", "PUT", "/drives/d",
	       DRIVE("{\"ops\":{\"size\":1,\"refill_time\":-5}}"));
	EXPECT(f, 400,
	       "invalid type: string, expected an unsigned integer for "
	       "`size` (in rate_limiter)",
	       "PUT", "/drives/d",
	       DRIVE("{\"bandwidth\":{\"size\":\"1\",\"refill_time\":1}}"));
	EXPECT(f, 400, "invalid type: floating point", "PUT", "/drives/d",
	       DRIVE("{\"bandwidth\":{\"size\":1.5,\"refill_time\":1}}"));
	EXPECT(f, 400, "missing field `refill_time` (in rate_limiter)", "PUT",
	       "/drives/d", DRIVE("{\"bandwidth\":{\"size\":1}}"));
	EXPECT(f, 400, "invalid type: sequence, expected a map", "PUT",
	       "/drives/d", DRIVE("[]"));
	EXPECT(f, 400, "rate_limiter: ops.refill_time is out of range", "PUT",
	       "/drives/d",
	       DRIVE("{\"ops\":{\"size\":1,\"refill_time\":"
		     "99999999999999}}"));
	EXPECT(f, 400, "rate_limiter: bandwidth.one_time_burst is out of range",
	       "PUT", "/drives/d",
	       DRIVE("{\"bandwidth\":{\"size\":1,\"refill_time\":1,"
		     "\"one_time_burst\":1125899906842625}}"));
	/* The refusals changed nothing. */
	EXPECT(f, 200, "\"ops\":{\"size\":100,\"one_time_burst\":10,", "GET",
	       "/vm/config", NULL);
	/* A bucket of size 0 is off (Firecracker's); both off: null. */
	EXPECT(f, 204, "", "PUT", "/drives/d",
	       DRIVE("{\"bandwidth\":{\"size\":0,\"refill_time\":100},"
		     "\"ops\":{\"size\":5,\"refill_time\":0}}"));
	EXPECT(f, 200, "\"rate_limiter\":null,\"io_engine\"", "GET",
	       "/vm/config", NULL);
	EXPECT(f, 204, "", "PUT", "/drives/d",
	       DRIVE("{\"ops\":{\"size\":5,\"refill_time\":10}}"));
	EXPECT(f, 200, "\"rate_limiter\":{\"bandwidth\":null,\"ops\":{", "GET",
	       "/vm/config", NULL);
	EXPECT(f, 204, "", "PUT", "/drives/d", DRIVE("null"));
	EXPECT(f, 200, "\"rate_limiter\":null,", "GET", "/vm/config", NULL);
	/* PATCH is for a running VM, as Firecracker has it. */
	EXPECT(f, 400, "not supported before starting", "PATCH", "/drives/d",
	       "{\"drive_id\":\"d\",\"rate_limiter\":{\"ops\":{\"size\":1,"
	       "\"refill_time\":1}}}");
	EXPECT(f, 400, "unknown field `is_read_only`", "PATCH", "/drives/d",
	       "{\"drive_id\":\"d\",\"is_read_only\":true}");
#undef DRIVE
}

/* PUT/PATCH /network-interfaces and their rate limiters. */
static void test_network_interfaces(void **state)
{
	struct fixture *f = *state;

	EXPECT(f, 204, "", "PUT", "/network-interfaces/eth0",
	       "{\"iface_id\":\"eth0\",\"host_dev_name\":\"tap0\","
	       "\"guest_mac\":\"06:00:ac:10:00:02\","
	       "\"rx_rate_limiter\":{\"bandwidth\":{\"size\":1000,"
	       "\"refill_time\":100}},\"tx_rate_limiter\":null}");
	EXPECT(f, 200,
	       "\"network-interfaces\":[{\"iface_id\":\"eth0\","
	       "\"host_dev_name\":\"tap0\",\"guest_mac\":\"06:00:ac:10:00:02\","
	       "\"rx_rate_limiter\":{\"bandwidth\":{\"size\":1000,"
	       "\"one_time_burst\":0,\"refill_time\":100},\"ops\":null},"
	       "\"tx_rate_limiter\":null}]",
	       "GET", "/vm/config", NULL);
	EXPECT(f, 400, "does not match the id from the body", "PUT",
	       "/network-interfaces/eth1",
	       "{\"iface_id\":\"eth0\",\"host_dev_name\":\"tap0\"}");
	EXPECT(f, 400, "alphanumeric characters and underscores", "PUT",
	       "/network-interfaces/a.b",
	       "{\"iface_id\":\"a.b\",\"host_dev_name\":\"tap0\"}");
	EXPECT(f, 400, "the tap tap0 is already used by eth0", "PUT",
	       "/network-interfaces/eth1",
	       "{\"iface_id\":\"eth1\",\"host_dev_name\":\"tap0\"}");
	EXPECT(f, 400, "the guest MAC is already used by eth0", "PUT",
	       "/network-interfaces/eth1",
	       "{\"iface_id\":\"eth1\",\"host_dev_name\":\"tap1\","
	       "\"guest_mac\":\"06:00:ac:10:00:02\"}");
	EXPECT(f, 400, "not a unicast MAC", "PUT", "/network-interfaces/eth1",
	       "{\"iface_id\":\"eth1\",\"host_dev_name\":\"tap1\","
	       "\"guest_mac\":\"07:00:ac:10:00:02\"}");
	EXPECT(f, 400, "not a unicast MAC", "PUT", "/network-interfaces/eth1",
	       "{\"iface_id\":\"eth1\",\"host_dev_name\":\"tap1\","
	       "\"guest_mac\":\"06:00:ac:10:00\"}");
	EXPECT(f, 400, "host_dev_name must be a tap name of 1 to 15", "PUT",
	       "/network-interfaces/eth1",
	       "{\"iface_id\":\"eth1\",\"host_dev_name\":\"a/b\"}");
	EXPECT(f, 400, "host_dev_name must be a tap name of 1 to 15", "PUT",
	       "/network-interfaces/eth1",
	       "{\"iface_id\":\"eth1\",\"host_dev_name\":"
	       "\"sixteen-bytes-xx\"}");
	EXPECT(f, 400, "missing field `refill_time` (in tx_rate_limiter)",
	       "PUT", "/network-interfaces/eth1",
	       "{\"iface_id\":\"eth1\",\"host_dev_name\":\"tap1\","
	       "\"tx_rate_limiter\":{\"ops\":{\"size\":5}}}");
	EXPECT(f, 400, "unknown field `burst`", "PUT",
	       "/network-interfaces/eth1",
	       "{\"iface_id\":\"eth1\",\"host_dev_name\":\"tap1\","
	       "\"tx_rate_limiter\":{\"burst\":{}}}");
	EXPECT(f, 400, "invalid type: negative integer", "PUT",
	       "/network-interfaces/eth1",
	       "{\"iface_id\":\"eth1\",\"host_dev_name\":\"tap1\","
	       "\"rx_rate_limiter\":{\"bandwidth\":{\"size\":-1,"
	       "\"refill_time\":1}}}");
	EXPECT(f, 400, "bandwidth.size is out of range", "PUT",
	       "/network-interfaces/eth1",
	       "{\"iface_id\":\"eth1\",\"host_dev_name\":\"tap1\","
	       "\"rx_rate_limiter\":{\"bandwidth\":{\"size\":"
	       "9223372036854775807,\"refill_time\":1}}}");
	EXPECT(f, 400, "not supported before starting", "PATCH",
	       "/network-interfaces/eth0",
	       "{\"iface_id\":\"eth0\",\"rx_rate_limiter\":null}");
	EXPECT(f, 400, "unknown field `host_dev_name`", "PATCH",
	       "/network-interfaces/eth0",
	       "{\"iface_id\":\"eth0\",\"host_dev_name\":\"tap9\"}");
	/* A refused call changed nothing; a PUT with its id replaces it. */
	EXPECT(f, 204, "", "PUT", "/network-interfaces/eth0",
	       "{\"iface_id\":\"eth0\",\"host_dev_name\":\"tap7\"}");
	EXPECT(f, 200,
	       "\"network-interfaces\":[{\"iface_id\":\"eth0\","
	       "\"host_dev_name\":\"tap7\",\"guest_mac\":null",
	       "GET", "/vm/config", NULL);
}

static void test_actions(void **state)
{
	struct fixture *f = *state;

	EXPECT(f, 400, "not supported before starting", "PATCH", "/vm",
	       "{\"state\":\"Paused\"}");
	EXPECT(f, 400, "unknown variant `Frozen`, expected `Paused` or",
	       "PATCH", "/vm", "{\"state\":\"Frozen\"}");
	EXPECT(f, 400, "not supported before starting", "PUT", "/actions",
	       "{\"action_type\":\"SendCtrlAltDel\"}");
	EXPECT(f, 400, "Cannot start microvm without kernel configuration",
	       "PUT", "/actions", "{\"action_type\":\"InstanceStart\"}");
	EXPECT(f, 400, "missing field `action_type`", "PUT", "/actions", "{}");
	EXPECT(f, 400, "Boot source error: kernel /nonexistent", "PUT",
	       "/boot-source", "{\"kernel_image_path\":\"/nonexistent\"}");
	EXPECT(f, 400, "NUL", "PUT", "/boot-source",
	       "{\"kernel_image_path\":\"/etc/hostname\\u0000x\"}");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_gets),
		T(test_unknown),
		T(test_machine_config),
		T(test_drives_and_devices),
		T(test_drive_rate_limiter),
		T(test_actions),
		T(test_snapshot_bodies),
		T(test_network_interfaces),
#undef T
	};

	log__set_level(LOG_NOTE);
	return cmocka_run_group_tests_name("routes", tests, NULL, NULL);
}
