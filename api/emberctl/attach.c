// SPDX-License-Identifier: Apache-2.0
/*
 * emberctl attach and ps: the processes a sandbox's agent keeps (exec
 * --keep or --detach, guest-init/PROTOCOL.md "Processes that outlive
 * their connection"), streamed again by pid after a park and resume, or
 * listed.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../guest-init/protocol.h"
#include "cli.h"
#include "commands.h"
#include "help.h"

int cmd_attach(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "interactive", no_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct agent_exec_req req = { .stdout_fd = 1, .stderr_fd = 2 };
	struct agent_exec_result res;
	struct agent_client *c;
	struct sandbox_info sb;
	unsigned int pid;
	int interactive = 0, o, rc;

	optind = 0;
	while ((o = getopt_long(argc, argv, "+ih", opts, NULL)) != -1) {
		switch (o) {
		case 'i':
			interactive = 1;
			break;
		case 'h':
			help__usage(stdout);
			return 0;
		default:
			cli__bad_option("attach", argv);
			return EXIT_OWN;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "emberctl: attach wants a sandbox id and a "
				"pid: emberctl attach ID PID\n");
		return EXIT_OWN;
	}
	if (cli__parse_uint("PID", argv[optind + 1], 1, INT32_MAX, &pid))
		return EXIT_OWN;
	req.stdin_fd = interactive ? 0 : -1;
	req.sig_fd = cli__block_stops(1);
	c = cli__open_agent(argv[optind], &sb);
	if (!c)
		return EXIT_OWN;
	rc = agent_client__attach(c, pid, &req, &res);
	if (rc == 0) {
		if (res.dropped)
			fprintf(stderr,
				"emberctl: process %u: %" PRIu64
				" bytes of its output were dropped while "
				"nobody was attached (the guest keeps the "
				"last %u)\n",
				pid, res.dropped, EMBER_AGENT_KEEP_BUF);
		rc = cli__exit_status(&res);
	} else if (rc == -EREMOTEIO && agent_client__guest_errno(c) == EPROTO) {
		fprintf(stderr,
			"emberctl: attach in sandbox %s: its agent predates "
			"kept processes (%s)\n",
			sb.id, agent_client__error(c));
		rc = EXIT_OWN;
	} else {
		fprintf(stderr,
			"emberctl: attach to process %u in sandbox %s: %s\n",
			pid, sb.id, agent_client__error(c));
		rc = EXIT_OWN;
	}
	agent_client__free(c);
	return rc;
}

/* A process's STATE column. */
static const char *ps_state(const struct agent_proc *p, char *buf, size_t cap)
{
	if (!p->exited)
		return p->attached ? "attached" : "running";
	if (p->kind == EMBER_AGENT_EXITED)
		snprintf(buf, cap, "exited %d", p->code);
	else
		snprintf(buf, cap, "killed %d", p->code);
	return buf;
}

int cmd_ps(int argc, char **argv)
{
	struct agent_proc *procs;
	struct agent_client *c;
	struct sandbox_info sb;
	char state[32];
	size_t n;
	int rc;

	if (argc == 2 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		help__usage(stdout);
		return 0;
	}
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr,
			"emberctl: ps wants a sandbox id: emberctl ps ID\n");
		return EXIT_OWN;
	}
	c = cli__open_agent(argv[1], &sb);
	if (!c)
		return EXIT_OWN;
	rc = agent_client__list(c, &procs, &n, CLI_CONNECT_MS);
	if (rc < 0) {
		fprintf(stderr, "emberctl: ps in sandbox %s: %s\n", sb.id,
			agent_client__error(c));
		agent_client__free(c);
		return EXIT_OWN;
	}
	printf("%-8s %-10s %-10s %s\n", "PID", "STATE", "DROPPED", "COMMAND");
	for (size_t i = 0; i < n; i++)
		printf("%-8u %-10s %-10" PRIu64 " %s\n", procs[i].pid,
		       ps_state(&procs[i], state, sizeof(state)),
		       procs[i].dropped, procs[i].cmd);
	free(procs);
	agent_client__free(c);
	return 0;
}
