// SPDX-License-Identifier: Apache-2.0
/* Run figures (see metrics.h). */
#include "metrics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "backends/console_out.h"
#include "log.h"
#include "vm.h"

static long metrics__rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* Resident pages of the guest RAM mapping, by mincore(2). */
static long metrics__guest_resident_kib(const struct vm *vm)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t pages, i, chunk = 1 << 20, n;
	unsigned char *vec;
	long resident = 0;

	if (!vm->mem.map || page <= 0)
		return 0;
	pages = vm->mem.map_bytes / (size_t)page;
	vec = malloc(chunk);
	if (!vec)
		return -1;
	for (i = 0; i < pages; i += n) {
		size_t k;

		n = pages - i < chunk ? pages - i : chunk;
		if (mincore((char *)vm->mem.map + i * (size_t)page,
			    n * (size_t)page, vec) < 0) {
			resident = -1;
			break;
		}
		for (k = 0; k < n; k++)
			resident += vec[k] & 1;
	}
	free(vec);
	return resident < 0 ? -1 : resident * (page / 1024);
}

void metrics__print(const struct vm *vm)
{
	long rss = metrics__rss_kib(), guest = metrics__guest_resident_kib(vm);

	fprintf(stderr,
		"ember-stats: first_run_ms=%.3f first_console_ms=%.3f "
		"boot_timer_ms=%.3f stop_ms=%.3f exits_io=%llu exits_mmio=%llu "
		"exits_emulated=%llu exits_intr=%llu exits_other=%llu "
		"console_dropped_bytes=%llu pauses=%llu paused_ms=%.3f "
		"rss_kib=%ld guest_resident_kib=%ld vmm_rss_kib=%ld\n",
		vm->vctx.t_first_run_ms, console_out__first_ms(vm->console_out),
		vm->t_boot_timer_ms, vm->t_stop_ms,
		(unsigned long long)vm->vctx.exits[EXIT_IO],
		(unsigned long long)vm->vctx.exits[EXIT_MMIO],
		(unsigned long long)vm->vctx.exits[EXIT_EMULATED],
		(unsigned long long)vm->vctx.exits[EXIT_INTR],
		(unsigned long long)vm->vctx.exits[EXIT_OTHER],
		(unsigned long long)console_out__dropped(vm->console_out),
		(unsigned long long)vm->pauses, vm->paused_ms, rss, guest,
		rss >= 0 && guest >= 0 ? rss - guest : -1);
}

/* --- metrics lines ------------------------------------------------------- */

struct metrics {
	int fd;
	uint64_t missed; /* lines dropped since the last one written */
	uint64_t exits[EXIT_KINDS]; /* at the previous line */
	uint64_t pauses;
	double paused_ms;
	struct dev_stats dev[DEVMGR_MAX_DEVICES];
};

void metrics__api_init(struct metrics_api *a)
{
	memset(a, 0, sizeof(*a));
	pthread_mutex_init(&a->lock, NULL);
}

void metrics__api_destroy(struct metrics_api *a)
{
	pthread_mutex_destroy(&a->lock);
}

void metrics__count_api(struct metrics_api *a, const char *method,
			const char *endpoint, bool failed)
{
	struct metrics_api_entry *e = NULL;
	unsigned int i;

	pthread_mutex_lock(&a->lock);
	for (i = 0; i < a->n && !e; i++)
		if (!strcmp(a->e[i].method, method) &&
		    !strcmp(a->e[i].endpoint, endpoint))
			e = &a->e[i];
	if (!e && a->n < METRICS_API_MAX) {
		e = &a->e[a->n++];
		snprintf(e->method, sizeof(e->method), "%s", method);
		snprintf(e->endpoint, sizeof(e->endpoint), "%s", endpoint);
	}
	if (e) {
		e->count++;
		e->fails += failed;
	}
	pthread_mutex_unlock(&a->lock);
}

struct metrics *metrics__open(int fd)
{
	struct metrics *m = calloc(1, sizeof(*m));

	if (m)
		m->fd = fd;
	return m;
}

void metrics__close(struct metrics *m)
{
	if (!m)
		return;
	close(m->fd);
	free(m);
}

/* @o[@key] = the delta of a counter; the new value is remembered. */
static void metrics__delta(json_t *o, const char *key, uint64_t now,
			   uint64_t *last)
{
	json_object_set_new(o, key, json_integer((json_int_t)(now - *last)));
	*last = now;
}

