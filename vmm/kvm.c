// SPDX-License-Identifier: Apache-2.0
/* The KVM VM (see kvm.h). */
#include "kvm.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/kvm.h>

#include "../boot/layout.h"
#include "irq.h"
#include "log.h"
#include "mem.h"

int kvm__open(struct kvm_vm *k)
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

	k->vm_fd = -1;
	k->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (k->kvm_fd < 0) {
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
	ret = ioctl(k->kvm_fd, KVM_GET_API_VERSION, 0);
	if (ret != KVM_API_VERSION) {
		log_error("/dev/kvm: API version %d, ember needs %d", ret,
			  KVM_API_VERSION);
		return -ENOTSUP;
	}
	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		if (ioctl(k->kvm_fd, KVM_CHECK_EXTENSION, caps[i].cap) <= 0) {
			log_error("/dev/kvm lacks %s", caps[i].name);
			return -ENOTSUP;
		}
	}
	return 0;
}

int kvm__create_vm(struct kvm_vm *k, const struct guest_mem *m)
{
	uint64_t idmap = LAYOUT_KVM_IDMAP_GPA;
	unsigned int i;
	int ret;

	k->vm_fd = ioctl(k->kvm_fd, KVM_CREATE_VM, 0);
	if (k->vm_fd < 0) {
		ret = -errno;
		log_error("KVM_CREATE_VM: %s", strerror(errno));
		return ret;
	}
	if (ioctl(k->vm_fd, KVM_SET_TSS_ADDR, LAYOUT_KVM_TSS_GPA) < 0 ||
	    ioctl(k->vm_fd, KVM_SET_IDENTITY_MAP_ADDR, &idmap) < 0) {
		ret = -errno;
		log_error("KVM_SET_TSS_ADDR: %s", strerror(errno));
		return ret;
	}
	if (irq__create_chip(k->vm_fd))
		return -EINVAL;
	for (i = 0; i < m->nr_regions; i++) {
		struct kvm_userspace_memory_region r = {
			.slot = i,
			.guest_phys_addr = m->region[i].gpa,
			.memory_size = m->region[i].size,
			.userspace_addr = (uint64_t)(uintptr_t)m->region[i].hva,
		};

		if (ioctl(k->vm_fd, KVM_SET_USER_MEMORY_REGION, &r) < 0) {
			ret = -errno;
			log_error("KVM_SET_USER_MEMORY_REGION slot %u: %s", i,
				  strerror(errno));
			return ret;
		}
	}
	return 0;
}

int kvm__ioeventfd(const struct kvm_vm *k, uint64_t gpa, uint32_t len,
		   uint64_t datamatch)
{
	struct kvm_ioeventfd io = {
		.datamatch = datamatch,
		.addr = gpa,
		.len = len,
		.flags = KVM_IOEVENTFD_FLAG_DATAMATCH,
	};
	int fd, ret;

	fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fd < 0) {
		ret = -errno;
		log_error("eventfd: %s", strerror(errno));
		return ret;
	}
	io.fd = fd;
	if (ioctl(k->vm_fd, KVM_IOEVENTFD, &io) < 0) {
		ret = -errno;
		log_error("KVM_IOEVENTFD: %s", strerror(errno));
		close(fd);
		return ret;
	}
	return fd;
}

uint32_t kvm__tsc_khz(int vcpu_fd)
{
	int khz = ioctl(vcpu_fd, KVM_GET_TSC_KHZ, 0);

	return khz > 0 ? (uint32_t)khz : 0;
}

void kvm__close(struct kvm_vm *k)
{
	if (k->vm_fd >= 0)
		close(k->vm_fd);
	if (k->kvm_fd >= 0)
		close(k->kvm_fd);
	k->vm_fd = k->kvm_fd = -1;
}
