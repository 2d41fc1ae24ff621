// SPDX-License-Identifier: Apache-2.0
/*
 * Watches of envd's filesystem service (fs_watch.h): WatchDir (server
 * streaming), and CreateWatcher / GetWatcherEvents / RemoveWatcher (the
 * Python SDK's synchronous watch_dir; the JS SDK uses WatchDir).
 *
 * Watches poll: the directory (its whole tree when recursive) is listed
 * (fs_script.h) every WATCH_POLL_MS (WatchDir; longer for a tree whose
 * listing takes long) or at each GetWatcherEvents, and each listing is
 * compared with the one before, giving envd's events: CREATE (and WRITE
 * for a new non-empty file), WRITE (size or time changed), CHMOD (mode or
 * owner changed), REMOVE, and RENAME for an entry whose inode shows up
 * under a new name (which gets CREATE).  Changes that come and go within
 * one poll are not seen, and a directory's own time is not a WRITE.  The
 * agent's temporary files (".NAME.ember-XXXXXX", see
 * guest-init/PROTOCOL.md) are left out.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../sandbox/guest_fs.h"
#include "../sandbox/guest_stat.h"
#include "../sandbox/utf8.h"
#include "connect_rpc.h"
#include "envd_path.h"
#include "fs_script.h"
#include "fs_watch.h"

#define WATCH_POLL_MS	  500 /* between listings, at least */
#define WATCH_BIG	  1000 /* entries of a tree listed less often */
#define KEEPALIVE_DEFAULT 50 /* s, envd's Keepalive-Ping-Interval */

/* --- WatchDir ------------------------------------------------------------- */

/*
 * A watch: WatchDir's (a thread polls and streams) or CreateWatcher's
 * (each GetWatcherEvents polls once and answers the events).
 */
