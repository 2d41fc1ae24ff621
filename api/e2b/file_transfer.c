// SPDX-License-Identifier: Apache-2.0
/*
 * envd's REST file transfer (e2b.h, envd_path.h; e2b-notes section 5).
 *
 *   GET /files?path=P[&username=U]   the file's bytes (application/
 *	octet-stream); 404 when it does not exist, 400 for a directory or
 *	anything but a regular file.
 *   POST /files[?path=P][&username=U]   writes files, creating missing
 *	parent directories: a multipart/form-data body whose parts named
 *	"file" each carry one file, written to ?path= when given (one part
 *	then) or else to the part's filename; or an application/octet-stream
 *	body written to ?path=.  Content-Encoding: gzip is undone first.
 *	Answers 200 [{"name","type":"file","path"}] per file written.
 *
 * Errors use E2B's REST shape {"code": status, "message"}.  Bytes move
 * through memfds and the agent's READ_FILE (downloads, read as root
 * whatever the user) and WRITE_FILE (uploads as root), or for uploads as
 * any other user (envd_path.h; E2B's default "user") a script run as
 * that user with the bytes as its stdin (guest_fs__put()), so that the
 * files and directories it makes are the user's, as envd's are; a file is
 * at most EMBER_AGENT_MAX_FILE.  Multipart bodies are parsed by
 * libmicrohttpd's post processor, fed from the upload's memfd.
 */
#include <errno.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../../guest-init/protocol.h"
#include "../sandbox/agent_client.h"
#include "../sandbox/utf8.h"
#include "e2b.h"
#include "envd_path.h"
#include "fs_script.h"

#define FILE_IDLE_MS 60000 /* a transfer with no byte moving */
#define MKDIR_MS     30000 /* mkdir -p of a new file's parents */
#define PP_BUF \
	(64u << 10) /* the post processor's buffer: the
					longest part header line it takes */
#define FEED	  (256u << 10) /* body bytes parsed at a time */
#define MAX_PARTS 1000 /* files in one upload */

/* The last component of @path ("/" for the root). */
static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

/*
 * The query argument @name (URL-decoded by MHD) and its length, which
 * counts a NUL byte inside ("%00"): envd_path__resolve() refuses those.
 */
static const char *query_n(const struct e2b_req *r, const char *name,
			   size_t *len)
{
	const char *v = NULL;
	size_t n = 0;

	if (MHD_lookup_connection_value_n(r->conn, MHD_GET_ARGUMENT_KIND, name,
					  strlen(name), &v, &n) != MHD_YES ||
	    !v) {
		v = NULL;
		n = 0;
	}
	*len = n;
	return v;
}

/*
 * Answer a failed transfer of @path: @rc from the agent client (with the
 * guest's errno @gerr for -EREMOTEIO), @why its text.
 */
static int reply_failure(struct e2b_resp *resp, bool reading, int rc, int gerr,
			 const char *path, const char *why)
{
	char p[ENVD_SHOWN + 1];

	envd_path__shown(path, p, sizeof(p));
	if (rc == -EFBIG || (rc == -EREMOTEIO && gerr == EFBIG))
		return reply__error(resp, 413,
				    "'%s' is larger than ember's limit "
				    "of %llu MiB per file",
				    p, EMBER_AGENT_MAX_FILE >> 20);
	if (rc != -EREMOTEIO)
		return reply__error(resp, 502,
				    "the sandbox's agent failed on '%s': "
				    "%.300s",
				    p, why);
	switch (gerr) {
	case ENOENT:
		if (reading)
			return reply__error(resp, 404,
					    "path '%s' does not exist", p);
		/*
		 * A write gets ENOENT once the parents are made only where
		 * the file system takes no new files (/proc, /sys).
		 */
		return reply__error(resp, 403,
				    "cannot write '%s': %.300s (the file "
				    "system there takes no new files)",
				    p, why);
	case ENOTDIR:
		return reply__error(resp, reading ? 404 : 400,
				    reading ? "path '%s' does not exist" :
					      "a parent of '%s' is a file",
				    p);
	case EISDIR:
		return reply__error(resp, 400, "path '%s' is a directory", p);
	case EINVAL:
		return reply__error(resp, 400,
				    "path '%s' is not a regular file", p);
	case ENXIO:
		return reply__error(resp, 400,
				    "path '%s' is a FIFO nobody reads", p);
	case ENAMETOOLONG:
		return reply__error(resp, 400, "path '%s': file name too long",
				    p);
	case EACCES:
	case EPERM:
	case EROFS:
		return reply__error(resp, 403, "path '%s': %s", p,
				    strerror(gerr));
	case ENOSPC:
	case EDQUOT:
		return reply__error(resp, 507, "not enough disk space for '%s'",
				    p);
	default:
		return reply__error(resp, 500, "path '%s': %s", p,
				    strerror(gerr));
	}
}

