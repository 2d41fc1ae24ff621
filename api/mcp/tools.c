// SPDX-License-Identifier: Apache-2.0
/*
 * The tool table and CallToolResult helpers (tools.h).  Schemas are JSON
 * written with ' for " so that they read without escapes (none of them
 * holds a '); mcp.c turns them back when it parses them.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sandbox/utf8.h"
#include "tools.h"

/* The argument that names a sandbox, in every tool but two. */
#define SANDBOX_ID_PROP                                               \
	"'sandbox_id':{'type':'string','minLength':1,'maxLength':12," \
	"'description':'The sandbox id that create_sandbox returned'}"

/* The guest user a tool runs as or touches files as (the agent's USER). */
#define USER_PROP                                                         \
	"'user':{'type':'string','minLength':1,'maxLength':256,"          \
	"'description':'The guest user to act as: a name or uid, or "     \
	"NAME:GROUP / UID:GID; root for root (default: the default user " \
	"of the sandbox: root in the templates of ember, in templates "   \
	"made from an image the User of the image, else user)'}"

/* A sandbox's state, in results. */
#define STATE_PROP \
	"'state':{'type':'string','enum':['booting','running','paused','parked']}"

/* The input of a tool that takes a sandbox id alone. */
#define SANDBOX_ID_INPUT                                  \
	"{'type':'object','properties':{" SANDBOX_ID_PROP \
	"},'required':['sandbox_id'],'additionalProperties':false}"

/* The result of a tool that changes a sandbox's state. */
#define STATE_OUTPUT                                 \
	"{'type':'object','properties':{"            \
	"'sandbox_id':{'type':'string'}," STATE_PROP \
	"},'required':['sandbox_id','state']}"