struct watch {
	struct e2b_server *srv;
	const struct e2b_guest *gp; /* &g, or the current request's */
	struct e2b_guest g; /* WatchDir's copy, its record's objects
			       deep-copied */
	char path[ENVD_PATH_MAX];
	size_t prefix; /* bytes of an entry's path before its name */
	bool recursive, include_entry;
	uint64_t deadline_ms; /* CLOCK_MONOTONIC; 0: none */
	struct e2b_stream *s; /* the producer's reference (WatchDir) */
	json_t *events; /* GetWatcherEvents' answer while it runs */
	json_t *snap; /* relative name -> {e, t, k, c, i} */
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Whether @name (@n bytes) is an agent's ".NAME.ember-XXXXXX". */
static bool agent_temp(const char *name, size_t n)
{
	return n > 15 && name[0] == '.' && !memcmp(name + n - 13, ".ember-", 7);
}

struct snap_ctx {
	struct watch *w;
	json_t *snap;
};

/* One entry of a listing into the snapshot, keyed by its name there. */
static int add_snap(const struct fs_ent *e, void *ctx)
{
	struct snap_ctx *sc = ctx;
	size_t pre = sc->w->prefix, nlen;
	const char *name;
	char k[96], c[64], ino[24];
	json_t *rel, *o;
	int rc;

	name = guest_stat__last(e->path, e->plen, &nlen);
	if (agent_temp(name, nlen))
		return 0;
	if (e->plen <= pre)
		return 0;
	rel = utf8__json(e->path + pre, e->plen - pre);
	if (!rel)
		return -ENOMEM;
	snprintf(k, sizeof(k), "%lld %lld %ld", e->size, e->mtime, e->nsec);
	snprintf(c, sizeof(c), "%lo %lu %lu", e->mode & 07777, e->uid, e->gid);
	snprintf(ino, sizeof(ino), "%llu", e->ino);
	o = json_pack("{s:o, s:i, s:s, s:s, s:s}", "e",
		      fs_script__entry_json(e), "t", (int)(e->mode & S_IFMT),
		      "k", k, "c", c, "i", ino);
	rc = o ? json_object_set_new(sc->snap, json_string_value(rel), o) : -1;
	json_decref(rel);
	return rc ? -ENOMEM : 0;
}

/*
 * A listing of the watched directory as a snapshot (new reference), or
 * NULL with a Connect code and message.
 */
static json_t *snapshot(struct watch *w, const char **code, char *msg,
			size_t msglen)
{
	struct snap_ctx sc = { .w = w, .snap = json_object() };
	char p[ENVD_SHOWN + 1], why_buf[256];
	struct fs_op o;

	if (!sc.snap) {
		*code = "internal";
		snprintf(msg, msglen, "out of memory");
		return NULL;
	}
	if (fs_script__run(w->srv, w->gp, "list", w->path,
			   w->recursive ? "" : "1", &o, code, msg, msglen)) {
		json_decref(sc.snap);
		return NULL;
	}
	envd_path__shown(w->path, p, sizeof(p));
	if (o.status == 3 || o.status == 4) {
		*code = o.status == 3 ? "not_found" : "invalid_argument";
		snprintf(msg, msglen,
			 o.status == 3 ? "path '%s' not found" :
					 "path '%s' is not a directory",
			 p);
	} else if (o.status) {
		*code = "internal";
		snprintf(msg, msglen, "cannot list '%s': %s", p,
			 fs_script__why(&o, why_buf, sizeof(why_buf)));
	} else if (guest_fs__parse(&o, add_snap, &sc)) {
		*code = "internal";
		snprintf(msg, msglen, "out of memory");
	} else {
		guest_fs__release(&o);
		return sc.snap;
	}
	guest_fs__release(&o);
	json_decref(sc.snap);
	return NULL;
}

/* Send one envelope with @msg (stolen).  0, -EPIPE, -ENOMEM. */
static int send_msg(struct watch *w, json_t *msg)
{
	uint8_t *b;
	size_t len;
	int rc;

	if (!msg)
		return -ENOMEM;
	b = connect__envelope(0, msg, &len);
	json_decref(msg);
	if (!b)
		return -ENOMEM;
	rc = e2b_stream__write(w->s, b, len);
	free(b);
	return rc;
}

static int send_event(struct watch *w, const char *name, const char *type,
		      const json_t *snap_ent)
{
	json_t *fs = json_pack("{s:s, s:s}", "name", name, "type", type);
	const json_t *e = json_object_get(snap_ent, "e");

	if (fs && w->include_entry && e)
		json_object_set(fs, "entry", (json_t *)e);
	if (w->events)
		return json_array_append_new(w->events, fs) ? -ENOMEM : 0;
	return send_msg(w, fs ? json_pack("{s:o}", "filesystem", fs) : NULL);
}

static bool same_field(const json_t *a, const json_t *b, const char *k)
{
	return json_equal(json_object_get(a, k), json_object_get(b, k));
}

/*
 * Events between the snapshots @prev and @cur.  0, or -EPIPE / -ENOMEM
 * (stop).
 */
static int diff(struct watch *w, json_t *prev, json_t *cur)
{
	json_t *born = json_object(), *moved = json_object(), *v, *o;
	const char *k, *ino;
	int rc = 0;

	if (!born || !moved) {
		rc = -ENOMEM;
		goto out;
	}
	/* Inodes of the new names, for renames. */
	json_object_foreach(cur, k, v)
	{
		o = json_object_get(prev, k);
		if ((!o || !same_field(o, v, "t")) &&
		    json_object_set_new(
			    born, json_string_value(json_object_get(v, "i")),
			    json_string(k))) {
			rc = -ENOMEM;
			goto out;
		}
	}
	json_object_foreach(prev, k, v)
	{
		o = json_object_get(cur, k);
		if (o && same_field(o, v, "t"))
			continue;
		ino = json_string_value(json_object_get(v, "i"));
		if (json_object_get(born, ino)) {
			rc = send_event(w, k, "EVENT_TYPE_RENAME", NULL);
			if (!rc && json_object_set_new(moved, ino, json_true()))
				rc = -ENOMEM;
		} else {
			rc = send_event(w, k, "EVENT_TYPE_REMOVE", NULL);
		}
		if (rc)
			goto out;
	}
	json_object_foreach(cur, k, v)
	{
		o = json_object_get(prev, k);
		if (!o || !same_field(o, v, "t")) {
			rc = send_event(w, k, "EVENT_TYPE_CREATE", v);
			ino = json_string_value(json_object_get(v, "i"));
			/* envd sees a new file's writes too. */
			if (!rc &&
			    json_integer_value(json_object_get(v, "t")) ==
				    S_IFREG &&
			    !json_object_get(moved, ino) &&
			    strncmp(json_string_value(json_object_get(v, "k")),
				    "0 ", 2))
				rc = send_event(w, k, "EVENT_TYPE_WRITE", v);
		} else {
			if (json_integer_value(json_object_get(v, "t")) !=
				    S_IFDIR &&
			    !same_field(o, v, "k"))
				rc = send_event(w, k, "EVENT_TYPE_WRITE", v);
			if (!rc && !same_field(o, v, "c"))
				rc = send_event(w, k, "EVENT_TYPE_CHMOD", v);
		}
		if (rc)
			goto out;
	}
out:
	json_decref(born);
	json_decref(moved);
	return rc;
}

static void watch_free(struct watch *w)
{
	if (!w)
		return;
	record__release(&w->g.rec);
	json_decref(w->snap);
	free(w);
}

static void *watch_main(void *arg)
{
	struct watch *w = arg;
	const char *code = NULL;
	char msg[512] = "";
	json_t *cur;
	uint8_t *end;
	uint64_t t0, pause_ms = WATCH_POLL_MS;
	size_t len;
	int rc;

	while (!e2b_stream__gone(w->s)) {
		t0 = now_ms();
		while (now_ms() - t0 < pause_ms && !e2b_stream__gone(w->s))
			usleep(50000);
		if (e2b_stream__gone(w->s))
			break;
		if (w->deadline_ms && now_ms() >= w->deadline_ms) {
			code = "deadline_exceeded";
			snprintf(msg, sizeof(msg),
				 "the watch ran its time out "
				 "(Connect-Timeout-Ms)");
			break;
		}
		t0 = now_ms();
		cur = snapshot(w, &code, msg, sizeof(msg));
		/* A big tree: the guest busy at most a third of the time
		   (a small one's listing is slow only on a busy host). */
		pause_ms = WATCH_POLL_MS;
		if (cur && json_object_size(cur) > WATCH_BIG &&
		    2 * (now_ms() - t0) > pause_ms)
			pause_ms = 2 * (now_ms() - t0);
		if (!cur) {
			if (strcmp(code, "not_found") &&
			    strcmp(code, "invalid_argument"))
				break;
			/* The directory went: its entries went with it. */
			cur = json_object();
			if (cur)
				diff(w, w->snap, cur);
			json_decref(cur);
			code = "not_found";
			envd_path__shown(w->path, msg, sizeof(msg) / 2);
			snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
				 ": the watched directory is gone");
			break;
		}
		rc = diff(w, w->snap, cur);
		if (rc) {
			json_decref(cur);
			code = rc == -EPIPE ? NULL : "internal";
			snprintf(msg, sizeof(msg), "out of memory");
			break;
		}
		json_decref(w->snap);
		w->snap = cur;
	}
	if (!e2b_stream__gone(w->s)) {
		end = connect__end_stream(code, msg, &len);
		if (end)
			e2b_stream__write(w->s, end, len);
		free(end);
	}
	e2b_stream__end(w->s);
	e2b_stream__put(w->s);
	watch_free(w);
	return NULL;
}

