/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Watches of envd's filesystem service (fs_watch.c): WatchDir streams a
 * directory's events; CreateWatcher, GetWatcherEvents and RemoveWatcher
 * keep a watcher that each GetWatcherEvents polls.  The filesystem
 * service (filesystem.c) hands them its requests, the watched path
 * already resolved (envd_path.h).  Each fills @resp (Connect's error shape on
 * failure) and returns 0, as the services of e2b.h.
 */
#ifndef EMBER_API_E2B_FS_WATCH_H
#define EMBER_API_E2B_FS_WATCH_H

#include <jansson.h>

#include "e2b.h"

/*
 * WatchDir of @path in @g (@req: recursive, includeEntry): a stream of
 * filesystem events (start first), written by a thread of its own until
 * the client goes, Connect-Timeout-Ms lapses or the directory goes.
 */
int fs_watch__stream(struct e2b_server *srv, const struct e2b_req *r,
		     const struct e2b_guest *g, const json_t *req,
		     const char *path, struct e2b_resp *resp);

/*
 * CreateWatcher of @path in @g: answers its watcherId; resource_exhausted
 * (429) past 64 watchers of @g's sandbox (unpolled for 10 min, one is
 * dropped) or 1024 in the server.
 */
int fs_watch__create(struct e2b_server *srv, const struct e2b_guest *g,
		     const json_t *req, const char *path,
		     struct e2b_resp *resp);

/* GetWatcherEvents: the events since the watcher's last poll. */
int fs_watch__events(struct e2b_server *srv, const struct e2b_guest *g,
		     const json_t *req, struct e2b_resp *resp);

/* RemoveWatcher. */
int fs_watch__remove(const struct e2b_guest *g, const json_t *req,
		     struct e2b_resp *resp);

#endif /* EMBER_API_E2B_FS_WATCH_H */
