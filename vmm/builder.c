// SPDX-License-Identifier: Apache-2.0
/* The builder: configuration -> a VM (see builder.h). */
#include "builder.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../boot/cmdline.h"
#include "../boot/cpu_tables.h"
#include "../boot/kernel.h"
#include "../boot/layout.h"
#include "../boot/zeropage.h"
#include "../devices/fileio.h"
#include "backends/console_out.h"
#include "dev/dev.h"
#include "kvm.h"
#include "log.h"
#include "pvm/pvm.h"
#include "vm.h"

/* Files bigger than this are not kernels or initrds ember will load. */
#define BUILDER_MAX_FILE (2ULL << 30)

/*
 * What builder__load_images() leaves, before KVM, for builder__boot_data()
 * after the devices: the kernel as loaded and where the initrd went.
 */
struct builder_boot {
	struct kernel_image k;
	struct zeropage_cfg zp; /* cmdline: set by builder__boot_data() */
};

/*
 * Open a kernel or initrd: a regular, non-empty file of at most 2 GiB.
 * One-line errors name the file and its role.  Returns the fd or -errno.
 */
static int builder__open_file(const char *role, const char *path,
			      uint64_t *size)
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
	if (st.st_size == 0 || (uint64_t)st.st_size > BUILDER_MAX_FILE) {
		log_error("%s %s: %s", role, path,
			  st.st_size ? "larger than 2 GiB" : "empty file");
		close(fd);
		return -EINVAL;
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

static int builder__kernel_read(const struct kernel_src *s, uint64_t off,
				void *dst, uint64_t len)
{
	return fileio__pread_all(s->fd, dst, len, off);
}

static int builder__cmdline(struct vm *vm, struct cmdline *c)
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
	for (i = 0; !ret && i < vm->dm.nr; i++) {
		const struct devmgr_dev *d = &vm->dm.dev[i];
		char dev[64];

		if (!d->cls->virtio)
			continue;
		snprintf(dev, sizeof(dev), "virtio_mmio.device=4K@0x%llx:%d",
			 (unsigned long long)d->mmio_base, d->gsi);
		ret = cmdline__add(c, dev);
	}
	if (!ret && vm->root_drive >= 0 && !cmdline__has(c, "root")) {
		const char *uuid = cfg->drives[vm->root_drive].partuuid;
		char root[96];

		if (uuid)
			snprintf(root, sizeof(root), "root=PARTUUID=%s", uuid);
		else
			snprintf(root, sizeof(root), "root=/dev/vda");
		ret = cmdline__add(c, root);
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
	return 0;
}

/*
 * The kernel and the initrd, from their files into guest RAM, and the
 * kernel command line as far as it is known before the devices exist
 * (without their virtio_mmio.device= arguments and PVM's): all of it
 * host work that needs no KVM, so that a bad image, or arguments that
 * cannot fit whatever the devices add, are reported before /dev/kvm is
 * opened.  Fills @b for builder__boot_data().  Returns 0 or a negative
 * errno after one error line.
 */
static int builder__load_images(struct vm *vm, struct builder_boot *b)
{
	const struct vm_config *cfg = &vm->cfg;
	struct kernel_src src = { .read = builder__kernel_read, .fd = -1 };
	struct kernel_image *k = &b->k;
	struct cmdline *c = NULL;
	uint64_t isize = 0;
	void *idst;
	int ifd = -1, ret;

	memset(b, 0, sizeof(*b));
	src.fd = builder__open_file("kernel", cfg->kernel_path, &src.size);
	if (src.fd < 0)
		return src.fd;
	ret = kernel__load_src(&vm->mem, &src, k);
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
				  k->why ? k->why :
					   "truncated or malformed image");
		else
			log_error("kernel %s: read: %s", cfg->kernel_path,
				  strerror(-ret));
		goto out;
	}
	vm->entry = k->entry;
	log_info("kernel %s: %s, entry 0x%llx", cfg->kernel_path,
		 k->format == KERNEL_FORMAT_ELF ? "ELF vmlinux" : "bzImage",
		 (unsigned long long)k->entry);

	if (cfg->initrd_path) {
		ifd = builder__open_file("initrd", cfg->initrd_path, &isize);
		if (ifd < 0) {
			ret = ifd;
			goto out;
		}
		ret = zeropage__initrd_place(&vm->mem, k, isize,
					     &b->zp.initrd_gpa);
		if (ret) {
			log_error(
				"initrd %s: %llu bytes do not fit in guest RAM "
				"(%llu MiB) next to the kernel",
				cfg->initrd_path, (unsigned long long)isize,
				(unsigned long long)cfg->mem_mib);
			goto out;
		}
		/* One copy, from the file straight into guest RAM. */
		idst = guest_mem__ptr(&vm->mem, b->zp.initrd_gpa, isize);
		ret = idst ? fileio__pread_all(ifd, idst, isize, 0) : -EFAULT;
		if (ret) {
			log_error("initrd %s: read: %s", cfg->initrd_path,
				  strerror(-ret));
			goto out;
		}
		b->zp.initrd_size = isize;
	}

	/*
	 * No device exists yet and vm->pvm is not decided: what this finds
	 * too long is a part of the final line (builder__boot_data()).
	 */
	c = malloc(sizeof(*c));
	if (!c) {
		ret = -ENOMEM;
		goto out;
	}
	ret = builder__cmdline(vm, c);