int fs_watch__stream(struct e2b_server *srv, const struct e2b_req *r,
		     const struct e2b_guest *g, const json_t *req,
		     const char *path, struct e2b_resp *resp)
{
	uint64_t ka_s = e2b__header_num(r, "Keepalive-Ping-Interval", 6,
					KEEPALIVE_DEFAULT);
	uint64_t timeout_ms = e2b__header_num(r, "Connect-Timeout-Ms", 10, 0);
	json_t *ka = NULL, *start = NULL;
	struct watch *w = calloc(1, sizeof(*w));
	const char *code = "internal";
	char msg[512] = "out of memory";
	uint8_t *kab = NULL;
	pthread_t th;
	size_t klen;
	int rc;

	if (!w)
		return reply__connect_end(resp, code, msg);
	snprintf(w->path, sizeof(w->path), "%s", path);
	w->srv = srv;
	w->gp = &w->g;
	w->g = *g;
	w->g.rec.metadata = json_deep_copy(g->rec.metadata);
	w->g.rec.env_vars = json_deep_copy(g->rec.env_vars);
	w->recursive = json_is_true(json_object_get(req, "recursive"));
	w->include_entry = json_is_true(json_object_get(req, "includeEntry"));
	w->prefix = strcmp(w->path, "/") ? strlen(w->path) + 1 : 1;
	if (timeout_ms)
		w->deadline_ms = now_ms() + timeout_ms;
	if ((g->rec.metadata && !w->g.rec.metadata) ||
	    (g->rec.env_vars && !w->g.rec.env_vars))
		goto fail;
	/* The first listing, before "start": no change after it is lost. */
	w->snap = snapshot(w, &code, msg, sizeof(msg));
	if (!w->snap)
		goto fail;
	code = "internal";
	snprintf(msg, sizeof(msg), "out of memory");
	ka = json_pack("{s:{}}", "keepalive");
	kab = ka ? connect__envelope(0, ka, &klen) : NULL;
	if (!kab)
		goto fail;
	if (ka_s < 1)
		ka_s = 1;
	if (ka_s > 3600)
		ka_s = 3600;
	w->s = e2b_stream__new(kab, klen, (unsigned int)(ka_s * 1000));
	start = json_pack("{s:{}}", "start");
	if (!w->s || !start)
		goto fail;
	rc = send_msg(w, start); /* takes start */
	start = NULL;
	if (rc)
		goto fail;
	reply__stream(resp, "application/connect+json", w->s);
	if (pthread_create(&th, NULL, watch_main, w) == 0) {
		pthread_detach(th);
	} else {
		/* The client got "start": end its stream with the error. */
		uint8_t *end = connect__end_stream(
			"internal", "cannot start a watch thread", &klen);

		if (end)
			e2b_stream__write(w->s, end, klen);
		free(end);
		e2b_stream__end(w->s);
		e2b_stream__put(w->s);
		w->s = NULL;
		watch_free(w);
	}
	json_decref(ka);
	free(kab);
	return 0;
fail:
	if (w->s) { /* never given to a response: both references */
		e2b_stream__put(w->s);
		e2b_stream__put(w->s);
	}
	json_decref(start);
	json_decref(ka);
	free(kab);
	watch_free(w);
	return reply__connect_end(resp, code, msg);
}

