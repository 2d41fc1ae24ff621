// SPDX-License-Identifier: Apache-2.0
/*
 * envd's ProcessEvent messages in Connect envelopes (proc_event.h).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../guest-init/protocol.h"
#include "../sandbox/agent_client.h"
#include "connect_rpc.h"
#include "proc_event.h"

/* {"event": @inner} (stolen) in an envelope; NULL when out of memory. */
static uint8_t *event_envelope(const char *kind, json_t *inner, size_t *n)
{
	json_t *j = json_pack("{s:{s:o}}", "event", kind, inner);
	uint8_t *b;

	if (!j)
		return NULL;
	b = connect__envelope(0, j, n);
	json_decref(j);
	return b;
}

/* Go's names of signals (syscall.Signal.String()), which envd reports. */
static const char *signal_name(int sig, char *buf, size_t cap)
{
	static const char *const names[] = {
		[1] = "hangup",
		[2] = "interrupt",
		[3] = "quit",
		[4] = "illegal instruction",
		[5] = "trace/breakpoint trap",
		[6] = "aborted",
		[7] = "bus error",
		[8] = "floating point exception",
		[9] = "killed",
		[10] = "user defined signal 1",
		[11] = "segmentation fault",
		[12] = "user defined signal 2",
		[13] = "broken pipe",
		[14] = "alarm clock",
		[15] = "terminated",
		[16] = "stack fault",
		[17] = "child exited",
		[18] = "continued",
		[19] = "stopped (signal)",
		[20] = "stopped",
		[21] = "stopped (tty input)",
		[22] = "stopped (tty output)",
		[23] = "urgent I/O condition",
		[24] = "CPU time limit exceeded",
		[25] = "file size limit exceeded",
		[26] = "virtual timer expired",
		[27] = "profiling timer expired",
		[28] = "window changed",
		[29] = "I/O possible",
		[30] = "power failure",
		[31] = "bad system call",
	};

	if (sig > 0 && sig < (int)(sizeof(names) / sizeof(names[0])))
		return names[sig];
	snprintf(buf, cap, "signal %d", sig);
	return buf;
}

uint8_t *proc_event__start(uint32_t pid, size_t *n)
{
	return event_envelope("start",
			      json_pack("{s:I}", "pid", (json_int_t)pid), n);
}

uint8_t *proc_event__data(const char *kind, const uint8_t *buf, size_t len,
			  size_t *n)
{
	json_t *data = json_pack("{s:o}", kind, connect__bytes_json(buf, len));

	return data ? event_envelope("data", data, n) : NULL;
}

uint8_t *proc_event__end(const struct agent_exec_result *res, size_t *n)
{
	char status[64], buf[32];
	json_t *end;
	int code;
	bool exited = res->kind == EMBER_AGENT_EXITED;

	if (exited) {
		code = res->code;
		snprintf(status, sizeof(status), "exit status %d", code);
	} else {
		/* Go's ProcessState: -1 for a signal; the agent's own timeout
		   is a SIGKILL too. */
		code = -1;
		snprintf(status, sizeof(status), "signal: %s",
			 signal_name(res->kind == EMBER_AGENT_SIGNALLED ?
					     res->code :
					     SIGKILL,
				     buf, sizeof(buf)));
	}
	end = json_pack("{s:i, s:b, s:s}", "exitCode", code, "exited", exited,
			"status", status);
	if (end && code != 0 &&
	    json_object_set_new(end, "error", json_string(status))) {
		json_decref(end);
		end = NULL;
	}
	return end ? event_envelope("end", end, n) : NULL;
}

uint8_t *proc_event__keepalive(size_t *n)
{
	return event_envelope("keepalive", json_object(), n);
}
