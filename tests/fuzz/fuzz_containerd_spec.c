// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer: the containerd shim's OCI spec reader (config.json, the Exec
 * request's process) and containerd's mount options.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../api/containerd/oci_spec.h"
#include "../../api/containerd/rootfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct oci_spec s;
	struct oci_process p;
	unsigned int mem, vcpus;
	char err[256], buf[64], *opts[9], *copy;
	unsigned long flags;
	size_t i, n = 0;

	if (oci_spec__parse((const char *)data, size, &s, err, sizeof(err)) ==
	    0)
		oci_spec__vm_size(&s, 128, &mem, &vcpus);
	oci_spec__free(&s);
	oci_process__parse((const char *)data, size, &p, err, sizeof(err));
	oci_process__free(&p);
	/* The input as up to 8 comma-separated mount options. */
	copy = malloc(size + 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	copy[size] = '\0';
	opts[n++] = copy;
	for (i = 0; i < size && n < 8; i++)
		if (copy[i] == ',') {
			copy[i] = '\0';
			opts[n++] = copy + i + 1;
		}
	opts[n] = NULL;
	rootfs__mount_flags((const char *const *)opts, &flags, buf,
			    sizeof(buf));
	free(copy);
	return 0;
}
