// SPDX-License-Identifier: Apache-2.0
/*
 * emberctl exec: a command in a sandbox, its output streamed, its exit
 * status emberctl's.
 */

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../guest-init/protocol.h"
#include "cli.h"
#include "commands.h"
#include "help.h"

/* Add "K=V" to @env (@n entries), replacing an earlier K. */
static void env_set(const char **env, size_t *n, const char *kv)
{
	size_t klen = (size_t)(strchr(kv, '=') - kv);

	for (size_t i = 0; i < *n; i++) {
		if (!strncmp(env[i], kv, klen) && env[i][klen] == '=') {
			env[i] = kv;
			return;
		}
	}
	env[(*n)++] = kv;
}

static int exit_status(const struct agent_exec_result *r)
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

/* The status for a command the guest could not start (docker's). */
static int start_failure_status(int guest_errno)
{
	switch (guest_errno) {
	case ENOENT:
		return EXIT_NOTFOUND;
	case EACCES:
	case EPERM:
	case ENOEXEC:
	case EISDIR:
	case ENOTDIR:
	case ELOOP:
	case ENAMETOOLONG:
	case ETXTBSY:
	case E2BIG:
		return EXIT_NOEXEC;
	default:
		return EXIT_OWN;
	}
}

struct exec_opts {
	int interactive;
	int keep, detach; /* --keep, --detach (-d): a kept process */
	uint32_t timeout_ms;
	const char *cwd;
	const char *user;
	char *python;
	const char *env[EMBER_AGENT_MAX_ENV];
	size_t envc;
};

/* Options of exec, before and after the ID: 0, or an exit status. */
static int exec_options(int argc, char **argv, struct exec_opts *x)
{
	static const struct option opts[] = {
		{ "interactive", no_argument, NULL, 'i' },
		{ "timeout", required_argument, NULL, 't' },
		{ "env", required_argument, NULL, 'e' },
		{ "cwd", required_argument, NULL, 'w' },
		{ "user", required_argument, NULL, 'u' },
		{ "python", required_argument, NULL, 'p' },
		{ "detach", no_argument, NULL, 'd' },
		{ "keep", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char *end;
	double t;
	int c;

	optind = 0; /* a full re-initialisation: a new vector each time */
	while ((c = getopt_long(argc, argv, "+ie:w:u:hd", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			x->interactive = 1;
			break;
		case 't':
			errno = 0;
			t = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(t >= 0) ||
			    t > 4294967.0) {
				fprintf(stderr,
					"emberctl: --timeout wants seconds, "
					"not '%s'\n",
					optarg);
				return EXIT_OWN;
			}
			x->timeout_ms = (uint32_t)(t * 1000);
			if (t > 0 && !x->timeout_ms)
				x->timeout_ms = 1;
			break;
		case 'e':
			if (!strchr(optarg, '=') || optarg[0] == '=') {
				fprintf(stderr,
					"emberctl: --env wants NAME=VALUE, "
					"not '%s'\n",
					optarg);
				return EXIT_OWN;
			}
			if (x->envc >= EMBER_AGENT_MAX_ENV) {
				fprintf(stderr,
					"emberctl: too many --env options\n");
				return EXIT_OWN;
			}
			x->env[x->envc++] = optarg;
			break;
		case 'w':
			x->cwd = optarg;
			break;
		case 'u':
			if (ember_user_spec_split(optarg) < 0) {
				fprintf(stderr,
					"emberctl: --user wants NAME, UID, "
					"NAME:GROUP or UID:GID, not '%s'\n",
					optarg);
				return EXIT_OWN;
			}
			x->user = optarg;
			break;
		case 'p':
			x->python = optarg;
			break;
		case 'd':
			x->detach = 1;
			break;
		case 'k':
			x->keep = 1;
			break;
		case 'h':
			help__usage(stdout);
			return -1;
		default:
			cli__bad_option("exec", argv);
			return EXIT_OWN;
		}
	}
	return 0;
}

int cmd_exec(int argc, char **argv)
{
	struct exec_opts x = { 0 };
	const char *env[EMBER_AGENT_MAX_ENV + 1], **cmd, *ref, **pyargv = NULL;
	struct agent_exec_req req = { .stdout_fd = 1, .stderr_fd = 2 };
	struct agent_exec_result res;
	struct agent_client *c;
	struct sandbox_info sb;
	size_t envc = 0;
	int rc, n;

	/* exec [opts] ID [opts] [--] CMD...: options around the ID. */
	rc = exec_options(argc, argv, &x);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (optind >= argc) {
		fprintf(stderr, "emberctl: exec wants a sandbox id\n");
		return EXIT_OWN;
	}
	n = optind;
	ref = argv[n];
	rc = exec_options(argc - n, argv + n, &x);
	if (rc)
		return rc < 0 ? 0 : rc;
	cmd = (const char **)argv + n + optind;
	if (x.python) {
		int extra = argc - n - optind;

		pyargv = calloc((size_t)extra + 4, sizeof(*pyargv));
		if (!pyargv) {
			cli__report("out of memory");
			return EXIT_OWN;
		}
		pyargv[0] = "python3";
		pyargv[1] = "-c";
		pyargv[2] = x.python;
		for (int i = 0; i < extra; i++)
			pyargv[3 + i] = cmd[i];
		cmd = pyargv;
	} else if (!cmd[0]) {
		fprintf(stderr, "emberctl: exec wants a command: "
				"emberctl exec ID -- CMD [ARG...]\n");
		return EXIT_OWN;
	}
	/*
	 * The guest's default environment (its image's, PROTOCOL.md) with
	 * --env over it: ENV_ADD; a later --env K= replaces an earlier one.
	 */
	if (x.envc) {
		for (size_t i = 0; i < x.envc; i++)
			env_set(env, &envc, x.env[i]);
		env[envc] = NULL;
		req.env = env;
		req.env_add = true;
	}
	req.user = x.user;
	req.argv = cmd;
	req.cwd = x.cwd;
	req.timeout_ms = x.timeout_ms;
	req.stdin_fd = x.interactive ? 0 : -1;
	req.keep = x.keep || x.detach;
	req.detach = x.detach;
	if (x.detach && x.interactive) {
		fprintf(stderr,
			"emberctl: exec --detach takes no stdin (-i)\n");
		free(pyargv);
		return EXIT_OWN;
	}
	req.sig_fd = x.detach ? -1 : cli__block_stops(1);
	c = cli__open_agent(ref, &sb);
	if (!c) {
		free(pyargv);
		return EXIT_OWN;
	}
	rc = agent_client__exec(c, &req, &res);
	if (rc == 0 && res.running) {
		/* --detach: its pid, for emberctl attach. */
		printf("%u\n", res.pid);
		rc = 0;
	} else if (rc == 0) {
		rc = exit_status(&res);
	} else if (res.pid && rc != -EREMOTEIO) {
		fprintf(stderr,
			"emberctl: exec in sandbox %s: %s; process %u keeps "
			"running (emberctl attach %s %u)\n",
			sb.id, agent_client__error(c), res.pid, sb.id, res.pid);
		rc = EXIT_OWN;
	} else if (rc == -EREMOTEIO) {
		fprintf(stderr, "emberctl: %s\n", agent_client__error(c));
		rc = start_failure_status(agent_client__guest_errno(c));
	} else {
		fprintf(stderr, "emberctl: exec in sandbox %s: %s\n", sb.id,
			agent_client__error(c));
		rc = EXIT_OWN;
	}
	agent_client__free(c);
	free(pyargv);
	return rc;
}
