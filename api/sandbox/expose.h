/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A sandbox's own ports on the host (`emberctl expose`): a TCP listener
 * on the host whose every connection becomes a TCP connection to a port
 * of the guest's loopback, through the guest agent's FORWARD
 * (guest-init/PROTOCOL.md, "Forward") over the sandbox's vsock: no
 * network device needed.
 *
 * Each exposed port has a forwarder: a small process of its own (setsid,
 * named "emberctl-fwd"), forked by expose__add(), that holds the
 * listener, opens one agent connection per accepted connection (a thread
 * each, at most max_conns at once: past that a new connection is reset
 * at once, the sandbox's other connections untouched) and copies bytes
 * both ways.  It is tied to the sandbox by its directory: it ends when
 * that is removed or renamed away (kill, TTL, a crashed supervisor's
 * clean-up), which it watches with inotify, so a port never outlives its
 * sandbox; a park leaves it.  A connection that finds the sandbox parked
 * or paused resumes it first (sandbox__wake()) when it was made with
 * auto_resume; a resume that fails resets it, with a line in <sandbox
 * dir>/expose/log (and stderr: EMBER_SUPERVISOR_LOG) saying why, and the
 * sandbox stays as it was.  Without auto_resume, or while its agent does
 * not answer, connections are reset (after EXPOSE_AGENT_MS at most).  A connection
 * to a guest port nothing listens on is reset at once.
 *
 * Records: <sandbox dir>/expose/<port> (key=value lines: port, addr,
 * max_conns, pid, pid_start), written once the forwarder runs, under
 * the flock of <sandbox dir>/expose/.lock; a record whose process is
 * gone is stale and ignored (and replaced).
 */
#ifndef EMBER_API_EXPOSE_H
#define EMBER_API_EXPOSE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "record.h"

/*
 * Connections of a port at once: each is a vsock connection, and ember's
 * vsock device carries at most VIRTIO_VSOCK_MAX_CONNS (256) a sandbox, so
 * that a flood on one port leaves room for exec, cp and the other ports.
 */
#define EXPOSE_MAX_CONNS    64 /* by default */
#define EXPOSE_CONNS_LIMIT  192 /* the most a port may be given */
#define EXPOSE_AGENT_MS	    10000 /* a connection's CONNECT and FORWARD */
#define EXPOSE_DIR_NAME	    "expose" /* in the sandbox directory */
#define EXPOSE_DEFAULT_HOST "127.0.0.1"

/* An exposed port. */
struct expose_entry {
	unsigned int port; /* the guest's TCP port, 1-65535 */
	char addr[64]; /* where the host listens: "127.0.0.1:34567",
			  "[::1]:8080" */
	unsigned int max_conns;
	pid_t pid; /* the forwarder */
	uint64_t pid_start; /* its start time (proc.h) */
};

/*
 * expose__add() - expose the guest TCP @port (1-65535) of the live
 * sandbox @sb (from sandbox__find()) on the host at @host: "PORT",
 * "ADDR:PORT" or "[IPV6]:PORT" (numeric addresses; default address
 * EXPOSE_DEFAULT_HOST; PORT 0: any free one), at most @max_conns
 * (1-EXPOSE_CONNS_LIMIT; 0: EXPOSE_MAX_CONNS) connections at once.  Fills
 * @out (addr: the address really listened on).  Forks: the caller should
 * be single-threaded or fork-safe.  Errors: -EINVAL (a bad port, address
 * or limit), -EEXIST (@port is already exposed: the message says where),
 * -EBUSY (the sandbox is paused or parked), -EADDRINUSE and the other
 * errors of socket(2)/bind(2)/listen(2), -ENOENT (the sandbox went away),
 * -ENOMEM, -errno of the state files; @err says which.
 */
int expose__add(const struct sandbox_info *sb, unsigned int port,
		const char *host, unsigned int max_conns,
		struct expose_entry *out, char *err, size_t errlen);

/*
 * expose__set_ember() - the VMM binary (@ember, a path; NULL or "":
 * none) with which the forwarders that expose__add() starts from now on
 * resume a parked auto_resume sandbox; without one such a connection is
 * reset (sandbox__wake()'s error logged).  Not thread-safe: call it
 * before expose__add().
 */
void expose__set_ember(const char *ember);

/*
 * expose__remove() - stop exposing @port of @sb: its forwarder is ended
 * (SIGTERM; open connections are cut) and its record removed.  -ENOENT
 * when @port is not exposed; -errno of the state files.
 */
int expose__remove(const struct sandbox_info *sb, unsigned int port, char *err,
		   size_t errlen);

/*
 * expose__list() - @sb's exposed ports, by port, into the malloc()ed
 * array *@out (the caller frees it; NULL when *@n is 0).  Stale records
 * are left out (and removed).  0, or -ENOMEM / -errno with @err set.
 */
int expose__list(const struct sandbox_info *sb, struct expose_entry **out,
		 size_t *n, char *err, size_t errlen);

/*
 * expose__probe() - is something listening on the guest's TCP @port?
 * One agent connection and FORWARD (its TCP connection is closed at
 * once) within @timeout_ms (> 0).  0: yes; -ECONNREFUSED: nothing
 * listens; -EPROTONOSUPPORT: the guest's agent predates FORWARD; other
 * negative errnos when the agent cannot be reached.  @err says which.
 */
int expose__probe(const struct sandbox_info *sb, unsigned int port,
		  int timeout_ms, char *err, size_t errlen);

#endif /* EMBER_API_EXPOSE_H */