static void metrics__api_groups(json_t *line, struct metrics_api *a)
{
	static const char *const methods[] = { "GET", "PUT", "PATCH" };
	static const char *const groups[] = { "get_api_requests",
					      "put_api_requests",
					      "patch_api_requests" };
	unsigned int g, i;
	char key[48];

	pthread_mutex_lock(&a->lock);
	for (g = 0; g < 3; g++) {
		json_t *o = json_object();

		for (i = 0; i < a->n; i++) {
			struct metrics_api_entry *e = &a->e[i];

			if (strcmp(e->method, methods[g]))
				continue;
			snprintf(key, sizeof(key), "%s_count", e->endpoint);
			metrics__delta(o, key, e->count, &e->last_count);
			snprintf(key, sizeof(key), "%s_fails", e->endpoint);
			metrics__delta(o, key, e->fails, &e->last_fails);
		}
		json_object_set_new(line, groups[g], o);
	}
	pthread_mutex_unlock(&a->lock);
}

void metrics__flush(struct metrics *m, struct vm *vm, struct metrics_api *api)
{
	static const char *const exit_names[EXIT_KINDS] = {
		[EXIT_IO] = "exits_io",
		[EXIT_MMIO] = "exits_mmio",
		[EXIT_EMULATED] = "exits_emulated",
		[EXIT_INTR] = "exits_intr",
		[EXIT_OTHER] = "exits_other",
	};
	json_t *line = json_object(), *vcpu = json_object(),
	       *vmm = json_object();
	struct timespec now;
	unsigned int i;
	double paused;
	char *text;
	size_t len;

	clock_gettime(CLOCK_REALTIME, &now);
	json_object_set_new(line, "utc_timestamp_ms",
			    json_integer((json_int_t)now.tv_sec * 1000 +
					 now.tv_nsec / 1000000));
	for (i = 0; i < EXIT_KINDS; i++)
		metrics__delta(
			vcpu, exit_names[i],
			__atomic_load_n(&vm->vctx.exits[i], __ATOMIC_RELAXED),
			&m->exits[i]);
	json_object_set_new(line, "vcpu", vcpu);

	pthread_mutex_lock(&vm->lock);
	paused = vm->paused_ms + (vm->state == VM_STATE_PAUSED ?
					  log__ms() - vm->t_paused_ms :
					  0);
	metrics__delta(vmm, "pauses", vm->pauses, &m->pauses);
	pthread_mutex_unlock(&vm->lock);
	json_object_set_new(vmm, "paused_ms", json_real(paused - m->paused_ms));
	m->paused_ms = paused;
	json_object_set_new(vmm, "uptime_ms", json_real(log__ms()));
	json_object_set_new(vmm, "missed_metrics_count",
			    json_integer((json_int_t)m->missed));
	json_object_set_new(line, "vmm", vmm);

	for (i = 0; i < vm->dm.nr && i < DEVMGR_MAX_DEVICES; i++) {
		const struct devmgr_dev *d = &vm->dm.dev[i];
		struct dev_stats st;
		char key[DEVMGR_ID_MAX + 32];
		json_t *o;

		if (!d->dev || !d->cls->stats || !d->cls->metrics_key)
			continue;
		d->cls->stats(d->dev, &st);
		o = json_object();
		metrics__delta(o, "requests", st.requests, &m->dev[i].requests);
		metrics__delta(o, "read_bytes", st.read_bytes,
			       &m->dev[i].read_bytes);
		metrics__delta(o, "write_bytes", st.write_bytes,
			       &m->dev[i].write_bytes);
		metrics__delta(o, "errors", st.errors, &m->dev[i].errors);
		/* Firecracker's name for a request a limiter held back. */
		metrics__delta(o, "rate_limiter_throttled_events", st.throttled,
			       &m->dev[i].throttled);
		snprintf(key, sizeof(key), d->cls->metrics_key, d->id);
		json_object_set_new(line, key, o);
	}
	metrics__api_groups(line, api);

	text = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(line);
	if (!text) {
		m->missed++;
		return;
	}
	len = strlen(text);
	text[len] = '\n'; /* over the NUL: one write(2), one line */
	if (write(m->fd, text, len + 1) == (ssize_t)(len + 1))
		m->missed = 0;
	else
		m->missed++;
	free(text);
}
