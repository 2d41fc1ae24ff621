// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for vmm/seccomp/seccomp.c and the allow-lists of
 * vmm/seccomp/filter_*.c: every thread kind's filter builds, its rules say
 * what they should (libseccomp's pseudo filter code), and, in a forked
 * child, an installed filter lets the allowed calls through and ends the
 * process with the SIGSYS line and status 159 on a forbidden one
 * (argument checks on ioctl and tgkill included).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <linux/if_tun.h>
#include <linux/kvm.h>

#include "../../vmm/seccomp/seccomp.h"

static struct seccomp_set set;

static int setup(void **state)
{
	(void)state;
	if (seccomp__init())
		return -1;
	return seccomp__build_all(&set);
}

static int teardown(void **state)
{
	(void)state;
	seccomp__free_all(&set);
	return 0;
}

static void test_build(void **state)
{
	unsigned int k;

	(void)state;
	for (k = 0; k < SECCOMP_THREADS; k++) {
		assert_non_null(set.prog[k].insns);
		assert_true(set.prog[k].len > 10);
		assert_true(set.prog[k].len <= BPF_MAXINSNS);
	}
	assert_string_equal(seccomp__kind_name(SECCOMP_VCPU), "vcpu");
	assert_string_equal(seccomp__kind_name(SECCOMP_THREADS), "?");
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(seccomp__syscall_name(101), "ptrace");
	assert_string_equal(seccomp__syscall_name(16), "ioctl");
	assert_string_equal(seccomp__syscall_name(-1), "?");
	assert_string_equal(seccomp__syscall_name(1 << 20), "?");
}

/* @kind's pseudo filter code, malloc()ed and NUL-terminated. */
static char *pfc(enum seccomp_thread kind)
{
	int fd = memfd_create("pfc", MFD_CLOEXEC);
	off_t n;
	char *s;

	assert_true(fd >= 0);
	assert_int_equal(seccomp__export_pfc(kind, fd), 0);
	n = lseek(fd, 0, SEEK_END);
	assert_true(n > 0);
	s = calloc(1, (size_t)n + 1);
	assert_non_null(s);
	assert_int_equal(pread(fd, s, (size_t)n, 0), n);
	close(fd);
	return s;
}

static bool has_call(const char *pfc_text, const char *name)
{
	char want[64];

	snprintf(want, sizeof(want), "syscall \"%s\"", name);
	return strstr(pfc_text, want) != NULL;
}

static bool has_ioctl(const char *pfc_text, unsigned long req)
{
	char want[64];

	snprintf(want, sizeof(want), "& 0xffffffff == %lu)",
		 req & 0xffffffffUL);
	return strstr(pfc_text, want) != NULL;
}

static void test_rules(void **state)
{
	char *v = pfc(SECCOMP_VCPU), *e = pfc(SECCOMP_EVENT),
	     *m = pfc(SECCOMP_MAIN);

	(void)state;
	/* Whatever is not listed raises SIGSYS, other ABIs included. */
	assert_non_null(strstr(v, "# default action\n  action TRAP;"));
	assert_non_null(
		strstr(v, "# invalid architecture action\naction TRAP;"));
	/* vCPU: KVM_RUN and the exits' needs, no files, no sockets. */
	assert_true(has_ioctl(v, KVM_RUN));
	assert_true(has_ioctl(v, KVM_SET_XSAVE));
	assert_false(has_ioctl(v, KVM_CREATE_VM));
	assert_false(has_ioctl(v, KVM_SET_USER_MEMORY_REGION));
	assert_false(has_ioctl(v, TUNSETOFFLOAD));
	assert_false(has_call(v, "openat"));
	assert_false(has_call(v, "read"));
	assert_false(has_call(v, "socket"));
	assert_false(has_call(v, "unlink"));
	assert_false(has_call(v, "execve"));
	/* Event: files and sockets for control calls, the tap, no KVM_RUN. */
	assert_true(has_call(e, "openat"));
	assert_true(has_call(e, "epoll_wait"));
	assert_true(has_call(e, "accept4"));
	assert_true(has_ioctl(e, TUNSETOFFLOAD));
	assert_true(has_ioctl(e, KVM_GET_REGS));
	assert_false(has_ioctl(e, KVM_RUN));
	assert_false(has_ioctl(e, KVM_CREATE_VM));
	assert_false(has_ioctl(e, KVM_CREATE_VCPU));
	assert_false(has_ioctl(e, TUNSETIFF));
	assert_false(has_call(e, "execve"));
	assert_false(has_call(e, "ptrace"));
	/* Main: no KVM, no sockets. */
	assert_false(has_ioctl(m, KVM_RUN));
	assert_false(has_call(m, "socket"));
	assert_false(has_call(m, "connect"));
	free(v);
	free(e);
	free(m);
}

/*
 * Fork a child that installs @kind's filter as thread @name and runs
 * @fn; returns its exit status (-1 when a signal ended it) and what it
 * wrote to stderr in @err (@cap bytes).
 */
static int in_child(enum seccomp_thread kind, const char *name,
		    void (*fn)(void), char *err, size_t cap)
{
	int p[2], status, ret;
	ssize_t n;
	size_t got = 0;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		dup2(p[1], STDERR_FILENO);
		close(p[0]);
		/* cmocka catches SIGSYS during a test: ember's handler back. */
		seccomp__init();
		/* The filters name this process's pid (tgkill). */
		seccomp__free_all(&set);
		if (seccomp__build_all(&set))
			_exit(101);
		/* For the tgkill checks, set before the filter forbids it. */
		signal(SIGUSR1, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		ret = seccomp__install(&set, kind, name);
		if (ret)
			_exit(100);
		fn();
		_exit(0);
	}
	close(p[1]);
	while (got < cap - 1 && (n = read(p[0], err + got, cap - 1 - got)) > 0)
		got += (size_t)n;
	err[got] = '\0';
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status))
		print_message("child (%s) ended by signal %d; stderr: %s\n",
			      name, WTERMSIG(status), err);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void do_nothing(void)
{
}

