// SPDX-License-Identifier: Apache-2.0
/*
 * Seccomp filters (see seccomp.h): the allow-lists of filter_*.c made into
 * BPF with libseccomp, installed per thread with seccomp(2), and the SIGSYS
 * handler that reports a forbidden call.  Touches: memfd_create (the BPF
 * comes back from libseccomp through one), prctl(PR_SET_NO_NEW_PRIVS),
 * seccomp(2), sigaction(SIGSYS).
 */
#include "seccomp.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/seccomp.h>

#include "../log.h"
#include "filter.h"

/* si_code of a SIGSYS raised by a filter (asm-generic/siginfo.h). */
#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1
#endif

/* System call numbers the SIGSYS line can name (x86_64 has ~460). */
#define SECCOMP_NAMES	 512
#define SECCOMP_NAME_MAX 24

/*
 * Process-wide, because a signal handler can reach nothing else: the
 * names, written once by seccomp__init() before any filter exists and
 * read-only afterwards; and each thread's name for the SIGSYS line,
 * written by that thread alone as it installs its filter.
 */
static char seccomp_names[SECCOMP_NAMES][SECCOMP_NAME_MAX];
static __thread char seccomp_who[16];

static const char *const seccomp_kinds[SECCOMP_THREADS] = {
	[SECCOMP_MAIN] = "main",
	[SECCOMP_EVENT] = "event",
	[SECCOMP_VCPU] = "vcpu",
};

const char *seccomp__kind_name(enum seccomp_thread kind)
{
	return (unsigned int)kind < SECCOMP_THREADS ? seccomp_kinds[kind] : "?";
}

const char *seccomp__syscall_name(int nr)
{
	if (nr < 0 || nr >= SECCOMP_NAMES || !seccomp_names[nr][0])
		return "?";
	return seccomp_names[nr];
}

/* --- the SIGSYS handler (async-signal-safe calls only) ------------------- */

static void sig__put(char *buf, size_t cap, size_t *n, const char *s)
{
	while (*s && *n < cap)
		buf[(*n)++] = *s++;
}

static void sig__put_uint(char *buf, size_t cap, size_t *n, unsigned long v)
{
	char d[24];
	int i = 0;

	do {
		d[i++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (i && *n < cap)
		buf[(*n)++] = d[--i];
}

/*
 * The thread made a call its filter does not allow (the kernel did not
 * run it).  Write one line, then end the process: exit_group() rather
 * than re-raising SIGSYS, so that no core dump holds the guest's memory
 * and no other handler (atexit, the sanitizers') runs on a process whose
 * state may be hostile.
 */
static void seccomp__sigsys(int sig, siginfo_t *si, void *uc)
{
	char line[256];
	const size_t cap = sizeof(line) - 1; /* room for the newline */
	size_t n = 0;
	ssize_t w;
	int fd;

	(void)sig;
	(void)uc;
	sig__put(line, cap, &n, "ember: seccomp: thread ");
	sig__put(line, cap, &n, seccomp_who[0] ? seccomp_who : "?");
	if (si->si_code == SYS_SECCOMP) {
		sig__put(line, cap, &n, " made forbidden syscall ");
		sig__put_uint(line, cap, &n, (unsigned int)si->si_syscall);
		sig__put(line, cap, &n, " (");
		sig__put(line, cap, &n,
			 si->si_arch == AUDIT_ARCH_X86_64 ?
				 seccomp__syscall_name(si->si_syscall) :
				 "of another ABI");
		sig__put(line, cap, &n, ")");
	} else {
		sig__put(line, cap, &n, " got SIGSYS from pid ");
		sig__put_uint(line, cap, &n, (unsigned int)si->si_pid);
	}
	sig__put(line, cap, &n, "; ember ends (exit status ");
	sig__put_uint(line, cap, &n, SECCOMP_EXIT_STATUS);
	sig__put(line, cap, &n, ")");
	line[n++] = '\n';
	/* Nothing to do about a failed write: ember ends either way. */
	w = write(STDERR_FILENO, line, n);
	fd = log__fd();
	if (fd > STDERR_FILENO)
		w = write(fd, line, n);
	(void)w;
	syscall(SYS_exit_group, SECCOMP_EXIT_STATUS);
}

int seccomp__init(void)
{
	struct sigaction sa = { .sa_sigaction = seccomp__sigsys,
				.sa_flags = SA_SIGINFO };
	uint32_t arch = seccomp_arch_native();
	int nr;

	for (nr = 0; nr < SECCOMP_NAMES; nr++) {
		char *name = seccomp_syscall_resolve_num_arch(arch, nr);

		if (name)
			snprintf(seccomp_names[nr], SECCOMP_NAME_MAX, "%s",
				 name);
		free(name);
	}
	/*
	 * glibc reads the time zone (/etc/localtime) on its first gmtime_r(),
	 * which the CMOS clock makes on a vCPU thread: read it now.
	 */
	tzset();
	/* Nothing may mask it in the handler's way: the line must go out. */
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) < 0)
		return -errno;
	return 0;
}

