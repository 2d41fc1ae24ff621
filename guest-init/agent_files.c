// SPDX-License-Identifier: Apache-2.0
/*
 * The guest agent's file transfers (agent_files.h, PROTOCOL.md): WRITE_FILE
 * with its FILE_DATA and FILE_END frames, and READ_FILE.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent_files.h"

/*
 * open(2) that cannot hang the connection on a FIFO: no writer (read)
 * gives an empty file, no reader (write) ENXIO.  Blocking I/O after.
 * Returns the fd or -errno.
 */
static int open_file(const char *path, int flags, mode_t mode)
{
	int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC, mode);

	if (fd < 0)
		return -errno;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

/*
 * A regular file (or a new one) is written to a temporary file beside
 * it and renamed over it at FILE_END, so a copy that fails or is cut
 * off leaves the old file as it was; a symbolic link is written through.
 * Devices and FIFOs are written in place.  Returns the fd or -errno.
 */
static int write_file_open(struct slot *s, const char *path, mode_t mode)
{
	char *real = realpath(path, NULL), *slash, *tmp;
	const char *target = real ? real : path;
	struct stat st;
	int fd;

	if (stat(target, &st) == 0 && !S_ISREG(st.st_mode)) {
		free(real);
		snprintf(s->file_msg, sizeof(s->file_msg), "cannot open it");
		return open_file(path, O_WRONLY | O_TRUNC, 0);
	}
	tmp = malloc(strlen(target) + 32);
	if (!tmp) {
		free(real);
		return -ENOMEM;
	}
	slash = strrchr(target, '/');
	if (slash)
		sprintf(tmp, "%.*s/.%s.ember-XXXXXX", (int)(slash - target),
			target, slash + 1);
	else
		sprintf(tmp, ".%s.ember-XXXXXX", target);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		fd = -errno;
		/*
		 * /proc and the like take no new files: say that it is the
		 * temporary copy that failed, not the file named.
		 */
		snprintf(s->file_msg, sizeof(s->file_msg),
			 "cannot create a file in %.*s, where the copy is "
			 "written before it replaces the old one",
			 slash && slash > target ? (int)(slash - target) : 1,
			 !slash		? "." :
			 slash > target ? target :
					  "/");
		free(tmp);
		free(real);
		return fd;
	}
	fchmod(fd, mode); /* past the umask */
	s->tmp_path = tmp;
	s->final_path = real ? real : strdup(path);
	if (!s->final_path) {
		close(fd);
		unlink(tmp);
		free(tmp);
		s->tmp_path = NULL;
		return -ENOMEM;
	}
	return fd;
}

/* Forget @s's temporary file: renamed already, or unlinked now. */
static void write_file_drop(struct slot *s)
{
	if (s->tmp_path)
		unlink(s->tmp_path);
	free(s->tmp_path);
	free(s->final_path);
	s->tmp_path = s->final_path = NULL;
}

void agent_files__write(struct conn *c, const struct ember_agent_hdr *h,
			const uint8_t *payload)
{
	struct ember_agent_file f;
	struct slot *s;
	int rc;

	rc = ember_agent_file_decode(payload, h->len, 1, &f);
	s = agent_conn__open_stream(c, h->stream, rc);
	if (!s)
		return;
	s->kind = SLOT_WRITE;
	s->tmp_path = s->final_path = NULL;
	s->file_msg[0] = '\0';
	s->file_fd = write_file_open(s, f.path, f.mode);
	if (s->file_fd < 0)
		s->file_err = -s->file_fd;
}

void agent_files__data(struct conn *c, const struct ember_agent_hdr *h,
		       const uint8_t *payload)
{
	struct slot *s = agent_conn__slot(c, h->stream);
	size_t off = 0;

	if (!s || s->kind != SLOT_WRITE) {
		agent_conn__send_error(c, h->stream, ESRCH,
				       "no such file transfer");
		return;
	}
	if (s->file_err)
		return;
	if (s->file_bytes + h->len > EMBER_AGENT_MAX_FILE) {
		s->file_err = EFBIG;
		snprintf(s->file_msg, sizeof(s->file_msg), "writing");
		return;
	}
	s->file_bytes += h->len;
	while (off < h->len) {
		ssize_t n = write(s->file_fd, payload + off, h->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			s->file_err = n < 0 ? errno : EIO;
			snprintf(s->file_msg, sizeof(s->file_msg), "writing");
			return;
		}
		off += (size_t)n;
	}
}

void agent_files__end(struct conn *c, const struct ember_agent_hdr *h)
{
	struct slot *s = agent_conn__slot(c, h->stream);

	if (!s || s->kind != SLOT_WRITE) {
		agent_conn__send_error(c, h->stream, ESRCH,
				       "no such file transfer");
		return;
	}
	if (h->len)
		s->file_err = s->file_err ? s->file_err : EPROTO;
	if (s->file_fd >= 0 && close(s->file_fd) < 0 && !s->file_err) {
		s->file_err = errno;
		snprintf(s->file_msg, sizeof(s->file_msg), "writing");
	}
	s->file_fd = -1;
	if (!s->file_err && s->tmp_path &&
	    rename(s->tmp_path, s->final_path) < 0) {
		s->file_err = errno;
		snprintf(s->file_msg, sizeof(s->file_msg),
			 "cannot replace it with the copy");
	}
	if (!s->file_err) {
		free(s->tmp_path); /* renamed: nothing to unlink */
		s->tmp_path = NULL;
	}
	write_file_drop(s);
	if (s->file_err)
		agent_conn__send_errno(c, h->stream, s->file_err,
				       s->file_msg[0] ? s->file_msg :
							"write file");
	else
		agent_conn__send(c, EMBER_AGENT_OK, h->stream, NULL, 0);
	s->kind = SLOT_FREE;
}

void agent_files__read(struct conn *c, const struct ember_agent_hdr *h,
		       const uint8_t *payload)
{
	struct ember_agent_file f;
	struct stat st;
	uint64_t total = 0;
	int fd, rc;

	rc = ember_agent_file_decode(payload, h->len, 0, &f);
	if (rc < 0) {
		agent_conn__send_proto_error(c, h->stream, rc);
		return;
	}
	fd = open_file(f.path, O_RDONLY, 0);
	if (fd < 0) {
		agent_conn__send_errno(c, h->stream, -fd, f.path);
		return;
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		agent_conn__send_errno(c, h->stream, EISDIR, f.path);
		close(fd);
		return;
	}
	/* A tty blocks and a device may never end: files only. */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		agent_conn__send_error(c, h->stream, EINVAL,
				       "not a regular file");
		close(fd);
		return;
	}
	/* Read into the tx buffer: the rx buffer still holds the path. */
	for (;;) {
		ssize_t n = read(fd, c->tx, EMBER_AGENT_CHUNK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			agent_conn__send_errno(c, h->stream, errno, f.path);
			break;
		}
		if (n == 0) {
			agent_conn__send(c, EMBER_AGENT_FILE_END, h->stream,
					 NULL, 0);
			break;
		}
		total += (uint64_t)n;
		if (total > EMBER_AGENT_MAX_FILE) {
			agent_conn__send_errno(c, h->stream, EFBIG, f.path);
			break;
		}
		agent_conn__send(c, EMBER_AGENT_FILE_DATA, h->stream, c->tx,
				 (size_t)n);
	}
	close(fd);
}

void agent_files__abandon(struct slot *s)
{
	agent_conn__close_fd(&s->file_fd);
	write_file_drop(s);
}
