// SPDX-License-Identifier: Apache-2.0
/*
 * vecstate: does every process keep its full vector register state?
 *
 * Runs inside the guest.  On a PVM host a guest kernel that saves only
 * x87/SSE state lets processes see each other's YMM upper halves, ZMM and
 * k registers (shared/PLATFORM.md); this program catches that.
 *
 * Each worker process loads a pattern unique to (worker, register,
 * iteration) into ymm0-15, or zmm0-31 and k0-k7 where AVX-512F is usable,
 * or xmm0-15 (legacy SSE) where AVX2 is not (a CPU or a guest kernel
 * without XSAVE: FXSAVE state is what the kernel must keep then),
 * makes raw sched_yield syscalls, spins, and stores the registers back, all
 * in one asm block, so only the kernel (context switches, syscall entry and
 * exit, signal frames) can change them.  All workers are pinned to one CPU
 * so every yield is a real switch between them.  A 1 ms ITIMER_VIRTUAL
 * (SIGVTALRM) whose handler trashes the same registers lands mostly in the
 * spin: the interrupted state must come back through the signal frame.
 * The timer counts user time only, so however slow the guest kernel is
 * (emulated on PVM), at least 1 ms of user work runs between two signals:
 * a wall-clock timer could fire again before sigreturn and livelock.
 *
 * Usage: vecstate [WORKERS [ITERATIONS [SPIN]]]
 *        vecstate --selftest-corrupt [WORKERS [ITERATIONS [SPIN]]]
 * The self-test flips ymm5 inside the asm block to prove a FAIL is seen.
 *
 * Output: one line per worker, then exactly one of
 *   vecstate: PASS workers=W iterations=I signals=S ymm=ok|skipped(no avx2, xmm=ok) zmm=ok|skipped(no avx512f)
 *   vecstate: FAIL workers=W iterations=I signals=S ymm=ok|FAIL zmm=... first: ...
 * and exit status 0 or 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cpuid.h>

#define MAX_WORKERS 64
#define NR_ZREGS    32
#define NR_YREGS    16
#define NR_KREGS    8
#define ZBYTES	    64
#define YBYTES	    32
#define XBYTES	    16
#define YIELDS	    2 /* sched_yield calls per iteration */

struct vec_buf {
	uint8_t z[NR_ZREGS][ZBYTES] __attribute__((aligned(64)));
	uint64_t k[NR_KREGS];
};

/* One per worker, in memory shared with the parent. */
struct worker_result {
	int done;
	long signals;
	long mismatches; /* iterations with any register wrong */
	int have_first;
	long first_iter;
	char first_reg[8];
	int first_lane; /* 64-bit lane within the register */
	uint64_t expected;
	uint64_t got;
	int ymm_bad;
	int zmm_bad;
};

static int have_avx2; /* ymm0-15 usable; else xmm0-15 are checked */
static int have_avx512; /* zmm0-31 and k0-7 usable */
static int have_avx512bw; /* k registers are 64 bits, not 16 */
static volatile sig_atomic_t nr_signals;

static uint64_t xgetbv0(void)
{
	uint32_t lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (uint64_t)hi << 32 | lo;
}

/* Sets have_avx2 (ymm0-15 usable) and have_avx512*; SSE2 is always there. */
static void detect(void)
{
	unsigned int a, b, c, d, b7;
	uint64_t xcr0;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) ||
	    !(c & bit_AVX))
		return;
	xcr0 = xgetbv0();
	if ((xcr0 & 0x6) != 0x6) /* SSE and AVX state enabled */
		return;
	if (!__get_cpuid_count(7, 0, &a, &b7, &c, &d) || !(b7 & bit_AVX2))
		return;
	have_avx2 = 1;
	/* AVX-512F plus opmask, ZMM_Hi256 and Hi16_ZMM state (XCR0 5-7). */
	if ((b7 & bit_AVX512F) && (xcr0 & 0xe0) == 0xe0) {
		have_avx512 = 1;
		have_avx512bw = !!(b7 & bit_AVX512BW);
	}
}

