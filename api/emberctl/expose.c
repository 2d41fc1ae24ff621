// SPDX-License-Identifier: Apache-2.0
/*
 * emberctl expose: a sandbox's guest TCP port on the host, forwarded over
 * vsock by the guest agent (api/sandbox/expose.h).
 *
 *   emberctl expose [--max-conns N] ID PORT [[HOSTADDR:]HOSTPORT]
 *   emberctl expose --rm ID PORT
 *   emberctl expose ID
 */

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "../sandbox/expose.h"
#include "../sandbox/sandbox.h"
#include "cli.h"
#include "commands.h"

#define PROBE_MS 10000 /* the one check that something listens */

static int usage(void)
{
	fprintf(stderr, "usage: emberctl expose [--max-conns N] ID PORT "
			"[[HOSTADDR:]HOSTPORT]\n"
			"       emberctl expose --rm ID PORT\n"
			"       emberctl expose ID\n");
	return 2;
}

static int list(const struct sandbox_info *sb)
{
	struct expose_entry *v;
	char err[512];
	size_t n;

	if (expose__list(sb, &v, &n, err, sizeof(err)) < 0) {
		cli__report(err);
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		printf("%u %s\n", v[i].port, v[i].addr);
	free(v);
	return fflush(stdout) == 0 ? 0 : 1;
}

static int add(const struct sandbox_info *sb, unsigned int port,
	       const char *host, unsigned int max_conns)
{
	struct expose_entry e;
	char err[512];
	int rc;

	char ember[PATH_MAX] = "";

	/* A parked auto-resume sandbox is resumed by a connection. */
	if (sb->auto_resume &&
	    cli__default_path("ember", NULL, "EMBER_BIN", "ember", 1, ember,
			      sizeof(ember)) == 0)
		expose__set_ember(ember);
	if (expose__add(sb, port, host, max_conns, &e, err, sizeof(err)) < 0) {
		cli__report(err);
		return 1;
	}
	rc = expose__probe(sb, port, PROBE_MS, err, sizeof(err));
	if (rc == -EPROTONOSUPPORT) {
		/* It can never work: take it back. */
		char err2[512];

		expose__remove(sb, port, err2, sizeof(err2));
		cli__report(err);
		return 1;
	}
	printf("%s\n", e.addr);
	if (fflush(stdout) != 0)
		return 1;
	if (rc == -ECONNREFUSED)
		fprintf(stderr,
			"emberctl: warning: nothing listens on port %u in "
			"sandbox %s yet: connections are refused until "
			"something does\n",
			port, sb->id);
	else if (rc < 0)
		fprintf(stderr, "emberctl: warning: %s\n", err);
	return 0;
}

int cmd_expose(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rm", no_argument, NULL, 'r' },
		{ "max-conns", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	unsigned int port = 0, max_conns = 0;
	struct sandbox_info sb;
	bool rm = false;
	char err[512];
	int c, rc;

	optind = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			rm = true;
			break;
		case 'm':
			if (cli__parse_uint("--max-conns", optarg, 1,
					    EXPOSE_CONNS_LIMIT, &max_conns) < 0)
				return 2;
			break;
		case 'h':
			usage();
			return 0;
		default:
			cli__bad_option("expose", argv);
			return 2;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1 || argc > 3 || (rm && argc != 2) || (rm && max_conns) ||
	    (argc == 1 && max_conns))
		return usage();
	if (argc >= 2 && cli__parse_uint("PORT", argv[1], 1, 65535, &port) < 0)
		return 2;
	rc = sandbox__find(argv[0], &sb, err, sizeof(err));
	if (rc < 0) {
		cli__report(err);
		return 1;
	}
	if (argc == 1)
		return list(&sb);
	if (rm) {
		if (expose__remove(&sb, port, err, sizeof(err)) < 0) {
			cli__report(err);
			return 1;
		}
		return 0;
	}
	return add(&sb, port, argc == 3 ? argv[2] : NULL, max_conns);
}
