/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The VM's configuration: a plain struct that the command line (main.c)
 * fills today and the control API will fill later.  Validated by
 * vm__create(), which owns no pointer in it.
 */
#ifndef EMBER_VMM_CONFIG_H
#define EMBER_VMM_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum console_kind { CONSOLE_STDIO = 0, CONSOLE_NONE, CONSOLE_FILE };
enum pvm_mode { PVM_AUTO = 0, PVM_ON, PVM_OFF };

#define CONFIG_MAX_VCPUS 32 /* the MP table at the EBDA holds 37 */

#define CONFIG_MAX_DRIVES 8

/* One virtio-blk drive (--drive path=FILE[,ro][,root][,id=NAME]). */
struct drive_config {
	const char *path; /* raw image file */
	const char *id; /* GET_ID serial; NULL: "drive<N>" */
	bool read_only; /* VIRTIO_BLK_F_RO; the file is opened O_RDONLY */
	bool root; /* root=/dev/vda unless --append sets root= */
};

/*
 * The virtio-vsock device (--vsock cid=N,uds=PATH): the guest's CID and
 * the host-side Unix socket (vmm/vsock_uds.h).  uds_path NULL: none.
 */
struct vsock_config {
	uint64_t guest_cid; /* 3..UINT32_MAX */
	const char *uds_path;
};

struct vm_config {
	const char *kernel_path; /* ELF vmlinux or bzImage; required */
	const char *initrd_path; /* NULL: none */
	const char *append; /* extra kernel arguments; NULL: none */
	uint64_t mem_mib; /* guest RAM in MiB */
	unsigned int vcpus; /* 1..CONFIG_MAX_VCPUS */
	enum console_kind console;
	const char *console_path; /* CONSOLE_FILE: file to append to */
	const char *run_cmd; /* --run: command for guest init */
	size_t run_len;
	bool boot_timer; /* log the guest boot time */
	bool stats; /* print exit and timing figures */
	enum pvm_mode pvm;
	struct drive_config drives[CONFIG_MAX_DRIVES];
	unsigned int nr_drives;
	bool no_rng; /* no virtio-rng device */
	struct vsock_config vsock;
};

#endif /* EMBER_VMM_CONFIG_H */
