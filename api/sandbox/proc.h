/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Processes as /proc shows them.  A pid alone can name a recycled
 * process: a pid plus its start time names one process for good.
 */
#ifndef EMBER_API_PROC_H
#define EMBER_API_PROC_H

#include <stdint.h>
#include <sys/types.h>

/*
 * The start time of the live, non-zombie process @pid, in clock ticks
 * since boot (field 22 of /proc/@pid/stat): 0 with *@start set, or -ESRCH
 * when there is no such process, it is a zombie or dead, @pid <= 0, or
 * its stat file cannot be read or parsed (*@start is then untouched).
 */
int proc__start_time(pid_t pid, uint64_t *start);

/*
 * 1 when @pid is alive and not a zombie and, if @start (from
 * proc__start_time()) is not 0, it is still the process that started
 * then; else 0.
 */
int proc__alive(pid_t pid, uint64_t start);

/*
 * proc__terminate() - end the process @pid if it is still the one that
 * started at @start (0: any): SIGTERM, then SIGKILL when it is still
 * alive after @grace_ms (>= 0) milliseconds.  Waits at most @grace_ms.
 */
void proc__terminate(pid_t pid, uint64_t start, int grace_ms);

/*
 * proc__daemon_stdio() - for a process that runs on in the background
 * (a supervisor, a port forwarder): stdin and stdout on /dev/null,
 * stderr appended to the file named by $EMBER_SUPERVISOR_LOG (created
 * 0600; the tests' sanitizer reports) or else /dev/null too.  What cannot
 * be opened is left as it was; nothing to report.
 */
void proc__daemon_stdio(void);

/*
 * proc__close_others() - close every fd of this process but 0, 1, 2 and
 * @keep1, @keep2 (both >= 3, either order; equal is fine), with
 * close_range(2), else one by one below 1024.  For a freshly forked
 * background process.
 */
void proc__close_others(int keep1, int keep2);

#endif /* EMBER_API_PROC_H */
