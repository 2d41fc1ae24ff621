/* SPDX-License-Identifier: Apache-2.0 */
/*
 * UTF-8 for JSON strings: a check and a repair (a JSON string must be
 * valid UTF-8; a guest's output and file names need not be).  Pure.
 */
#ifndef EMBER_API_SANDBOX_UTF8_H
#define EMBER_API_SANDBOX_UTF8_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* utf8__ok() - whether the @len bytes at @s are valid UTF-8 without NUL
   bytes (what a JSON string can carry unescaped and jansson takes). */
bool utf8__ok(const char *s, size_t len);

/*
 * utf8__json() - a JSON string of the @len bytes at @s, each invalid
 * UTF-8 sequence and each NUL replaced by U+FFFD.  A new reference; NULL
 * when out of memory.
 */
json_t *utf8__json(const char *s, size_t len);

#endif /* EMBER_API_SANDBOX_UTF8_H */