static void pattern_fill(struct vec_buf *p, unsigned int w, unsigned int iter)
{
	unsigned int r, j;

	for (r = 0; r < NR_ZREGS; r++) {
		for (j = 0; j < ZBYTES / 4; j++) {
			uint32_t v = (w + 1) << 24 | r << 16 | j << 8 |
				     (iter & 0xff);

			memcpy(&p->z[r][j * 4], &v, 4);
		}
	}
	for (r = 0; r < NR_KREGS; r++) {
		uint64_t v = (uint64_t)(w + 1) << 56 | (uint64_t)r << 48 |
			     (uint64_t)(iter & 0xffff) << 16 |
			     ((w + 1) & 0x1f) << 11 | r << 8 | (iter & 0xff);

		p->k[r] = have_avx512bw ? v : (v & 0xffff);
	}
}

/* Asm tables read better aligned. */
/* clang-format off */
#define STR_(x)	#x
#define STR(x)	STR_(x)

/*
 * The middle of every check: @yields raw sched_yield syscalls (only rax,
 * rcx and r11 may change), a dec/jnz spin for signals to land in, and, in
 * the self-test, BAD (register 5 set to all ones).  Operands: %[n],
 * %[spin], %[bad].
 */
#define VS_MIDDLE VS_MIDDLE_("vpcmpeqd %%ymm5, %%ymm5, %%ymm5\n\t")
#define VS_MIDDLE_(BAD)							\
	"mov %[n], %%r8d\n\t"						\
	"test %%r8d, %%r8d\n\t"						\
	"jz 2f\n\t"							\
	"1: mov $" STR(SYS_sched_yield) ", %%eax\n\t"			\
	"syscall\n\t"							\
	"dec %%r8d\n\t"							\
	"jnz 1b\n\t"							\
	"2: mov %[spin], %%r9\n\t"					\
	"test %%r9, %%r9\n\t"						\
	"jz 4f\n\t"							\
	"3: dec %%r9\n\t"						\
	"jnz 3b\n\t"							\
	"4: test %[bad], %[bad]\n\t"					\
	"jz 5f\n\t"							\
	BAD								\
	"5:\n\t"

#define YLD(n)	"vmovdqa " #n "*64(%[in]), %%ymm" #n "\n\t"
#define YST(n)	"vmovdqa %%ymm" #n ", " #n "*64(%[out])\n\t"
#define Y16(m)	m(0) m(1) m(2) m(3) m(4) m(5) m(6) m(7)			\
		m(8) m(9) m(10) m(11) m(12) m(13) m(14) m(15)
#define Z16B(m)	m(16) m(17) m(18) m(19) m(20) m(21) m(22) m(23)		\
		m(24) m(25) m(26) m(27) m(28) m(29) m(30) m(31)
#define K8(m)	m(0) m(1) m(2) m(3) m(4) m(5) m(6) m(7)

#define YCLOB	"xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",	\
		"xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",	\
		"xmm13", "xmm14", "xmm15"
#define ZCLOB	YCLOB, "xmm16", "xmm17", "xmm18", "xmm19", "xmm20",	\
		"xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26",	\
		"xmm27", "xmm28", "xmm29", "xmm30", "xmm31"
#define KCLOB	"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"

/*
 * ymm0-15 of @in live across the yields and the spin, then go to @out.
 * The file is built without -mavx: only the asm here, check_zmm() and the
 * signal handler use VEX, and only where detect() found them usable.
 */
__attribute__((target("avx2"))) static void check_ymm(const struct vec_buf *in, struct vec_buf *out,
		      unsigned int n, unsigned long spin, unsigned long bad)
{
	__asm__ volatile(Y16(YLD) VS_MIDDLE Y16(YST) "vzeroupper\n\t"
			 :
			 : [in] "r"(in), [out] "r"(out), [n] "r"(n),
			   [spin] "r"(spin), [bad] "r"(bad)
			 : "rax", "rcx", "r11", "r8", "r9", "cc", "memory",
			   YCLOB);
}

