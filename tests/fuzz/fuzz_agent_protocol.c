// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the guest agent's frame and field decoders
 * (guest-init/protocol.h) against a hostile host.  The input is a byte
 * stream cut into frames the way the agent cuts it; each payload goes
 * through every payload decoder.  Any crash or sanitizer report is a bug,
 * every decoded string must lie inside the payload, NUL-terminated, and a
 * decoded INIT must be in range and survive a re-encoding unchanged, a
 * decoded EXEC's ROOT, RLIMITs and TTY_SIZE (and RESIZE's payload) must
 * keep the decoder's promises.  The
 * whole input is also an image defaults file (ember_defaults_decode()):
 * what decodes must re-encode to the same bytes, and what fails must say
 * why.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guest-init/protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ember_agent_exec ex;

static void check_str(const uint8_t *pl, size_t len, const char *s)
{
	const uint8_t *p = (const uint8_t *)s;

	if (!s)
		return;
	if (p < pl || p >= pl + len ||
	    memchr(p, 0, len - (size_t)(p - pl)) == NULL)
		abort();
}

static void check_init(const uint8_t *pl, size_t len)
{
	static uint8_t again[2 * EMBER_AGENT_TLV_HDR + EMBER_AGENT_TIME_SIZE +
			     EMBER_AGENT_MAX_ENTROPY];
	struct ember_agent_init in, in2;
	long n;

	if (ember_agent_init_decode(pl, len, &in) != 0)
		return;
	if ((!in.have_time && !in.entropy) || in.nsec >= 1000000000U ||
	    in.sec > (uint64_t)INT64_MAX)
		abort();
	if (in.entropy &&
	    (in.entropy_len < 1 || in.entropy_len > EMBER_AGENT_MAX_ENTROPY ||
	     in.entropy < pl || in.entropy_len > len ||
	     (size_t)(in.entropy - pl) > len - in.entropy_len))
		abort();
	n = ember_agent_init_encode(again, sizeof(again), in.have_time, in.sec,
				    in.nsec, in.entropy, in.entropy_len);
	if (n < 0 || ember_agent_init_decode(again, (size_t)n, &in2) != 0 ||
	    in2.have_time != in.have_time || in2.sec != in.sec ||
	    in2.nsec != in.nsec || in2.entropy_len != in.entropy_len ||
	    (in.entropy && memcmp(in2.entropy, in.entropy, in.entropy_len)))
		abort();
}

/*
 * @pl as a defaults file: every decoded string inside it, the counts in
 * range, a valid user spec; the re-encoding equal to the input (the
 * encoder writes env records first, so only when the input does too).
 */
static void check_defaults(const uint8_t *pl, size_t len)
{
	static struct ember_defaults d, d2;
	static char again[EMBER_DEFAULTS_MAX];
	long n;
	int rc;

	rc = ember_defaults_decode(pl, len, &d);
	if (rc < 0) {
		if (!d.why)
			abort();
		return;
	}
	if (rc != 0 || d.why || d.envc > EMBER_DEFAULTS_MAX_ENV ||
	    d.env[d.envc])
		abort();
	for (uint32_t i = 0; i < d.envc; i++) {
		check_str(pl, len, d.env[i]);
		if (d.env[i][0] == '=' || !strchr(d.env[i], '='))
			abort();
	}
	check_str(pl, len, d.cwd);
	check_str(pl, len, d.user);
	if ((d.cwd && d.cwd[0] != '/') ||
	    (d.user && ember_user_spec_split(d.user) < 0))
		abort();
	n = ember_defaults_encode(again, sizeof(again), d.env, d.cwd, d.user);
	if (n < 0 || ember_defaults_decode(again, (size_t)n, &d2) != 0 ||
	    d2.envc != d.envc || (size_t)n != len || !d2.cwd != !d.cwd ||
	    !d2.user != !d.user || (d.cwd && strcmp(d.cwd, d2.cwd)) ||
	    (d.user && strcmp(d.user, d2.user)))
		abort();
	for (uint32_t i = 0; i < d.envc; i++)
		if (strcmp(d.env[i], d2.env[i]))
			abort();
}

/*
 * ROOT, RLIMIT, TTY_SIZE of a decoded EXEC: what the decoder promises,
 * and each RLIMIT and the size survive a re-encoding unchanged.
 */