/* --- CreateWatcher, GetWatcherEvents, RemoveWatcher ------------------------ */

#define MAX_WATCHERS	 1024 /* in the server */
#define SANDBOX_WATCHERS 64 /* of one sandbox: it cannot starve the others */

#define WATCHER_IDLE_MS (10 * 60 * 1000) /* unpolled this long: dropped */

#define WATCHER_ID_LEN 32 /* hex digits */

struct watcher {
	char id[WATCHER_ID_LEN + 1]; /* "": a free slot */
	char sandbox[SANDBOX_ID_LEN + 1];
	struct watch *w; /* NULL while a GetWatcherEvents uses it */
	uint64_t used_ms;
};

/*
 * The server's watchers.  Global, the one table of this file: a watcher
 * outlives the request that made it and struct e2b_server has no slot
 * for it; watchers_lock guards it (never held across guest calls).
 */
static pthread_mutex_t watchers_lock = PTHREAD_MUTEX_INITIALIZER;

static struct watcher watchers[MAX_WATCHERS];

/* The slot of watcher @id of sandbox @sb, or NULL.  Under the lock. */
static struct watcher *watcher_find(const char *id, const char *sb)
{
	for (size_t i = 0; id && *id && i < MAX_WATCHERS; i++)
		if (!strcmp(watchers[i].id, id) &&
		    !strcmp(watchers[i].sandbox, sb))
			return &watchers[i];
	return NULL;
}

/*
 * A slot for a new watcher of sandbox @sb: a free one (watchers unpolled
 * for WATCHER_IDLE_MS freed first).  NULL with *@full: -EDQUOT when @sb
 * has SANDBOX_WATCHERS already, -ENOSPC when the server's table is full.
 * Under the lock.
 */
static struct watcher *watcher_slot(const char *sb, int *full)
{
	struct watcher *free_slot = NULL;
	uint64_t now = now_ms();
	unsigned int mine = 0;

	for (size_t i = 0; i < MAX_WATCHERS; i++) {
		struct watcher *x = &watchers[i];

		if (x->id[0] && x->w && now - x->used_ms > WATCHER_IDLE_MS) {
			watch_free(x->w);
			memset(x, 0, sizeof(*x));
		}
		if (!x->id[0]) {
			if (!free_slot)
				free_slot = x;
		} else if (!strcmp(x->sandbox, sb)) {
			mine++;
		}
	}
	if (mine >= SANDBOX_WATCHERS) {
		*full = -EDQUOT;
		return NULL;
	}
	if (!free_slot)
		*full = -ENOSPC;
	return free_slot;
}

