// SPDX-License-Identifier: Apache-2.0
/* What emberctl's commands share: see cli.h. */

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "../../guest-init/protocol.h"
#include "../../vmm/config.h"
#include "../sandbox/sandbox.h"
#include "../sandbox/sibling.h"
#include "../sandbox/template.h"
#include "cli.h"

void cli__bad_option(const char *cmd, char **argv)
{
	fprintf(stderr,
		"emberctl: %s: unknown option or missing value: '%s' (see "
		"emberctl --help)\n",
		cmd, argv[optind - 1]);
}

void cli__report(const char *msg)
{
	const char *nl = strchr(msg, '\n');

	if (!nl) {
		fprintf(stderr, "emberctl: %s\n", msg);
		return;
	}
	fprintf(stderr, "emberctl: %.*s\n", (int)(nl - msg), msg);
	for (msg = nl + 1; *msg; msg = nl + 1) {
		nl = strchr(msg, '\n');
		if (!nl) {
			fprintf(stderr, "  %s\n", msg);
			break;
		}
		fprintf(stderr, "  %.*s\n", (int)(nl - msg), msg);
	}
}

int cli__parse_uint(const char *opt, const char *s, unsigned int min,
		    unsigned int max, unsigned int *out)
{
	uint64_t v;

	if (config__parse_uint(s, min, max, &v)) {
		fprintf(stderr,
			"emberctl: %s wants a number from %u to %u, not '%s'\n",
			opt, min, max, s);
		return -1;
	}
	*out = (unsigned int)v;
	return 0;
}

int cli__default_path(const char *what, const char *given, const char *env,
		      const char *rel, int exec, char *out, size_t outsz)
{
	const char *e = getenv(env);
	char tried[PATH_MAX];
	int rc;

	rc = sibling__path(given, env, rel, tried, sizeof(tried), out, outsz);
	if (!tried[0]) {
		if (rc == -ENAMETOOLONG)
			fprintf(stderr, "emberctl: %s path too long\n", what);
		else
			fprintf(stderr, "emberctl: /proc/self/exe: %s\n",
				strerror(-rc));
		return -1;
	}
	if (access(tried, exec ? X_OK : R_OK) < 0) {
		if (given)
			fprintf(stderr, "emberctl: %s %s: %s\n", what, tried,
				strerror(errno));
		else
			fprintf(stderr, "emberctl: %s %s: %s (%s %s)\n", what,
				tried, strerror(errno),
				e && *e ? "from" : "set", env);
		return -1;
	}
	/* The supervisor works from /: relative paths would not do. */
	if (rc == -ENAMETOOLONG) {
		fprintf(stderr, "emberctl: %s %s: path too long\n", what,
			tried);
		return -1;
	}
	if (rc < 0) {
		fprintf(stderr, "emberctl: %s %s: %s\n", what, tried,
			strerror(-rc));
		return -1;
	}
	return 0;
}

int cli__block_stops(int with_fd)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (with_fd) {
		sigaddset(&set, SIGQUIT);
		sigaddset(&set, SIGUSR1);
		sigaddset(&set, SIGUSR2);
	}
	sigprocmask(SIG_BLOCK, &set, NULL);
	return with_fd ? signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC) : -1;
}

int cli__parse_machine(int opt, const char *arg, unsigned int *mem_mib,
		       unsigned int *vcpus)
{
	char err[256];
	uint64_t mem;

	if (opt == 'm') {
		if (config__parse_mem(arg, &mem, err, sizeof(err))) {
			fprintf(stderr, "emberctl: --mem %s: %s\n", arg, err);
			return 2;
		}
		*mem_mib = (unsigned int)mem;
		return 0;
	}
	if (config__parse_vcpus(arg, vcpus, err, sizeof(err))) {
		fprintf(stderr, "emberctl: --vcpus %s: %s\n", arg, err);
		return 2;
	}
	return 0;
}

int cli__template_name(const char *name)
{
	char err[256];

	if (template__name_ok(name, err, sizeof(err)) == 0)
		return 0;
	cli__report(err);
	return 2;
}

int cli__parse_net(int argc, char **argv, enum net_mode *mode)
{
	const char *arg = optarg;

	if (!arg && optind < argc && argv[optind][0] != '-')
		arg = argv[optind++];
	if (!arg) {
		*mode = NET_NAT;
		return 0;
	}
	if (net__mode_parse(arg, mode) == 0)
		return 0;
	fprintf(stderr,
		"emberctl: --net wants nat, host-only or none, not '%s'\n",
		arg);
	return 2;
}

int cli__wake(struct sandbox_info *sb)
{
	char ember[PATH_MAX] = "", err[4096];
	sigset_t set, old;
	int rc;

	if (!sb->auto_resume || (!sb->parked && !sb->paused))
		return 0;
	if (sb->parked && cli__default_path("ember", NULL, "EMBER_BIN", "ember",
					    1, ember, sizeof(ember)))
		return -1;
	/* A restore is seen through (a stop passes on to its supervisor). */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, &old);
	rc = sandbox__wake(sb, ember[0] ? ember : NULL, SANDBOX_DEF_BOOT_S, err,
			   sizeof(err));
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (rc < 0) {
		cli__report(err);
		return -1;
	}
	return 0;
}

struct agent_client *cli__open_agent(const char *ref, struct sandbox_info *sb)
{
	struct agent_client *c;
	char err[512];
	int rc;

	rc = sandbox__find(ref, sb, err, sizeof(err));
	if (rc < 0) {
		cli__report(err);
		return NULL;
	}
	if (cli__wake(sb) < 0)
		return NULL;
	if (sb->paused) {
		fprintf(stderr,
			"emberctl: sandbox %s is %s (emberctl resume %s)\n",
			sb->id, sb->parked ? "parked" : "paused", sb->id);
		return NULL;
	}
	rc = sandbox__agent_connect(sb, CLI_CONNECT_MS, &c, err, sizeof(err));
	if (rc < 0) {
		cli__report(err);
		return NULL;
	}
	return c;
}

int cli__exit_status(const struct agent_exec_result *r)
{
	switch (r->kind) {
	case EMBER_AGENT_EXITED:
		return r->code;
	case EMBER_AGENT_SIGNALLED:
		return 128 + r->code;
	default:
		return EXIT_TIMEOUT;
	}
}
