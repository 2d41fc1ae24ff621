// SPDX-License-Identifier: Apache-2.0
/* The configuration's limits, checked in one place (see config.h). */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>

int config__parse_uint(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

uint64_t config__host_ram_mib(void)
{
	struct sysinfo si;

	if (sysinfo(&si) < 0)
		return 0;
	return (uint64_t)si.totalram * si.mem_unit >> 20;
}

int config__check_mem(uint64_t mib, char *err, size_t errlen)
{
	uint64_t host;

	if (mib < CONFIG_MEM_MIN_MIB || mib > CONFIG_MEM_MAX_MIB) {
		snprintf(err, errlen,
			 "guest RAM must be a whole number of MiB from %llu to "
			 "%llu",
			 (unsigned long long)CONFIG_MEM_MIN_MIB,
			 (unsigned long long)CONFIG_MEM_MAX_MIB);
		return -EINVAL;
	}
	/*
	 * Guest RAM is only allocated as the guest touches it, but the
	 * guest's kernel touches its page tables for all of it at boot, and
	 * a guest bigger than the host ends in swap or the OOM killer.
	 */
	host = config__host_ram_mib();
	if (host && mib > host) {
		snprintf(err, errlen,
			 "more guest RAM than this host has (%llu MiB)",
			 (unsigned long long)host);
		return -E2BIG;
	}
	return 0;
}

int config__parse_mem(const char *s, uint64_t *mib, char *err, size_t errlen)
{
	uint64_t v = 0;
	int ret;

	/* Out of range and not a number get the same words. */
	if (config__parse_uint(s, 0, UINT64_MAX, &v))
		v = 0;
	ret = config__check_mem(v, err, errlen);
	if (!ret)
		*mib = v;
	return ret;
}

int config__parse_vcpus(const char *s, unsigned int *vcpus, char *err,
			size_t errlen)
{
	uint64_t v;

	if (config__parse_uint(s, 1, CONFIG_MAX_VCPUS, &v)) {
		snprintf(err, errlen,
			 "vCPUs must be a whole number from 1 to %d",
			 CONFIG_MAX_VCPUS);
		return -EINVAL;
	}
	*vcpus = (unsigned int)v;
	return 0;
}

void config__free_strings(struct vm_config *cfg)
{
	unsigned int i;

	free((char *)cfg->kernel_path);
	free((char *)cfg->initrd_path);
	free((char *)cfg->append);
	for (i = 0; i < cfg->nr_drives && i < CONFIG_MAX_DRIVES; i++) {
		free((char *)cfg->drives[i].path);
		free((char *)cfg->drives[i].id);
		free((char *)cfg->drives[i].partuuid);
		cfg->drives[i].path = cfg->drives[i].id = NULL;
		cfg->drives[i].partuuid = NULL;
	}
	for (i = 0; i < cfg->nr_nets && i < CONFIG_MAX_NETS; i++) {
		free((char *)cfg->nets[i].iface_id);
		free((char *)cfg->nets[i].host_dev_name);
		cfg->nets[i].iface_id = cfg->nets[i].host_dev_name = NULL;
	}
	free((char *)cfg->vsock.uds_path);
	cfg->kernel_path = cfg->initrd_path = cfg->append = NULL;
	cfg->vsock.uds_path = NULL;
}

/* A copy of @s (NULL stays NULL); *@nomem set when it cannot be made. */
static const char *config__dup(const char *s, bool *nomem)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*nomem = true;
	return d;
}

int config__dup_strings(struct vm_config *cfg)
{
	struct vm_config d = *cfg;
	bool nomem = false;
	unsigned int i;

	d.kernel_path = config__dup(cfg->kernel_path, &nomem);
	d.initrd_path = config__dup(cfg->initrd_path, &nomem);
	d.append = config__dup(cfg->append, &nomem);
	for (i = 0; i < cfg->nr_drives && i < CONFIG_MAX_DRIVES; i++) {
		d.drives[i].path = config__dup(cfg->drives[i].path, &nomem);
		d.drives[i].id = config__dup(cfg->drives[i].id, &nomem);
		d.drives[i].partuuid =
			config__dup(cfg->drives[i].partuuid, &nomem);
	}
	for (i = 0; i < cfg->nr_nets && i < CONFIG_MAX_NETS; i++) {
		d.nets[i].iface_id = config__dup(cfg->nets[i].iface_id, &nomem);
		d.nets[i].host_dev_name =
			config__dup(cfg->nets[i].host_dev_name, &nomem);
	}
	d.vsock.uds_path = config__dup(cfg->vsock.uds_path, &nomem);
	if (nomem) {
		config__free_strings(&d);
		return -ENOMEM;
	}
	*cfg = d;
	return 0;
}

int config__check_rate_limiter(const struct rate_limiter_config *r, char *err,
			       size_t errlen)
{
	const struct token_bucket_config *tb[2] = { &r->bandwidth, &r->ops };
	static const char *const names[2] = { "bandwidth", "ops" };
	unsigned int i;

	for (i = 0; i < 2; i++) {
		const char *bad = NULL;

		if (tb[i]->size > CONFIG_BUCKET_MAX)
			bad = "size";
		else if (tb[i]->one_time_burst > CONFIG_BUCKET_MAX)
			bad = "one_time_burst";
		else if (tb[i]->refill_time_ms > CONFIG_REFILL_MAX_MS)
			bad = "refill_time";
		if (bad) {
			snprintf(err, errlen,
				 "%s.%s is out of range (size and "
				 "one_time_burst at most %llu, refill_time at "
				 "most %llu ms)",
				 names[i], bad, CONFIG_BUCKET_MAX,
				 CONFIG_REFILL_MAX_MS);
			return -EINVAL;
		}
	}
	return 0;
}

int config__parse_bucket(const char *s, struct token_bucket_config *tb)
{
	const char *slash = s ? strchr(s, '/') : NULL;
	char size[24];
	uint64_t n, ms;

	if (!slash || (size_t)(slash - s) >= sizeof(size))
		return -EINVAL;
	memcpy(size, s, (size_t)(slash - s));
	size[slash - s] = 0;
	if (config__parse_uint(size, 1, CONFIG_BUCKET_MAX, &n) ||
	    config__parse_uint(slash + 1, 1, CONFIG_REFILL_MAX_MS, &ms))
		return -EINVAL;
	*tb = (struct token_bucket_config){ .size = n, .refill_time_ms = ms };
	return 0;
}

int config__parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int i, v;
	int n;

	if (!s || strlen(s) != 17)
		return -EINVAL;
	for (i = 0; i < 6; i++) {
		const char *p = s + i * 3;

		if (!isxdigit((unsigned char)p[0]) ||
		    !isxdigit((unsigned char)p[1]) || (i < 5 && p[2] != ':'))
			return -EINVAL;
		if (sscanf(p, "%2x%n", &v, &n) != 1 || n != 2)
			return -EINVAL;
		mac[i] = (uint8_t)v;
	}
	return (mac[0] & 1) ? -EINVAL : 0;
}