int fs_watch__create(struct e2b_server *srv, const struct e2b_guest *g,
		     const json_t *req, const char *path, struct e2b_resp *resp)
{
	struct watch *w = calloc(1, sizeof(*w));
	unsigned char rnd[WATCHER_ID_LEN / 2];
	char msg[512], id[WATCHER_ID_LEN + 1];
	struct watcher *x;
	const char *code;
	int full = 0;

	if (!w)
		return reply__connect(resp, "internal", "out of memory");
	snprintf(w->path, sizeof(w->path), "%s", path);
	w->srv = srv;
	w->gp = g;
	w->recursive = json_is_true(json_object_get(req, "recursive"));
	w->include_entry = json_is_true(json_object_get(req, "includeEntry"));
	w->prefix = strcmp(w->path, "/") ? strlen(w->path) + 1 : 1;
	w->snap = snapshot(w, &code, msg, sizeof(msg));
	if (!w->snap) {
		watch_free(w);
		return reply__connect(resp, code, "%s", msg);
	}
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		watch_free(w);
		return reply__connect(resp, "internal", "getrandom failed");
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(id + 2 * i, 3, "%02x", rnd[i]);
	w->gp = NULL;
	pthread_mutex_lock(&watchers_lock);
	x = watcher_slot(g->info.id, &full);
	if (x) {
		memcpy(x->id, id, sizeof(x->id));
		snprintf(x->sandbox, sizeof(x->sandbox), "%s", g->info.id);
		x->w = w;
		x->used_ms = now_ms();
	}
	pthread_mutex_unlock(&watchers_lock);
	if (!x) {
		watch_free(w);
		if (full == -EDQUOT)
			return reply__connect(
				resp, "resource_exhausted",
				"this sandbox has %d watchers, its limit: "
				"remove one first",
				SANDBOX_WATCHERS);
		return reply__connect(resp, "resource_exhausted",
				      "the server's %d watchers are all in "
				      "use: remove one first",
				      MAX_WATCHERS);
	}
	return reply__json(resp, 200, json_pack("{s:s}", "watcherId", id));
}

int fs_watch__events(struct e2b_server *srv, const struct e2b_guest *g,
		     const json_t *req, struct e2b_resp *resp)
{
	const char *id = json_string_value(json_object_get(req, "watcherId"));
	const char *code = NULL;
	struct watcher *x;
	struct watch *w;
	json_t *cur, *events;
	char msg[512] = "";
	bool gone;
	int rc = 0;

	pthread_mutex_lock(&watchers_lock);
	x = watcher_find(id, g->info.id);
	w = x ? x->w : NULL;
	if (w)
		x->w = NULL; /* busy */
	pthread_mutex_unlock(&watchers_lock);
	if (!x)
		return reply__connect(resp, "not_found", "no such watcher");
	if (!w)
		return reply__connect(resp, "failed_precondition",
				      "the watcher is being polled already");
	events = json_array();
	w->srv = srv;
	w->gp = g;
	w->events = events;
	cur = events ? snapshot(w, &code, msg, sizeof(msg)) : NULL;
	/* A directory that went: its entries' events, then no watcher. */
	gone = !cur && code && !strcmp(code, "not_found");
	if (cur || gone) {
		json_t *now = cur ? cur : json_object();

		rc = now ? diff(w, w->snap, now) : -ENOMEM;
		json_decref(w->snap);
		w->snap = now;
	}
	w->events = NULL;
	w->gp = NULL;
	pthread_mutex_lock(&watchers_lock);
	if (!x->w && !strcmp(x->id, id)) { /* not removed meanwhile */
		if (gone) {
			memset(x, 0, sizeof(*x));
		} else {
			x->w = w;
			x->used_ms = now_ms();
			w = NULL;
		}
	}
	pthread_mutex_unlock(&watchers_lock);
	watch_free(w);
	if (!events || rc) {
		json_decref(events);
		return reply__connect(resp, "internal", "out of memory");
	}
	if (!cur && !(gone && json_array_size(events))) {
		json_decref(events);
		return reply__connect(resp, code ? code : "internal", "%s",
				      msg);
	}
	return reply__json(resp, 200, json_pack("{s:o}", "events", events));
}

int fs_watch__remove(const struct e2b_guest *g, const json_t *req,
		     struct e2b_resp *resp)
{
	const char *id = json_string_value(json_object_get(req, "watcherId"));
	struct watch *w = NULL;
	struct watcher *x;

	pthread_mutex_lock(&watchers_lock);
	x = watcher_find(id, g->info.id);
	if (x) {
		/* A busy one is freed by its GetWatcherEvents. */
		w = x->w;
		memset(x, 0, sizeof(*x));
	}
	pthread_mutex_unlock(&watchers_lock);
	watch_free(w);
	if (!x)
		return reply__connect(resp, "not_found", "no such watcher");
	return reply__json(resp, 200, json_object());
}