const struct mcp_tool tools__table[TOOL_COUNT] = {
	[TOOL_CREATE_SANDBOX] = {
		.id = TOOL_CREATE_SANDBOX,
		.name = "create_sandbox",
		.title = "Create sandbox",
		.description =
			"Create a sandbox: a fresh, isolated Linux microVM (Python 3 "
			"with numpy, pandas and matplotlib; Node.js; busybox shell) "
			"restored from a template in milliseconds. Returns its "
			"sandbox_id for the other tools. It is killed after `timeout` "
			"seconds without use (a paused one waits), or by kill_sandbox; "
			"it outlives this MCP session (unless the server runs with "
			"--kill-on-disconnect): later sessions of the same "
			"client (the same user over stdio, the same token over HTTP) "
			"see it in list_sandboxes and can use it. It has no network "
			"unless `network` asks for one.",
		.input_schema =
			"{'type':'object','properties':{"
			"'template':{'type':'string','minLength':1,'maxLength':64,"
			"'description':'Template to restore (default: the server default,"
			" normally default)'},"
			"'memory_mib':{'type':'integer','minimum':16,'maximum':262144,"
			"'description':'Guest RAM in MiB; unlike the template: a fresh boot (slower)'},"
			""
			"'vcpus':{'type':'integer','minimum':1,'maximum':32,"
			"'description':'vCPUs; unlike the template: a fresh boot (slower)'},"
			""
			"'timeout':{'type':'integer','minimum':1,'maximum':86400,"
			"'description':'Seconds the sandbox lives without use (default 300); each use renews it'},"
			"'network':{'type':'string','enum':['none','nat','host-only'],"
			"'description':'none (default): no network; nat: the internet "
			"through the host (never the host itself or another sandbox; "
			"DNS as the host has it); host-only: the sandbox host side "
			"172.16.0.1 alone'}"
			"},'additionalProperties':false}",
		.output_schema =
			"{'type':'object','properties':{"
			"'sandbox_id':{'type':'string'},"
			"'template':{'type':['string','null']},"
			"'memory_mib':{'type':'integer'},"
			"'vcpus':{'type':'integer'},"
			"'timeout':{'type':'integer'},"
			"'network':{'type':'string'}"
			"},'required':['sandbox_id']}",
	},
	[TOOL_RUN_CODE] = {
		.id = TOOL_RUN_CODE,
		.name = "run_code",
		.title = "Run code",
		.description =
			"Run code in a sandbox. python and javascript run in a "
			"stateful interpreter (like a notebook: variables, imports "
			"and definitions persist between calls in the same context); "
			"the value of the last expression and every display() come "
			"back in results, each with every rich output it has: text, "
			"html, markdown, svg, png, jpeg, pdf, latex, json, javascript; "
			"a pandas DataFrame also as data (columns to values), a "
			"matplotlib figure also as chart (type, title, elements, axes) "
			"besides its PNG; PNG and JPEG images come as image content "
			"too. Python takes IPython magics (%time, !cmd, %pip). An "
			"exception comes back in error (name, value, traceback) so "
			"that you can correct the code. bash runs the code as a bash "
			"(or sh) script; a nonzero "
			"exit is an error named ExitError.",
		.input_schema =
			"{'type':'object','properties':{"
			SANDBOX_ID_PROP ","
			"'code':{'type':'string','description':'The code to run'},"
			"'language':{'type':'string','enum':['python','javascript',"
			"'bash'],'description':'Default python'},"
			"'context':{'type':'string','minLength':1,'maxLength':64,"
			"'description':'Interpreter context id (default: the default context of the language)'},"
			""
			"'timeout':{'type':'number','minimum':0.001,'maximum':86400,"
			"'description':'Seconds before the call is interrupted (default 300); the context keeps its state'},"
			"'user':{'type':'string','minLength':1,'maxLength':256,"
			"'description':'The guest user to run as (default: the default user of the sandbox; python and javascript: the default context of that user, or the user of the given context)'}"
			"},'required':['sandbox_id','code'],"
			"'additionalProperties':false}",
		.output_schema =
			"{'type':'object','properties':{"
			"'stdout':{'type':'string'},"
			"'stderr':{'type':'string'},"
			"'results':{'type':'array','items':{'type':'object',"
			"'properties':{'is_main_result':{'type':'boolean'},"
			"'text':{'type':'string'},'html':{'type':'string'},"
			"'markdown':{'type':'string'},'svg':{'type':'string'},"
			"'png':{'type':'string','description':'base64'},"
			"'jpeg':{'type':'string','description':'base64'},"
			"'pdf':{'type':'string','description':'base64'},"
			"'latex':{'type':'string'},"
			"'json':{'description':'Any JSON value'},"
			"'javascript':{'type':'string'},"
			"'data':{'type':'object','description':'A DataFrame: column to values'},"
			"'chart':{'type':'object','description':'A matplotlib figure: type, title, elements, axes'},"
			"'extra':{'type':'object','description':'Other MIME types to their values'}}}},"
			"'error':{'type':['object','null'],"
			"'properties':{'name':{'type':'string'},"
			"'value':{'type':'string'},'traceback':{'type':'string'}}},"
			"'execution_count':{'type':'integer'}"
			"},'required':['stdout','stderr','results','error',"
			"'execution_count']}",
		.confirm_arg = "code",
	},
	[TOOL_RUN_COMMAND] = {
		.id = TOOL_RUN_COMMAND,
		.name = "run_command",
		.title = "Run a shell command",
		.description =
			"Run a shell command line (sh -c) in a sandbox and return its "
			"stdout, stderr and exit code.",
		.input_schema =
			"{'type':'object','properties':{"
			SANDBOX_ID_PROP ","
			"'command':{'type':'string','minLength':1,"
			"'description':'A shell command line, run with sh -c'},"
			"'cwd':{'type':'string','minLength':1,"
			"'description':'Working directory (default: that of the image, else /)'},"
			"'env':{'type':'object',"
			"'additionalProperties':{'type':'string'},"
			"'description':'Environment variables to add to the default environment of the guest (that of the image, with HOME, USER and LOGNAME of the user)'},"
			"'timeout':{'type':'number','minimum':0.001,'maximum':86400,"
			"'description':'Seconds before the command is killed (default 300)'},"
			USER_PROP
			"},'required':['sandbox_id','command'],"
			"'additionalProperties':false}",
		.output_schema =
			"{'type':'object','properties':{"
			"'stdout':{'type':'string'},"
			"'stderr':{'type':'string'},"
			"'exit_code':{'type':'integer',"
			"'description':'The exit status; 128+N when killed by signal N; 124 on timeout'},"
			""
			"'signal':{'type':['integer','null']},"
			"'timed_out':{'type':'boolean'}"
			"},'required':['stdout','stderr','exit_code']}",
		.confirm_arg = "command",
	},
	[TOOL_WRITE_FILE] = {
		.id = TOOL_WRITE_FILE,
		.name = "write_file",
		.title = "Write a file",
		.description =
			"Write a file in a sandbox (created or replaced, missing "
			"parent directories made), owned by the user it is written "
			"as.",
		.input_schema =
			"{'type':'object','properties':{"
			SANDBOX_ID_PROP ","
			"'path':{'type':'string','minLength':1,"
			"'description':'Absolute path in the sandbox'},"
			"'content':{'type':'string',"
			"'description':'The content of the file'},"
			"'encoding':{'type':'string','enum':['text','base64'],"
			"'description':'How content is given (default text)'},"
			USER_PROP
			"},'required':['sandbox_id','path','content'],"
			"'additionalProperties':false}",
		.output_schema =
			"{'type':'object','properties':{"
			"'path':{'type':'string'},"
			"'bytes':{'type':'integer'}"
			"},'required':['path','bytes']}",
	},
	[TOOL_READ_FILE] = {
		.id = TOOL_READ_FILE,
		.name = "read_file",
		.title = "Read a file",
		.description =
			"Read a file from a sandbox: as text when it is valid UTF-8, "
			"else (or when asked) as base64.",
		.input_schema =
			"{'type':'object','properties':{"
			SANDBOX_ID_PROP ","
			"'path':{'type':'string','minLength':1,"
			"'description':'Absolute path in the sandbox'},"
			"'encoding':{'type':'string','enum':['text','base64'],"
			"'description':'base64 to always get base64 (default: text when possible)'},"
			USER_PROP
			"},'required':['sandbox_id','path'],"
			"'additionalProperties':false}",
		.output_schema =
			"{'type':'object','properties':{"
			"'content':{'type':'string'},"
			"'encoding':{'type':'string','enum':['text','base64']},"
			"'bytes':{'type':'integer'}"
			"},'required':['content','encoding','bytes']}",
		.read_only = true,
	},
	[TOOL_LIST_FILES] = {
		.id = TOOL_LIST_FILES,
		.name = "list_files",
		.title = "List a directory",
		.description =
			"List the entries of a directory in a sandbox, with their "
			"type and size.",
		.input_schema =
			"{'type':'object','properties':{"
			SANDBOX_ID_PROP ","
			"'path':{'type':'string','minLength':1,"
			"'description':'Directory (default /root)'},"
			USER_PROP
			"},'required':['sandbox_id'],'additionalProperties':false}",
		.output_schema =
			"{'type':'object','properties':{"
			"'path':{'type':'string'},"
			"'entries':{'type':'array','items':{'type':'object',"
			"'properties':{'name':{'type':'string'},"
			"'type':{'type':'string','enum':['file','dir','link','other']},"
			"'size':{'type':'integer'}},'required':['name','type','size']}}"
			"},'required':['path','entries']}",
		.read_only = true,
	},
	[TOOL_PAUSE_SANDBOX] = {
		.id = TOOL_PAUSE_SANDBOX,
		.name = "pause_sandbox",
		.title = "Pause a sandbox",
		.description =
			"Pause a sandbox: it uses no CPU and its timeout stops; its "
			"memory is kept (to_disk: saved to disk and freed). "
			"resume_sandbox lets it run on with its state.",
		.input_schema =
			"{'type':'object','properties':{"
			SANDBOX_ID_PROP ","
			"'to_disk':{'type':'boolean',"
			"'description':'Save it to disk and free its memory (default false)'}"
			"},'required':['sandbox_id'],'additionalProperties':false}",
		.output_schema = STATE_OUTPUT,
	},
	[TOOL_RESUME_SANDBOX] = {
		.id = TOOL_RESUME_SANDBOX,
		.name = "resume_sandbox",
		.title = "Resume a sandbox",
		.description =
			"Resume a paused sandbox with its state.",
		.input_schema = SANDBOX_ID_INPUT,
		.output_schema = STATE_OUTPUT,
	},
	[TOOL_KILL_SANDBOX] = {
		.id = TOOL_KILL_SANDBOX,
		.name = "kill_sandbox",
		.title = "Kill a sandbox",
		.description =
			"Kill a sandbox: it and everything in it is gone.",
		.input_schema = SANDBOX_ID_INPUT,
		.output_schema =
			"{'type':'object','properties':{"
			"'sandbox_id':{'type':'string'},"
			"'killed':{'type':'boolean'}"
			"},'required':['sandbox_id','killed']}",
		.destructive = true,
	},
	[TOOL_LIST_SANDBOXES] = {
		.id = TOOL_LIST_SANDBOXES,
		.name = "list_sandboxes",
		.title = "List sandboxes",
		.description =
			"List your sandboxes (those created by this client: the same "
			"user over stdio, the same token over HTTP, in this session or "
			"an earlier one) with their state and the seconds of timeout "
			"they have left.",
		.input_schema =
			"{'type':'object','properties':{"
			"},'additionalProperties':false}",
		.output_schema =
			"{'type':'object','properties':{"
			"'sandboxes':{'type':'array','items':{'type':'object',"
			"'properties':{'sandbox_id':{'type':'string'},"
			STATE_PROP ",'ttl_left':{'type':['integer','null']},"
			"'template':{'type':['string','null']},"
			"'memory_mib':{'type':'integer'},'vcpus':{'type':'integer'},"
			"'network':{'type':'string'}},"
			"'required':['sandbox_id','state']}}"
			"},'required':['sandboxes']}",
		.read_only = true,
	},
	[TOOL_EXPOSE_PORT] = {
		.id = TOOL_EXPOSE_PORT,
		.name = "expose_port",
		.title = "Expose a port",
		.description =
			"Make a TCP server running in the sandbox (listening on its "
			"127.0.0.1 or 0.0.0.0 port) reachable from the host at "
			"127.0.0.1: returns the host address and an http:// URL. "
			"The sandbox needs no network; the port stays exposed until "
			"the sandbox ends. Exposing a port again returns the same "
			"address. listening says whether something listens on the "
			"port yet (start the server first).",
		.input_schema =
			"{'type':'object','properties':{"
			SANDBOX_ID_PROP ","
			"'port':{'type':'integer','minimum':1,'maximum':65535,"
			"'description':'The TCP port the server listens on in the sandbox'},"
			"'host_port':{'type':'integer','minimum':0,'maximum':65535,"
			"'description':'The port on the host (default 0: any free one)'}"
			"},'required':['sandbox_id','port'],'additionalProperties':false}",
		.output_schema =
			"{'type':'object','properties':{"
			"'sandbox_id':{'type':'string'},'port':{'type':'integer'},"
			"'address':{'type':'string'},'url':{'type':'string'},"
			"'listening':{'type':'boolean'}"
			"},'required':['sandbox_id','port','address','url','listening']}",
	},
};

