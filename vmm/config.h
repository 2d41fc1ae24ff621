/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The VM's configuration: a plain struct that the control calls
 * (vmm/control/) fill, from ember's flags and config file
 * (api/server/main.c) or the control socket.  Validated by vm__create(),
 * which owns no pointer in it.
 */
#ifndef EMBER_VMM_CONFIG_H
#define EMBER_VMM_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../boot/layout.h"
#include "../devices/rate_limiter.h" /* struct rate_limiter_config */

enum console_kind { CONSOLE_STDIO = 0, CONSOLE_NONE, CONSOLE_FILE };
enum pvm_mode { PVM_AUTO = 0, PVM_ON, PVM_OFF };

#define CONFIG_MAX_VCPUS 32 /* the MP table at the EBDA holds 37 */

/* Guest RAM in MiB. */
#define CONFIG_MEM_MIN_MIB (LAYOUT_RAM_MIN >> 20)
#define CONFIG_MEM_MAX_MIB (LAYOUT_RAM_MAX >> 20)

/*
 * Kata configures its root file system and a pool of 8 placeholder
 * drives (PATCHed with real images later): 9, so 16.  The virtio-mmio
 * slots (19 IOAPIC pins) bound drives, nets and the rest together.
 */
#define CONFIG_MAX_DRIVES 16
#define CONFIG_MAX_NETS	  4

/* One virtio-blk drive (--drive path=FILE[,ro][,root][,id=NAME]). */
struct drive_config {
	const char *path; /* raw image, or an overlay (snapshot/overlay.h) */
	const char *id; /* GET_ID serial; NULL: "drive<N>" */
	bool read_only; /* VIRTIO_BLK_F_RO; the file is opened O_RDONLY */
	bool root; /* root=/dev/vda unless --append sets root= */
	const char *partuuid; /* root: root=PARTUUID=<it> instead; NULL */
	struct rate_limiter_config rate_limiter; /* all zero: none */
};

/*
 * One virtio-net device over a tap (--net tap=NAME[,mac=MAC][,id=ID],
 * PUT /network-interfaces/{iface_id}).  The tap must exist or be
 * creatable by this process (TUNSETIFF); ember never configures it.
 */
struct net_config {
	const char *iface_id; /* [A-Za-z0-9_]{1,64}; NULL: "net<N>" */
	const char *host_dev_name; /* the tap, 1..IFNAMSIZ-1 bytes */
	uint8_t guest_mac[6];
	bool has_mac; /* else the guest picks a random one */
	struct rate_limiter_config rx_rate_limiter, tx_rate_limiter;
};

/*
 * The virtio-vsock device (--vsock cid=N,uds=PATH): the guest's CID and
 * the host-side Unix socket (vmm/backends/vsock_uds.h).  uds_path NULL: none.
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
	struct net_config nets[CONFIG_MAX_NETS];
	unsigned int nr_nets;
};

/*
 * The limits, checked in one place for every client (ember's flags,
 * emberctl, the coming control API), each with the same one-line reason
 * in @err (@errlen bytes, no prefix: the caller names the flag).
 */

/*
 * config__parse_uint() - @s as a plain decimal (no sign, no spaces) in
 * [@lo, @hi] into *@out.  Returns 0 or -EINVAL.
 */
int config__parse_uint(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

/*
 * config__parse_mem() - guest RAM: @s in MiB, CONFIG_MEM_MIN_MIB to
 * CONFIG_MEM_MAX_MIB (-EINVAL) and at most this host's RAM (-E2BIG).
 * Returns 0 with *@mib set, or the negative errno with @err filled.
 */
int config__parse_mem(const char *s, uint64_t *mib, char *err, size_t errlen);

/* config__check_mem() - config__parse_mem() for a number already parsed. */
int config__check_mem(uint64_t mib, char *err, size_t errlen);

/*
 * config__parse_vcpus() - @s vCPUs, 1 to CONFIG_MAX_VCPUS.  Returns 0
 * with *@vcpus set, or -EINVAL with @err filled.
 */
int config__parse_vcpus(const char *s, unsigned int *vcpus, char *err,
			size_t errlen);

/*
 * config__free_strings() - free the strings of @cfg that a snapshot's
 * configuration holds malloc()ed (kernel, initrd, append, drive paths,
 * ids and PARTUUIDs, vsock socket) and set them to NULL.  Only for a
 * configuration whose strings are all malloc()ed (vmm/persist/).
 */
void config__free_strings(struct vm_config *cfg);

/*
 * config__dup_strings() - replace each string config__free_strings()
 * frees with a malloc()ed copy, so that @cfg owns them (a running VM's
 * configuration outlives the caller's strings; vmm/control/).  Returns
 * 0, or -ENOMEM with @cfg unchanged.
 */
int config__dup_strings(struct vm_config *cfg);

/*
 * config__parse_mac() - @s as six hex octets separated by ':'
 * ("06:00:ac:10:00:02") into @mac.  Returns 0, or -EINVAL for another
 * form or a multicast address (the guest's own must be unicast).
 */
int config__parse_mac(const char *s, uint8_t mac[6]);

/*
 * Limits of a token bucket, so that the rate limiter's arithmetic
 * (devices/rate_limiter.h) cannot overflow: size and one_time_burst up to
 * CONFIG_BUCKET_MAX tokens, refill_time_ms up to CONFIG_REFILL_MAX_MS.
 */
#define CONFIG_BUCKET_MAX    (1ULL << 50)
#define CONFIG_REFILL_MAX_MS (1000ULL * 60 * 60 * 24 * 366)

/*
 * config__check_rate_limiter() - both buckets of @r within the limits
 * above (a bucket with size 0 or refill_time_ms 0 is off, whatever else
 * it holds).  Returns 0, or -EINVAL with @err filled, naming the bucket
 * and field as the API does ("bandwidth.size ...").
 */
int config__check_rate_limiter(const struct rate_limiter_config *r, char *err,
			       size_t errlen);

/*
 * config__parse_bucket() - a token bucket written SIZE/MS (ember's flags:
 * SIZE tokens refilled every MS milliseconds, no one-time burst), SIZE 1
 * to CONFIG_BUCKET_MAX and MS 1 to CONFIG_REFILL_MAX_MS, into @tb.
 * Returns 0, or -EINVAL with @tb unchanged.
 */
int config__parse_bucket(const char *s, struct token_bucket_config *tb);

/* config__host_ram_mib() - this host's RAM in MiB (sysinfo); 0: unknown. */
uint64_t config__host_ram_mib(void);

#endif /* EMBER_VMM_CONFIG_H */