/* --- building ------------------------------------------------------------ */

/* The lists @kind's filter is made of, NULL-terminated. */
static void seccomp__lists(enum seccomp_thread kind,
			   const struct seccomp_list *out[5])
{
	unsigned int n = 0;

	out[n++] = &filter_common;
	out[n++] = &filter_sanitizer;
	switch (kind) {
	case SECCOMP_MAIN:
		out[n++] = &filter_main;
		out[n++] = &filter_sanitizer_main;
		break;
	case SECCOMP_EVENT:
		out[n++] = &filter_event;
		break;
	case SECCOMP_VCPU:
		out[n++] = &filter_vcpu;
		break;
	default:
		break;
	}
	out[n] = NULL;
}

static int seccomp__add(scmp_filter_ctx ctx, enum seccomp_thread kind,
			const struct seccomp_rule *r)
{
	struct scmp_arg_cmp cmp[2];
	scmp_datum_t *val;
	unsigned int i;
	int ret;

	if (r->ncmp > 2)
		return -EINVAL;
	for (i = 0; i < r->ncmp; i++) {
		cmp[i] = (struct scmp_arg_cmp){
			.arg = r->cmp[i].arg,
			.op = r->cmp[i].op,
			.datum_a = r->cmp[i].a,
			.datum_b = r->cmp[i].b,
		};
		/* The value compared: datum_b under a mask, else datum_a. */
		val = cmp[i].op == SCMP_CMP_MASKED_EQ ? &cmp[i].datum_b :
							&cmp[i].datum_a;
		if (*val == SECCOMP_OWN_PID)
			*val = (uint64_t)getpid();
	}
	ret = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, r->nr, r->ncmp, cmp);
	if (ret) {
		char *name = seccomp_syscall_resolve_num_arch(
			seccomp_arch_native(), r->nr);

		log_error("seccomp: the %s filter's rule for %s (%d): %s",
			  seccomp__kind_name(kind), name ? name : "?", r->nr,
			  strerror(-ret));
		free(name);
	}
	return ret;
}

/* A libseccomp filter for @kind: default action SIGSYS, then the lists. */
static int seccomp__ctx(enum seccomp_thread kind, scmp_filter_ctx *out)
{
	const struct seccomp_list *lists[5];
	scmp_filter_ctx ctx;
	unsigned int l, i;
	int ret;

	*out = NULL;
	if ((unsigned int)kind >= SECCOMP_THREADS)
		return -EINVAL;
	ctx = seccomp_init(SCMP_ACT_TRAP);
	if (!ctx) {
		log_error("seccomp: cannot create a filter (libseccomp)");
		return -ENOMEM;
	}
	/* A 32-bit (int 0x80) or x32 call is forbidden too, and logged. */
	ret = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_TRAP);
	/*
	 * A binary tree of the calls rather than a list: KVM_RUN, the
	 * event loop's reads and writes pay for a few comparisons only.
	 */
	if (!ret)
		seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	/* The vCPU threads' hot call: KVM_RUN, once per exit. */
	if (!ret && kind == SECCOMP_VCPU)
		ret = seccomp_syscall_priority(ctx, SCMP_SYS(ioctl), 255);
	seccomp__lists(kind, lists);
	for (l = 0; !ret && lists[l]; l++)
		for (i = 0; !ret && i < lists[l]->n; i++)
			ret = seccomp__add(ctx, kind, &lists[l]->rules[i]);
	if (ret) {
		seccomp_release(ctx);
		return ret;
	}
	*out = ctx;
	return 0;
}

