// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for the snapshot state of devices and of the configuration:
 * the virtio-mmio transport (virtio_mmio__get_state/__set_state), the
 * UART, the i8042 and CMOS, and the "config" section
 * (vmm/persist/config_state.c).  A restore must take back what was saved
 * and refuse what a guest could not have programmed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../devices/cmos.h"
#include "../../devices/i8042.h"
#include "../../devices/serial.h"
#include "../../devices/virtio_rng.h"
#include "../../vmm/config.h"
#include "../../vmm/persist/parts.h"
#include "virtio_driver.h"

#define RAM_BYTES (1 << 20)
#define QSZ	  16
#define DESC_GPA  0x1000
#define AVAIL_GPA 0x2000
#define USED_GPA  0x3000

struct fixture {
	struct test_ram r; /* first: see test_ram__new_in() */
	struct virtio_rng *rng;
	struct virtio_mmio *t;
	struct vdrv_queue q;
	int irq_level;
	unsigned int irq_calls;
};

static void fake_irq(void *opaque, unsigned int gsi, int level)
{
	struct fixture *f = opaque;

	(void)gsi;
	f->irq_level = level;
	f->irq_calls++;
}

static struct fixture *fixture_new(void)
{
	struct fixture *f = test_ram__new_in(sizeof(*f), RAM_BYTES, 0);

	assert_non_null(f);
	f->rng = virtio_rng__create(&f->r.m, (struct irq_line){
						     .set = fake_irq,
						     .opaque = f,
						     .gsi = 5,
					     });
	assert_non_null(f->rng);
	f->t = virtio_rng__transport(f->rng);
	return f;
}

static void fixture_free(struct fixture *f)
{
	virtio_rng__destroy(f->rng);
	test_ram__teardown((void **)&f);
}

/* A driver brings the device up: the state then has a live queue. */
static void driver_up(struct fixture *f)
{
	vdrv_queue_init(f->r.ram, &f->q, QSZ, DESC_GPA, AVAIL_GPA, USED_GPA);
	assert_int_equal(vdrv_negotiate(f->t, 1ULL << VIRTIO_F_VERSION_1),
			 VDRV_STATUS_NEGOTIATED);
	vdrv_queue_start(f->t, 0, &f->q);
	vdrv_driver_ok(f->t);
}

static void test_transport_round_trip(void **state)
{
	struct fixture *a = fixture_new(), *b = fixture_new();
	struct virtio_mmio_state s, s2;

	(void)state;
	driver_up(a);
	a->t->vq[0].last_avail = 7;
	a->t->vq[0].used_idx = 7;
	a->t->interrupt_status = VIRTIO_MMIO_INT_VRING;
	virtio_mmio__get_state(a->t, &s);
	assert_int_equal(s.nr_queues, 1);
	assert_true(s.vq[0].ready);
	assert_int_equal(virtio_mmio__set_state(b->t, &s), 0);
	virtio_mmio__get_state(b->t, &s2);
	assert_int_equal(s2.status, s.status);
	assert_int_equal(s2.driver_features, s.driver_features);
	assert_int_equal(s2.vq[0].desc_gpa, DESC_GPA);
	assert_int_equal(s2.vq[0].last_avail, 7);
	assert_int_equal(s2.vq[0].used_idx, 7);
	/* The interrupt line follows the restored status. */
	assert_int_equal(b->irq_level, 1);
	assert_int_equal(vdrv_rd(b->t, INT_STATUS), VIRTIO_MMIO_INT_VRING);
	fixture_free(a);
	fixture_free(b);
}

/* Each of these a guest could not have programmed: refused, unchanged. */
static void test_transport_refusals(void **state)
{
	struct fixture *a = fixture_new(), *b = fixture_new();
	struct virtio_mmio_state good, s, now;
	unsigned int i;

	(void)state;
	driver_up(a);
	virtio_mmio__get_state(a->t, &good);
	for (i = 0; i < 7; i++) {
		s = good;
		switch (i) {
		case 0: /* a queue count the device does not have */
			s.nr_queues = 2;
			break;
		case 1: /* a feature the device never offered */
			s.driver_features |= 1ULL << 50;
			break;
		case 2: /* an unknown status bit */
			s.status |= 0x10;
			break;
		case 3: /* rings outside guest RAM */
			s.vq[0].used_gpa = RAM_BYTES - 8;
			break;
		case 4: /* a size that is no power of two */
			s.vq[0].size = 12;
			break;
		case 5: /* misaligned descriptor table */
			s.vq[0].desc_gpa = DESC_GPA + 8;
			break;
		case 6: /* an interrupt status bit that does not exist */
			s.interrupt_status = 4;
			break;
		}
		assert_int_equal(virtio_mmio__set_state(b->t, &s), -EINVAL);
		virtio_mmio__get_state(b->t, &now);
		assert_int_equal(now.status, 0);
		assert_false(now.vq[0].ready);
	}
	fixture_free(a);
	fixture_free(b);
}