out:
	free(c);
	if (ifd >= 0)
		close(ifd);
	close(src.fd);
	return ret;
}

/*
 * Once the devices exist: the whole kernel command line, the zero page
 * (with the kernel and initrd builder__load_images() placed, @b) and the
 * MP table.  Returns 0 or a negative errno after one error line.
 */
static int builder__boot_data(struct vm *vm, struct builder_boot *b)
{
	struct cmdline *c = malloc(sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	ret = builder__cmdline(vm, c);
	if (ret)
		goto out;
	log_info("kernel command line: %s", c->buf);
	b->zp.cmdline = c->buf;
	ret = zeropage__build(&vm->mem, &b->k, &b->zp);
	b->zp.cmdline = NULL;
	if (ret) {
		log_error("writing the zero page: %s", strerror(-ret));
		goto out;
	}
	ret = cpu_tables__mptable(&vm->mem, vm->nr_vcpus);
	if (ret)
		log_error("writing the MP table: %s", strerror(-ret));
out:
	free(c);
	return ret;
}

static int builder__open_console(struct vm *vm)
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

/*
 * The drives' indexes in cfg.drives in the order they become devices: the
 * root drive first (it becomes vda), then the others as configured.  Fills
 * @order (CONFIG_MAX_DRIVES entries) and returns how many.
 */
static unsigned int builder__drive_order(const struct vm *vm,
					 unsigned int *order)
{
	const struct vm_config *cfg = &vm->cfg;
	unsigned int i, n = 0;

	if (vm->root_drive >= 0 &&
	    (unsigned int)vm->root_drive < CONFIG_MAX_DRIVES)
		order[n++] = (unsigned int)vm->root_drive;
	for (i = 0; i < cfg->nr_drives && i < CONFIG_MAX_DRIVES; i++)
		if ((int)i != vm->root_drive)
			order[n++] = i;
	return n;
}

/*
 * Every drive's image, open and locked into @img (indexed as cfg.drives),
 * in the order builder__devices() adds them.  Returns 0 or a negative
 * errno after one error line; what was opened is in @img either way.
 */
static int builder__open_drives(struct vm *vm, struct dev_blk_image *img)
{
	unsigned int order[CONFIG_MAX_DRIVES], i, n;
	int ret;

	n = builder__drive_order(vm, order);
	for (i = 0; i < n; i++) {
		ret = dev_blk__open(&vm->cfg.drives[order[i]], &img[order[i]]);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Drives first, the root drive before the others (it becomes vda), on the
 * images builder__open_drives() opened (@img; each taken by its device).
 */
static int builder__devices(struct vm *vm, struct device_events ev,
			    struct dev_blk_image *img)
{
	const struct vm_config *cfg = &vm->cfg;
	struct dev_env env = {
		.dm = &vm->dm,
		.mem = &vm->mem,
		.el = vm->el,
		.vm_fd = &vm->kvm.vm_fd,
		.events = ev,
		.console = vm->console_out,
	};
	unsigned int order[CONFIG_MAX_DRIVES], i, n;
	char id[16];
	int ret;

	devmgr__init(&vm->dm, &vm->kvm, vm->el);
	ret = dev_legacy__add(&env);
	n = builder__drive_order(vm, order);
	for (i = 0; !ret && i < n; i++) {
		const struct drive_config *d = &cfg->drives[order[i]];

		snprintf(id, sizeof(id), "drive%u", i);
		ret = dev_blk__add(&env, d->id ? d->id : id, d, &img[order[i]]);
	}
	if (!ret && !cfg->no_rng)
		ret = dev_rng__add(&env);
	if (!ret && cfg->vsock.uds_path)
		ret = dev_vsock__add(&env, &cfg->vsock);
	/* Network interfaces last: the first one is the guest's eth0. */
	for (i = 0; !ret && i < cfg->nr_nets; i++) {
		const struct net_config *nc = &cfg->nets[i];

		snprintf(id, sizeof(id), "net%u", i);
		ret = dev_net__add(&env, nc->iface_id ? nc->iface_id : id, nc);
	}
	return ret;
}

int builder__build(struct vm *vm, struct device_events ev,
		   void (*vcpu_event)(void *opaque, unsigned int vcpu,
				      enum vcpu_event e))
{
	const struct vm_config *cfg = &vm->cfg;
	struct dev_blk_image img[CONFIG_MAX_DRIVES];
	struct vcpu_ctx *ctx = &vm->vctx;
	struct builder_boot boot;
	unsigned int i;
	int ret;

	memset(img, 0, sizeof(img));
	memset(&boot, 0, sizeof(boot));
	vm->root_drive = -1;
	for (i = 0; i < cfg->nr_drives && i < CONFIG_MAX_DRIVES; i++)
		if (cfg->drives[i].root)
			vm->root_drive = (int)i;
	/*
	 * First the host side, none of which needs KVM: guest RAM, the
	 * kernel and initrd loaded into it, the console file, the drives'
	 * images.  A bad input is then reported, in the same one line,
	 * before /dev/kvm is opened, on any host.  A restored VM comes with
	 * its RAM (vm__create_restored()) and its state (nothing to load).
	 */
	ret = vm->mem.map ? 0 : mem__create(&vm->mem, cfg->mem_mib << 20);
	if (ret) {
		log_error("guest RAM of %llu MiB: %s",
			  (unsigned long long)cfg->mem_mib, strerror(-ret));
		return ret;
	}
	ret = vm->restored ? 0 : builder__load_images(vm, &boot);
	/* Each step logs what failed, in one line. */
	if (!ret)
		ret = builder__open_console(vm);
	if (!ret)
		ret = builder__open_drives(vm, img);
	if (!ret)
		ret = kvm__open(&vm->kvm);
	if (ret)
		goto out;
	vm->pvm = cfg->pvm == PVM_ON || (cfg->pvm == PVM_AUTO && pvm__detect());
	if (vm->pvm) {
		log_info(
			"PVM host: applying the PVM profile (kernel arguments, "
			"CPUID, instruction fallbacks)");
		xstate__layout_host(&vm->xstate);
	}
	ret = kvm__create_vm(&vm->kvm, &vm->mem);
	if (!ret)
		ret = builder__devices(vm, ev, img);
	if (ret)
		goto out;

	*ctx = (struct vcpu_ctx){
		.kvm_fd = vm->kvm.kvm_fd,
		.vm_fd = vm->kvm.vm_fd,
		.nr_vcpus = vm->nr_vcpus,
		.pio = &vm->dm.pio,
		.mmio = &vm->dm.mmio,
		.mem = &vm->mem,
		.pvm = vm->pvm,
		.xstate = &vm->xstate,
		.event = vcpu_event,
		.opaque = vm,
	};
	vm->vcpus = calloc(vm->nr_vcpus, sizeof(*vm->vcpus));
	if (!vm->vcpus) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < vm->nr_vcpus; i++)
		vm->vcpus[i].fd = -1;
	for (i = 0; i < vm->nr_vcpus && !ret; i++)
		ret = vcpu__create(ctx, i, &vm->vcpus[i]);
	if (ret)
		goto out;
	/* The TSC rate goes into the PVM kernel arguments. */
	vm->tsc_khz = kvm__tsc_khz(vm->vcpus[0].fd);
	if (vm->restored)
		goto out; /* its state comes from the snapshot */
	ret = builder__boot_data(vm, &boot);
	if (!ret)
		ret = vcpu__set_boot_state(&vm->vcpus[0], vm->entry);
out:
	/* Images no device took (a failure before or among the drives). */
	for (i = 0; i < CONFIG_MAX_DRIVES; i++)
		dev_blk__close(&img[i]);
	return ret;
}