#define XLD(n)	"movdqa " #n "*64(%[in]), %%xmm" #n "\n\t"
#define XST(n)	"movdqa %%xmm" #n ", " #n "*64(%[out])\n\t"

/* The same for xmm0-15 with legacy SSE only (no AVX: no VEX encoding). */
static void check_xmm(const struct vec_buf *in, struct vec_buf *out,
		      unsigned int n, unsigned long spin, unsigned long bad)
{
	__asm__ volatile(Y16(XLD) VS_MIDDLE_("pcmpeqd %%xmm5, %%xmm5\n\t")
			 Y16(XST)
			 :
			 : [in] "r"(in), [out] "r"(out), [n] "r"(n),
			   [spin] "r"(spin), [bad] "r"(bad)
			 : "rax", "rcx", "r11", "r8", "r9", "cc", "memory",
			   YCLOB);
}

#define ZLD(n)	"vmovdqa64 " #n "*64(%[in]), %%zmm" #n "\n\t"
#define ZST(n)	"vmovdqa64 %%zmm" #n ", " #n "*64(%[out])\n\t"
#define KLDQ(n)	"kmovq " #n "*8+2048(%[in]), %%k" #n "\n\t"
#define KSTQ(n)	"kmovq %%k" #n ", " #n "*8+2048(%[out])\n\t"
#define KLDW(n)	"kmovw " #n "*8+2048(%[in]), %%k" #n "\n\t"
#define KSTW(n)	"kmovw %%k" #n ", " #n "*8+2048(%[out])\n\t"

_Static_assert(__builtin_offsetof(struct vec_buf, k) == 2048,
	       "k[] offset is hard-coded in the asm");

/* The same for zmm0-31 and k0-7 (64-bit k with AVX512BW, else 16-bit). */
__attribute__((target("avx512f"))) static void
check_zmm(const struct vec_buf *in, struct vec_buf *out, unsigned int n,
	  unsigned long spin, unsigned long bad)
{
	if (have_avx512bw)
		__asm__ volatile(Y16(ZLD) Z16B(ZLD) K8(KLDQ) VS_MIDDLE
				 Y16(ZST) Z16B(ZST) K8(KSTQ) "vzeroupper\n\t"
				 :
				 : [in] "r"(in), [out] "r"(out), [n] "r"(n),
				   [spin] "r"(spin), [bad] "r"(bad)
				 : "rax", "rcx", "r11", "r8", "r9", "cc",
				   "memory", ZCLOB, KCLOB);
	else
		__asm__ volatile(Y16(ZLD) Z16B(ZLD) K8(KLDW) VS_MIDDLE
				 Y16(ZST) Z16B(ZST) K8(KSTW) "vzeroupper\n\t"
				 :
				 : [in] "r"(in), [out] "r"(out), [n] "r"(n),
				   [spin] "r"(spin), [bad] "r"(bad)
				 : "rax", "rcx", "r11", "r8", "r9", "cc",
				   "memory", ZCLOB, KCLOB);
}

#define XGARB(n) "pcmpeqd %%xmm" #n ", %%xmm" #n "\n\t"
#define YGARB(n) "vpcmpeqd %%ymm" #n ", %%ymm" #n ", %%ymm" #n "\n\t"
#define ZGARB(n) "vpternlogd $0xff, %%zmm" #n ", %%zmm" #n ", %%zmm" #n "\n\t"
#define KGARBQ(n) "kxnorq %%k0, %%k0, %%k" #n "\n\t"
#define KGARBW(n) "kxnorw %%k0, %%k0, %%k" #n "\n\t"

__attribute__((target("avx512f"))) static void trash_zmm(void)
{
	if (have_avx512bw)
		__asm__ volatile(Y16(ZGARB) Z16B(ZGARB) K8(KGARBQ)
				 "vzeroupper\n\t" ::: ZCLOB, KCLOB);
	else
		__asm__ volatile(Y16(ZGARB) Z16B(ZGARB) K8(KGARBW)
				 "vzeroupper\n\t" ::: ZCLOB, KCLOB);
}

