// SPDX-License-Identifier: Apache-2.0
/* The loopback listening address of the local HTTP servers (loopback.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../vmm/config.h"
#include "loopback.h"

int loopback__sockaddr(const char *addr, unsigned int port, const char *who,
		       struct sockaddr_in6 *out, bool *ipv6, char *err,
		       size_t errlen)
{
	struct sockaddr_in a4 = { .sin_family = AF_INET };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };

	if (port > 65535) {
		snprintf(err, errlen, "port %u: not 0-65535", port);
		return -EINVAL;
	}
	if (!strcmp(addr, "localhost"))
		addr = "127.0.0.1";
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, addr, &a4.sin_addr) == 1) {
		if ((ntohl(a4.sin_addr.s_addr) >> 24) != 127)
			goto not_loopback;
		a4.sin_port = htons((uint16_t)port);
		memcpy(out, &a4, sizeof(a4));
		*ipv6 = false;
		return 0;
	}
	if (inet_pton(AF_INET6, addr, &a6.sin6_addr) == 1) {
		if (!IN6_IS_ADDR_LOOPBACK(&a6.sin6_addr))
			goto not_loopback;
		a6.sin6_port = htons((uint16_t)port);
		*out = a6;
		*ipv6 = true;
		return 0;
	}
	snprintf(err, errlen, "%s: not an IP address", addr);
	return -EINVAL;
not_loopback:
	snprintf(err, errlen,
		 "%s is not a loopback address: %s serves only this host "
		 "(127.0.0.1, ::1)",
		 addr, who);
	return -EINVAL;
}

int loopback__parse_listen(const char *arg, const char *def_addr, char *addr,
			   size_t addrlen, unsigned int *port)
{
	const char *colon = strrchr(arg, ':'), *ps = arg;
	uint64_t v;

	if (!colon && !def_addr)
		return -EINVAL;
	if (colon) {
		size_t n = (size_t)(colon - arg);
		bool v6 = arg[0] == '[' && n >= 2 && arg[n - 1] == ']';

		/* Without a default, the address must be there, whole. */
		if (!def_addr && (!n || n >= addrlen))
			return -EINVAL;
		snprintf(addr, addrlen, "%.*s", (int)(v6 ? n - 2 : n),
			 arg + v6);
		ps = colon + 1;
	} else {
		snprintf(addr, addrlen, "%s", def_addr);
	}
	if (config__parse_uint(ps, 0, 65535, &v))
		return -EINVAL;
	*port = (unsigned int)v;
	return 0;
}
