/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The listening address of ember's local HTTP servers (ember-mcp's
 * Streamable HTTP, ember-e2b): a loopback address only, since they serve
 * this host's users and nobody else.
 */
#ifndef EMBER_API_LOOPBACK_H
#define EMBER_API_LOOPBACK_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * @addr ("localhost", an address in 127.0.0.0/8 or ::1) and @port
 * (0-65535) as a socket address in @out; *@ipv6 says which family.
 * -EINVAL with @err ("... is not a loopback address: @who serves only
 * this host", or "not an IP address") for anything else.
 */
int loopback__sockaddr(const char *addr, unsigned int port, const char *who,
		       struct sockaddr_in6 *out, bool *ipv6, char *err,
		       size_t errlen);

/*
 * loopback__parse_listen() - a listening address as the command lines
 * take it, "[ADDR:]PORT" (ADDR a name, an IPv4 address or an IPv6 one in
 * brackets, "[::1]:8080"), into @addr (@addrlen bytes, brackets gone) and
 * *@port (0-65535).  Without ADDR (no colon) @addr is @def_addr; with
 * @def_addr NULL an ADDR is required and may not be empty.  0, or
 * -EINVAL (the caller says what it wants), with @addr and *@port then
 * unspecified.  Whether ADDR is a loopback one is loopback__sockaddr()'s
 * to say.
 */
int loopback__parse_listen(const char *arg, const char *def_addr, char *addr,
			   size_t addrlen, unsigned int *port);

#endif /* EMBER_API_LOOPBACK_H */