/* --- GET: download ------------------------------------------------------ */

static int download(struct e2b_server *srv, const struct e2b_req *r,
		    struct e2b_guest *g, struct e2b_resp *resp)
{
	char path[ENVD_PATH_MAX], err[512];
	struct agent_client *c;
	struct stat st;
	int fd, rc, gerr = 0;
	size_t qlen;
	const char *q = query_n(r, "path", &qlen);

	if (envd_path__resolve(q, qlen, path, err, sizeof(err)))
		return reply__error(resp, 400, "%s", err);
	fd = memfd_create("ember-e2b-download", MFD_CLOEXEC);
	if (fd < 0)
		return reply__error(resp, 500, "memfd: %s", strerror(errno));
	c = guest__agent(srv, g, err, sizeof(err));
	if (!c) {
		close(fd);
		return reply__error(resp, 502,
				    "cannot reach the sandbox's agent: "
				    "%.300s",
				    err);
	}
	rc = agent_client__read_file(c, path, fd, FILE_IDLE_MS);
	if (rc == -EREMOTEIO)
		gerr = agent_client__guest_errno(c);
	if (rc < 0)
		snprintf(err, sizeof(err), "%s", agent_client__error(c));
	guest__agent_done(srv, g, c, rc == 0 || rc == -EREMOTEIO);
	if (!rc && fstat(fd, &st) < 0)
		rc = -errno;
	if (rc < 0) {
		close(fd);
		return reply_failure(resp, true, rc, gerr, path, err);
	}
	free(resp->body);
	resp->body = NULL;
	resp->len = 0;
	resp->status = 200;
	snprintf(resp->content_type, sizeof(resp->content_type),
		 "application/octet-stream");
	resp->fd = fd;
	resp->fd_len = (uint64_t)st.st_size;
	return 0;
}

/* --- POST: upload -------------------------------------------------------- */

/* Write the @len bytes at @buf to @fd. */
static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/*
 * `mkdir -p` the parent of @path in the guest (umask 022: 0755 like
 * envd's).  0, or the answer is set in @resp and -1 returned.
 */
static int make_parents(struct e2b_server *srv, struct e2b_guest *g,
			const char *path, struct e2b_resp *resp)
{
	static const char script[] = "umask 022; d=${1%/*}; "
				     "exec mkdir -p -- \"${d:-/}\"";
	const char *argv[] = { "/bin/sh", "-c", script, "sh", path, NULL };
	char err[512], p[ENVD_SHOWN + 1], *errout = NULL;
	int rc, status = 0;

	rc = guest__run(srv, g, argv, MKDIR_MS, 4096, NULL, NULL, &errout,
			&status, err, sizeof(err));
	if (rc < 0) {
		free(errout);
		reply__error(resp, 502,
			     "cannot create the parents of '%s': %.300s",
			     envd_path__shown(path, p, sizeof(p)), err);
		return -1;
	}
	if (status) {
		/* busybox: "mkdir: can't create directory 'x': Not a
		   directory"; errout is the guest's (any bytes). */
		reply__error(resp, 400,
			     "cannot create the parent directories of "
			     "'%s' (a parent is a file?)",
			     envd_path__shown(path, p, sizeof(p)));
		free(errout);
		return -1;
	}
	free(errout);
	return 0;
}

/*
 * Write the whole of @fd (rewound) to @path as the user @g->user (not
 * root) through guest_fs__put(): the file and the parents it makes are
 * the user's, and the user's permissions apply.  0, or -1 with the answer
 * in @resp.
 */
