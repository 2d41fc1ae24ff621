// SPDX-License-Identifier: Apache-2.0
/*
 * emberctl exec: a command in a sandbox, its output streamed, its exit
 * status emberctl's.
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../guest-init/protocol.h"
#include "cli.h"
#include "commands.h"
#include "help.h"
#include "tty.h"

/*
 * exec -t without a command: the account's login shell (its /etc/passwd
 * entry, found without getent, which small images lack), else /bin/sh,
 * as a login shell (-l: bash, dash, busybox ash, zsh and fish know it).
 */
static const char *const login_shell[] = {
	"/bin/sh", "-c",
	"s=; u=$(id -u 2>/dev/null) && "
	"while IFS=: read -r n p i g c h sh; do "
	"[ \"$i\" = \"$u\" ] && { s=$sh; break; }; "
	"done </etc/passwd 2>/dev/null; "
	"[ -n \"$s\" ] && [ -x \"$s\" ] || s=/bin/sh; "
	"exec \"$s\" -l",
	NULL
};

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
	int tty; /* -t given this many times: 2 or more forces a terminal */
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
		{ "tty", no_argument, NULL, 't' },
		{ "timeout", required_argument, NULL, 'T' },
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
	while ((c = getopt_long(argc, argv, "+ite:w:u:hd", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			x->interactive = 1;
			break;
		case 't':
			x->tty++;
			break;
		case 'T':
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

/*
 * exec -t: which terminal the session follows, into *@term (stdin, which
 * is made raw; with -tt and no terminal on stdin, stdout for its size
 * alone, else -1), the request's tty, size and stdin, TERM into @termkv
 * (@sz bytes; "" when the host has none).  0, or EXIT_OWN after saying
 * why not.
 */
static int tty_setup(const struct exec_opts *x, struct agent_exec_req *req,
		     int *term, char *termkv, size_t sz)
{
	const char *t = getenv("TERM");

	*term = -1;
	if (isatty(0)) {
		*term = 0;
	} else if (x->tty < 2) {
		fprintf(stderr, "emberctl: exec -t: stdin is not a terminal "
				"(-tt gives the command a terminal all the "
				"same)\n");
		return EXIT_OWN;
	} else if (isatty(1)) {
		*term = 1;
	}
	if (*term >= 0)
		tty__size(*term, &req->rows, &req->cols);
	req->tty = true;
	req->stdin_fd = 0;
	termkv[0] = '\0';
	if (t && *t && strlen(t) + 6 <= sz)
		snprintf(termkv, sz, "TERM=%s", t);
	return 0;
}

/* How an exec that did not run is reported: its exit status. */
static int exec_failure(struct agent_client *c, const struct exec_opts *x,
			const char *id, int rc)
{
	int e = agent_client__guest_errno(c);

	if (rc != -EREMOTEIO) {
		fprintf(stderr, "emberctl: exec in sandbox %s: %s\n", id,
			agent_client__error(c));
		return EXIT_OWN;
	}
	if (x->tty && e == ENODEV)
		fprintf(stderr,
			"emberctl: exec -t: sandbox %s has no pseudo-terminals "
			"(/dev/ptmx and devpts at /dev/pts): run the command "
			"without -t\n",
			id);
	else
		fprintf(stderr, "emberctl: %s\n", agent_client__error(c));
	return start_failure_status(e);
}

int cmd_exec(int argc, char **argv)
{
	struct exec_opts x = { 0 };
	const char *env[EMBER_AGENT_MAX_ENV + 2], **cmd, *ref, **pyargv = NULL;
	struct agent_exec_req req = { .stdout_fd = 1, .stderr_fd = 2 };
	struct agent_exec_result res;
	struct agent_client *c;
	struct sandbox_info sb;
	char termkv[256] = "";
	int ctl[2] = { -1, -1 }, term = -1;
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
	if (x.tty) {
		rc = tty_setup(&x, &req, &term, termkv, sizeof(termkv));
		if (rc)
			return rc;
	}
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
	} else if (!cmd[0] && x.tty) {
		cmd = (const char **)login_shell;
	} else if (!cmd[0]) {
		fprintf(stderr, "emberctl: exec wants a command: "
				"emberctl exec ID -- CMD [ARG...] (or exec -t "
				"ID for a shell)\n");
		return EXIT_OWN;
	}
	/*
	 * The guest's default environment (its image's, PROTOCOL.md) with
	 * the host's TERM (-t) and --env over it: ENV_ADD; a later --env K=
	 * replaces an earlier one.  One entry over the agent's count is
	 * refused by the encoder.
	 */
	if (termkv[0])
		env_set(env, &envc, termkv);
	for (size_t i = 0; i < x.envc; i++)
		env_set(env, &envc, x.env[i]);
	if (envc) {
		env[envc] = NULL;
		req.env = env;
		req.env_add = true;
	}
	req.user = x.user;
	req.argv = cmd;
	req.cwd = x.cwd;
	req.timeout_ms = x.timeout_ms;
	if (!x.tty)
		req.stdin_fd = x.interactive ? 0 : -1;
	req.keep = x.keep || x.detach;
	req.detach = x.detach;
	if (x.detach && (x.interactive || x.tty)) {
		fprintf(stderr, "emberctl: exec --detach takes no stdin (-i) "
				"or terminal (-t)\n");
		tty__restore();
		free(pyargv);
		return EXIT_OWN;
	}
	req.sig_fd = x.detach ? -1 : cli__block_stops(1);
	c = cli__open_agent(ref, &sb);
	if (!c) {
		free(pyargv);
		return EXIT_OWN;
	}
	if (term >= 0) {
		/* Window-size changes: RESIZE records through a pipe. */
		rc = pipe2(ctl, O_CLOEXEC) < 0 ? -errno : 0;
		if (rc == 0)
			rc = tty__follow(term, ctl[1], term == 0);
		if (rc < 0) {
			fprintf(stderr, "emberctl: exec -t: the terminal: %s\n",
				strerror(-rc));
			rc = EXIT_OWN;
			goto out;
		}
		req.ctl_fd = ctl[0];
	}
	rc = agent_client__exec(c, &req, &res);
	tty__restore(); /* before any message */
	if (rc == 0 && res.running) {
		/* --detach: its pid, for emberctl attach. */
		printf("%u\n", res.pid);
	} else if (rc == 0) {
		rc = cli__exit_status(&res);
	} else if (res.pid && rc != -EREMOTEIO) {
		fprintf(stderr,
			"emberctl: exec in sandbox %s: %s; process %u keeps "
			"running (emberctl attach %s %u)\n",
			sb.id, agent_client__error(c), res.pid, sb.id, res.pid);
		rc = EXIT_OWN;
	} else {
		rc = exec_failure(c, &x, sb.id, rc);
	}
out:
	tty__restore();
	for (int i = 0; i < 2; i++)
		if (ctl[i] >= 0)
			close(ctl[i]);
	agent_client__free(c);
	free(pyargv);
	return rc;
}
