// SPDX-License-Identifier: Apache-2.0
/*
 * The sandbox record: see record.h.  The info file is key=value lines,
 * written whole to info.tmp, synced and renamed over info (a park's
 * "parked" must outlive a host crash); a reader takes the keys it knows
 * and leaves the fields of the others as they were.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "clock.h"
#include "files.h"
#include "record.h"

bool sandbox__is_id(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return i == SANDBOX_ID_LEN;
}

int sandbox__write_info(const char *dir, const struct sandbox_info *i)
{
	char tmp[PATH_MAX], path[PATH_MAX], buf[SANDBOX_INFO_MAX];
	int n;

	if (files__pathf(tmp, sizeof(tmp), "%s/" SANDBOX_INFO_TMP, dir) ||
	    files__pathf(path, sizeof(path), "%s/" SANDBOX_INFO_NAME, dir))
		return -ENAMETOOLONG;
	n = snprintf(buf, sizeof(buf),
		     "supervisor=%d\nsupervisor_start=%" PRIu64 "\n"
		     "ember=%d\nember_start=%" PRIu64 "\n"
		     "created=%" PRId64 "\nready=%" PRId64 "\n"
		     "ttl=%u\nmem=%u\nvcpus=%u\npaused=%" PRId64
		     "\npaused_s=%" PRId64 "\nparked=%d\nsnap=%u\n"
		     "origin=%u\ntemplate=%s\nrestore_load_ms=%u\n"
		     "restore_ready_ms=%u\nsnap_diff=%d\nnet_dev=%d\nnet=%s\n"
		     "jail_root=%s\njailer=%s\njail_uid=%u\njail_gid=%u\n"
		     "spare_drives=%u\nspare_swapped=%u\nttl_len=%u\n"
		     "on_timeout=%s\nauto_resume=%d\nttl_used_ms=%" PRId64
		     "\nrun_since_ms=%" PRId64 "\n",
		     (int)i->supervisor, i->supervisor_start, (int)i->ember,
		     i->ember_start, i->created, i->ready, i->ttl_s, i->mem_mib,
		     i->vcpus, i->paused, i->paused_s, i->parked, i->snap_gen,
		     i->origin, i->template_name, i->restore_load_ms,
		     i->restore_ready_ms, i->snap_diff, i->net_dev,
		     net__mode_name(i->net_mode), i->jail_root, i->jailer,
		     i->jail_uid, i->jail_gid, i->spare_drives,
		     i->spare_swapped, i->ttl_len,
		     i->ttl_park ? "pause" : "kill", i->auto_resume,
		     i->ttl_used_ms, i->run_since_ms);
	if (n < 0 || (size_t)n >= sizeof(buf) ||
	    strchr(i->template_name, '\n') || strchr(i->jail_root, '\n') ||
	    strchr(i->jailer, '\n'))
		return -EINVAL;
	/* Synced: a park's "parked" must outlive a host crash. */
	return files__replace(path, tmp, buf, (size_t)n, 0600, FILES_SYNC);
}

void sandbox__snap_gone(const char *dir, unsigned int gen)
{
	char path[PATH_MAX];

	if (files__pathf(path, sizeof(path), "%s/" SANDBOX_SNAP_STATE, dir,
			 gen) == 0)
		unlink(path);
	if (files__pathf(path, sizeof(path), "%s/" SANDBOX_SNAP_MEM, dir,
			 gen) == 0)
		unlink(path);
}

bool sandbox__holds_snapshot(const char *dir)
{
	struct dirent *e;
	bool found = false;
	DIR *d = opendir(dir);

	if (!d)
		return false;
	while (!found && (e = readdir(d))) {
		size_t n = strlen(e->d_name);

		found = !strncmp(e->d_name, "snap-", 5) && n > 11 &&
			!strcmp(e->d_name + n - 6, ".state");
	}
	closedir(d);
	return found;
}

/*
 * An info file from before the TTL counted on CLOCK_MONOTONIC (a sandbox
 * parked then): the TTL it used, from its wall-clock stamps.
 */
static void ttl_used_from_wall(struct sandbox_info *i)
{
	int64_t end = i->paused ? i->paused : clock__wall_s(),
		used = end - i->ready - i->paused_s;

	i->ttl_used_ms = used > 0 ? used * 1000 : 0;
	i->run_since_ms = i->paused ? 0 : clock__mono_ms();
}

