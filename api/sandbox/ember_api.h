/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The client side of ember's control socket (Firecracker's REST API on a
 * Unix socket, shared/DESIGN.md "Control API"): the few calls the sandbox
 * library makes.  HTTP through libcurl, JSON through jansson.
 *
 * Every call takes the socket's path, returns 0 when ember did what was
 * asked (HTTP 204, or 200 for a query) and otherwise a negative errno
 * with one line in @err (@errlen bytes): -EIO with ember's own fault
 * message ("ember refused (HTTP 400): ...") when it answered, -EIO or
 * -ETIMEDOUT with libcurl's words when it did not, -ENOMEM.
 */
#ifndef EMBER_API_EMBER_API_H
#define EMBER_API_EMBER_API_H

#include <stdbool.h>
#include <stddef.h>

/* How long a snapshot may take to write or load (2 GiB at disk speed). */
#define EMBER_API_SNAPSHOT_S 600
/* How long any other call may take (a pause: up to 1 s per vCPU). */
#define EMBER_API_CALL_S 40

/*
 * ember_api__state() - GET /: the VM's state ("Not started", "Running",
 * "Paused") into @state (@statesz bytes), within @timeout_ms (> 0).
 * -ENOENT or -ECONNREFUSED when nothing listens on @sock (yet), so that
 * a caller can poll it while ember starts.
 */
int ember_api__state(const char *sock, int timeout_ms, char *state,
		     size_t statesz, char *err, size_t errlen);

/* ember_api__pause() - PATCH /vm {"state":"Paused"} or "Resumed". */
int ember_api__pause(const char *sock, bool pause, char *err, size_t errlen);

/*
 * ember_api__snapshot_create() - PUT /snapshot/create on a paused VM: the
 * state file @state_path and the memory file @mem_path (absolute paths;
 * ember creates both, 0600), "Full" or, with @diff, "Diff" (only the
 * pages changed since the VM was restored; the state file then names the
 * memory file it was restored from, which must stay).  Not compressed:
 * a full memory file can be mapped MAP_PRIVATE by the restores.
 */
int ember_api__snapshot_create(const char *sock, bool diff,
			       const char *state_path, const char *mem_path,
			       char *err, size_t errlen);

/* The most drive_overrides one load takes (ember's drives). */
#define EMBER_API_MAX_DRIVES 8

/* What PUT /snapshot/load gets: every path absolute. */
struct ember_api_load {
	const char *state_path; /* snapshot_path */
	const char *mem_path; /* mem_backend File (a diff's own file) */
	const char *uds_path; /* vsock_override: the new vsock socket */
	/* drive_overrides: drive drive_id[i] gets the file disk_path[i] */
	const char *drive_id[EMBER_API_MAX_DRIVES];
	const char *disk_path[EMBER_API_MAX_DRIVES];
	unsigned int nr_drives; /* 0..EMBER_API_MAX_DRIVES */
};

/*
 * ember_api__snapshot_load() - PUT /snapshot/load with resume_vm true, in
 * an ember started with only --api-sock: on 0 the vCPUs run.
 */
int ember_api__snapshot_load(const char *sock, const struct ember_api_load *l,
			     char *err, size_t errlen);

/*
 * ember_api__update_drive() - PATCH /drives/@drive_id {"drive_id",
 * "path_on_host": @path} on a started VM: the drive's backing file
 * becomes @path (absolute; opened read-write unless the drive is
 * read-only) and the guest is told its new capacity (a virtio
 * config-change interrupt).  @drive_id: [A-Za-z0-9_], 1 to 64 bytes.
 */
int ember_api__update_drive(const char *sock, const char *drive_id,
			    const char *path, char *err, size_t errlen);

#endif /* EMBER_API_EMBER_API_H */
