/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ember's seccomp filters, one allow-list per kind of thread (libseccomp,
 * seccomp(2) SECCOMP_SET_MODE_FILTER; the lists are in vmm/seccomp/filter_*.c).
 *
 * Acquire, then lock down, then run: every host resource (files, /dev/kvm,
 * memslots, devices, sockets, timers) is opened first; then, as the vCPUs
 * start (InstanceStart, a snapshot load that resumes, the first resume
 * after a load, the command line's start), each thread installs the list
 * of its kind before any guest instruction runs:
 *
 *   main   main(): waits for the VM's end, then frees everything
 *   event  the event thread: devices' host side, the control socket and
 *          every control call (snapshot create, PATCH drives, ...)
 *   vcpu   each vCPU thread: KVM_RUN and the exits it handles
 *
 * A filter binds the thread that installs it and the threads it creates
 * later (filters stack), so the vCPU threads are created, parked, before
 * the event thread installs its own (vmm/vm.c).
 *
 * A call outside a thread's list does not run: the kernel raises SIGSYS
 * (SECCOMP_RET_TRAP) and ember's handler writes one line, e.g.
 *   ember: seccomp: thread vcpu0 made forbidden syscall 101 (ptrace); ...
 * to stderr (and to the logger's file when there is one), then ends the
 * process with exit_group(SECCOMP_EXIT_STATUS).  No core dump is written:
 * it would hold the guest's memory.
 */
#ifndef EMBER_VMM_SECCOMP_SECCOMP_H
#define EMBER_VMM_SECCOMP_SECCOMP_H

#include <linux/filter.h>

/* 128 + SIGSYS: what a shell reports for a process SIGSYS killed. */
#define SECCOMP_EXIT_STATUS 159

enum seccomp_thread {
	SECCOMP_MAIN,
	SECCOMP_EVENT,
	SECCOMP_VCPU,
	SECCOMP_THREADS
};

/* One thread kind's filter as BPF, ready for seccomp(2). */
struct seccomp_prog {
	struct sock_filter *insns; /* malloc()ed */
	unsigned short len; /* instructions, 1 to BPF_MAXINSNS */
};

/* Every kind's filter, built once at start-up (seccomp__build_all()). */
struct seccomp_set {
	struct seccomp_prog prog[SECCOMP_THREADS];
};

/*
 * seccomp__init() - once, at start-up, before any filter is installed:
 * the SIGSYS handler (process-wide) and the table of system call names it
 * prints (libseccomp's, for this architecture).  Returns 0 or a negative
 * errno.
 */
int seccomp__init(void);

/*
 * seccomp__build_all() - build every kind's filter into @s (zeroed first;
 * free with seccomp__free_all(), also after a failure).  Needs memfd_create
 * (the BPF comes back from libseccomp through a memfd).  Returns 0 or a
 * negative errno after one error line naming the kind and the call.
 */
int seccomp__build_all(struct seccomp_set *s);

/* seccomp__free_all() - free what seccomp__build_all() made; NULL is fine. */
void seccomp__free_all(struct seccomp_set *s);

/*
 * seccomp__install() - on the calling thread only: no_new_privs, then
 * @s's filter for @kind (seccomp(2), no TSYNC); @name (e.g. "vcpu0", up to
 * 15 bytes kept) names the thread in the SIGSYS line.  Threads the caller
 * creates afterwards inherit the filter.  Returns 0 or a negative errno
 * (the thread then has no filter).  Test builds (EMBER_TEST_HOOKS) then
 * make a forbidden call when EMBER_TEST_SECCOMP_VIOLATE names @kind.
 */
int seccomp__install(const struct seccomp_set *s, enum seccomp_thread kind,
		     const char *name);

/* seccomp__kind_name() - "main", "event", "vcpu"; "?" when out of range. */
const char *seccomp__kind_name(enum seccomp_thread kind);

/*
 * seccomp__syscall_name() - the name of system call @nr on this
 * architecture as the SIGSYS line prints it ("?" when unknown, or before
 * seccomp__init()).  Async-signal-safe.
 */
const char *seccomp__syscall_name(int nr);

/*
 * seccomp__export_pfc() - write @kind's filter as libseccomp's
 * human-readable pseudo filter code (seccomp_export_pfc(3)) to @fd, for
 * tests and debugging.  Returns 0 or a negative errno.
 */
int seccomp__export_pfc(enum seccomp_thread kind, int fd);

#endif /* EMBER_VMM_SECCOMP_SECCOMP_H */