int sandbox__read_info(const char *dir, struct sandbox_info *i)
{
	char path[PATH_MAX], buf[SANDBOX_INFO_MAX + 1], *text, *key, *val,
		*save = NULL;
	bool used_seen = false;
	ssize_t n;

	if (files__pathf(path, sizeof(path), "%s/" SANDBOX_INFO_NAME, dir))
		return -ENAMETOOLONG;
	n = files__read_text(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	for (text = buf; files__next_kv(text, &save, &key, &val); text = NULL) {
		char *end;
		long long v;

		if (!strcmp(key, "template")) {
			snprintf(i->template_name, sizeof(i->template_name),
				 "%s", val);
			continue;
		}
		if (!strcmp(key, "net")) {
			net__mode_parse(val, &i->net_mode);
			continue;
		}
		if (!strcmp(key, "jail_root")) {
			snprintf(i->jail_root, sizeof(i->jail_root), "%s", val);
			/* The host reaches the jailed ember's sockets there. */
			if (i->jail_root[0])
				files__pathf(i->uds, sizeof(i->uds),
					     "%s/" SANDBOX_UDS_NAME,
					     i->jail_root);
			continue;
		}
		if (!strcmp(key, "on_timeout")) {
			i->ttl_park = !strcmp(val, "pause");
			continue;
		}
		if (!strcmp(key, "jailer")) {
			snprintf(i->jailer, sizeof(i->jailer), "%s", val);
			continue;
		}
		errno = 0;
		v = strtoll(val, &end, 10);
		if (errno || *end || end == val || v < 0)
			continue;
		if (!strcmp(key, "supervisor") && v <= INT_MAX)
			i->supervisor = (pid_t)v;
		else if (!strcmp(key, "supervisor_start"))
			i->supervisor_start = (uint64_t)v;
		else if (!strcmp(key, "ember") && v <= INT_MAX)
			i->ember = (pid_t)v;
		else if (!strcmp(key, "ember_start"))
			i->ember_start = (uint64_t)v;
		else if (!strcmp(key, "created"))
			i->created = v;
		else if (!strcmp(key, "ready"))
			i->ready = v;
		else if (!strcmp(key, "ttl") && v <= UINT_MAX)
			i->ttl_s = (unsigned int)v;
		else if (!strcmp(key, "mem") && v <= UINT_MAX)
			i->mem_mib = (unsigned int)v;
		else if (!strcmp(key, "vcpus") && v <= UINT_MAX)
			i->vcpus = (unsigned int)v;
		else if (!strcmp(key, "paused"))
			i->paused = v;
		else if (!strcmp(key, "paused_s"))
			i->paused_s = v;
		else if (!strcmp(key, "parked"))
			i->parked = v != 0;
		else if (!strcmp(key, "snap") && v <= UINT_MAX)
			i->snap_gen = (unsigned int)v;
		else if (!strcmp(key, "origin") && v <= SANDBOX_FROM_PARK)
			i->origin = (unsigned int)v;
		else if (!strcmp(key, "snap_diff"))
			i->snap_diff = v != 0;
		else if (!strcmp(key, "net_dev"))
			i->net_dev = v != 0;
		else if (!strcmp(key, "jail_uid") && v <= UINT_MAX)
			i->jail_uid = (unsigned int)v;
		else if (!strcmp(key, "jail_gid") && v <= UINT_MAX)
			i->jail_gid = (unsigned int)v;
		else if (!strcmp(key, "restore_load_ms") && v <= UINT_MAX)
			i->restore_load_ms = (unsigned int)v;
		else if (!strcmp(key, "restore_ready_ms") && v <= UINT_MAX)
			i->restore_ready_ms = (unsigned int)v;
		else if (!strcmp(key, "spare_drives") &&
			 v <= SANDBOX_MAX_SPARE_DRIVES)
			i->spare_drives = (unsigned int)v;
		else if (!strcmp(key, "spare_swapped") && v <= UINT_MAX)
			i->spare_swapped = (unsigned int)v;
		else if (!strcmp(key, "ttl_len") && v <= UINT_MAX)
			i->ttl_len = (unsigned int)v;
		else if (!strcmp(key, "auto_resume"))
			i->auto_resume = v != 0;
		else if (!strcmp(key, "run_since_ms"))
			i->run_since_ms = v;
		else if (!strcmp(key, "ttl_used_ms")) {
			i->ttl_used_ms = v;
			used_seen = true;
		}
	}
	if (!used_seen && i->ready)
		ttl_used_from_wall(i);
	return 0;
}

int sandbox__info_init(struct sandbox_info *i, const char *state,
		       const char *id)
{
	memset(i, 0, sizeof(*i));
	memcpy(i->id, id, SANDBOX_ID_LEN);
	if (files__pathf(i->dir, sizeof(i->dir), "%s/%s", state, id) ||
	    files__pathf(i->uds, sizeof(i->uds), "%s/" SANDBOX_UDS_NAME,
			 i->dir))
		return -ENAMETOOLONG;
	return 0;
}

int sandbox__lock_probe(const char *dir, int *fd)
{
	char path[PATH_MAX];

	*fd = -1;
	if (files__pathf(path, sizeof(path), "%s/" SANDBOX_LOCK_NAME, dir))
		return -ENAMETOOLONG;
	*fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (*fd < 0)
		return -errno;
	if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	close(*fd);
	*fd = -1;
	return errno == EWOULDBLOCK ? 1 : -errno;
}

int sandbox__wait_unlocked(const char *dir, int ms)
{
	int64_t end = clock__mono_ms() + ms;
	int fd, rc;

	for (;;) {
		rc = sandbox__lock_probe(dir, &fd);
		if (fd >= 0)
			close(fd);
		if (rc != 1)
			return 0;
		if (clock__mono_ms() >= end)
			return -ETIMEDOUT;
		clock__sleep_ms(10);
	}
}

void sandbox__sockets_gone(const char *dir)
{
	static const size_t ulen = sizeof(SANDBOX_UDS_NAME) - 1;
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d;

	if (files__pathf(path, sizeof(path), "%s/" SANDBOX_API_NAME, dir) == 0)
		unlink(path);
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, SANDBOX_UDS_NAME, ulen) ||
		    (e->d_name[ulen] && e->d_name[ulen] != '_'))
			continue;
		if (files__pathf(path, sizeof(path), "%s/%s", dir, e->d_name) ==
		    0)
			unlink(path);
	}
	closedir(d);
}