static void check_exec_ext(const struct ember_agent_exec *e)
{
	uint8_t v[EMBER_AGENT_RLIMIT_SIZE];
	struct ember_agent_rlimit r;
	uint16_t rows, cols;

	if ((e->root && e->root[0] != '/') ||
	    (e->root && (e->flags & EMBER_AGENT_F_ENV_ADD)) ||
	    (e->have_size && !(e->flags & EMBER_AGENT_F_TTY)) ||
	    e->nr_rlimits > EMBER_AGENT_MAX_RLIMITS)
		abort();
	for (uint32_t i = 0; i < e->nr_rlimits; i++) {
		const struct ember_agent_rlimit *l = &e->rlimits[i];

		if (l->resource >= EMBER_AGENT_NR_RLIMITS || l->soft > l->hard)
			abort();
		for (uint32_t j = 0; j < i; j++)
			if (e->rlimits[j].resource == l->resource)
				abort();
		ember_agent_rlimit_encode(v, l->resource, l->soft, l->hard);
		if (ember_agent_rlimit_decode(v, sizeof(v), &r) != 0 ||
		    r.resource != l->resource || r.soft != l->soft ||
		    r.hard != l->hard)
			abort();
	}
	if (e->have_size) {
		ember_agent_winsize_encode(v, e->rows, e->cols);
		if (ember_agent_winsize_decode(v, EMBER_AGENT_WINSIZE_SIZE,
					       &rows, &cols) != 0 ||
		    rows != e->rows || cols != e->cols)
			abort();
	}
}

static void payload(const uint8_t *pl, size_t len)
{
	struct ember_agent_file f;
	const char *msg;
	uint32_t kind, code;
	int32_t c32;
	size_t ml;
	int sig;

	if (ember_agent_exec_decode(pl, len, &ex) == 0) {
		if (ex.argc == 0 || ex.argc > EMBER_AGENT_MAX_ARGS ||
		    ex.envc > EMBER_AGENT_MAX_ENV || ex.argv[ex.argc] ||
		    ex.env[ex.envc])
			abort();
		for (uint32_t i = 0; i < ex.argc; i++)
			check_str(pl, len, ex.argv[i]);
		for (uint32_t i = 0; i < ex.envc; i++)
			check_str(pl, len, ex.env[i]);
		check_str(pl, len, ex.cwd);
		check_str(pl, len, ex.user);
		check_str(pl, len, ex.root);
		if (ex.flags & ~EMBER_AGENT_F_KNOWN)
			abort();
		check_exec_ext(&ex);
	}
	for (int w = 0; w < 2; w++)
		if (ember_agent_file_decode(pl, len, w, &f) == 0) {
			check_str(pl, len, f.path);
			if (f.mode & ~07777U)
				abort();
		}
	check_init(pl, len);
	ember_agent_exit_decode(pl, len, &kind, &c32);
	ember_agent_kill_decode(pl, len, &sig);
	{
		uint16_t rows, cols;
		struct ember_agent_rlimit rl;

		if ((ember_agent_winsize_decode(pl, len, &rows, &cols) == 0) !=
		    (len == EMBER_AGENT_WINSIZE_SIZE))
			abort();
		if (ember_agent_rlimit_decode(pl, (uint32_t)len, &rl) == 0 &&
		    (len != EMBER_AGENT_RLIMIT_SIZE ||
		     rl.resource >= EMBER_AGENT_NR_RLIMITS ||
		     rl.soft > rl.hard))
			abort();
	}
	if (ember_agent_error_decode(pl, len, &code, &msg, &ml) == 0 &&
	    ml != len - 4)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ember_agent_hdr h;
	size_t off = 0;

	/* Whole input as a defaults file and as one payload, then as a
	 * stream of frames. */
	{
		/* A copy: the decoder must not read past the file. */
		uint8_t *f = malloc(size ? size : 1);

		if (!f)
			abort();
		memcpy(f, data, size);
		check_defaults(f, size);
		free(f);
	}
	payload(data, size);
	while (size - off >= EMBER_AGENT_HDR_SIZE) {
		int rc = ember_agent_hdr_decode(data + off, size - off, &h);

		if (rc < 0 && rc != EMBER_AGENT_E_TYPE)
			break; /* desynchronised: the agent closes */
		if (h.len > EMBER_AGENT_MAX_PAYLOAD)
			abort();
		off += EMBER_AGENT_HDR_SIZE;
		if (h.len > size - off)
			break;
		if (rc == 0) {
			/* Copy: the decoders must not read past the payload. */
			uint8_t *pl = malloc(h.len ? h.len : 1);

			if (!pl)
				abort();
			memcpy(pl, data + off, h.len);
			payload(pl, h.len);
			free(pl);
		}
		off += h.len;
	}
	return 0;
}