static void serial_tx(void *opaque, uint8_t byte)
{
	(void)opaque;
	(void)byte;
}

static void test_serial_state(void **state)
{
	struct serial_host host = { .tx = serial_tx };
	struct irq_line irq = { 0 };
	struct device *a = serial__create(&host, irq);
	struct device *b = serial__create(&host, irq);
	struct serial_state s = { 0 }, s2;
	uint8_t v = 0;

	(void)state;
	s.ier = 1;
	s.lcr = 3;
	s.dll = 1;
	s.rx_count = 3;
	memcpy(s.rx, "abc", 3);
	assert_int_equal(serial__set_state(a, &s), 0);
	serial__get_state(a, &s2);
	assert_int_equal(serial__set_state(b, &s2), 0);
	/* The guest reads the FIFO of the restored UART in order. */
	pthread_mutex_lock(&b->lock);
	b->ops->read(b, 0, &v, 1);
	pthread_mutex_unlock(&b->lock);
	assert_int_equal(v, 'a');
	s.rx_count = SERIAL_RX_FIFO + 1;
	assert_int_equal(serial__set_state(b, &s), -EINVAL);
	serial__destroy(a);
	serial__destroy(b);
}

static void test_i8042_cmos_state(void **state)
{
	struct device_events ev = { 0 };
	struct irq_line irq = { 0 };
	struct device *k = i8042__create(ev, irq), *c = cmos__create();
	struct i8042_state s = { .len = 2, .out = { 0x14, 0xf0 } }, s2;

	(void)state;
	assert_int_equal(i8042__set_state(k, &s), 0);
	i8042__get_state(k, &s2);
	assert_int_equal(s2.len, 2);
	assert_int_equal(s2.out[1], 0xf0);
	s.len = I8042_QUEUE_BYTES + 1;
	assert_int_equal(i8042__set_state(k, &s), -EINVAL);
	cmos__set_index(c, 0xff);
	assert_int_equal(cmos__get_index(c), 0x7f);
	i8042__destroy(k);
	cmos__destroy(c);
}

/* Build a state file holding one config section from @cfg. */
static struct snap_buf config_file(const struct vm_config *cfg)
{
	struct snap_buf b;

	memset(&b, 0, sizeof(b));
	snap_buf__init(&b);
	snap_buf__section(&b, "config", CONFIG_STATE_VERSION);
	config_state__save(cfg, &b);
	assert_int_equal(snap_buf__finish(&b), 0);
	return b;
}

static int config_load(const struct snap_buf *b, struct vm_config *out)
{
	struct snap_state s;
	struct snap_cur c;
	char why[128];

	memset(out, 0, sizeof(*out));
	assert_int_equal(
		snap_state__parse(&s, b->data, b->len, why, sizeof(why)), 0);
	assert_int_equal(snap_state__find(&s, "config", &c), 0);
	return config_state__restore(out, &c);
}

