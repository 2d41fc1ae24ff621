/* SPDX-License-Identifier: Apache-2.0 */
/* The guest agent's serving of one connection: its loop and dispatch. */
#ifndef EMBER_GUEST_AGENT_SERVE_H
#define EMBER_GUEST_AGENT_SERVE_H

/*
 * Serve one connection on @fd (made non-blocking) until it closes, with
 * @sig_fd the signalfd that reports SIGCHLD; kills what it started.
 * @fd stays open: the caller closes it.
 */
void agent_serve__connection(int fd, int sig_fd);

#endif /* EMBER_GUEST_AGENT_SERVE_H */
