/* SPDX-License-Identifier: Apache-2.0 */
/* emberctl's usage text, which every command prints for -h/--help. */
#ifndef EMBER_API_EMBERCTL_HELP_H
#define EMBER_API_EMBERCTL_HELP_H

#include <stdio.h>

/* Print the usage of every command to @f. */
void help__usage(FILE *f);

#endif /* EMBER_API_EMBERCTL_HELP_H */