/*
 * Trash every checked register: the interrupted code must get its own
 * values back from the signal frame at sigreturn.  GCC may add a
 * vzeroupper on return, leaving zeros in the ymm upper halves: zero
 * differs from every pattern too.
 */
static void on_alarm(int sig)
{
	(void)sig;
	nr_signals = nr_signals + 1;
	if (have_avx512)
		trash_zmm();
	if (have_avx2)
		__asm__ volatile(Y16(YGARB) ::: YCLOB);
	else
		__asm__ volatile(Y16(XGARB) ::: YCLOB);
}

/* clang-format on */

static void note(struct worker_result *res, unsigned int iter, const char *reg,
		 unsigned int lane, uint64_t e, uint64_t g)
{
	if (res->have_first)
		return;
	res->have_first = 1;
	res->first_iter = iter;
	snprintf(res->first_reg, sizeof(res->first_reg), "%s", reg);
	res->first_lane = (int)lane;
	res->expected = e;
	res->got = g;
}

/* Returns 1 if @got differs from @want anywhere, recording what differs. */
static int compare(const struct vec_buf *want, const struct vec_buf *got,
		   unsigned int iter, struct worker_result *res)
{
	unsigned int nz = have_avx512 ? NR_ZREGS : NR_YREGS;
	unsigned int bytes = have_avx512 ? ZBYTES : have_avx2 ? YBYTES : XBYTES;
	uint64_t kmask = have_avx512bw ? ~0ULL : 0xffff;
	unsigned int r, l;
	char name[8];
	int bad = 0;

	for (r = 0; r < nz; r++) {
		for (l = 0; l < bytes / 8; l++) {
			uint64_t e, g;

			memcpy(&e, &want->z[r][l * 8], 8);
			memcpy(&g, &got->z[r][l * 8], 8);
			if (e == g)
				continue;
			bad = 1;
			/* Beyond ymm0-15 is what only AVX-512 state holds. */
			if (r >= NR_YREGS || l >= YBYTES / 8)
				res->zmm_bad = 1;
			else
				res->ymm_bad = 1;
			snprintf(name, sizeof(name), "%cmm%u",
				 have_avx512 ? 'z' :
				 have_avx2   ? 'y' :
					       'x',
				 r);
			note(res, iter, name, l, e, g);
		}
	}
	for (r = 0; have_avx512 && r < NR_KREGS; r++) {
		uint64_t e = want->k[r] & kmask, g = got->k[r] & kmask;

		if (e == g)
			continue;
		bad = 1;
		res->zmm_bad = 1;
		snprintf(name, sizeof(name), "k%u", r);
		note(res, iter, name, 0, e, g);
	}
	return bad;
}

static void worker(unsigned int w, unsigned int iters, unsigned long spin,
		   int corrupt, struct worker_result *res)
{
	static struct vec_buf want, got;
	struct itimerval it = {
		.it_interval = { .tv_sec = 0, .tv_usec = 1000 },
		.it_value = { .tv_sec = 0, .tv_usec = 1000 },
	};
	struct itimerval off = { 0 };
	struct sigaction sa;
	unsigned int i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGVTALRM, &sa, NULL) < 0)
		perror("vecstate: sigaction");
	if (setitimer(ITIMER_VIRTUAL, &it, NULL) < 0)
		perror("vecstate: setitimer");

	for (i = 0; i < iters; i++) {
		pattern_fill(&want, w, i);
		memset(&got, 0, sizeof(got));
		if (have_avx512)
			check_zmm(&want, &got, YIELDS, spin, corrupt);
		else if (have_avx2)
			check_ymm(&want, &got, YIELDS, spin, corrupt);
		else
			check_xmm(&want, &got, YIELDS, spin, corrupt);
		if (compare(&want, &got, i, res))
			res->mismatches++;
	}

	setitimer(ITIMER_VIRTUAL, &off, NULL);
	res->signals = nr_signals;
	res->done = 1;
}

