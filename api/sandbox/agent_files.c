// SPDX-License-Identifier: Apache-2.0
/* The agent client's file transfers, both ways: see agent_client.h. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../guest-init/protocol.h"
#include "agent_client.h"
#include "agent_wire.h"
#include "files.h"

/* Host file data per FILE_DATA frame. */
#define FILE_CHUNK (256U << 10)

struct file_ctx {
	int fd;
	uint64_t bytes;
	int end_sent;
};

static int wfile_frame(struct op *op, const struct ember_agent_hdr *h,
		       const uint8_t *p)
{
	struct file_ctx *x = op->ctx;

	if (h->type != EMBER_AGENT_OK || h->len || !x->end_sent)
		return agent_wire__other_frame(op, h, p);
	op->done = 1;
	return 0;
}

static int wfile_input(struct op *op)
{
	struct file_ctx *x = op->ctx;
	ssize_t n = agent_wire__tx_read(op->c, x->fd, FILE_CHUNK);

	if (n == -EAGAIN)
		return 0;
	if (n == -ENOBUFS)
		return -ENOBUFS;
	if (n < 0)
		return agent_wire__fail(op->c, -EIO,
					"reading the host file: %s",
					strerror((int)-n));
	if (n == 0) {
		agent_wire__tx_commit(op->c, EMBER_AGENT_FILE_END, op->stream,
				      0);
		op->in_fd = -1;
		x->end_sent = 1;
		return 0;
	}
	x->bytes += (uint64_t)n;
	if (x->bytes > EMBER_AGENT_MAX_FILE)
		return agent_wire__fail(op->c, -EFBIG,
					"the file is over %llu MiB",
					EMBER_AGENT_MAX_FILE >> 20);
	agent_wire__tx_commit(op->c, EMBER_AGENT_FILE_DATA, op->stream,
			      (uint32_t)n);
	return 0;
}

int agent_client__write_file(struct agent_client *c, int src_fd,
			     const char *guest_path, uint32_t mode, int idle_ms)
{
	struct file_ctx x = { .fd = src_fd };
	struct op op = {
		.c = c,
		.frame = wfile_frame,
		.input = wfile_input,
		.in_fd = src_fd,
		.sig_fd = -1,
		.idle_ms = idle_ms > 0 ? idle_ms : 0,
		.ctx = &x,
	};
	uint8_t *b;
	size_t off = 0;
	struct stat st;
	off_t pos;
	int rc;

	c->guest_errno = 0;
	if (mode & ~07777U || src_fd < 0 || !guest_path || !*guest_path)
		return agent_wire__fail(c, -EINVAL, "bad file request");
	rc = agent_wire__request(c, &b);
	if (rc)
		return rc;
	if (fstat(src_fd, &st) == 0 && S_ISREG(st.st_mode)) {
		pos = lseek(src_fd, 0, SEEK_CUR);
		if (pos >= 0 && pos < st.st_size &&
		    (uint64_t)(st.st_size - pos) > EMBER_AGENT_MAX_FILE)
			return agent_wire__fail(c, -EFBIG,
						"the file is over %llu MiB",
						EMBER_AGENT_MAX_FILE >> 20);
	}
	if (ember_agent_tlv_put_str(b + EMBER_AGENT_HDR_SIZE,
				    EMBER_AGENT_MAX_PAYLOAD, &off,
				    EMBER_AGENT_T_PATH, guest_path) < 0 ||
	    ember_agent_tlv_put_u32(b + EMBER_AGENT_HDR_SIZE,
				    EMBER_AGENT_MAX_PAYLOAD, &off,
				    EMBER_AGENT_T_MODE, mode) < 0)
		return agent_wire__fail(c, -ENAMETOOLONG,
					"guest path too long");
	op.stream = agent_wire__new_stream(c);
	agent_wire__tx_commit(c, EMBER_AGENT_WRITE_FILE, op.stream,
			      (uint32_t)off);
	/* Once the guest answered early, what is still queued gets ESRCH. */
	return agent_wire__pump(&op);
}

static int rfile_frame(struct op *op, const struct ember_agent_hdr *h,
		       const uint8_t *p)
{
	struct file_ctx *x = op->ctx;
	int rc;

	switch (h->type) {
	case EMBER_AGENT_FILE_DATA:
		x->bytes += h->len;
		if (x->bytes > EMBER_AGENT_MAX_FILE)
			return agent_wire__fail(
				op->c, -EFBIG,
				"the agent sent more than %llu MiB",
				EMBER_AGENT_MAX_FILE >> 20);
		rc = files__write_all(x->fd, p, h->len);
		if (rc < 0)
			return agent_wire__fail(op->c, -EIO,
						"writing the host file: %s",
						strerror(-rc));
		return 0;
	case EMBER_AGENT_FILE_END:
		if (h->len)
			return agent_wire__fail(op->c, -EPROTO,
						"FILE_END with a payload");
		op->done = 1;
		return 0;
	default:
		return agent_wire__other_frame(op, h, p);
	}
}

int agent_client__read_file(struct agent_client *c, const char *guest_path,
			    int dst_fd, int idle_ms)
{
	struct file_ctx x = { .fd = dst_fd };
	struct op op = {
		.c = c,
		.frame = rfile_frame,
		.in_fd = -1,
		.sig_fd = -1,
		.idle_ms = idle_ms > 0 ? idle_ms : 0,
		.ctx = &x,
	};
	uint8_t *b;
	size_t off = 0;
	int rc;

	c->guest_errno = 0;
	if (dst_fd < 0 || !guest_path || !*guest_path)
		return agent_wire__fail(c, -EINVAL, "bad file request");
	rc = agent_wire__request(c, &b);
	if (rc)
		return rc;
	if (ember_agent_tlv_put_str(b + EMBER_AGENT_HDR_SIZE,
				    EMBER_AGENT_MAX_PAYLOAD, &off,
				    EMBER_AGENT_T_PATH, guest_path) < 0)
		return agent_wire__fail(c, -ENAMETOOLONG,
					"guest path too long");
	op.stream = agent_wire__new_stream(c);
	agent_wire__tx_commit(c, EMBER_AGENT_READ_FILE, op.stream,
			      (uint32_t)off);
	return agent_wire__pump(&op);
}