const struct mcp_tool *tools__find(const char *name)
{
	for (size_t i = 0; i < TOOL_COUNT; i++)
		if (!strcmp(tools__table[i].name, name))
			return &tools__table[i];
	return NULL;
}

json_int_t tools__int(const json_t *v, json_int_t def)
{
	double d;

	if (json_is_integer(v))
		return json_integer_value(v);
	if (!json_is_real(v))
		return def;
	d = json_real_value(v);
	/* 2^63: the first double past json_int_t's (int64_t) range. */
	if (d != floor(d) || fabs(d) >= ldexp(1, 63))
		return def;
	return (json_int_t)d;
}

json_t *tools__ok(json_t *structured, json_t *extra)
{
	json_t *res = NULL, *content;
	char *text = NULL;

	if (!structured)
		goto out;
	text = json_dumps(structured, JSON_COMPACT);
	content =
		text ? json_pack("[{s:s, s:s}]", "type", "text", "text", text) :
		       NULL;
	if (!content)
		goto out;
	if (extra && json_array_extend(content, extra)) {
		json_decref(content);
		goto out;
	}
	res = json_pack("{s:o, s:O}", "content", content, "structuredContent",
			structured);
out:
	free(text);
	json_decref(structured);
	json_decref(extra);
	return res;
}

json_t *tools__fail(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return json_pack("{s:[{s:s, s:o}], s:b}", "content", "type", "text",
			 "text", utf8__json(msg, strlen(msg)), "isError", 1);
}
