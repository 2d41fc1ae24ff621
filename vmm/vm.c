// SPDX-License-Identifier: Apache-2.0
/* VM assembly and life cycle (see vm.h). */
#include "vm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/kvm.h>

#include "../boot/cmdline.h"
#include "../boot/cpu_tables.h"
#include "../boot/kernel.h"
#include "../boot/layout.h"
#include "../boot/zeropage.h"
#include "../devices/cmos.h"
#include "../devices/fileio.h"
#include "../devices/guest_signal.h"
#include "../devices/i8042.h"
#include "../devices/serial.h"
#include "../devices/virtio_blk.h"
#include "../devices/virtio_rng.h"
#include "backends/console.h"
#include "backends/console_out.h"
#include "event.h"
#include "irq.h"
#include "log.h"
#include "pvm/pvm.h"
#include "vcpu.h"
#include "backends/vsock_uds.h"

/* Files bigger than this are not kernels or initrds ember will load. */
#define VM_MAX_FILE (2ULL << 30)

static void vm__sigusr1(int sig)
{
	(void)sig; /* only interrupts KVM_RUN */
}

/*
 * The one signal that asked ember to stop (SIGINT, SIGTERM, SIGHUP), and
 * the eventfd that wakes the event thread for it.  Global because a
 * signal handler can reach nothing else.
 */
static volatile sig_atomic_t vm_stop_signal;
static volatile int vm_signal_fd = -1;

void vm__signal_stop(int sig)
{
	uint64_t one = 1;
	int saved = errno, fd = vm_signal_fd;

	if (!vm_stop_signal)
		vm_stop_signal = sig;
	/* A failed write means the counter is already non-zero: woken. */
	if (fd >= 0 && write(fd, &one, sizeof(one)) < 0)
		one = 0;
	errno = saved;
}

static void vm__on_signal(void *opaque, int fd)
{
	uint64_t n;

	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		return;
	vm__request_stop(opaque, VM_STOP_SIGNAL);
}

void vm__request_stop(struct vm *vm, enum vm_stop_reason reason)
{
	pthread_mutex_lock(&vm->lock);
	if (vm->stop == VM_STOP_NONE) {
		__atomic_store_n(&vm->stop, reason, __ATOMIC_RELEASE);
		vm->t_stop_ms = log__ms();
	}
	pthread_cond_broadcast(&vm->cond);
	pthread_mutex_unlock(&vm->lock);
}

static void vm__device_event(void *opaque, enum device_event ev, uint32_t value)
{
	struct vm *vm = opaque;

	switch (ev) {
	case DEVICE_EVENT_RESET:
		log_info("guest reset through the i8042");
		vm__request_stop(vm, VM_STOP_REBOOT);
		break;
	case DEVICE_EVENT_EXIT_STATUS:
		pthread_mutex_lock(&vm->lock);
		vm->have_status = true;
		vm->exit_status = value;
		pthread_mutex_unlock(&vm->lock);
		log_info("guest reported exit status %u", value);
		/*
		 * Guest init flushes its filesystems before it reports, so
		 * the VM can end now instead of waiting for the reset.
		 */
		vm__request_stop(vm, VM_STOP_GUEST_EXIT);
		break;
	case DEVICE_EVENT_BOOT_TIMER:
		if (!vm->t_boot_timer_ms)
			vm->t_boot_timer_ms = log__ms();
		if (vm->cfg.boot_timer)
			log__printf(LOG_NOTE,
				    "guest boot time: %.3f ms since "
				    "ember started",
				    vm->t_boot_timer_ms);
		break;
	}
}

/*
 * Open a kernel or initrd: a regular, non-empty file of at most 2 GiB.
 * One-line errors name the file and its role.  Returns the fd or -errno.
 */
