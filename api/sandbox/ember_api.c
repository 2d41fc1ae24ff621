// SPDX-License-Identifier: Apache-2.0
/* ember's control socket, the client side: see ember_api.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "ember_api.h"
#include "files.h"

/* Enough of a reply for a fault message or GET /'s object. */
struct ember_api_reply {
	char buf[1024];
	size_t len;
};

static size_t ember_api__body(char *ptr, size_t size, size_t n, void *opaque)
{
	struct ember_api_reply *r = opaque;
	size_t got = size * n, room = sizeof(r->buf) - 1 - r->len;

	memcpy(r->buf + r->len, ptr, got < room ? got : room);
	r->len += got < room ? got : room;
	r->buf[r->len] = '\0';
	return got;
}

/*
 * @method @path with the JSON @body (NULL: none) on @sock within
 * @timeout_ms: the HTTP status with the body in @r, or a negative errno
 * with the reason in @err.
 */
static int ember_api__call(const char *sock, const char *method,
			   const char *path, const char *body, long timeout_ms,
			   struct ember_api_reply *r, char *err, size_t errlen)
{
	char url[128];
	struct curl_slist *hdr = NULL;
	CURL *h;
	CURLcode rc;
	long status = 0;

	r->len = 0;
	r->buf[0] = '\0';
	if (access(sock, F_OK) < 0)
		return sandbox__errf(err, errlen, -errno,
				     "ember's control socket %s: %s", sock,
				     strerror(errno));
	h = curl_easy_init();
	if (!h)
		return sandbox__errf(err, errlen, -ENOMEM, "out of memory");
	snprintf(url, sizeof(url), "http://localhost%s", path);
	curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, sock);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	if (body) {
		hdr = curl_slist_append(NULL, "Content-Type: application/json");
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	}
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, ember_api__body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	rc = curl_easy_perform(h);
	if (rc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	if (rc == CURLE_COULDNT_CONNECT)
		return sandbox__errf(err, errlen, -ECONNREFUSED,
				     "ember's control socket: %s",
				     curl_easy_strerror(rc));
	if (rc == CURLE_OPERATION_TIMEDOUT)
		return sandbox__errf(err, errlen, -ETIMEDOUT,
				     "ember's control socket: no answer to %s "
				     "%s within %ld s",
				     method, path, (timeout_ms + 999) / 1000);
	if (rc != CURLE_OK)
		return sandbox__errf(err, errlen, -EIO,
				     "ember's control socket: %s",
				     curl_easy_strerror(rc));
	return (int)status;
}

/*
 * The call of @method @path with @body (consumed; NULL when it could not
 * be built) that wants a 204: 0, or the error with ember's fault message.
 */
static int ember_api__do(const char *sock, const char *method, const char *path,
			 json_t *body, long timeout_ms, char *err,
			 size_t errlen)
{
	struct ember_api_reply r;
	json_t *reply, *msg;
	char *text;
	int rc;

	text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!text)
		return sandbox__errf(err, errlen, -ENOMEM, "out of memory");
	rc = ember_api__call(sock, method, path, text, timeout_ms, &r, err,
			     errlen);
	free(text);
	if (rc < 0 || rc == 204)
		return rc < 0 ? rc : 0;
	reply = json_loads(r.buf, 0, NULL);
	msg = json_object_get(reply, "fault_message");
	sandbox__errf(err, errlen, -EIO, "ember refused %s %s (HTTP %d): %s",
		      method, path, rc,
		      json_is_string(msg) ? json_string_value(msg) :
		      r.len		  ? r.buf :
					    "no message");
	json_decref(reply);
	return -EIO;
}

int ember_api__state(const char *sock, int timeout_ms, char *state,
		     size_t statesz, char *err, size_t errlen)
{
	struct ember_api_reply r;
	json_t *reply, *s;
	int rc;

	rc = ember_api__call(sock, "GET", "/", NULL, timeout_ms, &r, err,
			     errlen);
	if (rc < 0)
		return rc;
	reply = json_loads(r.buf, 0, NULL);
	s = json_object_get(reply, "state");
	if (rc != 200 || !json_is_string(s)) {
		json_decref(reply);
		return sandbox__errf(err, errlen, -EIO,
				     "ember's control socket: GET / answered "
				     "HTTP %d without a state",
				     rc);
	}
	snprintf(state, statesz, "%s", json_string_value(s));
	json_decref(reply);
	return 0;
}

int ember_api__pause(const char *sock, bool pause, char *err, size_t errlen)
{
	return ember_api__do(
		sock, "PATCH", "/vm",
		json_pack("{s:s}", "state", pause ? "Paused" : "Resumed"),
		EMBER_API_CALL_S * 1000L, err, errlen);
}

int ember_api__snapshot_create(const char *sock, bool diff,
			       const char *state_path, const char *mem_path,
			       char *err, size_t errlen)
{
	return ember_api__do(sock, "PUT", "/snapshot/create",
			     json_pack("{s:s,s:s,s:s,s:b}", "snapshot_type",
				       diff ? "Diff" : "Full", "snapshot_path",
				       state_path, "mem_file_path", mem_path,
				       "compress", 0),
			     EMBER_API_SNAPSHOT_S * 1000L, err, errlen);
}

int ember_api__snapshot_load(const char *sock, const struct ember_api_load *l,
			     char *err, size_t errlen)
{
	json_t *body, *drives;

	if (l->nr_drives > EMBER_API_MAX_DRIVES)
		return sandbox__errf(err, errlen, -EINVAL,
				     "%u drive overrides (at most %d)",
				     l->nr_drives, EMBER_API_MAX_DRIVES);
	body = json_pack("{s:s,s:{s:s,s:s},s:b,s:{s:s},s:[]}", "snapshot_path",
			 l->state_path, "mem_backend", "backend_type", "File",
			 "backend_path", l->mem_path, "resume_vm", 1,
			 "vsock_override", "uds_path", l->uds_path,
			 "drive_overrides");
	drives = json_object_get(body, "drive_overrides");
	for (unsigned int i = 0; body && i < l->nr_drives; i++)
		if (json_array_append_new(
			    drives,
			    json_pack("{s:s,s:s}", "drive_id", l->drive_id[i],
				      "path_on_host", l->disk_path[i]))) {
			json_decref(body);
			body = NULL;
		}
	return ember_api__do(sock, "PUT", "/snapshot/load", body,
			     EMBER_API_SNAPSHOT_S * 1000L, err, errlen);
}

int ember_api__update_drive(const char *sock, const char *drive_id,
			    const char *path, char *err, size_t errlen)
{
	char url[96];

	if (snprintf(url, sizeof(url), "/drives/%s", drive_id) >=
	    (int)sizeof(url))
		return sandbox__errf(err, errlen, -EINVAL,
				     "drive id too long: %.64s", drive_id);
	return ember_api__do(sock, "PATCH", url,
			     json_pack("{s:s,s:s}", "drive_id", drive_id,
				       "path_on_host", path),
			     EMBER_API_CALL_S * 1000L, err, errlen);
}
