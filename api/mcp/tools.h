/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ember-mcp's tools (MCP spec 2025-06-18, "Tools"): the table tools/list
 * shows (name, description, input and output JSON Schemas, annotations),
 * and the helpers that build a CallToolResult: structuredContent plus the
 * same JSON as a text content item (as the spec asks for backwards
 * compatibility), images as image content, failures with isError.
 * The handlers that run them on sandboxes are backend.c's.
 */
#ifndef EMBER_MCP_TOOLS_H
#define EMBER_MCP_TOOLS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum tool_id {
	TOOL_CREATE_SANDBOX,
	TOOL_RUN_CODE,
	TOOL_RUN_COMMAND,
	TOOL_WRITE_FILE,
	TOOL_READ_FILE,
	TOOL_LIST_FILES,
	TOOL_PAUSE_SANDBOX,
	TOOL_RESUME_SANDBOX,
	TOOL_KILL_SANDBOX,
	TOOL_LIST_SANDBOXES,
	TOOL_EXPOSE_PORT,
	TOOL_COUNT
};

struct mcp_tool {
	enum tool_id id;
	const char *name;
	const char *title;
	const char *description;
	const char *input_schema; /* JSON text: a JSON Schema object */
	const char *output_schema; /* JSON text: of structuredContent */
	bool read_only; /* annotations.readOnlyHint */
	bool destructive; /* annotations.destructiveHint */
	/*
	 * Under --confirm the user approves each call first; the member of
	 * the arguments shown to them ("code", "command").
	 */
	const char *confirm_arg;
};

/* The table, in the order tools/list shows it; TOOL_COUNT entries. */
extern const struct mcp_tool tools__table[TOOL_COUNT];

/* tools__find() - the tool named @name, or NULL. */
const struct mcp_tool *tools__find(const char *name);

/*
 * tools__int() - the value of @v, an argument of type "integer": a JSON
 * integer, or a real with an integral value (60.0: JSON Schema's
 * "integer", and schema__check(), take it; json_integer_value() would
 * read 0).  @def when @v is NULL, not a number, not integral or out of
 * json_int_t's range.
 */
json_int_t tools__int(const json_t *v, json_int_t def);

/*
 * tools__ok() - a successful CallToolResult: {"content": [{"type":
 * "text", "text": <@structured as JSON>}, ...@extra], "structuredContent":
 * @structured}.  Steals @structured and @extra (an array of content items
 * or NULL), even on failure.  NULL when out of memory.
 */
json_t *tools__ok(json_t *structured, json_t *extra);

/*
 * tools__fail() - a CallToolResult with isError true and one text item,
 * the message @fmt...  NULL when out of memory.
 */
json_t *tools__fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* EMBER_MCP_TOOLS_H */