static int vm__open_file(const char *role, const char *path, uint64_t *size)
{
	struct stat st;
	int fd, ret;

	/* O_NONBLOCK: a FIFO must get an error, not hang ember in open(). */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		ret = -errno;
		log_error("%s %s: %s", role, path, strerror(errno));
		return ret;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		log_error("%s %s: not a regular file", role, path);
		close(fd);
		return -EINVAL;
	}
	if (st.st_size == 0 || (uint64_t)st.st_size > VM_MAX_FILE) {
		log_error("%s %s: %s", role, path,
			  st.st_size ? "larger than 2 GiB" : "empty file");
		close(fd);
		return -EINVAL;
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

static int vm__kernel_read(const struct kernel_src *s, uint64_t off, void *dst,
			   uint64_t len)
{
	return fileio__pread_all(s->fd, dst, len, off);
}

static int vm__open_kvm(struct vm *vm)
{
	static const struct {
		int cap;
		const char *name;
	} caps[] = {
		{ KVM_CAP_IRQCHIP, "KVM_CAP_IRQCHIP" },
		{ KVM_CAP_USER_MEMORY, "KVM_CAP_USER_MEMORY" },
		{ KVM_CAP_SET_TSS_ADDR, "KVM_CAP_SET_TSS_ADDR" },
		{ KVM_CAP_PIT2, "KVM_CAP_PIT2" },
		{ KVM_CAP_IMMEDIATE_EXIT, "KVM_CAP_IMMEDIATE_EXIT" },
		{ KVM_CAP_EXT_CPUID, "KVM_CAP_EXT_CPUID" },
	};
	unsigned int i;
	int ret;

	vm->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm->kvm_fd < 0) {
		ret = -errno;
		if (errno == ENOENT)
			log_error(
				"/dev/kvm: no such device: KVM is not available "
				"on this host");
		else if (errno == EACCES || errno == EPERM)
			log_error(
				"/dev/kvm: permission denied (run as a user in "
				"the kvm group, or as root)");
		else
			log_error("/dev/kvm: %s", strerror(errno));
		return ret;
	}
	ret = ioctl(vm->kvm_fd, KVM_GET_API_VERSION, 0);
	if (ret != KVM_API_VERSION) {
		log_error("/dev/kvm: API version %d, ember needs %d", ret,
			  KVM_API_VERSION);
		return -ENOTSUP;
	}
	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		if (ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, caps[i].cap) <= 0) {
			log_error("/dev/kvm lacks %s", caps[i].name);
			return -ENOTSUP;
		}
	}
	return 0;
}

static int vm__create_kvm_vm(struct vm *vm)
{
	uint64_t idmap = LAYOUT_KVM_IDMAP_GPA;
	unsigned int i;

	vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	if (vm->vm_fd < 0) {
		log_error("KVM_CREATE_VM: %s", strerror(errno));
		return -errno;
	}
	if (ioctl(vm->vm_fd, KVM_SET_TSS_ADDR, LAYOUT_KVM_TSS_GPA) < 0 ||
	    ioctl(vm->vm_fd, KVM_SET_IDENTITY_MAP_ADDR, &idmap) < 0) {
		log_error("KVM_SET_TSS_ADDR: %s", strerror(errno));
		return -errno;
	}
	if (irq__create_chip(vm->vm_fd))
		return -EINVAL;
	for (i = 0; i < vm->mem.nr_regions; i++) {
		struct kvm_userspace_memory_region r = {
			.slot = i,
			.guest_phys_addr = vm->mem.region[i].gpa,
			.memory_size = vm->mem.region[i].size,
			.userspace_addr =
				(uint64_t)(uintptr_t)vm->mem.region[i].hva,
		};

		if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &r) < 0) {
			log_error("KVM_SET_USER_MEMORY_REGION slot %u: %s", i,
				  strerror(errno));
			return -errno;
		}
	}
	return 0;
}

