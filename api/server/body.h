/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Firecracker's request bodies as control calls: each section of the
 * configuration (machine-config, boot-source, drives, vsock, entropy,
 * logger, metrics) checked field by field against its schema (types,
 * required fields, unknown fields refused where Firecracker refuses them)
 * and applied through vmm/control.h.  The routes (routes.c) and
 * --config-file (config_file.c) share them, so both take exactly the same
 * JSON.  JSON goes through jansson; nothing here parses text by hand.
 */
#ifndef EMBER_API_SERVER_BODY_H
#define EMBER_API_SERVER_BODY_H

#include <stdbool.h>

#include <jansson.h>

#include "../../vmm/control.h"

/*
 * The prefix Firecracker gives a body that does not fit its schema:
 * "An error occurred when deserializing the json body of a request: ".
 */
#define BODY_JSON_ERROR \
	"An error occurred when deserializing the json body of a request: "

/*
 * Each body__*() takes the parsed object @o (not owned), checks it and
 * makes the control call.  Returns 0; -EINVAL with @e filled for a body
 * that does not fit the schema (BODY_JSON_ERROR...) ; or the control
 * call's negative errno with its message in @e.
 */

/*
 * body__rate_limiter() - Firecracker's RateLimiter object @v (not owned;
 * NULL or null: no limiter) into @r: {bandwidth, ops}, each a TokenBucket
 * {size, one_time_burst, refill_time (ms)} or null; unknown fields,
 * negative numbers and values past config__check_rate_limiter() refused.
 * @name (the field it came from) is named in the message.  Returns 0, or
 * -EINVAL with @e filled and @r zeroed.
 */
int body__rate_limiter(json_t *v, const char *name,
		       struct rate_limiter_config *r, struct control_err *e);

/*
 * body__rate_limiter_patch() - a RateLimiter object @v of a PATCH body
 * (checked as by body__rate_limiter()) applied to the limiter @r holds:
 * each bucket @v gives replaces @r's, one left out or null keeps its
 * setting, one with size or refill_time 0 turns off (Firecracker's
 * BucketUpdate None / Update / Disabled).  NULL or null @v changes
 * nothing.  Returns 0, or -EINVAL with @e filled and @r unchanged.
 */
int body__rate_limiter_patch(json_t *v, const char *name,
			     struct rate_limiter_config *r,
			     struct control_err *e);

/* PUT /machine-config (@patch false: vcpu_count and mem_size_mib required,
 * absent optional fields back to their defaults) or PATCH (every field
 * optional, at least one). */
int body__machine_config(struct control *c, json_t *o, bool patch,
			 struct control_err *e);

/* PUT /boot-source: kernel_image_path, initrd_path, boot_args. */
int body__boot_source(struct control *c, json_t *o, struct control_err *e);

/*
 * PUT /drives/{@path_id} (@path_id NULL: from --config-file): drive_id
 * (equal to @path_id), path_on_host, is_root_device, is_read_only,
 * partuuid, cache_type, io_engine "Sync", rate_limiter (a RateLimiter
 * object, body__rate_limiter(), or null), socket null.
 */
int body__drive(struct control *c, const char *path_id, json_t *o,
		struct control_err *e);

/*
 * PATCH /drives/{@path_id} after the start (Firecracker's PartialDrive):
 * drive_id, path_on_host, rate_limiter (body__rate_limiter_patch() on the
 * drive's own), at least one of the last two.
 */
int body__drive_patch(struct control *c, const char *path_id, json_t *o,
		      struct control_err *e);

/*
 * PUT /network-interfaces/{@path_id} (@path_id NULL: from --config-file):
 * iface_id (equal to @path_id), host_dev_name, guest_mac, rx_rate_limiter,
 * tx_rate_limiter (RateLimiter objects or null).
 */
int body__net(struct control *c, const char *path_id, json_t *o,
	      struct control_err *e);

/*
 * PATCH /network-interfaces/{@path_id} after the start: iface_id,
 * rx_rate_limiter, tx_rate_limiter, as Firecracker's update: a bucket
 * given replaces the interface's (size or refill_time 0 turns it off),
 * one left out or null keeps its setting.
 */
int body__net_patch(struct control *c, const char *path_id, json_t *o,
		    struct control_err *e);

/* PUT /vsock: guest_cid, uds_path, vsock_id (deprecated, ignored). */
int body__vsock(struct control *c, json_t *o, struct control_err *e);

/* PUT /entropy: rate_limiter (null or absent). */
int body__entropy(struct control *c, json_t *o, struct control_err *e);

/* PUT /logger: log_path, level, show_level, show_log_origin, module. */
int body__logger(struct control *c, json_t *o, struct control_err *e);

/* PUT /metrics: metrics_path (unknown fields ignored, as Firecracker). */
int body__metrics(struct control *c, json_t *o, struct control_err *e);

/*
 * PUT /snapshot/create: snapshot_type ("Full", "Diff"; default Full),
 * snapshot_path, mem_file_path (required), version (deprecated, ignored),
 * compress (ember's extension: bool).
 */
int body__snapshot_create(struct control *c, json_t *o, struct control_err *e);

/*
 * PUT /snapshot/load: snapshot_path (required); mem_backend {backend_type
 * "File" or "Uffd", backend_path} or the deprecated mem_file_path (one of
 * the two); resume_vm; vsock_override {uds_path}; enable_diff_snapshots
 * and track_dirty_pages (accepted); network_overrides [{iface_id,
 * host_dev_name}]; drive_overrides [{drive_id,
 * path_on_host}] (ember's extension).
 */
int body__snapshot_load(struct control *c, json_t *o, struct control_err *e);

#endif /* EMBER_API_SERVER_BODY_H */
