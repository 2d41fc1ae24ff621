/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The seccomp allow-lists, one per thread kind, as tables of rules that
 * vmm/seccomp/seccomp.c turns into BPF with libseccomp.  Private to
 * vmm/seccomp/: the rest of ember sees only seccomp.h.
 *
 * A rule allows one system call, optionally only for argument values that
 * match (at most two comparisons, both must hold); several rules for one
 * call allow any of them.  Every rule in the tables carries a comment
 * saying which part of ember makes the call and why.
 */
#ifndef EMBER_VMM_SECCOMP_FILTER_H
#define EMBER_VMM_SECCOMP_FILTER_H

#include <stdint.h>

#include <seccomp.h>

/*
 * The sanitizer runtimes (ASan, UBSan, LSan: the test builds) make calls
 * of their own: the extra rules for them exist only in those builds.
 */
#if defined(__SANITIZE_ADDRESS__)
#define SECCOMP_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || \
	__has_feature(undefined_behavior_sanitizer)
#define SECCOMP_SANITIZER 1
#endif
#endif

/* A datum replaced by ember's process id when the filter is built. */
#define SECCOMP_OWN_PID UINT64_MAX

struct seccomp_cmp {
	unsigned int arg; /* 0-5 */
	enum scmp_compare op;
	uint64_t a, b; /* libseccomp's datum_a, datum_b */
};

struct seccomp_rule {
	int nr; /* SCMP_SYS(name) */
	unsigned int ncmp;
	struct seccomp_cmp cmp[2];
};

struct seccomp_list {
	const struct seccomp_rule *rules;
	unsigned int n;
};

/* The call, whatever its arguments. */
#define SC_ALLOW(name)               \
	{                            \
		.nr = SCMP_SYS(name) \
	}

/* The call when the low 32 bits of argument @arg equal @val. */
#define SC_ALLOW_ARG(name, arg, val)                                         \
	{                                                                    \
		.nr = SCMP_SYS(name), .ncmp = 1,                             \
		.cmp = { { (arg), SCMP_CMP_MASKED_EQ, 0xffffffffu, (val) } } \
	}

/* The call when argument @arg has none of the bits in @bits set. */
#define SC_ALLOW_NOT_BITS(name, arg, bits)                          \
	{                                                           \
		.nr = SCMP_SYS(name), .ncmp = 1,                    \
		.cmp = { { (arg), SCMP_CMP_MASKED_EQ, (bits), 0 } } \
	}

/*
 * ioctl(2) for request @req alone.  The kernel takes the request as an
 * unsigned int (fs/ioctl.c): the comparison is on the low 32 bits, as the
 * kernel will read them.
 */
#define SC_IOCTL(req) SC_ALLOW_ARG(ioctl, 1, (req))

#define SC_LIST(t)                              \
	{                                       \
		(t), sizeof(t) / sizeof((t)[0]) \
	}

/*
 * The tables.  filter_common: every thread; filter_main, filter_event,
 * filter_vcpu: that kind of thread; filter_sanitizer and
 * filter_sanitizer_main: every thread and the main thread of a sanitizer
 * build (empty in a release build).
 */
extern const struct seccomp_list filter_common;
extern const struct seccomp_list filter_main;
extern const struct seccomp_list filter_event;
extern const struct seccomp_list filter_vcpu;
extern const struct seccomp_list filter_sanitizer;
extern const struct seccomp_list filter_sanitizer_main;

#endif /* EMBER_VMM_SECCOMP_FILTER_H */