static int vm__build_cmdline(struct vm *vm, struct cmdline *c)
{
	const struct vm_config *cfg = &vm->cfg;
	unsigned int i;
	int ret;

	cmdline__init(c);
	/* The user's arguments first, so that ember's defaults never win. */
	ret = cfg->append ? cmdline__add(c, cfg->append) : 0;
	if (!ret)
		ret = cmdline__add_default(
			c, "console",
			cfg->console == CONSOLE_NONE ? "null" : "ttyS0");
	if (!ret)
		ret = cmdline__add_default(c, "reboot", "k");
	/*
	 * Above 4 GiB of RAM the kernel would set up (and clear) 64 MiB of
	 * DMA bounce buffers that no ember device uses: virtio-mmio without
	 * VIRTIO_F_ACCESS_PLATFORM bypasses the DMA API.  That cost 23 s of
	 * boot on a PVM host, and 64 MiB of guest RAM everywhere.
	 */
	if (!ret)
		ret = cmdline__add_default(c, "swiotlb", "noforce");
	if (!ret)
		ret = cmdline__add_default(c, "panic", "-1");
	if (!ret)
		ret = cmdline__add_default(c, "pci", "off");
	if (!ret)
		ret = cmdline__add_default(c, "8250.nr_uarts", "1");
	if (!ret)
		ret = cmdline__add_default(c, "no_timer_check", NULL);
	if (!ret && !cmdline__has(c, "loglevel") && !cmdline__has(c, "debug"))
		ret = cmdline__add_default(c, "quiet", NULL);
	for (i = 0; !ret && i < vm->nr_virtio; i++) {
		char dev[64];

		snprintf(dev, sizeof(dev), "virtio_mmio.device=4K@0x%llx:%u",
			 (unsigned long long)vm->virtio[i].base,
			 vm->virtio[i].gsi);
		ret = cmdline__add(c, dev);
	}
	if (!ret && vm->root_drive >= 0 && !cmdline__has(c, "root")) {
		ret = cmdline__add(c, "root=/dev/vda");
		if (!ret)
			ret = cmdline__add_default(
				c,
				cfg->drives[vm->root_drive].read_only ? "ro" :
									"rw",
				NULL);
	}
	if (!ret && vm->pvm)
		ret = pvm__cmdline(c, vm->nr_vcpus, vm->tsc_khz);
	/* ember's guest init then starts its agent on the vsock port. */
	if (!ret && cfg->vsock.uds_path)
		ret = cmdline__add(c, EMBER_AGENT_PARAM);
	if (!ret && cfg->run_cmd)
		ret = cmdline__add_run(c, cfg->run_cmd, cfg->run_len);
	if (ret) {
		log_error("kernel command line longer than %llu bytes: "
			  "shorten --append%s",
			  (unsigned long long)LAYOUT_CMDLINE_MAX - 1,
			  cfg->run_cmd ? " or --run (they share it)" : "");
		return ret;
	}
	log_info("kernel command line: %s", c->buf);
	return 0;
}

