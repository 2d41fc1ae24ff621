/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --config-file: Firecracker's JSON configuration (the shape GET /vm/config
 * returns: "machine-config", "boot-source", "drives", "network-interfaces",
 * "vsock", "entropy", "logger", "metrics", ...), applied through the same
 * body checks as the API (body.h), in Firecracker's order.  Unknown
 * top-level keys are ignored, as Firecracker does; sections ember lacks
 * (balloon, MMDS, CPU templates) are refused unless null or empty.
 */
#ifndef EMBER_API_SERVER_CONFIG_FILE_H
#define EMBER_API_SERVER_CONFIG_FILE_H

#include "../../vmm/control.h"

/* The largest configuration file read. */
#define CONFIG_FILE_MAX (1024 * 1024)

/*
 * api_config__apply() - read @path and configure @c from it (not start).
 * Returns 0, or a negative errno with the reason in @e (naming the
 * section); sections before the bad one stay applied.
 */
int api_config__apply(struct control *c, const char *path,
		      struct control_err *e);

#endif /* EMBER_API_SERVER_CONFIG_FILE_H */