static int put_as_user(struct e2b_server *srv, struct e2b_guest *g, int fd,
		       const char *path, struct e2b_resp *resp)
{
	char err[512], p[ENVD_SHOWN + 1], why[ENVD_SHOWN + 1];
	const char *u = g->user[0] ? g->user : NULL;
	struct fs_op o;
	int rc;

	envd_path__shown(path, p, sizeof(p));
	if (lseek(fd, 0, SEEK_SET) < 0) {
		reply__error(resp, 500, "lseek: %s", strerror(errno));
		return -1;
	}
	rc = guest_fs__put(srv->pool, &g->info, E2B_AGENT_TIMEOUT_MS, u, fd,
			   path, &o, err, sizeof(err));
	guest__note_pooled(g);
	if (rc == -EREMOTEIO) {
		reply__error(resp, 401,
			     "cannot write '%s' as user '%.64s': "
			     "%.300s",
			     p, u ? u : E2B_USER, err);
		return -1;
	}
	if (rc < 0) {
		reply__error(resp, 502,
			     "the sandbox's agent failed on '%s': "
			     "%.300s",
			     p, err);
		return -1;
	}
	fs_script__why(&o, why, sizeof(why));
	switch (o.status) {
	case 0:
		break;
	case 3:
		reply__error(resp, 400, "path '%s' is a directory", p);
		break;
	case 6:
		reply__error(resp, 400, "path '%s' is not a regular file", p);
		break;
	default:
		if (strstr(why, "Permission denied") ||
		    strstr(why, "Operation not permitted") ||
		    strstr(why, "Read-only file system"))
			reply__error(resp, 403, "path '%s': %s", p, why);
		else if (o.status == 5 &&
			 (strstr(why, "nonexistent directory") ||
			  strstr(why, "Directory nonexistent") ||
			  strstr(why, "No such file")))
			/* Its parent is there: see reply_failure(); busybox
			   sh and dash word ENOENT so. */
			reply__error(resp, 403,
				     "cannot write '%s': %s (the file "
				     "system there takes no new files)",
				     p, why);
		else if (strstr(why, "No space left"))
			reply__error(resp, 507,
				     "not enough disk space for '%s'", p);
		else if (o.status == 4 || strstr(why, "Not a directory"))
			reply__error(resp, 400,
				     "cannot create the parent directories "
				     "of '%s' (a parent is a file?)",
				     p);
		else
			reply__error(resp, 500, "path '%s': %s", p, why);
	}
	rc = o.status ? -1 : 0;
	guest_fs__release(&o);
	return rc;
}

/*
 * Write the whole of @fd (rewound first) to the guest file @path,
 * creating its parents when missing, as the request's user: root's
 * writes go through the agent's WRITE_FILE (which writes as root), any
 * other user's through put_as_user().  0, or -1 with the answer in
 * @resp.
 */
static int put_file(struct e2b_server *srv, struct e2b_guest *g, int fd,
		    const char *path, struct e2b_resp *resp)
{
	struct agent_client *c;
	char err[512];
	int rc, gerr = 0, tries;

	if (strcmp(g->user, "root"))
		return put_as_user(srv, g, fd, path, resp);
	for (tries = 0; tries < 2; tries++) {
		if (lseek(fd, 0, SEEK_SET) < 0) {
			reply__error(resp, 500, "lseek: %s", strerror(errno));
			return -1;
		}
		c = guest__agent(srv, g, err, sizeof(err));
		if (!c) {
			reply__error(resp, 502,
				     "cannot reach the sandbox's agent: "
				     "%.300s",
				     err);
			return -1;
		}
		rc = agent_client__write_file(c, fd, path, 0644, FILE_IDLE_MS);
		gerr = rc == -EREMOTEIO ? agent_client__guest_errno(c) : 0;
		if (rc < 0)
			snprintf(err, sizeof(err), "%s",
				 agent_client__error(c));
		guest__agent_done(srv, g, c, rc == 0 || rc == -EREMOTEIO);
		if (!rc)
			return 0;
		/* The parents are made only when needed: one exec less. */
		if (tries || rc != -EREMOTEIO || gerr != ENOENT)
			break;
		if (make_parents(srv, g, path, resp))
			return -1;
	}
	reply_failure(resp, false, rc, gerr, path, err);
	return -1;
}

/*
 * Append {"name","type":"file","path"} for @path to @done (bytes that are
 * not UTF-8 as U+FFFD: a JSON string cannot carry them).
 */
static int add_done(json_t *done, const char *path)
{
	const char *name = base_name(path);

	return json_array_append_new(
		done, json_pack("{s:o, s:s, s:o}", "name",
				utf8__json(name, strlen(name)), "type", "file",
				"path", utf8__json(path, strlen(path))));
}

/* Whether @path is already in @done (envd refuses a path twice). */
static bool already(const json_t *done, const char *path)
{
	for (size_t i = 0; i < json_array_size(done); i++) {
		const json_t *e = json_array_get(done, i);

		if (!strcmp(json_string_value(json_object_get(e, "path")),
			    path))
			return true;
	}
	return false;
}