static int vm__load(struct vm *vm)
{
	const struct vm_config *cfg = &vm->cfg;
	struct zeropage_cfg zp = { 0 };
	struct kernel_src src = { .read = vm__kernel_read, .fd = -1 };
	struct kernel_image k;
	struct cmdline *c = NULL;
	uint64_t isize = 0;
	void *idst;
	int ifd = -1, ret;

	src.fd = vm__open_file("kernel", cfg->kernel_path, &src.size);
	if (src.fd < 0)
		return src.fd;
	ret = kernel__load_src(&vm->mem, &src, &k);
	if (ret) {
		if (ret == -ENOEXEC)
			log_error(
				"kernel %s: neither an x86_64 ELF vmlinux nor a "
				"64-bit bzImage",
				cfg->kernel_path);
		else if (ret == -E2BIG)
			log_error(
				"kernel %s: does not fit in %llu MiB of guest "
				"RAM",
				cfg->kernel_path,
				(unsigned long long)cfg->mem_mib);
		else if (ret == -EINVAL)
			log_error("kernel %s: %s", cfg->kernel_path,
				  k.why ? k.why :
					  "truncated or malformed image");
		else
			log_error("kernel %s: read: %s", cfg->kernel_path,
				  strerror(-ret));
		goto out;
	}
	vm->entry = k.entry;
	log_info("kernel %s: %s, entry 0x%llx", cfg->kernel_path,
		 k.format == KERNEL_FORMAT_ELF ? "ELF vmlinux" : "bzImage",
		 (unsigned long long)k.entry);

	if (cfg->initrd_path) {
		ifd = vm__open_file("initrd", cfg->initrd_path, &isize);
		if (ifd < 0) {
			ret = ifd;
			goto out;
		}
		ret = zeropage__initrd_place(&vm->mem, &k, isize,
					     &zp.initrd_gpa);
		if (ret) {
			log_error(
				"initrd %s: %llu bytes do not fit in guest RAM "
				"(%llu MiB) next to the kernel",
				cfg->initrd_path, (unsigned long long)isize,
				(unsigned long long)cfg->mem_mib);
			goto out;
		}
		/* One copy, from the file straight into guest RAM. */
		idst = mem__ptr(&vm->mem, zp.initrd_gpa, isize);
		ret = idst ? fileio__pread_all(ifd, idst, isize, 0) : -EFAULT;
		if (ret) {
			log_error("initrd %s: read: %s", cfg->initrd_path,
				  strerror(-ret));
			goto out;
		}
		zp.initrd_size = isize;
	}

	c = malloc(sizeof(*c));
	if (!c) {
		ret = -ENOMEM;
		goto out;
	}
	ret = vm__build_cmdline(vm, c);
	if (ret)
		goto out;
	zp.cmdline = c->buf;
	ret = zeropage__build(&vm->mem, &k, &zp);
	if (ret) {
		log_error("writing the zero page: %s", strerror(-ret));
		goto out;
	}
	ret = cpu_tables__mptable(&vm->mem, vm->nr_vcpus);
	if (ret)
		log_error("writing the MP table: %s", strerror(-ret));
out:
	free(c);
	if (ifd >= 0)
		close(ifd);
	close(src.fd);
	return ret;
}

static void vm__virtio_notify(void *opaque, int fd)
{
	struct vm_notify *n = opaque;
	uint64_t count;

	if (read(fd, &count, sizeof(count)) != sizeof(count))
		return;
	virtio_mmio__notify(n->t, n->queue);
}

/*
 * Put the transport of slot @v on the MMIO bus and route its queue
 * notifications through ioeventfds (one per queue, matched on the queue
 * index written to QueueNotify) to the event thread.
 */
