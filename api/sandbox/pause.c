// SPDX-License-Identifier: Apache-2.0
/*
 * Pause and resume a sandbox (see sandbox.h): ember's control socket
 * (Firecracker's PATCH /vm) through libcurl, the info file, the
 * supervisor's TTL.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "files.h"
#include "sandbox.h"
#include "sandbox_internal.h"

/* How long one control call to ember may take (a pause: 1 s per vCPU). */
#define PAUSE_TIMEOUT_S 40

struct reply {
	char buf[512];
	size_t len;
};

static size_t pause__body(char *ptr, size_t size, size_t n, void *opaque)
{
	struct reply *r = opaque;
	size_t got = size * n, room = sizeof(r->buf) - 1 - r->len;

	memcpy(r->buf + r->len, ptr, got < room ? got : room);
	r->len += got < room ? got : room;
	r->buf[r->len] = '\0';
	return got;
}

/* PATCH /vm {"state": @state} on @sock: the HTTP status, or -errno. */
static int pause__patch(const char *sock, const char *state, struct reply *r,
			char *err, size_t errlen)
{
	char body[64];
	struct curl_slist *hdr;
	CURL *h = curl_easy_init();
	CURLcode rc;
	long status = 0;

	if (!h)
		return sandbox__errf(err, errlen, -ENOMEM, "out of memory");
	snprintf(body, sizeof(body), "{\"state\":\"%s\"}", state);
	hdr = curl_slist_append(NULL, "Content-Type: application/json");
	curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, sock);
	curl_easy_setopt(h, CURLOPT_URL, "http://localhost/vm");
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PATCH");
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)PAUSE_TIMEOUT_S);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, pause__body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	rc = curl_easy_perform(h);
	if (rc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	if (rc != CURLE_OK)
		return sandbox__errf(err, errlen, -EIO,
				     "ember's control socket: %s",
				     curl_easy_strerror(rc));
	return (int)status;
}

int sandbox__pause(const struct sandbox_info *info, bool pause, char *err,
		   size_t errlen)
{
	char lock[PATH_MAX], sock[PATH_MAX];
	struct sandbox_info cur = *info;
	struct reply r = { .len = 0 };
	int64_t now = (int64_t)time(NULL);
	int fd, rc;

	if (files__pathf(lock, sizeof(lock), "%s/" SANDBOX_PAUSE_LOCK,
			 info->dir) ||
	    files__pathf(sock, sizeof(sock), "%s/" SANDBOX_API_NAME, info->dir))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "sandbox path too long");
	/* One pause or resume at a time, and the info read under it. */
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_EX) < 0) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		return sandbox__errf(err, errlen, rc, "%s: %s", lock,
				     strerror(-rc));
	}
	rc = sandbox__read_info(info->dir, &cur);
	if (rc) {
		sandbox__errf(err, errlen, rc, "sandbox %s: %s", info->id,
			      strerror(-rc));
		goto out;
	}
	if (!cur.ready) {
		rc = sandbox__errf(err, errlen, -EAGAIN,
				   "sandbox %s is still booting", info->id);
		goto out;
	}
	if (pause == !!cur.paused)
		goto out; /* already so */
	rc = pause__patch(sock, pause ? "Paused" : "Resumed", &r, err, errlen);
	if (rc < 0)
		goto out;
	if (rc != 204) {
		rc = sandbox__errf(err, errlen, -EIO,
				   "ember refused (HTTP %d): %s", rc, r.buf);
		goto out;
	}
	if (pause) {
		cur.paused = now > 0 ? now : 1;
	} else {
		cur.paused_s += now > cur.paused ? now - cur.paused : 0;
		cur.paused = 0;
	}
	rc = sandbox__write_info(info->dir, &cur);
	if (rc)
		sandbox__errf(err, errlen, rc, "writing the info file: %s",
			      strerror(-rc));
	/* The supervisor re-reads the info file: its TTL stops or goes on. */
	if (cur.supervisor > 0)
		kill(cur.supervisor, SIGUSR1);
out:
	close(fd);
	return rc;
}