/* A multipart upload in progress. */
struct upload {
	struct e2b_server *srv;
	struct e2b_guest *g;
	struct e2b_resp *resp;
	const char *query_path; /* ?path=, or NULL */
	size_t query_len;
	json_t *done; /* the answer's array */
	int fd; /* the current part's bytes */
	bool open; /* a part is being received */
	bool failed; /* the answer is set in resp */
	bool dry; /* the checking pass: nothing is written */
	char path[ENVD_PATH_MAX]; /* the current part's destination */
	char *filename; /* the current part's filename (malloc()ed) */
	uint64_t got; /* its bytes so far */
	unsigned int parts;
};

/* The current part is complete: write it to the guest. */
static int finish_part(struct upload *u)
{
	if (!u->open)
		return 0;
	u->open = false;
	if ((!u->dry && put_file(u->srv, u->g, u->fd, u->path, u->resp)) ||
	    add_done(u->done, u->path)) {
		if (!u->resp->body)
			reply__error(u->resp, 500, "out of memory");
		u->failed = true;
		return -1;
	}
	return 0;
}

static int fail(struct upload *u, unsigned int status, const char *msg,
		const char *path)
{
	char p[ENVD_SHOWN + 1];

	if (path)
		reply__error(u->resp, status, msg,
			     envd_path__shown(path, p, sizeof(p)));
	else
		reply__error(u->resp, status, "%s", msg);
	u->failed = true;
	return -1;
}

/* A part begins: its destination, checked. */
static int start_part(struct upload *u, const char *filename)
{
	const char *src = u->query_path ? u->query_path : filename;
	size_t len = u->query_path ? u->query_len : src ? strlen(src) : 0;
	char err[256];

	if (finish_part(u))
		return -1;
	if (++u->parts > MAX_PARTS)
		return fail(u, 400,
			    "more than 1000 files in one upload: nothing was "
			    "written",
			    NULL);
	if (!src)
		return fail(u, 400,
			    "a part named \"file\" has no filename and the "
			    "request no ?path=",
			    NULL);
	if (envd_path__resolve(src, len, u->path, err, sizeof(err)))
		return fail(u, 400, err, NULL);
	if (already(u->done, u->path))
		return fail(u, 400,
			    "you cannot upload multiple files to the same "
			    "path '%s' in one upload request",
			    u->path);
	free(u->filename);
	u->filename = filename ? strdup(filename) : NULL;
	if (filename && !u->filename)
		return fail(u, 500, "out of memory", NULL);
	if (ftruncate(u->fd, 0) < 0 || lseek(u->fd, 0, SEEK_SET) < 0)
		return fail(u, 500, "cannot reset the part's memfd", NULL);
	u->got = 0;
	u->open = true;
	return 0;
}

/*
 * MHD_PostDataIterator.  Each part gets a first call at offset 0 (of
 * size 0 when its data has not come yet, followed by another at offset
 * 0), then calls at growing offsets; a part whose first call sees a
 * different filename, or offset 0 after bytes, is a new one.
 */
static enum MHD_Result on_data(void *cls, enum MHD_ValueKind kind,
			       const char *key, const char *filename,
			       const char *content_type,
			       const char *transfer_encoding, const char *data,
			       uint64_t off, size_t size)
{
	struct upload *u = cls;
	bool same;

	(void)kind;
	(void)content_type;
	(void)transfer_encoding;
	if (u->failed)
		return MHD_NO;
	if (!key || strcmp(key, "file")) {
		/* Not a file part (envd skips them too). */
		return finish_part(u) ? MHD_NO : MHD_YES;
	}
	if (off == 0) {
		same = u->open && !u->got &&
		       (filename ?
				u->filename && !strcmp(filename, u->filename) :
				!u->filename);
		if (!same && start_part(u, filename))
			return MHD_NO;
	} else if (!u->open || off != u->got) {
		fail(u, 400, "malformed multipart body", NULL);
		return MHD_NO;
	}
	if (!size)
		return MHD_YES;
	if (u->got + size > EMBER_AGENT_MAX_FILE) {
		fail(u, 413,
		     "'%s' is larger than ember's limit of 256 MiB per file",
		     u->path);
		return MHD_NO;
	}
	if (!u->dry && write_all(u->fd, data, size)) {
		fail(u, 507, "the upload could not be stored on the host",
		     NULL);
		return MHD_NO;
	}
	u->got += size;
	return MHD_YES;
}

