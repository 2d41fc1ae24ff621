/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Text for JSON: UTF-8 checks and repair (JSON strings must be valid
 * UTF-8, a guest's output need not be).  Pure.
 */
#ifndef EMBER_MCP_TEXT_H
#define EMBER_MCP_TEXT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* text__utf8_ok() - whether the @len bytes at @s are valid UTF-8 without
   NUL bytes (what a JSON string can carry unescaped and jansson takes). */
bool text__utf8_ok(const char *s, size_t len);

/*
 * text__json() - a JSON string of the @len bytes at @s, each invalid
 * UTF-8 sequence and each NUL replaced by U+FFFD.  A new reference; NULL
 * when out of memory.
 */
json_t *text__json(const char *s, size_t len);

/*
 * text__stat_line() - one line of `stat -c '%f %s %n'` (@len bytes at
 * @line, no '\n'): the raw mode in hex into *@mode, the size into *@size,
 * and the offset of the name (which may begin or end with blanks) into
 * *@name.  0, or -EINVAL when the line is not of that form.
 */
int text__stat_line(const char *line, size_t len, unsigned long *mode,
		    unsigned long long *size, size_t *name);

#endif /* EMBER_MCP_TEXT_H */