static void do_allowed_vcpu(void)
{
	void *p = malloc(1 << 20); /* mmap: the allocator's own */

	free(p);
	/* KVM_RUN on no fd: allowed, fails with EBADF. */
	if (ioctl(-1, KVM_RUN, 0) != -1 || errno != EBADF)
		_exit(1);
	/* High bits the kernel ignores (fs/ioctl.c) are ignored here too. */
	if (syscall(SYS_ioctl, -1, KVM_RUN | (1UL << 32), 0) != -1)
		_exit(2);
	if (write(STDERR_FILENO, "fine\n", 5) != 5)
		_exit(3);
}

static void do_open_write(void)
{
	open("/dev/null", O_WRONLY | O_CLOEXEC);
}

static void do_tun(void)
{
	ioctl(-1, TUNSETOFFLOAD, 0);
}

static void do_exec_mmap(void)
{
	mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1,
	     0);
}

static void do_kick(void)
{
	if (syscall(SYS_tgkill, getpid(), gettid(), SIGUSR1))
		_exit(1);
}

static void do_sigterm(void)
{
	syscall(SYS_tgkill, getpid(), gettid(), SIGTERM);
}

static void test_allowed(void **state)
{
	char err[512];

	(void)state;
	assert_int_equal(in_child(SECCOMP_VCPU, "vcpu0", do_allowed_vcpu, err,
				  sizeof(err)),
			 0);
	assert_string_equal(err, "fine\n");
	assert_int_equal(
		in_child(SECCOMP_EVENT, "event", do_kick, err, sizeof(err)), 0);
	assert_int_equal(
		in_child(SECCOMP_MAIN, "main", do_nothing, err, sizeof(err)),
		0);
}

static void expect_killed(enum seccomp_thread kind, const char *name,
			  void (*fn)(void), const char *line)
{
	char err[512];

	assert_int_equal(in_child(kind, name, fn, err, sizeof(err)),
			 SECCOMP_EXIT_STATUS);
	if (!strstr(err, line))
		fail_msg("stderr '%s' lacks '%s'", err, line);
}

static void test_forbidden(void **state)
{
	(void)state;
	expect_killed(SECCOMP_VCPU, "vcpu3", do_open_write,
		      "ember: seccomp: thread vcpu3 made forbidden syscall "
		      "257 (openat); ember ends (exit status 159)\n");
	expect_killed(SECCOMP_VCPU, "vcpu0", do_tun,
		      "thread vcpu0 made forbidden syscall 16 (ioctl)");
	expect_killed(SECCOMP_EVENT, "event", do_exec_mmap,
		      "thread event made forbidden syscall 9 (mmap)");
	expect_killed(SECCOMP_EVENT, "event", do_sigterm,
		      "thread event made forbidden syscall 234 (tgkill)");
	expect_killed(SECCOMP_MAIN, "main", do_open_write,
		      "thread main made forbidden syscall 257 (openat)");
}

/* The test builds' hook: the named kind breaks its own filter at once. */
static void test_hook(void **state)
{
	(void)state;
	setenv("EMBER_TEST_SECCOMP_VIOLATE", "event", 1);
	expect_killed(SECCOMP_EVENT, "event", do_nothing,
		      "thread event made forbidden syscall 135 (personality)");
	/* Another kind's filter is not touched by it. */
	{
		char err[512];

		assert_int_equal(in_child(SECCOMP_VCPU, "vcpu0", do_nothing,
					  err, sizeof(err)),
				 0);
	}
	unsetenv("EMBER_TEST_SECCOMP_VIOLATE");
}

#ifdef __SANITIZE_ADDRESS__
static void do_overflow(void)
{
	char *p = malloc(8);
	volatile size_t n = 9;

	memset(p, 1, n); /* one past the end: ASan's report */
	__asm__ volatile("" : : "r"(p) : "memory"); /* kept */
	free(p);
}

/*
 * Test builds: an ASan report after the filter is in place prints what
 * and where before its symbolizer's first file access ends the process
 * with the SIGSYS line (the sanitizer rules add no file access, so that
 * the integration tests check the release lists).
 */
static void test_sanitizer_report(void **state)
{
	char err[8192];
	int st;

	(void)state;
	st = in_child(SECCOMP_VCPU, "vcpu0", do_overflow, err, sizeof(err));
	if (st != SECCOMP_EXIT_STATUS ||
	    !strstr(err, "ERROR: AddressSanitizer: heap-buffer-overflow") ||
	    !strstr(err, "WRITE of size 9") ||
	    !strstr(err, "ember: seccomp: thread vcpu0 made forbidden syscall"))
		fail_msg("status %d: %s", st, err);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_allowed),
		cmocka_unit_test(test_forbidden),
		cmocka_unit_test(test_hook),
#ifdef __SANITIZE_ADDRESS__
		cmocka_unit_test(test_sanitizer_report),
#endif
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