const char *sandbox__state_name(const struct sandbox_info *i)
{
	if (i->parked)
		return "parked";
	if (!i->ready)
		return "booting";
	return i->paused ? "paused" : "running";
}

/* The ms of TTL @i has used at CLOCK_MONOTONIC @mono_ms. */
static int64_t ttl_used(const struct sandbox_info *i, int64_t mono_ms)
{
	int64_t run = i->run_since_ms && mono_ms > i->run_since_ms ?
			      mono_ms - i->run_since_ms :
			      0;

	return i->ttl_used_ms + run;
}

int64_t sandbox__ttl_left_ms(const struct sandbox_info *i, int64_t mono_ms)
{
	int64_t left;

	if (!i->ttl_s || !i->ready)
		return -1;
	left = (int64_t)i->ttl_s * 1000 - ttl_used(i, mono_ms);
	return left > 0 ? left : 0;
}

int64_t sandbox__ttl_left(const struct sandbox_info *i)
{
	int64_t ms = sandbox__ttl_left_ms(i, clock__mono_ms());

	return ms < 0 ? -1 : (ms + 999) / 1000;
}

int64_t sandbox__ttl_from_now(const struct sandbox_info *i, unsigned int left_s,
			      int64_t mono_ms)
{
	/* Down: what ls then shows (rounded up) is @left_s, never more. */
	return ttl_used(i, mono_ms) / 1000 + (int64_t)left_s;
}

void sandbox__run_stop(struct sandbox_info *i, int64_t wall_s, int64_t mono_ms)
{
	i->ttl_used_ms = ttl_used(i, mono_ms);
	i->run_since_ms = 0;
	i->paused = wall_s > 0 ? wall_s : 1;
}

void sandbox__run_start(struct sandbox_info *i, int64_t wall_s, int64_t mono_ms)
{
	/* paused_s is what `ls` may show; the TTL does not count on it. */
	if (i->paused)
		i->paused_s += wall_s > i->paused ? wall_s - i->paused : 0;
	i->paused = 0;
	i->run_since_ms = mono_ms > 0 ? mono_ms : 1;
}
