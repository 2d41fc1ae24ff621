/* SPDX-License-Identifier: Apache-2.0 */
/*
 * emberctl's commands, the entries of its command table (emberctl.c):
 * each takes the command's own argc/argv (argv[0] the command's name)
 * and returns the process's exit status (usage and exit statuses:
 * help.c and README.md).
 */
#ifndef EMBER_API_EMBERCTL_COMMANDS_H
#define EMBER_API_EMBERCTL_COMMANDS_H

/* `emberctl run`: run.c. */
int cmd_run(int argc, char **argv);

/* `emberctl exec`: exec.c. */
int cmd_exec(int argc, char **argv);

/* `emberctl attach`, `ps`: kept processes, attach.c. */
int cmd_attach(int argc, char **argv);
int cmd_ps(int argc, char **argv);

/* `emberctl cp`: cp.c. */
int cmd_cp(int argc, char **argv);

/* `emberctl ls`, `kill`, `ttl`, `pause`, `resume`, `swap-drive`:
   lifecycle.c. */
int cmd_ls(int argc, char **argv);
int cmd_kill(int argc, char **argv);
int cmd_ttl(int argc, char **argv);
int cmd_pause(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_swap_drive(int argc, char **argv);

/* `emberctl template build|save|ls|rm`: templates.c. */
int cmd_template(int argc, char **argv);

/* `emberctl expose`: expose.c (api/sandbox/expose.h). */
int cmd_expose(int argc, char **argv);

/* `emberctl run-code`: code.c, guest-init/INTERP.md. */
int cmd_run_code(int argc, char **argv);

/* `emberctl context ls|create|restart|rm`: code.c. */
int cmd_context(int argc, char **argv);

#endif /* EMBER_API_EMBERCTL_COMMANDS_H */