/* All workers on the parent's first CPU, so every yield switches. */
static void pin_one_cpu(void)
{
	cpu_set_t set;
	int cpu;

	if (sched_getaffinity(0, sizeof(set), &set) < 0) {
		perror("vecstate: sched_getaffinity");
		return;
	}
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set))
			break;
	if (cpu == CPU_SETSIZE)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		perror("vecstate: sched_setaffinity");
}

static int parse_num(const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || *v > max)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long nworkers = 2, iters = 2000, spin = 1000000;
	struct worker_result *res, *first = NULL;
	const char *zmm;
	long total_signals = 0;
	int corrupt = 0, fail = 0, ymm_bad = 0, zmm_bad = 0;
	int argi = 1;
	unsigned int w;
	pid_t pids[MAX_WORKERS];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strcmp(argv[1], "--selftest-corrupt")) {
		corrupt = 1;
		argi++;
		printf("vecstate: self-test: ymm5 is corrupted on purpose, expect FAIL\n");
	}
	if ((argc > argi && parse_num(argv[argi], MAX_WORKERS, &nworkers)) ||
	    (argc > argi + 1 && parse_num(argv[argi + 1], 100000000, &iters)) ||
	    (argc > argi + 2 && parse_num(argv[argi + 2], 1UL << 40, &spin)) ||
	    argc > argi + 3 || nworkers == 0) {
		fprintf(stderr,
			"usage: vecstate [--selftest-corrupt] [WORKERS(1-%d) [ITERATIONS [SPIN]]]\n",
			MAX_WORKERS);
		return 2;
	}

	detect();

	res = mmap(NULL, sizeof(*res) * nworkers, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED) {
		perror("vecstate: mmap");
		return 1;
	}
	memset(res, 0, sizeof(*res) * nworkers);
	pin_one_cpu();

	for (w = 0; w < nworkers; w++) {
		pids[w] = fork();
		if (pids[w] < 0) {
			perror("vecstate: fork");
			return 1;
		}
		if (pids[w] == 0) {
			worker(w, (unsigned int)iters, spin, corrupt, &res[w]);
			_exit(0);
		}
	}

	for (w = 0; w < nworkers; w++) {
		struct worker_result *r = &res[w];
		int st;

		while (waitpid(pids[w], &st, 0) < 0) {
			if (errno != EINTR) {
				perror("vecstate: waitpid");
				st = 0xff00; /* report as exit 255 */
				break;
			}
		}
		total_signals += r->signals;
		if (!WIFEXITED(st) || WEXITSTATUS(st) || !r->done) {
			printf("vecstate: worker %u pid %d died: %s %d\n", w,
			       (int)pids[w],
			       WIFSIGNALED(st) ? "signal" : "exit status",
			       WIFSIGNALED(st) ? WTERMSIG(st) :
						 WEXITSTATUS(st));
			fail = 1;
			continue;
		}
		printf("vecstate: worker %u pid %d iterations=%lu signals=%ld bad_iterations=%ld\n",
		       w, (int)pids[w], iters, r->signals, r->mismatches);
		ymm_bad |= r->ymm_bad;
		zmm_bad |= r->zmm_bad;
		if (r->mismatches) {
			fail = 1;
			if (!first)
				first = r;
		}
	}

	zmm = "skipped(no avx512f)";
	if (have_avx512)
		zmm = zmm_bad ? "FAIL" : "ok";
	printf("vecstate: %s workers=%lu iterations=%lu signals=%ld ymm=%s zmm=%s",
	       fail ? "FAIL" : "PASS", nworkers, iters, total_signals,
	       !have_avx2 ? (ymm_bad ? "skipped(no avx2, xmm=FAIL)" :
				       "skipped(no avx2, xmm=ok)") :
	       ymm_bad	  ? "FAIL" :
			    "ok",
	       zmm);
	if (first)
		printf(" first: worker=%u iteration=%ld reg=%s lane64=%d expected=%#018" PRIx64
		       " got=%#018" PRIx64,
		       (unsigned int)(first - res), first->first_iter,
		       first->first_reg, first->first_lane, first->expected,
		       first->got);
	else if (fail)
		printf(" first: a worker died");
	printf("\n");
	return fail;
}
