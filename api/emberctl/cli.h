/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What emberctl's commands share: how they speak (every message on
 * stderr starts "emberctl: "), their exit statuses, and the option
 * parsers and look-ups more than one command needs.  Below every
 * command file; knows no command.
 */
#ifndef EMBER_API_EMBERCTL_CLI_H
#define EMBER_API_EMBERCTL_CLI_H

#include <stddef.h>

#include "../sandbox/agent_client.h"
#include "../sandbox/net.h"
#include "../sandbox/record.h"

/* exec's exit statuses for its own troubles (docker's, coreutils'). */
#define EXIT_OWN      125
#define EXIT_NOEXEC   126
#define EXIT_NOTFOUND 127
#define EXIT_TIMEOUT  124

#define CLI_CONNECT_MS 30000 /* exec/cp: until the agent answers a PING */

/*
 * A guest process's end @r as exec's and attach's exit status: its exit
 * code (0-255), 128 + N when signal N ended it, EXIT_TIMEOUT otherwise
 * (killed at the deadline).
 */
int cli__exit_status(const struct agent_exec_result *r);

/*
 * getopt's '?' (opterr is 0) in the command @cmd: one line naming the
 * option (@argv[optind - 1]), not getopt's message (which would carry the
 * sandbox id as the program name).
 */
void cli__bad_option(const char *cmd, char **argv);

/* Print "emberctl: <first line>" and the other lines of @msg indented. */
void cli__report(const char *msg);

/*
 * A decimal @s for the option @opt in [@min, @max] into *@out: 0, or -1
 * after saying what is wrong.
 */
int cli__parse_uint(const char *opt, const char *s, unsigned int min,
		    unsigned int max, unsigned int *out);

/*
 * The file @what (for messages): @given, else @env's value, else @rel
 * beside this binary, as an absolute path into @out (@outsz bytes).  A
 * file that is not there (or not executable for @exec, not readable
 * else) is an error that names it: -1 after saying so, else 0.
 */
int cli__default_path(const char *what, const char *given, const char *env,
		      const char *rel, int exec, char *out, size_t outsz);

/*
 * Block the signals that stop us (SIGINT, SIGTERM, SIGHUP; with @with_fd
 * also SIGQUIT, SIGUSR1, SIGUSR2): with @with_fd a signalfd for them (or
 * -1 when it cannot be made), else -1.
 */
int cli__block_stops(int with_fd);

/*
 * Parse --mem (@opt 'm') or --vcpus (any other @opt) with ember's own
 * limits and words (vmm/config.h) into @mem_mib or @vcpus: 0, or 2 after
 * saying what is wrong.
 */
int cli__parse_machine(int opt, const char *arg, unsigned int *mem_mib,
		       unsigned int *vcpus);

/* A template name from the command line: 0, or 2 after saying why not. */
int cli__template_name(const char *name);

/*
 * --net [MODE] (or --net=MODE), within getopt_long() over @argc/@argv:
 * the mode into *@mode; a bare --net is nat.  The next argument is taken
 * as the mode when it is no option (a word there that is no mode is an
 * error, not an argument).  0, or 2 after saying what is wrong.
 */
int cli__parse_net(int argc, char **argv, enum net_mode *mode);

/*
 * The sandbox @sb (from sandbox__find()), made with --auto-resume and
 * parked or paused: resumed (sandbox__wake(), the boot timeout
 * SANDBOX_DEF_BOOT_S), @sb read again.  0 (also for any other sandbox,
 * left as it is), or -1 after reporting why (it stays parked).
 */
int cli__wake(struct sandbox_info *sb);

/*
 * Find the sandbox @ref (into @sb) and connect to its agent, which must
 * answer a PING within CLI_CONNECT_MS; a paused or parked sandbox is
 * resumed first when it was made with --auto-resume (cli__wake()), else
 * refused.  The client (the caller frees it), or NULL after reporting
 * why.
 */
struct agent_client *cli__open_agent(const char *ref, struct sandbox_info *sb);

#endif /* EMBER_API_EMBERCTL_CLI_H */
