/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The part of JSON Schema (draft 2020-12, which MCP's inputSchema uses:
 * spec 2025-06-18, "Tools") that ember-mcp's tool schemas are written in,
 * so that the arguments are checked against the very schema tools/list
 * shows: "type" (a name or an array of names), "properties", "required",
 * "additionalProperties" (false or a schema), "enum" (of strings),
 * "minimum", "maximum", "minLength", "maxLength", "items".  Other
 * keywords (description, title, default) are ignored.  Pure.
 */
#ifndef EMBER_MCP_SCHEMA_H
#define EMBER_MCP_SCHEMA_H

#include <jansson.h>
#include <stddef.h>

/*
 * schema__check() - whether @v satisfies @schema; @where names @v in the
 * message ("arguments").  0, or -EINVAL with one line in @err (@errlen
 * bytes) such as "arguments.timeout: must be at most 86400".
 */
int schema__check(const json_t *schema, const json_t *v, const char *where,
		  char *err, size_t errlen);

#endif /* EMBER_MCP_SCHEMA_H */
