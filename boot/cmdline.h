/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kernel command-line assembly: ember's defaults, the PVM profile's
 * arguments, device announcements, the user's --append and the --run
 * hand-over (guest-init/protocol.h), within the boot protocol's limit.
 */
#ifndef EMBER_BOOT_CMDLINE_H
#define EMBER_BOOT_CMDLINE_H

#include <stdbool.h>
#include <stddef.h>

#include "layout.h"

struct cmdline {
	char buf[LAYOUT_CMDLINE_MAX]; /* always NUL-terminated */
	size_t len; /* strlen(buf) */
};

/* cmdline__init() - empty command line. */
void cmdline__init(struct cmdline *c);

/*
 * cmdline__add() - append @arg (one or more space-separated words),
 * separated from what is there by one space.
 * Returns 0, or -E2BIG if the result would not fit (LAYOUT_CMDLINE_MAX
 * including the NUL); then @c is unchanged.
 */
int cmdline__add(struct cmdline *c, const char *arg);

/*
 * cmdline__has() - does a word of @c equal @key, or start with "@key="?
 * (@key given without '=').  Quoted words are not special-cased.
 */
bool cmdline__has(const struct cmdline *c, const char *key);

/*
 * cmdline__add_default() - append @key=@value (or bare @key when @value is
 * NULL) unless the command line already has @key (cmdline__has), so a
 * user's --append wins over ember's defaults.
 * Returns 0 or -E2BIG.
 */
int cmdline__add_default(struct cmdline *c, const char *key, const char *value);

/*
 * cmdline__add_run() - append EMBER_RUN_PARAM with @cmd (@len bytes, any
 * values) encoded base64url.  Returns 0, or -E2BIG if it does not fit.
 */
int cmdline__add_run(struct cmdline *c, const void *cmd, size_t len);

#endif /* EMBER_BOOT_CMDLINE_H */
