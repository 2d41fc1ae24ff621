// SPDX-License-Identifier: Apache-2.0
/*
 * The stdio transport (MCP spec 2025-06-18, "Transports: stdio"): the
 * client writes JSON-RPC messages to our stdin and reads ours from our
 * stdout, one per line; logs go to stderr.  The reading thread feeds
 * every line to the session, so that a response to our elicitation
 * request reaches the call that waits for it while calls run.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jsonrpc.h"
#include "transport.h"

#define STOP_WAIT_MS 20000 /* for the calls after a stop signal */

struct stdio_out {
	struct mcp_out base;
	pthread_mutex_t lock; /* one message at a time on the fd */
	int fd;
	bool broken; /* the client stopped reading */
};

/*
 * The one session of the process, for stdio__stop() from the signal
 * thread (the only global state: a signal has no other way in).
 */
static struct {
	pthread_mutex_t lock;
	struct mcp_session *s;
	struct backend *b;
	bool stopped;
} cur = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int write_all(int fd, const char *p, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int stdio_send(struct mcp_out *o, const char *json, size_t len,
		      bool final)
{
	struct stdio_out *so = (struct stdio_out *)o;
	int rc = -EPIPE;

	(void) final;
	pthread_mutex_lock(&so->lock);
	if (!so->broken) {
		rc = write_all(so->fd, json, len);
		if (!rc)
			rc = write_all(so->fd, "\n", 1);
		so->broken = rc < 0;
	}
	pthread_mutex_unlock(&so->lock);
	return rc;
}

/*
 * End the session: under --kill-on-disconnect its sandboxes killed first,
 * so that calls end soon; else they stay the local user's.
 */
static void end_session(void)
{
	pthread_mutex_lock(&cur.lock);
	if (!cur.stopped && cur.s) {
		cur.stopped = true;
		mcp__shutdown(cur.s);
		backend__end(cur.b);
	}
	pthread_mutex_unlock(&cur.lock);
}

void stdio__stop(void)
{
	end_session();
	/* Calls in killed sandboxes end soon; the reader may not. */
	pthread_mutex_lock(&cur.lock);
	if (cur.s)
		mcp__wait(cur.s, STOP_WAIT_MS);
	pthread_mutex_unlock(&cur.lock);
}

/*
 * Feed each complete line of @buf (@len bytes) to the session; returns
 * the bytes consumed.  Lines over JSONRPC_MAX_MESSAGE are the caller's.
 */
static size_t feed(struct mcp_session *s, char *buf, size_t len,
		   struct mcp_out *out)
{
	size_t done = 0, n;
	char *nl;

	while ((nl = memchr(buf + done, '\n', len - done))) {
		n = (size_t)(nl - (buf + done));
		while (n && buf[done + n - 1] == '\r')
			n--;
		if (n && strspn(buf + done, " \t") < n &&
		    mcp__receive(s, buf + done, n, out) < 0)
			fprintf(stderr, "ember-mcp: out of memory\n");
		done = (size_t)(nl - buf) + 1;
	}
	return done;
}

int stdio__serve(const struct server_config *cfg, int in_fd, int out_fd)
{
	struct stdio_out out = { .base = { .send = stdio_send }, .fd = out_fd };
	struct mcp_config mc = cfg->mcp;
	size_t cap = 1 << 16, len = 0, used;
	char *buf = malloc(cap), *nb, *nl;
	bool skip = false; /* in a line too long, until its '\n' */
	ssize_t n;
	int rc = 0;

	/*
	 * read(2), not stdio: a FILE locked by this thread while another
	 * forks a sandbox's supervisor would stay locked in the child.
	 */
	out.base.refs = 1; /* the session's, for good */
	pthread_mutex_init(&out.lock, NULL);
	pthread_mutex_lock(&cur.lock);
	cur.b = backend__new(&cfg->backend);
	mc.call = backend__call;
	mc.call_arg = cur.b;
	cur.s = cur.b ? mcp__new(&mc) : NULL;
	pthread_mutex_unlock(&cur.lock);
	if (!cur.s || !buf) {
		rc = -ENOMEM;
		goto out;
	}
	for (;;) {
		if (len == cap) {
			if (cap > JSONRPC_MAX_MESSAGE) {
				/*
				 * A line too long: one error (its length
				 * says so), then all of it up to its '\n'
				 * skipped, lest its tail pass for a message.
				 */
				if (!skip)
					mcp__receive(cur.s, buf, len,
						     &out.base);
				skip = true;
				len = 0;
				continue;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				rc = -ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(in_fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used = len;
		len += (size_t)n;
		if (skip) {
			nl = memchr(buf + used, '\n', len - used);
			if (!nl)
				continue;
			skip = false;
			used = (size_t)(nl - buf) + 1;
			memmove(buf, buf + used, len - used);
			len -= used;
		}
		used = feed(cur.s, buf, len, &out.base);
		memmove(buf, buf + used, len - used);
		len -= used;
	}
	/* A last line without '\n' (not the end of one too long). */
	if (len && len < cap && !skip) {
		buf[len++] = '\n';
		feed(cur.s, buf, len, &out.base);
	}
out:
	free(buf);
	end_session();
	if (cur.s)
		mcp__wait(cur.s, -1);
	pthread_mutex_lock(&cur.lock);
	mcp__free(cur.s);
	backend__free(cur.b);
	cur.s = NULL;
	cur.b = NULL;
	pthread_mutex_unlock(&cur.lock);
	pthread_mutex_destroy(&out.lock);
	return rc;
}
