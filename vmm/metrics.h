/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Figures about the VM, for people and programs:
 * - metrics__print(): --stats, one line at the end of a run (timings, VM
 *   exits by reason, ember's own memory);
 * - metrics lines (PUT /metrics): one JSON object per line, written on
 *   FlushMetrics and every 60 s while the VM runs, as Firecracker writes
 *   them: "utc_timestamp_ms" first, then groups of counters, each the
 *   change since the previous line.  ember's groups: "vcpu" (exits by
 *   reason), "vmm" (pauses, ms paused, uptime), one per device that counts
 *   ("block_<drive id>", "entropy": requests, read_bytes, write_bytes,
 *   errors), and "get_api_requests", "put_api_requests",
 *   "patch_api_requests" ("<endpoint>_count", "<endpoint>_fails").
 */
#ifndef EMBER_VMM_METRICS_H
#define EMBER_VMM_METRICS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct vm;
struct metrics;

#define METRICS_API_MAX 32 /* distinct (method, endpoint) pairs counted */

/* API requests per (method, endpoint), counted by the control socket. */
struct metrics_api {
	pthread_mutex_t lock;
	unsigned int n;
	struct metrics_api_entry {
		char method[8];
		char endpoint[24];
		uint64_t count, fails; /* totals */
		uint64_t last_count, last_fails; /* at the previous line */
	} e[METRICS_API_MAX];
};

/*
 * metrics__print() - one line on stderr, "ember-stats: key=value ...":
 * first_run_ms, first_console_ms (the guest's first transmitted console
 * byte), boot_timer_ms, stop_ms (0 when it did not happen), exits_io,
 * exits_mmio, exits_emulated, exits_intr, exits_other,
 * console_dropped_bytes (guest console output lost to a reader that went
 * away or errors), pauses, paused_ms, rss_kib, guest_resident_kib,
 * vmm_rss_kib.  Call once the vCPUs have stopped.
 */
void metrics__print(const struct vm *vm);

/* metrics__api_init() / _destroy() - an empty API counter table. */
void metrics__api_init(struct metrics_api *a);
void metrics__api_destroy(struct metrics_api *a);

/*
 * metrics__count_api() - one request of @method (GET, PUT, PATCH) to
 * @endpoint (a short name such as "machine_cfg"), failed or not.  Pairs
 * past METRICS_API_MAX are not counted.  Any thread.
 */
void metrics__count_api(struct metrics_api *a, const char *method,
			const char *endpoint, bool failed);

/*
 * metrics__open() - a metrics sink writing lines to @fd (owned from now
 * on: metrics__close() closes it).  Returns it, or NULL without memory.
 */
struct metrics *metrics__open(int fd);

/*
 * metrics__flush() - write one line about @vm and @api (see above) on the
 * event thread.  A line that cannot be written whole (a full FIFO) is
 * dropped and counted ("missed_metrics_count" in the next line's "vmm").
 */
void metrics__flush(struct metrics *m, struct vm *vm, struct metrics_api *api);

/* metrics__close() - close the sink; NULL is fine. */
void metrics__close(struct metrics *m);

#endif /* EMBER_VMM_METRICS_H */
