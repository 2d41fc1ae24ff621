// SPDX-License-Identifier: Apache-2.0
/* The loopback HTTP listener of the local servers: see listener.h. */
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "listener.h"
#include "loopback.h"

int listener__start(const struct listener_opts *o, struct MHD_Daemon **out,
		    unsigned int *port, char *err, size_t errlen)
{
	unsigned int flags = MHD_USE_THREAD_PER_CONNECTION |
			     MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
	const union MHD_DaemonInfo *di;
	struct sockaddr_in6 sa;
	struct MHD_Daemon *d;
	bool ipv6;
	int rc;

	rc = loopback__sockaddr(o->addr, o->port, o->who, &sa, &ipv6, err,
				errlen);
	if (rc)
		return rc;
	if (ipv6)
		flags |= MHD_USE_IPv6;
	if (o->allow_upgrade)
		flags |= MHD_ALLOW_UPGRADE;
	d = MHD_start_daemon(
		flags, (uint16_t)o->port, NULL, NULL, o->handle, o->cls,
		MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&sa,
		MHD_OPTION_NOTIFY_COMPLETED, o->completed, NULL,
		MHD_OPTION_CONNECTION_TIMEOUT, o->idle_s,
		MHD_OPTION_CONNECTION_LIMIT, o->max_connections,
		o->uri_log ? MHD_OPTION_URI_LOG_CALLBACK : MHD_OPTION_END,
		o->uri_log, o->cls, MHD_OPTION_END);
	if (!d) {
		snprintf(err, errlen, "cannot listen on %s port %u", o->addr,
			 o->port);
		return -EADDRINUSE;
	}
	di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	*port = di ? di->port : o->port;
	*out = d;
	return 0;
}
