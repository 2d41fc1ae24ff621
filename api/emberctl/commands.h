/* SPDX-License-Identifier: Apache-2.0 */
/*
 * emberctl's commands kept outside emberctl.c, each taking the command's
 * own argc/argv (argv[0] the command's name) and returning the process's
 * exit status.
 */
#ifndef EMBER_API_EMBERCTL_COMMANDS_H
#define EMBER_API_EMBERCTL_COMMANDS_H

/* `emberctl run-code`: code.c, guest-init/INTERP.md. */
int cmd_run_code(int argc, char **argv);

/* `emberctl context ls|create|restart|rm`: code.c. */
int cmd_context(int argc, char **argv);

#endif /* EMBER_API_EMBERCTL_COMMANDS_H */