static int vm__virtio_wire(struct vm *vm, struct vm_virtio *v)
{
	unsigned int q;
	int ret;

	ret = bus__register(&vm->mmio, v->base, LAYOUT_VIRTIO_MMIO_SIZE,
			    &v->t->dev);
	if (ret) {
		log_error("virtio-mmio slot at 0x%llx: %s",
			  (unsigned long long)v->base, strerror(-ret));
		return ret;
	}
	for (q = 0; q < v->t->ops->nr_queues; q++) {
		struct vm_notify *n = &v->notify[q];
		struct kvm_ioeventfd io = {
			.datamatch = q,
			.addr = v->base + VIRTIO_MMIO_QUEUE_NOTIFY,
			.len = 4,
			.flags = KVM_IOEVENTFD_FLAG_DATAMATCH,
		};

		n->t = v->t;
		n->queue = q;
		n->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (n->fd < 0) {
			ret = -errno;
			log_error("eventfd: %s", strerror(errno));
			return ret;
		}
		io.fd = n->fd;
		if (ioctl(vm->vm_fd, KVM_IOEVENTFD, &io) < 0) {
			ret = -errno;
			log_error("KVM_IOEVENTFD: %s", strerror(errno));
			return ret;
		}
		ret = event__add(vm->events, n->fd, vm__virtio_notify, n);
		if (ret) {
			log_error("event loop: %s", strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* The next virtio-mmio slot with its interrupt; NULL when full. */
static struct vm_virtio *vm__virtio_slot(struct vm *vm)
{
	struct vm_virtio *v;
	unsigned int q;

	if (vm->nr_virtio == VM_MAX_VIRTIO) {
		log_error("more than %d virtio devices", VM_MAX_VIRTIO);
		return NULL;
	}
	v = &vm->virtio[vm->nr_virtio];
	v->base = LAYOUT_VIRTIO_MMIO_GPA +
		  vm->nr_virtio * LAYOUT_VIRTIO_MMIO_SIZE;
	v->gsi = LAYOUT_IRQ_VIRTIO_FIRST + vm->nr_virtio;
	for (q = 0; q < VIRTIO_MMIO_MAX_QUEUES; q++)
		v->notify[q].fd = -1;
	v->irqfd = irq__irqfd(vm->vm_fd, v->gsi);
	if (v->irqfd < 0)
		return NULL;
	vm->nr_virtio++;
	return v;
}

static int vm__add_drive(struct vm *vm, const struct drive_config *d,
			 unsigned int index)
{
	struct vm_virtio *v;
	struct virtio_blk *blk;
	struct stat st;
	char serial[24];
	int fd, ret;

	fd = open(d->path,
		  (d->read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		ret = -errno;
		log_error("drive %s: %s", d->path, strerror(errno));
		return ret;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 512) {
		log_error("drive %s: %s", d->path,
			  S_ISREG(st.st_mode) ?
				  "smaller than one 512-byte sector" :
				  "not a regular file");
		close(fd);
		return -EINVAL;
	}
	/* Two writers on one image corrupt it: refuse, as other VMMs do. */
	if (flock(fd, (d->read_only ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0) {
		log_error("drive %s: in use by another process (%s)", d->path,
			  strerror(errno));
		close(fd);
		return -EBUSY;
	}
	if (d->id)
		snprintf(serial, sizeof(serial), "%s", d->id);
	else
		snprintf(serial, sizeof(serial), "drive%u", index);
	v = vm__virtio_slot(vm);
	if (!v) {
		close(fd);
		return -ENOSPC;
	}
	blk = virtio_blk__create(&vm->mem, irq__irqfd_line(&v->irqfd, v->gsi),
				 fd, (uint64_t)st.st_size, d->read_only,
				 serial);
	if (!blk) {
		log_error("drive %s: cannot create the device", d->path);
		close(fd);
		return -ENOMEM;
	}
	v->kind = VM_VIRTIO_BLK;
	v->dev = blk;
	v->t = virtio_blk__transport(blk);
	log_info("drive %s: virtio-blk at 0x%llx, irq %u%s", d->path,
		 (unsigned long long)v->base, v->gsi,
		 d->read_only ? ", read-only" : "");
	return vm__virtio_wire(vm, v);
}

static int vm__add_rng(struct vm *vm)
{
	struct vm_virtio *v = vm__virtio_slot(vm);
	struct virtio_rng *rng;

	if (!v)
		return -ENOSPC;
	rng = virtio_rng__create(&vm->mem, irq__irqfd_line(&v->irqfd, v->gsi));
	if (!rng) {
		log_error("virtio-rng: cannot create the device");
		return -ENOMEM;
	}
	v->kind = VM_VIRTIO_RNG;
	v->dev = rng;
	v->t = virtio_rng__transport(rng);
	return vm__virtio_wire(vm, v);
}

static int vm__add_vsock(struct vm *vm)
{
	const struct vsock_config *c = &vm->cfg.vsock;
	struct vm_virtio *v = vm__virtio_slot(vm);
	struct vsock_uds *u;

	if (!v)
		return -ENOSPC;
	u = vsock_uds__create(vm->events, &vm->mem,
			      irq__irqfd_line(&v->irqfd, v->gsi), c->guest_cid,
			      c->uds_path);
	if (!u)
		return -EINVAL; /* logged */
	v->kind = VM_VIRTIO_VSOCK;
	v->dev = u;
	v->t = vsock_uds__transport(u);
	return vm__virtio_wire(vm, v);
}

/* Drives first, the root drive before the others (it becomes vda). */
static int vm__add_virtio(struct vm *vm)
{
	const struct vm_config *cfg = &vm->cfg;
	unsigned int i, n = 0;
	int ret;

	if (vm->root_drive >= 0) {
		ret = vm__add_drive(vm, &cfg->drives[vm->root_drive], n++);
		if (ret)
			return ret;
	}
	for (i = 0; i < cfg->nr_drives; i++) {
		if ((int)i == vm->root_drive)
			continue;
		ret = vm__add_drive(vm, &cfg->drives[i], n++);
		if (ret)
			return ret;
	}
	ret = cfg->no_rng ? 0 : vm__add_rng(vm);
	if (!ret && cfg->vsock.uds_path)
		ret = vm__add_vsock(vm);
	return ret;
}

static void vm__virtio_destroy(struct vm *vm)
{
	unsigned int i, q;

	for (i = 0; i < vm->nr_virtio; i++) {
		struct vm_virtio *v = &vm->virtio[i];

		if (v->kind == VM_VIRTIO_BLK)
			virtio_blk__destroy(v->dev);
		else if (v->kind == VM_VIRTIO_RNG)
			virtio_rng__destroy(v->dev);
		else if (v->kind == VM_VIRTIO_VSOCK)
			vsock_uds__destroy(v->dev); /* after the event loop */
		for (q = 0; q < VIRTIO_MMIO_MAX_QUEUES; q++)
			if (v->notify[q].fd >= 0)
				close(v->notify[q].fd);
		if (v->irqfd >= 0)
			close(v->irqfd);
	}
	vm->nr_virtio = 0;
}

static int vm__add_devices(struct vm *vm)
{
	struct device_events ev = { .notify = vm__device_event, .opaque = vm };
	struct irq_line serial_irq = irq__line(&vm->vm_fd, LAYOUT_IRQ_SERIAL);
	struct serial_host con = { .tx = console_out__tx,
				   .opaque = vm->console_out };
	int ret;

	vm->pio.name = "pio";
	vm->mmio.name = "mmio";
	vm->serial = serial__create(&con, serial_irq);
	vm->i8042 = i8042__create(ev);
	vm->cmos = cmos__create();
	vm->boot_timer_dev = guest_signal__boot_timer(ev);
	vm->exit_status_dev = guest_signal__exit_status(ev);
	if (!vm->serial || !vm->i8042 || !vm->cmos || !vm->boot_timer_dev ||
	    !vm->exit_status_dev) {
		log_error("creating devices: out of memory");
		return -ENOMEM;
	}
	ret = bus__register(&vm->pio, SERIAL_COM1_PORT, SERIAL_PORT_LEN,
			    vm->serial);
	if (!ret)
		ret = bus__register(&vm->pio, I8042_DATA_PORT, 1, vm->i8042);
	if (!ret)
		ret = bus__register(&vm->pio, I8042_COMMAND_PORT, 1,
				    i8042__command(vm->i8042));
	if (!ret)
		ret = bus__register(&vm->pio, CMOS_PORT, CMOS_PORT_LEN,
				    vm->cmos);
	if (!ret)
		ret = bus__register(&vm->mmio, LAYOUT_BOOT_TIMER_GPA,
				    LAYOUT_BOOT_TIMER_SIZE, vm->boot_timer_dev);
	if (!ret)
		ret = bus__register(&vm->mmio, LAYOUT_EXIT_STATUS_GPA,
				    LAYOUT_EXIT_STATUS_SIZE,
				    vm->exit_status_dev);
	if (ret) {
		log_error("registering devices: %s", strerror(-ret));
		return ret;
	}
	return vm__add_virtio(vm);
}

static int vm__open_console(struct vm *vm)
{
	switch (vm->cfg.console) {
	case CONSOLE_STDIO:
		vm->console_fd = STDOUT_FILENO;
		break;
	case CONSOLE_NONE:
		vm->console_fd = -1;
		break;
	case CONSOLE_FILE:
		/*
		 * O_NONBLOCK for the open only: a FIFO without a reader fails
		 * (ENXIO) instead of hanging; writes then block as usual.
		 */
		vm->console_fd = open(vm->cfg.console_path,
				      O_WRONLY | O_CREAT | O_APPEND |
					      O_CLOEXEC | O_NONBLOCK,
				      0600);
		if (vm->console_fd < 0 ||
		    fcntl(vm->console_fd, F_SETFL, O_APPEND) < 0) {
			log_error("console file %s: %s", vm->cfg.console_path,
				  strerror(errno));
			return -errno;
		}
		break;
	default:
		return -EINVAL;
	}
	vm->console_out = console_out__create(vm->console_fd);
	return vm->console_out ? 0 : -ENOMEM;
}

int vm__create(const struct vm_config *cfg, struct vm **out)
{
	struct sigaction sa = { .sa_handler = vm__sigusr1 };
	struct vm *vm;
	unsigned int i;
	int ret;

	*out = NULL;
	if (!cfg->kernel_path || !cfg->vcpus || cfg->vcpus > CONFIG_MAX_VCPUS)
		return -EINVAL;
	vm = calloc(1, sizeof(*vm));
	if (!vm)
		return -ENOMEM;
	vm->cfg = *cfg;
	vm->kvm_fd = vm->vm_fd = vm->console_fd = vm->signal_fd = -1;
	vm->nr_vcpus = cfg->vcpus;
	vm->root_drive = -1;
	for (i = 0; i < cfg->nr_drives && i < CONFIG_MAX_DRIVES; i++)
		if (cfg->drives[i].root)
			vm->root_drive = (int)i;
	pthread_mutex_init(&vm->lock, NULL);
	pthread_cond_init(&vm->cond, NULL);
	sigaction(SIGUSR1, &sa, NULL);

	ret = vm__open_kvm(vm);
	if (ret)
		goto fail;
	vm->events = event__create();
	if (!vm->events) {
		ret = -ENOMEM;
		goto fail;
	}
	vm->signal_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (vm->signal_fd < 0 ||
	    event__add(vm->events, vm->signal_fd, vm__on_signal, vm)) {
		log_error("signal eventfd: %s", strerror(errno));
		ret = -EINVAL;
		goto fail;
	}
	vm_signal_fd = vm->signal_fd;
	vm->pvm = cfg->pvm == PVM_ON || (cfg->pvm == PVM_AUTO && pvm__detect());
	if (vm->pvm) {
		log_info(
			"PVM host: applying the PVM profile (kernel arguments, "
			"CPUID, instruction fallbacks)");
		xstate__layout_host(&vm->xstate);
	}
	ret = mem__create(&vm->mem, cfg->mem_mib << 20);
	if (ret) {
		log_error("guest RAM of %llu MiB: %s",
			  (unsigned long long)cfg->mem_mib, strerror(-ret));
		goto fail;
	}
	ret = vm__create_kvm_vm(vm);
	if (ret)
		goto fail;
	ret = vm__open_console(vm);
	if (ret)
		goto fail;
	/* vm__add_devices() logs what failed, in one line. */
	ret = vm__add_devices(vm);
	if (ret)
		goto fail;
	vm->vcpus = calloc(vm->nr_vcpus, sizeof(*vm->vcpus));
	if (!vm->vcpus) {
		ret = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < vm->nr_vcpus; i++)
		vm->vcpus[i].fd = -1;
	for (i = 0; i < vm->nr_vcpus && !ret; i++)
		ret = vcpu__create(vm, i, &vm->vcpus[i]);
	if (!ret) {
		/* The TSC rate goes into the PVM kernel arguments. */
		int khz = ioctl(vm->vcpus[0].fd, KVM_GET_TSC_KHZ, 0);

		vm->tsc_khz = khz > 0 ? (uint32_t)khz : 0;
		ret = vm__load(vm);
	}
	if (!ret)
		ret = vcpu__set_boot_state(&vm->vcpus[0]);
	if (ret)
		goto fail;
	*out = vm;
	return 0;
fail:
	vm__destroy(vm);
	return ret ? ret : -EINVAL;
}

/* What ember exits with once the VM has stopped (see vm__run()). */
static int vm__exit_status(const struct vm *vm)
{
	const char *panic = console_out__panic(vm->console_out);
	const char *run = vm->cfg.run_cmd ? " before the command reported its "
					    "exit status" :
					    "";

	if (vm->stop == VM_STOP_ERROR)
		return VM_EXIT_EMBER_ERROR;
	if (vm->stop == VM_STOP_SIGNAL) {
		log_warn("stopped by signal %d", (int)vm_stop_signal);
		return 128 + vm_stop_signal;
	}
	if (vm->have_status)
		return (int)(vm->exit_status & 0xff);
	if (panic) {
		/* Without the patch guest init dies of SIGSEGV (README). */
		log_error("the guest kernel panicked%s: %s%s", run, panic,
			  vm->pvm && strstr(panic, "Attempted to kill init") ?
				  " (on PVM hosts, a guest kernel without "
				  "ember's SYSCALL patch ends this way: see "
				  "README)" :
				  "");
		return VM_EXIT_EMBER_ERROR;
	}
	if (vm->stop == VM_STOP_CRASH) {
		log_error("the guest crashed (triple fault)%s", run);
		return VM_EXIT_EMBER_ERROR;
	}
	if (vm->stop == VM_STOP_REBOOT && vm->cfg.run_cmd) {
		log_error("the guest rebooted%s: a reboot from inside the "
			  "guest%s",
			  run,
			  vm->cfg.console == CONSOLE_NONE ?
				  ", or a kernel panic (its message does not "
				  "reach ember with --console none)" :
				  "");
		return VM_EXIT_EMBER_ERROR;
	}
	return 0; /* a reboot without --run, or Ctrl-A x */
}

static void vm__console_quit(void *opaque)
{
	log_info("console: Ctrl-A x, stopping the VM");
	vm__request_stop(opaque, VM_STOP_QUIT);
}

int vm__run(struct vm *vm)
{
	struct console *con = NULL;
	unsigned int i;

	/* A --run command's stdin is empty (guest init): nothing to pass. */
	if (vm->cfg.console == CONSOLE_STDIO && !vm->cfg.run_cmd)
		con = console__start(vm->events, STDIN_FILENO, vm->serial,
				     vm__console_quit, vm);
	if (event__start(vm->events))
		vm__request_stop(vm, VM_STOP_ERROR);
	for (i = 0; i < vm->nr_vcpus; i++) {
		if (vcpu__start(&vm->vcpus[i])) {
			vm__request_stop(vm, VM_STOP_ERROR);
			break;
		}
	}
	/* No timeout: signals arrive through vm->signal_fd. */
	pthread_mutex_lock(&vm->lock);
	while (vm->stop == VM_STOP_NONE && !vm_stop_signal)
		pthread_cond_wait(&vm->cond, &vm->lock);
	if (vm->stop == VM_STOP_NONE) {
		vm->stop = VM_STOP_SIGNAL;
		vm->t_stop_ms = log__ms();
	}
	pthread_mutex_unlock(&vm->lock);
	/* A vCPU waiting on a stalled console reader must not hold us. */
	console_out__stop(vm->console_out);
	for (i = 0; i < vm->nr_vcpus; i++)
		vcpu__kick(&vm->vcpus[i]);
	for (i = 0; i < vm->nr_vcpus; i++)
		vcpu__destroy(&vm->vcpus[i]);
	event__destroy(vm->events);
	vm->events = NULL;
	console__destroy(con);
	return vm__exit_status(vm);
}

void vm__destroy(struct vm *vm)
{
	unsigned int i;

	if (!vm)
		return;
	if (vm->vcpus) {
		for (i = 0; i < vm->nr_vcpus; i++)
			vcpu__destroy(&vm->vcpus[i]);
		free(vm->vcpus);
	}
	event__destroy(vm->events);
	if (vm->signal_fd >= 0) {
		vm_signal_fd = -1;
		close(vm->signal_fd);
	}
	vm__virtio_destroy(vm);
	serial__destroy(vm->serial);
	i8042__destroy(vm->i8042);
	cmos__destroy(vm->cmos);
	guest_signal__destroy(vm->boot_timer_dev);
	guest_signal__destroy(vm->exit_status_dev);
	if (vm->console_fd > STDERR_FILENO)
		close(vm->console_fd);
	console_out__destroy(vm->console_out);
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	mem__destroy(&vm->mem);
	pthread_cond_destroy(&vm->cond);
	pthread_mutex_destroy(&vm->lock);
	free(vm);
}