static void test_config_round_trip(void **state)
{
	struct vm_config cfg = {
		.kernel_path = "/k/bzImage",
		.append = "quiet",
		.mem_mib = 256,
		.vcpus = 2,
		.nr_drives = 2,
		.drives = { { .path = "/d/root.ovl",
			      .id = "rootfs",
			      .root = true },
			    { .path = "/d/data.img",
			      .read_only = true,
			      .rate_limiter = { .bandwidth = { 1 << 20, 7,
							       1000 },
						.ops = { 50, 0, 100 } } } },
		.vsock = { .guest_cid = 3, .uds_path = "/s/v.sock" },
		.nr_nets = 2,
		.nets = { { .iface_id = "eth0",
			    .host_dev_name = "tap0",
			    .has_mac = true,
			    .guest_mac = { 6, 0, 0xac, 0x10, 0, 2 },
			    .tx_rate_limiter = { .ops = { 100, 5, 1000 } } },
			  { .iface_id = "eth1", .host_dev_name = "tap1" } },
	};
	struct snap_buf b = config_file(&cfg);
	struct vm_config out;

	(void)state;
	assert_int_equal(config_load(&b, &out), 0);
	assert_string_equal(out.kernel_path, "/k/bzImage");
	assert_null(out.initrd_path);
	assert_int_equal(out.mem_mib, 256);
	assert_int_equal(out.vcpus, 2);
	assert_int_equal(out.nr_drives, 2);
	assert_string_equal(out.drives[0].id, "rootfs");
	assert_true(out.drives[0].root);
	assert_true(out.drives[1].read_only);
	assert_null(out.drives[1].id);
	assert_memory_equal(&out.drives[1].rate_limiter,
			    &cfg.drives[1].rate_limiter,
			    sizeof(cfg.drives[1].rate_limiter));
	assert_int_equal(out.drives[0].rate_limiter.ops.size, 0);
	assert_string_equal(out.vsock.uds_path, "/s/v.sock");
	assert_int_equal(out.nr_nets, 2);
	assert_string_equal(out.nets[0].iface_id, "eth0");
	assert_string_equal(out.nets[0].host_dev_name, "tap0");
	assert_true(out.nets[0].has_mac);
	assert_memory_equal(out.nets[0].guest_mac, cfg.nets[0].guest_mac, 6);
	assert_int_equal(out.nets[0].tx_rate_limiter.ops.size, 100);
	assert_int_equal(out.nets[0].tx_rate_limiter.ops.one_time_burst, 5);
	assert_int_equal(out.nets[0].tx_rate_limiter.ops.refill_time_ms, 1000);
	assert_int_equal(out.nets[0].rx_rate_limiter.bandwidth.size, 0);
	assert_false(out.nets[1].has_mac);
	assert_string_equal(out.nets[1].host_dev_name, "tap1");
	config_state__free(&out);
	snap_buf__free(&b);
}

/* Values the API would refuse are refused from a snapshot too. */
static void test_config_refusals(void **state)
{
	struct vm_config base = {
		.mem_mib = 128,
		.vcpus = 1,
		.nr_drives = 1,
		.drives = { { .path = "/d/root.img", .root = true } },
		.vsock = { .guest_cid = 3, .uds_path = "/s/v.sock" },
	};
	struct vm_config cfg, out;
	struct snap_buf b;
	unsigned int i;

	(void)state;
	for (i = 0; i < 8; i++) {
		cfg = base;
		if (i == 0)
			cfg.mem_mib = CONFIG_MEM_MAX_MIB + 1;
		if (i == 1)
			cfg.vcpus = CONFIG_MAX_VCPUS + 1;
		if (i == 2)
			cfg.vsock.guest_cid = 2;
		if (i == 3)
			cfg.drives[0].path = NULL;
		if (i >= 4) {
			cfg.nr_nets = 1;
			cfg.nets[0] = (struct net_config){
				.iface_id = "eth0",
				.host_dev_name = "tap0",
			};
		}
		if (i == 4) { /* a multicast MAC */
			cfg.nets[0].has_mac = true;
			cfg.nets[0].guest_mac[0] = 1;
		}
		if (i == 5) /* no tap */
			cfg.nets[0].host_dev_name = NULL;
		if (i == 6) /* a bucket past the limits */
			cfg.nets[0].rx_rate_limiter.bandwidth.size =
				CONFIG_BUCKET_MAX + 1;
		if (i == 7) /* a drive's too */
			cfg.drives[0].rate_limiter.ops.refill_time_ms =
				CONFIG_REFILL_MAX_MS + 1;
		b = config_file(&cfg);
		assert_int_equal(config_load(&b, &out), -EINVAL);
		config_state__free(&out);
		snap_buf__free(&b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transport_round_trip),
		cmocka_unit_test(test_transport_refusals),
		cmocka_unit_test(test_serial_state),
		cmocka_unit_test(test_i8042_cmos_state),
		cmocka_unit_test(test_config_round_trip),
		cmocka_unit_test(test_config_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
