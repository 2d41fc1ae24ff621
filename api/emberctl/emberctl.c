// SPDX-License-Identifier: Apache-2.0
/*
 * emberctl: create and drive sandboxes (ember microVMs with the guest
 * agent).  See usage() and README.md.
 *
 *   emberctl run [options]            start one, print its id
 *   emberctl exec [options] ID -- CMD run CMD in it, streaming output
 *   emberctl attach ID PID            stream a kept process again
 *   emberctl ps ID                    list its kept processes
 *   emberctl cp SRC DST               copy a file in or out (ID:PATH)
 *   emberctl ls                       list the live and parked ones
 *   emberctl pause [--to-disk] ID...  freeze them (in memory, or parked)
 *   emberctl resume ID...             let them run on
 *   emberctl kill ID...               end them, leaving nothing behind
 *   emberctl ttl ID S                 renew one's TTL: S seconds from now
 *   emberctl swap-drive ID SLOT FILE  a file into a spare drive (spare.h)
 *   emberctl expose ID PORT [HOST]    a guest port on the host (expose.h)
 *   emberctl template build|ls|rm     snapshots that `run` restores
 *   emberctl run-code ID CODE         Python/JavaScript in its interpreter
 *   emberctl context ls|create|...    the interpreter's contexts (code.c)
 *
 * This file is the command table and main(); each command group is a
 * file of its own (commands.h says which), on what they share (cli.h)
 * and the sandbox library (api/sandbox/).
 */

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "help.h"

/* The commands, as kvmtool's builtins: a name and its entry point. */
static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv); /* argv[0]: the command's name */
} commands[] = {
	{ .name = "run", .fn = cmd_run },
	{ .name = "exec", .fn = cmd_exec },
	{ .name = "cp", .fn = cmd_cp },
	{ .name = "ls", .fn = cmd_ls },
	{ .name = "kill", .fn = cmd_kill },
	{ .name = "pause", .fn = cmd_pause },
	{ .name = "resume", .fn = cmd_resume },
	{ .name = "template", .fn = cmd_template },
	{ .name = "ttl", .fn = cmd_ttl },
	{ .name = "swap-drive", .fn = cmd_swap_drive },
	{ .name = "expose", .fn = cmd_expose },
	{ .name = "run-code", .fn = cmd_run_code },
	{ .name = "context", .fn = cmd_context },
	{ .name = "attach", .fn = cmd_attach },
	{ .name = "ps", .fn = cmd_ps },
};

/* Make sure fds 0-2 are open: our own files must not land there. */
static void sane_stdio(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 &&
		    open("/dev/null", fd ? O_WRONLY : O_RDONLY) < 0)
			_exit(EXIT_OWN);
}

int main(int argc, char **argv)
{
	const char *cmd;
	size_t i;

	sane_stdio();
	signal(SIGPIPE, SIG_IGN);
	opterr = 0; /* cli__bad_option() speaks instead */
	if (argc < 2) {
		help__usage(stderr);
		return 2;
	}
	cmd = argv[1];
	argc--;
	argv++;
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(cmd, commands[i].name))
			return commands[i].fn(argc, argv);
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") ||
	    !strcmp(cmd, "help")) {
		help__usage(stdout);
		return 0;
	}
	fprintf(stderr,
		"emberctl: unknown command '%s' (run, exec, attach, ps, cp, ls, pause, "
		"resume, kill, ttl, swap-drive, expose, template, run-code, "
		"context; see "
		"emberctl "
		"--help)\n",
		cmd);
	return 2;
}
