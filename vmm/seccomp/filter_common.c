// SPDX-License-Identifier: Apache-2.0
/*
 * The calls every ember thread may make, whatever its kind (see filter.h):
 * the locks the threads share, returning from signal handlers, memory for
 * malloc(), the clock, log lines, and the end of the process.  Then what
 * the sanitizer runtimes of the test builds add, on every thread and on
 * the main thread (LeakSanitizer's check at exit).
 */
#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <signal.h>
#include <sys/mman.h>

#include "filter.h"

static const struct seccomp_rule common[] = {
	/*
	 * pthread mutexes and condition variables: the VM's and devices'
	 * locks, pause and resume, event__call(), pthread_join().
	 */
	SC_ALLOW(futex),
	/*
	 * Back from a signal handler: SIGUSR1 kicks a vCPU out of KVM_RUN;
	 * SIGINT, SIGTERM and SIGHUP (api/server/main.c) land on any
	 * thread.
	 */
	SC_ALLOW(rt_sigreturn),
	/* A call such a signal interrupted, restarted by the kernel. */
	SC_ALLOW(restart_syscall),
	/* glibc masks signals in pthread_kill() and as a thread ends. */
	SC_ALLOW(rt_sigprocmask),
	/*
	 * Log lines (stderr or the logger's file), the stop handler's
	 * eventfd (api/server/main.c: on whichever thread took the signal),
	 * the SIGSYS line.  The threads' own lists say what else each
	 * writes.
	 */
	SC_ALLOW(write),
	/*
	 * malloc() and free(): glibc's arenas grow and shrink, large blocks
	 * are mapped on their own; never executable memory.
	 */
	SC_ALLOW_NOT_BITS(mmap, 2, PROT_EXEC),
	SC_ALLOW_NOT_BITS(mprotect, 2, PROT_EXEC),
	SC_ALLOW(munmap),
	/* realloc() of a block that has its own mapping. */
	SC_ALLOW(mremap),
	/* free() hands pages back; a thread's stack is dropped as it ends. */
	SC_ALLOW(madvise),
	/* The main arena (sbrk). */
	SC_ALLOW(brk),
	/*
	 * Timestamps (log__ms(), the CMOS clock, metrics) when the vDSO
	 * falls back to the kernel (a clock source it cannot read).
	 */
	SC_ALLOW(clock_gettime),
	SC_ALLOW(gettimeofday),
	SC_ALLOW(time),
	/*
	 * glibc's abort() (a corrupted heap, say) ends ember as it would
	 * without seccomp: SIGABRT to this process only.
	 */
	SC_ALLOW(getpid),
	SC_ALLOW(gettid),
	{ .nr = SCMP_SYS(tgkill),
	  .ncmp = 2,
	  .cmp = { { 0, SCMP_CMP_EQ, SECCOMP_OWN_PID, 0 },
		   { 2, SCMP_CMP_EQ, SIGABRT, 0 } } },
	/* The end of the process: exit(), the SIGSYS handler. */
	SC_ALLOW(exit_group),
};

const struct seccomp_list filter_common = SC_LIST(common);

#ifdef SECCOMP_SANITIZER
/*
 * ASan, UBSan and LSan at work on any thread of a test build: only what
 * they need as ember runs, so that the integration tests, which run these
 * builds, check the release lists.  A report after the lock-down prints
 * its first lines (what, where, which thread), then its symbolizer's
 * first file access ends ember with the seccomp line: run with
 * --no-seccomp to see the stack.
 */
static const struct seccomp_rule sanitizer[] = {
	/* ASan gives each thread an alternate signal stack, and takes it. */
	SC_ALLOW(sigaltstack),
	/* The sanitizers' spin locks. */
	SC_ALLOW(sched_yield),
	/* A report asks whether stderr is a terminal (colours). */
	SC_IOCTL(TCGETS),
};

/*
 * LeakSanitizer's check as main() returns (detect_leaks=1): it stops the
 * other threads from a tracer it clones (CLONE_VM | CLONE_FS | CLONE_FILES
 * | CLONE_UNTRACED), which lists them in /proc/PID/task, attaches to each
 * with ptrace and reads their registers while the main thread waits; a
 * leak report then symbolizes its stacks: the binary's name, and the
 * binaries' debug information read (read-only) by libbacktrace.
 */
static const struct seccomp_rule sanitizer_main[] = {
	SC_ALLOW_ARG(clone, 0,
		     CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_UNTRACED),
	SC_ALLOW(prctl),
	SC_ALLOW(getppid),
	SC_ALLOW(rt_sigaction),
	SC_ALLOW(ptrace),
	SC_ALLOW(wait4),
	/* The tracer lists /proc/PID/task (the old getdents on x86_64). */
	SC_ALLOW(getdents),
	SC_ALLOW(getdents64),
	SC_ALLOW(exit),
	SC_ALLOW_NOT_BITS(open, 1, O_WRONLY | O_RDWR | O_CREAT | O_TRUNC),
	SC_ALLOW(readlink),
	SC_ALLOW(pread64),
	SC_ALLOW(lseek),
	SC_ALLOW(fcntl),
};

const struct seccomp_list filter_sanitizer = SC_LIST(sanitizer);
const struct seccomp_list filter_sanitizer_main = SC_LIST(sanitizer_main);
#else
const struct seccomp_list filter_sanitizer = { 0 };
const struct seccomp_list filter_sanitizer_main = { 0 };
#endif