/*
 * Parse the multipart body in @fd (@len bytes) of request @r and, unless
 * u->dry, write its files.  0, or -1 with the answer in u->resp.
 */
static int multipart_pass(struct upload *u, const struct e2b_req *r, int fd,
			  uint64_t len)
{
	struct MHD_PostProcessor *pp;
	bool ok = true, complete;
	uint64_t off = 0;
	char *buf;
	ssize_t n;

	/* It reads the boundary from the request's Content-Type. */
	pp = MHD_create_post_processor(r->conn, PP_BUF, on_data, u);
	if (!pp)
		return fail(u, 400,
			    "not a multipart/form-data body with a boundary "
			    "(of at most 32 KiB)",
			    NULL);
	buf = malloc(FEED);
	if (!buf) {
		MHD_destroy_post_processor(pp);
		return fail(u, 500, "out of memory", NULL);
	}
	while (ok && off < len) {
		n = pread(fd, buf, len - off < FEED ? len - off : FEED,
			  (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (!u->failed)
				fail(u, 500, "cannot read the upload back",
				     NULL);
			break;
		}
		ok = MHD_post_process(pp, buf, (size_t)n) == MHD_YES;
		off += (uint64_t)n;
	}
	free(buf);
	complete = MHD_destroy_post_processor(pp) == MHD_YES;
	if (u->failed)
		return -1;
	if (!ok || !complete) {
		/* The part cut off by the error is not written. */
		u->open = false;
		return fail(u, 400,
			    "malformed multipart body (a part header over "
			    "64 KiB, or no closing boundary)",
			    NULL);
	}
	if (finish_part(u))
		return -1;
	if (!json_array_size(u->done))
		return fail(u, 400, "the form has no part named \"file\"",
			    NULL);
	return 0;
}

/*
 * Parse the multipart body in @fd (@len bytes) of request @r and write its
 * files, all or none as far as the body goes: a first pass that writes
 * nothing refuses a body with too many parts, a bad or repeated path, a
 * part too large or malformed parts before the second writes the first
 * file (a guest's refusal midway still leaves the files before it).
 * 0, or -1 with the answer in u->resp.
 */
static int multipart(struct upload *u, const struct e2b_req *r, int fd,
		     uint64_t len)
{
	u->dry = true;
	if (multipart_pass(u, r, fd, len))
		return -1;
	u->dry = false;
	u->open = false;
	u->parts = 0;
	u->got = 0;
	free(u->filename);
	u->filename = NULL;
	if (json_array_clear(u->done))
		return fail(u, 500, "out of memory", NULL);
	return multipart_pass(u, r, fd, len);
}

/*
 * Inflate the gzip (or zlib) data in @fd (@len bytes) into a new memfd of
 * at most @max bytes: its fd with *@outlen, or -1 with the answer in
 * @resp.
 */
static int gunzip(int fd, uint64_t len, uint64_t max, uint64_t *outlen,
		  struct e2b_resp *resp)
{
	unsigned char *in = malloc(FEED), *out = malloc(FEED);
	z_stream z = { 0 };
	uint64_t off = 0, total = 0;
	int ofd = -1, zrc = Z_OK;
	bool init = false;
	size_t made;
	ssize_t n;

	ofd = memfd_create("ember-e2b-gunzip", MFD_CLOEXEC);
	if (!in || !out || ofd < 0 || inflateInit2(&z, 15 + 32) != Z_OK) {
		reply__error(resp, 500, "cannot set up gzip decoding");
		goto fail;
	}
	init = true;
	while (zrc != Z_STREAM_END) {
		if (!z.avail_in) {
			if (off >= len)
				break;
			n = pread(fd, in, len - off < FEED ? len - off : FEED,
				  (off_t)off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				reply__error(resp, 500,
					     "cannot read the upload back");
				goto fail;
			}
			off += (uint64_t)n;
			z.next_in = in;
			z.avail_in = (uInt)n;
		}
		z.next_out = out;
		z.avail_out = FEED;
		zrc = inflate(&z, Z_NO_FLUSH);
		if (zrc != Z_OK && zrc != Z_STREAM_END &&
		    !(zrc == Z_BUF_ERROR && !z.avail_in))
			break;
		made = FEED - z.avail_out;
		total += made;
		if (total > max) {
			reply__error(resp, 413,
				     "the upload inflates to more than "
				     "%llu MiB",
				     (unsigned long long)(max >> 20));
			goto fail;
		}
		if (made && write_all(ofd, out, made)) {
			reply__error(resp, 507,
				     "the upload could not be stored on "
				     "the host");
			goto fail;
		}
	}
	if (zrc != Z_STREAM_END) {
		reply__error(resp, 400,
			     "the body is not valid gzip (or it is cut "
			     "off)");
		goto fail;
	}
	inflateEnd(&z);
	free(in);
	free(out);
	*outlen = total;
	return ofd;
fail:
	if (init)
		inflateEnd(&z);
	if (ofd >= 0)
		close(ofd);
	free(in);
	free(out);
	return -1;
}

static bool type_is(const char *ctype, const char *want)
{
	size_t n = strlen(want);

	return ctype && !strncasecmp(ctype, want, n) &&
	       (!ctype[n] || ctype[n] == ';' || ctype[n] == ' ');
}

static int upload(struct e2b_server *srv, const struct e2b_req *r,
		  struct e2b_guest *g, struct e2b_resp *resp)
{
	const char *ctype = e2b__header(r, "Content-Type");
	const char *cenc = e2b__header(r, "Content-Encoding");
	struct upload u = {
		.srv = srv,
		.g = g,
		.resp = resp,
		.fd = -1,
	};
	int fd = r->body_fd, own = -1, unz;
	uint64_t len = r->body_fd_len;
	char err[256];

	u.query_path = query_n(r, "path", &u.query_len);
	u.done = json_array();
	if (!u.done)
		return reply__error(resp, 500, "out of memory");
	if (fd < 0) {
		/* A body kept in memory: the same path as a memfd. */
		own = memfd_create("ember-e2b-upload", MFD_CLOEXEC);
		if (own < 0 || write_all(own, r->body ? r->body : "", r->len)) {
			fail(&u, 500, "cannot store the upload", NULL);
			goto out;
		}
		fd = own;
		len = r->len;
	}
	if (cenc && *cenc && strcasecmp(cenc, "identity")) {
		if (strcasecmp(cenc, "gzip")) {
			fail(&u, 400,
			     "unsupported Content-Encoding (gzip or identity)",
			     NULL);
			goto out;
		}
		unz = gunzip(fd, len, E2B_MAX_UPLOAD, &len, resp);
		if (unz < 0) {
			u.failed = true;
			goto out;
		}
		if (own >= 0)
			close(own);
		fd = own = unz;
	}
	if (type_is(ctype, "multipart/form-data")) {
		u.fd = memfd_create("ember-e2b-part", MFD_CLOEXEC);
		if (u.fd < 0) {
			fail(&u, 500, "memfd failed", NULL);
			goto out;
		}
		multipart(&u, r, fd, len);
		goto out;
	}
	if (ctype && *ctype && !type_is(ctype, "application/octet-stream")) {
		fail(&u, 400,
		     "the body must be multipart/form-data or "
		     "application/octet-stream",
		     NULL);
		goto out;
	}
	if (!u.query_path) {
		fail(&u, 400,
		     "an application/octet-stream upload needs ?path=", NULL);
		goto out;
	}
	if (envd_path__resolve(u.query_path, u.query_len, u.path, err,
			       sizeof(err))) {
		fail(&u, 400, err, NULL);
		goto out;
	}
	if (len > EMBER_AGENT_MAX_FILE) {
		fail(&u, 413,
		     "'%s' is larger than ember's limit of 256 MiB per file",
		     u.path);
		goto out;
	}
	if (put_file(srv, g, fd, u.path, resp) || add_done(u.done, u.path)) {
		if (!resp->body)
			reply__error(resp, 500, "out of memory");
		u.failed = true;
	}
out:
	if (own >= 0)
		close(own);
	if (u.fd >= 0)
		close(u.fd);
	free(u.filename);
	if (!u.failed)
		return reply__json(resp, 200, u.done);
	json_decref(u.done);
	return 0;
}

int file_transfer__handle(struct e2b_server *srv, const struct e2b_req *r,
			  struct e2b_guest *g, struct e2b_resp *resp)
{
	const char *user;
	char err[256];

	if (envd_path__user(r, e2b__query(r, "username"), g, g->user, &user,
			    err, sizeof(err)))
		return reply__error(resp, 401, "%s", err);
	if (!user)
		g->user[0] = '\0';
	if (!strcmp(r->method, "GET"))
		return download(srv, r, g, resp);
	if (!strcmp(r->method, "POST"))
		return upload(srv, r, g, resp);
	reply__error(resp, 405, "/files takes GET and POST");
	reply__header(resp, "Allow", "GET, POST");
	return 0;
}
