/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guest's text that ember-mcp reads back: a line of `stat`'s output.
 * Pure.  (UTF-8 for JSON strings is api/sandbox/utf8.h.)
 */
#ifndef EMBER_MCP_TEXT_H
#define EMBER_MCP_TEXT_H

#include <stddef.h>

/*
 * text__stat_line() - one line of `stat -c '%f %s %n'` (@len bytes at
 * @line, no '\n'): the raw mode in hex into *@mode, the size into *@size,
 * and the offset of the name (which may begin or end with blanks) into
 * *@name.  0, or -EINVAL when the line is not of that form.
 */
int text__stat_line(const char *line, size_t len, unsigned long *mode,
		    unsigned long long *size, size_t *name);

#endif /* EMBER_MCP_TEXT_H */