/* Build @kind's filter and read its BPF back from a memfd into @p. */
static int seccomp__build(enum seccomp_thread kind, struct seccomp_prog *p)
{
	scmp_filter_ctx ctx;
	off_t size;
	int fd = -1, ret;

	memset(p, 0, sizeof(*p));
	ret = seccomp__ctx(kind, &ctx);
	if (ret)
		return ret;
	fd = memfd_create("ember-seccomp", MFD_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	ret = seccomp_export_bpf(ctx, fd);
	if (ret)
		goto out;
	size = lseek(fd, 0, SEEK_END);
	if (size <= 0 || size % (off_t)sizeof(struct sock_filter) ||
	    size / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS) {
		ret = size < 0 ? -errno : -E2BIG;
		goto out;
	}
	p->insns = malloc((size_t)size);
	if (!p->insns) {
		ret = -ENOMEM;
		goto out;
	}
	if (pread(fd, p->insns, (size_t)size, 0) != size) {
		ret = -EIO;
		free(p->insns);
		p->insns = NULL;
		goto out;
	}
	p->len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
out:
	if (ret)
		log_error("seccomp: building the %s filter: %s",
			  seccomp__kind_name(kind), strerror(-ret));
	if (fd >= 0)
		close(fd);
	seccomp_release(ctx);
	return ret;
}

int seccomp__build_all(struct seccomp_set *s)
{
	unsigned int k;
	int ret = 0;

	memset(s, 0, sizeof(*s));
	for (k = 0; k < SECCOMP_THREADS && !ret; k++)
		ret = seccomp__build((enum seccomp_thread)k, &s->prog[k]);
	return ret;
}

void seccomp__free_all(struct seccomp_set *s)
{
	unsigned int k;

	if (!s)
		return;
	for (k = 0; k < SECCOMP_THREADS; k++) {
		free(s->prog[k].insns);
		s->prog[k].insns = NULL;
		s->prog[k].len = 0;
	}
}

int seccomp__export_pfc(enum seccomp_thread kind, int fd)
{
	scmp_filter_ctx ctx;
	int ret = seccomp__ctx(kind, &ctx);

	if (ret)
		return ret;
	ret = seccomp_export_pfc(ctx, fd);
	seccomp_release(ctx);
	return ret;
}

/* --- installing ---------------------------------------------------------- */

#ifdef EMBER_TEST_HOOKS
/*
 * Test builds only: EMBER_TEST_SECCOMP_VIOLATE=main|event|vcpu makes that
 * kind of thread call personality(2) (a query that changes nothing, and in
 * no list) right after its filter is in place: the handler's line and
 * ember's end are what tests/integration/seccomp.sh checks.
 */
static void seccomp__test_hook(enum seccomp_thread kind)
{
	const char *want = getenv("EMBER_TEST_SECCOMP_VIOLATE");

	if (want && !strcmp(want, seccomp__kind_name(kind)))
		syscall(SYS_personality, 0xffffffffUL);
}
#else
static void seccomp__test_hook(enum seccomp_thread kind)
{
	(void)kind;
}
#endif

int seccomp__install(const struct seccomp_set *s, enum seccomp_thread kind,
		     const char *name)
{
	struct sock_fprog fp;

	if (!s || (unsigned int)kind >= SECCOMP_THREADS ||
	    !s->prog[kind].insns || !s->prog[kind].len)
		return -EINVAL;
	fp.len = s->prog[kind].len;
	fp.filter = s->prog[kind].insns;
	snprintf(seccomp_who, sizeof(seccomp_who), "%s",
		 name ? name : seccomp__kind_name(kind));
	/* Without CAP_SYS_ADMIN the kernel requires it; with it, it is due. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp) < 0)
		return -errno;
	seccomp__test_hook(kind);
	return 0;
}
