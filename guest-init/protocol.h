/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one header the host (ember) and the guest side (guest-init/) share.
 * It holds the guest-visible addresses and encodings of ember's own devices
 * and of the boot-time command hand-over.  Freestanding: no libc needed.
 */
#ifndef EMBER_GUEST_PROTOCOL_H
#define EMBER_GUEST_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

/*
 * Firecracker's boot timer: the guest writes the byte 123 at this
 * guest-physical address as soon as its init starts.  Same address and
 * value as Firecracker (MMIO_MEM_START, MAGIC_VALUE_SIGNAL_GUEST_BOOT_COMPLETE).
 */
#define EMBER_BOOT_TIMER_GPA   0xd0000000ULL
#define EMBER_BOOT_TIMER_MAGIC 123

/*
 * ember's exit-status device: one page of MMIO.  The guest writes a 32-bit
 * little-endian status to offset 0 (0-255, the shell's convention: 128+N
 * for signal N) once its filesystems are synced: ember ends the VM right
 * then and exits with that status.
 */
#define EMBER_EXIT_STATUS_GPA  0xd0001000ULL
#define EMBER_EXIT_STATUS_SIZE 0x1000ULL

/*
 * The command given by `ember --run CMD` travels on the kernel command line
 * as `ember.run=<base64url of CMD, no padding>`; guest init decodes it from
 * /proc/cmdline and runs it with /bin/sh -c.  Any bytes survive (a NUL byte
 * ends the command, as for any shell string).
 */
#define EMBER_RUN_PARAM "ember.run="

/*
 * Guest init starts the agent (guest-init/agent.c, PROTOCOL.md) only when
 * this word is on the kernel command line: ember adds it with a vsock
 * device.
 */
#define EMBER_AGENT_PARAM "ember.agent=1"

/*
 * The environment guest init gives its children, the agent among them
 * (so every EXEC's default environment starts from it; PROTOCOL.md, "The
 * environment"): ENV fields without EMBER_AGENT_F_ENV_ADD replace it
 * whole, with the flag they go over it.
 */
#define EMBER_GUEST_PATH "/usr/sbin:/usr/bin:/sbin:/bin"
#define EMBER_GUEST_HOME "/root"
#define EMBER_GUEST_TERM "linux"

/*
 * ember's parts in an image built from a user's image: init
 * (booted as init=EMBER_GUEST_LIBDIR "/init"), the agent, a busybox in
 * EMBER_GUEST_BINDIR (put at the end of PATH when it exists) and the
 * image's defaults for execs (EMBER_GUEST_DEFAULTS, PROTOCOL.md "Image
 * defaults"; ember_defaults_decode()).
 */
#define EMBER_GUEST_LIBDIR   "/usr/lib/ember"
#define EMBER_GUEST_AGENT    EMBER_GUEST_LIBDIR "/ember-agent"
#define EMBER_GUEST_BINDIR   EMBER_GUEST_LIBDIR "/bin"
#define EMBER_GUEST_DEFAULTS EMBER_GUEST_LIBDIR "/defaults"

/*
 * Base64 (RFC 4648) in its two alphabets, one codec for both:
 * base64url without padding (section 5) carries the `--run` command on
 * the kernel command line (ember_b64_encode(), ember_b64_decode()); the
 * standard alphabet with '=' padding (section 4) is api/'s, for the binary
 * parts of JSON (api/sandbox/base64.h).
 */
static const char ember_b64url_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
static const char ember_b64std_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Length of @len bytes in base64url, without a terminating NUL. */
static inline size_t ember_b64_encoded_len(size_t len)
{
	return len / 3 * 4 + (len % 3 ? len % 3 + 1 : 0);
}

/*
 * Encode @len bytes of @in with @alphabet (64 characters) into @out, which
 * has room for the encoding and a NUL; with @pad, '=' fills the last group
 * to 4 characters.  Returns the encoded length, the NUL not counted.
 */
static inline size_t ember_b64_encode_with(const void *in, size_t len,
					   char *out, const char *alphabet,
					   int pad)
{
	const uint8_t *p = in;
	size_t i, o = 0;

	for (i = 0; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 |
			     p[i + 2];

		out[o++] = alphabet[v >> 18 & 63];
		out[o++] = alphabet[v >> 12 & 63];
		out[o++] = alphabet[v >> 6 & 63];
		out[o++] = alphabet[v & 63];
	}
	if (i < len) {
		uint32_t v = (uint32_t)p[i] << 16 |
			     (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0);

		out[o++] = alphabet[v >> 18 & 63];
		out[o++] = alphabet[v >> 12 & 63];
		if (i + 1 < len)
			out[o++] = alphabet[v >> 6 & 63];
		else if (pad)
			out[o++] = '=';
		if (pad)
			out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

/*
 * Encode @len bytes of @in as base64url without padding into @out, which
 * has room for @outsz bytes including the NUL.  Returns the encoded length,
 * or -1 if @out is too small.
 */
static inline long ember_b64_encode(const void *in, size_t len, char *out,
				    size_t outsz)
{
	size_t n;

	if (ember_b64_encoded_len(len) >= outsz)
		return -1;
	n = ember_b64_encode_with(in, len, out, ember_b64url_alphabet, 0);
	return (long)n;
}

/* The value of @c in @alphabet (64 characters), or -1. */
static inline int ember_b64_value(char c, const char *alphabet)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == alphabet[62])
		return 62;
	if (c == alphabet[63])
		return 63;
	return -1;
}

/*
 * Decode @len characters written with @alphabet from @in into @out (room
 * for @outsz bytes).  With @padded, '=' padding may end the input (it is
 * optional) and ASCII white space (line breaks of MIME bodies) is
 * skipped.  Returns the decoded length, or -1 on any other character,
 * misplaced padding, a lone trailing character or a too small @out.
 */
static inline long ember_b64_decode_with(const char *in, size_t len, void *out,
					 size_t outsz, const char *alphabet,
					 int padded)
{
	uint8_t *q = out;
	size_t i, o = 0;
	uint32_t acc = 0;
	int bits = 0, have = 0, pad = 0;

	for (i = 0; i < len; i++) {
		char c = in[i];
		int v;

		if (padded && (c == ' ' || c == '\t' || c == '\r' || c == '\n'))
			continue;
		if (padded && c == '=') {
			/* "xx==" or "xxx=": only after 2 or 3 characters. */
			if (have < 2 || ++pad > 2)
				return -1;
			continue;
		}
		v = ember_b64_value(c, alphabet);
		if (v < 0 || pad) /* data after padding */
			return -1;
		acc = acc << 6 | (uint32_t)v;
		have = (have + 1) % 4;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o >= outsz)
				return -1;
			q[o++] = (uint8_t)(acc >> bits);
		}
	}
	if (have == 1 || (pad && pad != 4 - have))
		return -1;
	return (long)o;
}

/*
 * Decode @len characters of base64url (no padding) from @in into @out
 * (room for @outsz bytes).  Returns the decoded length, or -1 on a bad
 * character, a bad length (len % 4 == 1) or a too small @out.
 */
static inline long ember_b64_decode(const char *in, size_t len, void *out,
				    size_t outsz)
{
	return ember_b64_decode_with(in, len, out, outsz, ember_b64url_alphabet,
				     0);
}

/*
 * --- The guest agent's protocol (guest-init/PROTOCOL.md) -----------------
 *
 * The agent (guest-init/agent.c, /sbin/ember-agent) listens on vsock port
 * EMBER_AGENT_PORT.  Every message is a frame: a fixed 16-byte
 * little-endian header followed by EMBER_AGENT_MAX_PAYLOAD bytes at most.
 *
 *   off 0  u32 magic    EMBER_AGENT_MAGIC, the bytes 'E' 'M' 'B' 'A'
 *   off 4  u16 version  EMBER_AGENT_VERSION
 *   off 6  u16 type     enum ember_agent_type
 *   off 8  u32 stream   request id chosen by the host; replies carry it
 *   off 12 u32 length   payload bytes that follow
 *
 * EXEC, WRITE_FILE, READ_FILE and INIT payloads are lists of fields (TLVs):
 * u16 tag, u16 reserved (0), u32 length, then length bytes.  Strings hold
 * their bytes and exactly one NUL, the last byte; u32 fields are 4 bytes.
 */
#define EMBER_AGENT_PORT	  1024
#define EMBER_AGENT_MAGIC	  0x41424d45U /* "EMBA" in memory */
#define EMBER_AGENT_VERSION	  1
#define EMBER_AGENT_HDR_SIZE	  16
#define EMBER_AGENT_MAX_PAYLOAD	  (1U << 20)
#define EMBER_AGENT_TLV_HDR	  8
#define EMBER_AGENT_MAX_ARGS	  256 /* argv entries of one EXEC */
#define EMBER_AGENT_MAX_ENV	  256 /* env entries of one EXEC */
#define EMBER_AGENT_MAX_EXECS	  16 /* concurrent streams per connection */
#define EMBER_AGENT_MAX_FILE	  (256ULL << 20) /* WRITE_FILE / READ_FILE */
#define EMBER_AGENT_CHUNK	  (64U << 10) /* agent's STDOUT/FILE_DATA size */
#define EMBER_AGENT_MAX_ENTROPY	  256 /* bytes in one INIT's ENTROPY field */
#define EMBER_AGENT_TIME_SIZE	  12 /* INIT's TIME field: u64 s, u32 ns */
#define EMBER_AGENT_MAX_RLIMITS	  16 /* RLIMIT fields of one EXEC */
#define EMBER_AGENT_RLIMIT_SIZE	  20 /* RLIMIT: u32 resource, u64 soft, hard */
#define EMBER_AGENT_NR_RLIMITS	  16 /* resources: Linux's RLIM_NLIMITS */
#define EMBER_AGENT_RLIM_INFINITY (~0ULL) /* Linux's RLIM_INFINITY */
#define EMBER_AGENT_WINSIZE_SIZE  4 /* TTY_SIZE, RESIZE: u16 rows, u16 cols */
#define EMBER_AGENT_KEEP_BUF	  (1U << 20) /* output kept per detached process */
#define EMBER_AGENT_STARTED_SIZE  12 /* STARTED: u32 pid, u64 dropped */
#define EMBER_AGENT_PROC_HDR	  28 /* a PROCS entry before its command */
#define EMBER_AGENT_PROC_CMD_MAX  1024 /* command bytes of a PROCS entry */
/*
 * INIT steps the guest's CLOCK_REALTIME only when it is further than this
 * (nanoseconds) from the host's TIME: a repeated INIT, or one for a guest
 * whose clock is right, does not move it back by the frame's transit time.
 */
#define EMBER_AGENT_CLOCK_SLACK_NS 10000000LL /* 10 ms */

enum ember_agent_type {
	EMBER_AGENT_PING = 1, /* h->g  any bytes, echoed by PONG */
	EMBER_AGENT_PONG = 2, /* g->h  PING's payload */
	EMBER_AGENT_EXEC = 3, /* h->g  TLVs: ARG+, ENV*, CWD?, ... */
	EMBER_AGENT_STDIN = 4, /* h->g  data; empty = EOF */
	EMBER_AGENT_STDOUT = 5, /* g->h  data */
	EMBER_AGENT_STDERR = 6, /* g->h  data */
	EMBER_AGENT_EXIT = 7, /* g->h  u32 kind, i32 code */
	EMBER_AGENT_KILL = 8, /* h->g  u32 signal */
	EMBER_AGENT_WRITE_FILE = 9, /* h->g  TLVs: PATH, MODE? */
	EMBER_AGENT_FILE_DATA = 10, /* both  data */
	EMBER_AGENT_FILE_END = 11, /* both  empty */
	EMBER_AGENT_READ_FILE = 12, /* h->g  TLVs: PATH */
	EMBER_AGENT_OK = 13, /* g->h  empty */
	EMBER_AGENT_ERROR = 14, /* g->h  u32 errno, message bytes */
	EMBER_AGENT_INIT = 15, /* h->g  TLVs: TIME?, ENTROPY? (one at least) */
	EMBER_AGENT_RESIZE = 16, /* h->g  u16 rows, u16 cols (a TTY exec) */
	EMBER_AGENT_ATTACH = 17, /* h->g  u32 pid: a kept process again */
	EMBER_AGENT_LIST = 18, /* h->g  empty: the kept processes */
	EMBER_AGENT_STARTED = 19, /* g->h  u32 pid, u64 dropped bytes */
	EMBER_AGENT_PROCS = 20, /* g->h  LIST's answer: PROC entries */
	/* 21-23: free (not sent, refused as unknown). */
	EMBER_AGENT_FORWARD = 24, /* h->g  u32 port: then a byte stream */
	EMBER_AGENT_TYPE_MAX = 24,
};

enum ember_agent_tag {
	EMBER_AGENT_T_ARG = 1, /* string, repeated: argv in order */
	EMBER_AGENT_T_ENV = 2, /* string "K=V", repeated */
	EMBER_AGENT_T_CWD = 3, /* string */
	EMBER_AGENT_T_TIMEOUT = 4, /* u32 milliseconds, 0 = none */
	EMBER_AGENT_T_FLAGS = 5, /* u32 EMBER_AGENT_F_* */
	EMBER_AGENT_T_PATH = 6, /* string */
	EMBER_AGENT_T_MODE = 7, /* u32 permission bits (07777) */
	EMBER_AGENT_T_TIME = 8, /* u64 seconds, u32 nanoseconds (REALTIME) */
	EMBER_AGENT_T_ENTROPY = 9, /* 1..EMBER_AGENT_MAX_ENTROPY bytes */
	EMBER_AGENT_T_USER = 10, /* string: name|uid[:group|gid] */
	EMBER_AGENT_T_ROOT = 11, /* string: absolute path, chroot there */
	EMBER_AGENT_T_RLIMIT = 12, /* u32 resource, u64 soft, u64 hard; 0-16 */
	EMBER_AGENT_T_TTY_SIZE = 13, /* u16 rows, u16 cols; with F_TTY only */
};

#define EMBER_AGENT_F_STDIN 1U /* STDIN frames follow; else /dev/null */
/* ENV entries go over the default environment instead of replacing it. */
#define EMBER_AGENT_F_ENV_ADD 2U
/* The child runs on a new pseudo-terminal, session leader (PROTOCOL.md). */
#define EMBER_AGENT_F_TTY 4U
/* The process outlives its connection: STARTED, ATTACH (PROTOCOL.md). */
#define EMBER_AGENT_F_KEEP 8U
/* With KEEP: detached at once, its output kept for an ATTACH. */
#define EMBER_AGENT_F_DETACH 16U
#define EMBER_AGENT_F_KNOWN                                                \
	(EMBER_AGENT_F_STDIN | EMBER_AGENT_F_ENV_ADD | EMBER_AGENT_F_TTY | \
	 EMBER_AGENT_F_KEEP | EMBER_AGENT_F_DETACH)

enum ember_agent_exit_kind {
	EMBER_AGENT_EXITED = 0, /* code: exit status */
	EMBER_AGENT_SIGNALLED = 1, /* code: signal number */
	EMBER_AGENT_TIMEOUT = 2, /* killed by SIGKILL after timeout_ms */
};

/* Decoder results: 0 or more is success, these are the failures. */
enum ember_agent_err {
	EMBER_AGENT_E_MAGIC = -1, /* bad magic */
	EMBER_AGENT_E_VERSION = -2, /* unknown version */
	EMBER_AGENT_E_TYPE = -3, /* unknown frame type */
	EMBER_AGENT_E_LENGTH = -4, /* payload over the maximum */
	EMBER_AGENT_E_TRUNCATED = -5, /* field runs past its buffer */
	EMBER_AGENT_E_STRING = -6, /* no final NUL, or an inner one */
	EMBER_AGENT_E_COUNT = -7, /* too many ARG/ENV fields */
	EMBER_AGENT_E_FIELD = -8, /* unknown tag, bad size, repeated */
	EMBER_AGENT_E_MISSING = -9, /* required field absent */
	EMBER_AGENT_E_NOSPACE = -10, /* encoder: output buffer too small */
};

static inline const char *ember_agent_strerror(int err)
{
	switch (err) {
	case EMBER_AGENT_E_MAGIC:
		return "bad magic";
	case EMBER_AGENT_E_VERSION:
		return "unsupported version";
	case EMBER_AGENT_E_TYPE:
		return "unknown frame type";
	case EMBER_AGENT_E_LENGTH:
		return "payload too long";
	case EMBER_AGENT_E_TRUNCATED:
		return "truncated field";
	case EMBER_AGENT_E_STRING:
		return "malformed string";
	case EMBER_AGENT_E_COUNT:
		return "too many fields";
	case EMBER_AGENT_E_FIELD:
		return "bad field";
	case EMBER_AGENT_E_MISSING:
		return "missing field";
	case EMBER_AGENT_E_NOSPACE:
		return "no space";
	}
	return "unknown error";
}

struct ember_agent_hdr {
	uint16_t type;
	uint32_t stream;
	uint32_t len;
};

static inline uint32_t ember_agent_get32(const void *p)
{
	const uint8_t *b = p;

	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}

static inline uint16_t ember_agent_get16(const void *p)
{
	const uint8_t *b = p;

	return (uint16_t)(b[0] | b[1] << 8);
}

static inline void ember_agent_put32(void *p, uint32_t v)
{
	uint8_t *b = p;

	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)(v >> 16);
	b[3] = (uint8_t)(v >> 24);
}

static inline void ember_agent_put16(void *p, uint16_t v)
{
	uint8_t *b = p;

	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
}

/* Write the 16-byte header for a frame into @out. */
static inline void ember_agent_hdr_encode(void *out, uint16_t type,
					  uint32_t stream, uint32_t len)
{
	uint8_t *b = out;

	ember_agent_put32(b, EMBER_AGENT_MAGIC);
	ember_agent_put16(b + 4, EMBER_AGENT_VERSION);
	ember_agent_put16(b + 6, type);
	ember_agent_put32(b + 8, stream);
	ember_agent_put32(b + 12, len);
}

/*
 * Decode the header in the first @len bytes of @in into @h.  Returns 0, or
 * EMBER_AGENT_E_TRUNCATED (fewer than 16 bytes), _MAGIC, _VERSION, _LENGTH
 * (@h is filled but the stream is desynchronised) or _TYPE (@h is filled
 * and h->len bytes of payload may be skipped).
 */
static inline int ember_agent_hdr_decode(const void *in, size_t len,
					 struct ember_agent_hdr *h)
{
	const uint8_t *b = in;

	if (len < EMBER_AGENT_HDR_SIZE)
		return EMBER_AGENT_E_TRUNCATED;
	if (ember_agent_get32(b) != EMBER_AGENT_MAGIC)
		return EMBER_AGENT_E_MAGIC;
	if (ember_agent_get16(b + 4) != EMBER_AGENT_VERSION)
		return EMBER_AGENT_E_VERSION;
	h->type = ember_agent_get16(b + 6);
	h->stream = ember_agent_get32(b + 8);
	h->len = ember_agent_get32(b + 12);
	if (h->len > EMBER_AGENT_MAX_PAYLOAD)
		return EMBER_AGENT_E_LENGTH;
	if (h->type == 0 || h->type > EMBER_AGENT_TYPE_MAX)
		return EMBER_AGENT_E_TYPE;
	return 0;
}

/*
 * Append a field to the @cap-byte buffer @out at *@off, advancing *@off.
 * Returns 0 or EMBER_AGENT_E_NOSPACE (nothing written).
 */
static inline int ember_agent_tlv_put(void *out, size_t cap, size_t *off,
				      uint16_t tag, const void *val,
				      uint32_t vlen)
{
	uint8_t *b = out;

	if (*off > cap || cap - *off < EMBER_AGENT_TLV_HDR ||
	    cap - *off - EMBER_AGENT_TLV_HDR < vlen)
		return EMBER_AGENT_E_NOSPACE;
	ember_agent_put16(b + *off, tag);
	ember_agent_put16(b + *off + 2, 0);
	ember_agent_put32(b + *off + 4, vlen);
	if (vlen)
		__builtin_memcpy(b + *off + EMBER_AGENT_TLV_HDR, val, vlen);
	*off += EMBER_AGENT_TLV_HDR + vlen;
	return 0;
}

/* A string field, its NUL included. */
static inline int ember_agent_tlv_put_str(void *out, size_t cap, size_t *off,
					  uint16_t tag, const char *s)
{
	size_t n = __builtin_strlen(s) + 1;

	if (n > EMBER_AGENT_MAX_PAYLOAD)
		return EMBER_AGENT_E_NOSPACE;
	return ember_agent_tlv_put(out, cap, off, tag, s, (uint32_t)n);
}

static inline int ember_agent_tlv_put_u32(void *out, size_t cap, size_t *off,
					  uint16_t tag, uint32_t v)
{
	uint8_t b[4];

	ember_agent_put32(b, v);
	return ember_agent_tlv_put(out, cap, off, tag, b, 4);
}

/*
 * Take the next field of the @len-byte list @in at *@off.  Returns 1 with
 * *@tag, *@val (pointing into @in) and *@vlen set and *@off advanced, 0 at
 * the end of the list, or EMBER_AGENT_E_TRUNCATED / _FIELD (reserved bits).
 */
static inline int ember_agent_tlv_next(const void *in, size_t len, size_t *off,
				       uint16_t *tag, const uint8_t **val,
				       uint32_t *vlen)
{
	const uint8_t *b = in;
	uint32_t n;

	if (*off == len)
		return 0;
	if (*off > len || len - *off < EMBER_AGENT_TLV_HDR)
		return EMBER_AGENT_E_TRUNCATED;
	n = ember_agent_get32(b + *off + 4);
	if (len - *off - EMBER_AGENT_TLV_HDR < n)
		return EMBER_AGENT_E_TRUNCATED;
	if (ember_agent_get16(b + *off + 2) != 0)
		return EMBER_AGENT_E_FIELD;
	*tag = ember_agent_get16(b + *off);
	*val = b + *off + EMBER_AGENT_TLV_HDR;
	*vlen = n;
	*off += EMBER_AGENT_TLV_HDR + n;
	return 1;
}

/* A string field is valid if it is non-empty, NUL-ended, with no inner NUL. */
static inline int ember_agent_str_ok(const uint8_t *val, uint32_t vlen)
{
	uint32_t i;

	if (vlen == 0 || val[vlen - 1] != 0)
		return EMBER_AGENT_E_STRING;
	for (i = 0; i + 1 < vlen; i++)
		if (val[i] == 0)
			return EMBER_AGENT_E_STRING;
	return 0;
}

/* One RLIMIT field: resource < EMBER_AGENT_NR_RLIMITS, soft <= hard. */
struct ember_agent_rlimit {
	uint32_t resource; /* RLIMIT_* */
	uint64_t soft, hard; /* EMBER_AGENT_RLIM_INFINITY: no limit */
};

/*
 * A decoded EXEC.  Strings point into the payload, which must outlive this;
 * argv[argc] and env[envc] are NULL, ready for execve.  env_given is 0 when
 * no ENV field came: the child then inherits the agent's environment.
 */
struct ember_agent_exec {
	const char *argv[EMBER_AGENT_MAX_ARGS + 1];
	const char *env[EMBER_AGENT_MAX_ENV + 1];
	uint32_t argc, envc;
	int env_given;
	const char *cwd; /* NULL: the image's default, else the agent's */
	const char *user; /* NULL: the image's default, else the agent's */
	uint32_t timeout_ms;
	uint32_t flags;
	const char *root; /* NULL: no chroot; else absolute */
	struct ember_agent_rlimit rlimits[EMBER_AGENT_MAX_RLIMITS];
	uint32_t nr_rlimits;
	int have_size; /* TTY_SIZE came */
	uint16_t rows, cols;
};

/* Encode a u16 rows, u16 cols pair (TTY_SIZE, RESIZE) into @out. */
static inline void ember_agent_winsize_encode(void *out, uint16_t rows,
					      uint16_t cols)
{
	ember_agent_put16(out, rows);
	ember_agent_put16((uint8_t *)out + 2, cols);
}

/*
 * Decode a RESIZE payload (or a TTY_SIZE value): exactly 4 bytes, any
 * values (0 is the kernel's "unknown").  0 or EMBER_AGENT_E_FIELD.
 */
static inline int ember_agent_winsize_decode(const void *in, size_t len,
					     uint16_t *rows, uint16_t *cols)
{
	if (len != EMBER_AGENT_WINSIZE_SIZE)
		return EMBER_AGENT_E_FIELD;
	*rows = ember_agent_get16(in);
	*cols = ember_agent_get16((const uint8_t *)in + 2);
	return 0;
}

/* Encode an RLIMIT field's value (EMBER_AGENT_RLIMIT_SIZE bytes). */
static inline void ember_agent_rlimit_encode(void *out, uint32_t resource,
					     uint64_t soft, uint64_t hard)
{
	uint8_t *b = (uint8_t *)out;

	ember_agent_put32(b, resource);
	ember_agent_put32(b + 4, (uint32_t)soft);
	ember_agent_put32(b + 8, (uint32_t)(soft >> 32));
	ember_agent_put32(b + 12, (uint32_t)hard);
	ember_agent_put32(b + 16, (uint32_t)(hard >> 32));
}

/*
 * Decode an RLIMIT field's @vlen bytes at @val into @r: 0, or
 * EMBER_AGENT_E_FIELD for a wrong size, a resource of
 * EMBER_AGENT_NR_RLIMITS or more, or soft over hard.
 */
static inline int ember_agent_rlimit_decode(const uint8_t *val, uint32_t vlen,
					    struct ember_agent_rlimit *r)
{
	if (vlen != EMBER_AGENT_RLIMIT_SIZE)
		return EMBER_AGENT_E_FIELD;
	r->resource = ember_agent_get32(val);
	r->soft = (uint64_t)ember_agent_get32(val + 4) |
		  (uint64_t)ember_agent_get32(val + 8) << 32;
	r->hard = (uint64_t)ember_agent_get32(val + 12) |
		  (uint64_t)ember_agent_get32(val + 16) << 32;
	if (r->resource >= EMBER_AGENT_NR_RLIMITS || r->soft > r->hard)
		return EMBER_AGENT_E_FIELD;
	return 0;
}

/*
 * Decode an EXEC payload of @len bytes at @in into @e.  Returns 0 or a
 * negative EMBER_AGENT_E_*: truncated or unknown fields, malformed strings,
 * more than EMBER_AGENT_MAX_ARGS/_ENV entries (_COUNT), repeated CWD/USER/
 * TIMEOUT/FLAGS/ROOT/TTY_SIZE, unknown flag bits, a ROOT that is not
 * absolute, ROOT with FLAGS bit ENV_ADD, a bad RLIMIT
 * (ember_agent_rlimit_decode()) or a second one for a resource, more than
 * EMBER_AGENT_MAX_RLIMITS (_COUNT), a TTY_SIZE that is not 4 bytes or
 * without FLAGS bit TTY (_FIELD), no ARG at all (_MISSING).  USER is not
 * parsed here (see ember_user_spec_split()).
 */
static inline int ember_agent_exec_decode(const void *in, size_t len,
					  struct ember_agent_exec *e)
{
	const uint8_t *val;
	size_t off = 0;
	uint32_t vlen, seen = 0;
	uint16_t tag;
	int r;

	__builtin_memset(e, 0, sizeof(*e));
	while ((r = ember_agent_tlv_next(in, len, &off, &tag, &val, &vlen)) >
	       0) {
		switch (tag) {
		case EMBER_AGENT_T_ARG:
		case EMBER_AGENT_T_ENV:
		case EMBER_AGENT_T_CWD:
		case EMBER_AGENT_T_USER:
		case EMBER_AGENT_T_ROOT:
			r = ember_agent_str_ok(val, vlen);
			if (r < 0)
				return r;
			break;
		case EMBER_AGENT_T_TIMEOUT:
		case EMBER_AGENT_T_FLAGS:
		case EMBER_AGENT_T_TTY_SIZE:
			if (vlen != 4)
				return EMBER_AGENT_E_FIELD;
			break;
		case EMBER_AGENT_T_RLIMIT:
			if (vlen != EMBER_AGENT_RLIMIT_SIZE)
				return EMBER_AGENT_E_FIELD;
			break;
		default:
			return EMBER_AGENT_E_FIELD;
		}
		if (tag != EMBER_AGENT_T_ARG && tag != EMBER_AGENT_T_ENV &&
		    tag != EMBER_AGENT_T_RLIMIT) {
			if (seen & 1U << tag)
				return EMBER_AGENT_E_FIELD;
			seen |= 1U << tag;
		}
		switch (tag) {
		case EMBER_AGENT_T_ARG:
			if (e->argc >= EMBER_AGENT_MAX_ARGS)
				return EMBER_AGENT_E_COUNT;
			e->argv[e->argc++] = (const char *)val;
			break;
		case EMBER_AGENT_T_ENV:
			if (e->envc >= EMBER_AGENT_MAX_ENV)
				return EMBER_AGENT_E_COUNT;
			e->env[e->envc++] = (const char *)val;
			e->env_given = 1;
			break;
		case EMBER_AGENT_T_CWD:
			e->cwd = (const char *)val;
			break;
		case EMBER_AGENT_T_USER:
			e->user = (const char *)val;
			break;
		case EMBER_AGENT_T_TIMEOUT:
			e->timeout_ms = ember_agent_get32(val);
			break;
		case EMBER_AGENT_T_ROOT:
			if (val[0] != '/')
				return EMBER_AGENT_E_FIELD;
			e->root = (const char *)val;
			break;
		case EMBER_AGENT_T_TTY_SIZE:
			ember_agent_winsize_decode(val, vlen, &e->rows,
						   &e->cols);
			e->have_size = 1;
			break;
		case EMBER_AGENT_T_RLIMIT: {
			struct ember_agent_rlimit rl;

			if (e->nr_rlimits >= EMBER_AGENT_MAX_RLIMITS)
				return EMBER_AGENT_E_COUNT;
			if (ember_agent_rlimit_decode(val, vlen, &rl) < 0)
				return EMBER_AGENT_E_FIELD;
			for (uint32_t i = 0; i < e->nr_rlimits; i++)
				if (e->rlimits[i].resource == rl.resource)
					return EMBER_AGENT_E_FIELD;
			e->rlimits[e->nr_rlimits++] = rl;
			break;
		}
		default:
			e->flags = ember_agent_get32(val);
			if (e->flags & ~EMBER_AGENT_F_KNOWN)
				return EMBER_AGENT_E_FIELD;
			break;
		}
	}
	if (r < 0)
		return r;
	if ((e->have_size && !(e->flags & EMBER_AGENT_F_TTY)) ||
	    (e->root && (e->flags & EMBER_AGENT_F_ENV_ADD)) ||
	    ((e->flags & EMBER_AGENT_F_DETACH) &&
	     !(e->flags & EMBER_AGENT_F_KEEP)))
		return EMBER_AGENT_E_FIELD;
	if (e->argc == 0)
		return EMBER_AGENT_E_MISSING;
	return 0;
}

/*
 * A user spec, as the OCI image config's `User`: NAME or UID, then
 * optionally `:GROUP` or `:GID` (a name or a number each).  Returns the
 * length of the user part (the offset of the ':', or the whole length
 * when there is none), or -1 for a malformed spec: empty, over
 * EMBER_USER_SPEC_MAX bytes, an empty user or group part, a second ':'.
 * Whether the names exist is the guest's business (PROTOCOL.md, USER).
 */
#define EMBER_USER_SPEC_MAX 256

static inline long ember_user_spec_split(const char *s)
{
	size_t n = __builtin_strlen(s);
	const char *colon = __builtin_strchr(s, ':');

	if (n == 0 || n > EMBER_USER_SPEC_MAX)
		return -1;
	if (!colon)
		return (long)n;
	if (colon == s || !colon[1] || __builtin_strchr(colon + 1, ':'))
		return -1;
	return (long)(colon - s);
}

/*
 * The image defaults file (EMBER_GUEST_DEFAULTS, PROTOCOL.md "Image
 * defaults"): NUL-terminated records `env=K=V`, `cwd=PATH`, `user=SPEC`.
 */
#define EMBER_DEFAULTS_MAX     (64U << 10) /* bytes in the file */
#define EMBER_DEFAULTS_MAX_ENV 256 /* env records */

/*
 * A decoded defaults file.  Strings point into the file's bytes, which
 * must outlive this: env[] are "K=V" (env[envc] is NULL), cwd the path,
 * user the spec, NULL when absent.  On failure, why says what was wrong
 * (a static string) and record is the 1-based number of the record at
 * fault (0: the file as a whole).
 */
struct ember_defaults {
	const char *env[EMBER_DEFAULTS_MAX_ENV + 1];
	uint32_t envc;
	const char *cwd;
	const char *user;
	const char *why;
	uint32_t record;
};

/*
 * Decode the @len bytes of a defaults file at @in into @d.  Returns 0 (an
 * empty file: no defaults) or a negative EMBER_AGENT_E_* with d->why and
 * d->record set: over EMBER_DEFAULTS_MAX bytes (_LENGTH), a last record
 * without its NUL, an empty record (_STRING), more than
 * EMBER_DEFAULTS_MAX_ENV env records (_COUNT), an unknown record kind, a
 * second cwd or user, an env without `K=`, a cwd that is not absolute, a
 * malformed user spec (_FIELD).
 */
static inline int ember_defaults_decode(const void *in, size_t len,
					struct ember_defaults *d)
{
	const char *b = (const char *)in;
	size_t off = 0;

	__builtin_memset(d, 0, sizeof(*d));
	if (len > EMBER_DEFAULTS_MAX) {
		d->why = "over 64 KiB";
		return EMBER_AGENT_E_LENGTH;
	}
	while (off < len) {
		const char *r = b + off;
		const char *nul =
			(const char *)__builtin_memchr(r, 0, len - off);
		const char *v;

		d->record++;
		if (!nul) {
			d->why = "the last record has no NUL";
			return EMBER_AGENT_E_STRING;
		}
		off = (size_t)(nul - b) + 1;
		if (nul == r) {
			d->why = "an empty record";
			return EMBER_AGENT_E_STRING;
		}
		if (!__builtin_strncmp(r, "env=", 4)) {
			v = r + 4;
			if (*v == '=' || !__builtin_strchr(v, '=')) {
				d->why = "env wants K=V";
				return EMBER_AGENT_E_FIELD;
			}
			if (d->envc >= EMBER_DEFAULTS_MAX_ENV) {
				d->why = "more than 256 env records";
				return EMBER_AGENT_E_COUNT;
			}
			d->env[d->envc++] = v;
		} else if (!__builtin_strncmp(r, "cwd=", 4)) {
			v = r + 4;
			if (d->cwd) {
				d->why = "a second cwd";
				return EMBER_AGENT_E_FIELD;
			}
			if (*v != '/') {
				d->why = "cwd is not an absolute path";
				return EMBER_AGENT_E_FIELD;
			}
			d->cwd = v;
		} else if (!__builtin_strncmp(r, "user=", 5)) {
			v = r + 5;
			if (d->user) {
				d->why = "a second user";
				return EMBER_AGENT_E_FIELD;
			}
			if (ember_user_spec_split(v) < 0) {
				d->why = "user wants NAME, UID, NAME:GROUP or "
					 "UID:GID";
				return EMBER_AGENT_E_FIELD;
			}
			d->user = v;
		} else {
			d->why = "unknown record (not env=, cwd= or user=)";
			return EMBER_AGENT_E_FIELD;
		}
	}
	d->record = 0;
	d->why = 0;
	return 0;
}

/* Append the record @kind @val and its NUL at *@off: 0 or _NOSPACE. */
static inline int ember_defaults_put(char *out, size_t cap, size_t *off,
				     const char *kind, const char *val)
{
	size_t k = __builtin_strlen(kind), n = __builtin_strlen(val);

	if (*off > cap || cap - *off < k + n + 1)
		return EMBER_AGENT_E_NOSPACE;
	__builtin_memcpy(out + *off, kind, k);
	__builtin_memcpy(out + *off + k, val, n + 1);
	*off += k + n + 1;
	return 0;
}

/*
 * Encode a defaults file into the @cap bytes at @out: an env record for
 * each "K=V" of @env (NULL-terminated; NULL: none), then cwd=@cwd and
 * user=@user when not NULL.  Returns the file's length, EMBER_AGENT_E_FIELD
 * or _COUNT for what ember_defaults_decode() would refuse (an entry
 * without K=, a relative cwd, a malformed user spec, more than
 * EMBER_DEFAULTS_MAX_ENV entries), or EMBER_AGENT_E_NOSPACE (over @cap or
 * EMBER_DEFAULTS_MAX bytes).
 */
static inline long ember_defaults_encode(void *out, size_t cap,
					 const char *const *env,
					 const char *cwd, const char *user)
{
	char *o = (char *)out;
	size_t off = 0, n;

	if (cap > EMBER_DEFAULTS_MAX)
		cap = EMBER_DEFAULTS_MAX;
	for (n = 0; env && env[n]; n++) {
		if (n >= EMBER_DEFAULTS_MAX_ENV)
			return EMBER_AGENT_E_COUNT;
		if (env[n][0] == '=' || !__builtin_strchr(env[n], '='))
			return EMBER_AGENT_E_FIELD;
		if (ember_defaults_put(o, cap, &off, "env=", env[n]) < 0)
			return EMBER_AGENT_E_NOSPACE;
	}
	if (cwd && cwd[0] != '/')
		return EMBER_AGENT_E_FIELD;
	if (user && ember_user_spec_split(user) < 0)
		return EMBER_AGENT_E_FIELD;
	if (cwd && ember_defaults_put(o, cap, &off, "cwd=", cwd) < 0)
		return EMBER_AGENT_E_NOSPACE;
	if (user && ember_defaults_put(o, cap, &off, "user=", user) < 0)
		return EMBER_AGENT_E_NOSPACE;
	return (long)off;
}

/* A decoded WRITE_FILE or READ_FILE; path points into the payload. */
struct ember_agent_file {
	const char *path;
	uint32_t mode; /* WRITE_FILE only; 0644 when absent */
};

/*
 * Decode a WRITE_FILE (@write set: PATH and optional MODE) or READ_FILE
 * (PATH only) payload.  Returns 0 or a negative EMBER_AGENT_E_*.
 */
static inline int ember_agent_file_decode(const void *in, size_t len, int write,
					  struct ember_agent_file *f)
{
	const uint8_t *val;
	size_t off = 0;
	uint32_t vlen;
	uint16_t tag;
	int r, have_mode = 0;

	f->path = 0;
	f->mode = 0644;
	while ((r = ember_agent_tlv_next(in, len, &off, &tag, &val, &vlen)) >
	       0) {
		if (tag == EMBER_AGENT_T_PATH && !f->path) {
			r = ember_agent_str_ok(val, vlen);
			if (r < 0)
				return r;
			f->path = (const char *)val;
		} else if (tag == EMBER_AGENT_T_MODE && write && !have_mode &&
			   vlen == 4) {
			f->mode = ember_agent_get32(val);
			if (f->mode & ~07777U)
				return EMBER_AGENT_E_FIELD;
			have_mode = 1;
		} else {
			return EMBER_AGENT_E_FIELD;
		}
	}
	if (r < 0)
		return r;
	if (!f->path)
		return EMBER_AGENT_E_MISSING;
	return 0;
}

/*
 * A decoded INIT.  @entropy points into the payload, which must outlive
 * this (the agent wipes it once used).
 */
struct ember_agent_init {
	int have_time;
	uint64_t sec; /* CLOCK_REALTIME seconds since the epoch, <= INT64_MAX */
	uint32_t nsec; /* 0..999999999 */
	const uint8_t *entropy; /* NULL: no ENTROPY field */
	uint32_t entropy_len; /* 1..EMBER_AGENT_MAX_ENTROPY */
};

/*
 * Encode an INIT payload into the @cap bytes at @out: TIME (@sec, @nsec)
 * when @with_time, ENTROPY (@len bytes of @entropy) when @len.  Returns
 * the payload length, EMBER_AGENT_E_FIELD for a value the decoder would
 * refuse (nothing at all, @nsec or @sec out of range, @len over
 * EMBER_AGENT_MAX_ENTROPY) or EMBER_AGENT_E_NOSPACE.
 */
static inline long ember_agent_init_encode(void *out, size_t cap, int with_time,
					   uint64_t sec, uint32_t nsec,
					   const void *entropy, uint32_t len)
{
	uint8_t t[EMBER_AGENT_TIME_SIZE];
	size_t off = 0;

	if ((!with_time && !len) || len > EMBER_AGENT_MAX_ENTROPY ||
	    (with_time && (nsec >= 1000000000U || sec > (uint64_t)INT64_MAX)))
		return EMBER_AGENT_E_FIELD;
	if (with_time) {
		ember_agent_put32(t, (uint32_t)sec);
		ember_agent_put32(t + 4, (uint32_t)(sec >> 32));
		ember_agent_put32(t + 8, nsec);
		if (ember_agent_tlv_put(out, cap, &off, EMBER_AGENT_T_TIME, t,
					sizeof(t)) < 0)
			return EMBER_AGENT_E_NOSPACE;
	}
	if (len && ember_agent_tlv_put(out, cap, &off, EMBER_AGENT_T_ENTROPY,
				       entropy, len) < 0)
		return EMBER_AGENT_E_NOSPACE;
	return (long)off;
}

/*
 * Decode an INIT payload of @len bytes at @in into @i.  Returns 0 or a
 * negative EMBER_AGENT_E_*: truncated, unknown or repeated fields, a TIME
 * that is not 12 bytes or out of range (nanoseconds over 999999999,
 * seconds over INT64_MAX), an ENTROPY of 0 or more than
 * EMBER_AGENT_MAX_ENTROPY bytes (_FIELD), neither field (_MISSING).
 */
static inline int ember_agent_init_decode(const void *in, size_t len,
					  struct ember_agent_init *i)
{
	const uint8_t *val;
	size_t off = 0;
	uint32_t vlen;
	uint16_t tag;
	int r;

	__builtin_memset(i, 0, sizeof(*i));
	while ((r = ember_agent_tlv_next(in, len, &off, &tag, &val, &vlen)) >
	       0) {
		if (tag == EMBER_AGENT_T_TIME && !i->have_time &&
		    vlen == EMBER_AGENT_TIME_SIZE) {
			i->sec = (uint64_t)ember_agent_get32(val) |
				 (uint64_t)ember_agent_get32(val + 4) << 32;
			i->nsec = ember_agent_get32(val + 8);
			if (i->sec > (uint64_t)INT64_MAX ||
			    i->nsec >= 1000000000U)
				return EMBER_AGENT_E_FIELD;
			i->have_time = 1;
		} else if (tag == EMBER_AGENT_T_ENTROPY && !i->entropy &&
			   vlen >= 1 && vlen <= EMBER_AGENT_MAX_ENTROPY) {
			i->entropy = val;
			i->entropy_len = vlen;
		} else {
			return EMBER_AGENT_E_FIELD;
		}
	}
	if (r < 0)
		return r;
	if (!i->have_time && !i->entropy)
		return EMBER_AGENT_E_MISSING;
	return 0;
}

/* EXIT payload: u32 kind, i32 code. */
#define EMBER_AGENT_EXIT_SIZE 8

static inline void ember_agent_exit_encode(void *out, uint32_t kind,
					   int32_t code)
{
	ember_agent_put32(out, kind);
	ember_agent_put32((uint8_t *)out + 4, (uint32_t)code);
}

static inline int ember_agent_exit_decode(const void *in, size_t len,
					  uint32_t *kind, int32_t *code)
{
	if (len != EMBER_AGENT_EXIT_SIZE)
		return EMBER_AGENT_E_FIELD;
	*kind = ember_agent_get32(in);
	*code = (int32_t)ember_agent_get32((const uint8_t *)in + 4);
	if (*kind > EMBER_AGENT_TIMEOUT)
		return EMBER_AGENT_E_FIELD;
	return 0;
}

/* KILL payload: u32 signal number (1-64). */
static inline int ember_agent_kill_decode(const void *in, size_t len, int *sig)
{
	uint32_t s;

	if (len != 4)
		return EMBER_AGENT_E_FIELD;
	s = ember_agent_get32(in);
	if (s == 0 || s > 64)
		return EMBER_AGENT_E_FIELD;
	*sig = (int)s;
	return 0;
}

/*
 * ERROR payload: u32 code (a Linux errno value, positive), then the message
 * bytes (no NUL, possibly none).  Encode returns the payload length or
 * EMBER_AGENT_E_NOSPACE; the message is cut to fit @cap.
 */
static inline long ember_agent_error_encode(void *out, size_t cap,
					    uint32_t code, const char *msg)
{
	size_t n = msg ? __builtin_strlen(msg) : 0;

	if (cap < 4)
		return EMBER_AGENT_E_NOSPACE;
	if (n > cap - 4)
		n = cap - 4;
	ember_agent_put32(out, code);
	if (n)
		__builtin_memcpy((uint8_t *)out + 4, msg, n);
	return (long)(4 + n);
}

static inline int ember_agent_error_decode(const void *in, size_t len,
					   uint32_t *code, const char **msg,
					   size_t *msglen)
{
	if (len < 4)
		return EMBER_AGENT_E_TRUNCATED;
	*code = ember_agent_get32(in);
	*msg = (const char *)in + 4;
	*msglen = len - 4;
	return 0;
}

/* STARTED payload: u32 pid, u64 bytes of output dropped (PROTOCOL.md). */
static inline void ember_agent_started_encode(void *out, uint32_t pid,
					      uint64_t dropped)
{
	uint8_t *b = out;

	ember_agent_put32(b, pid);
	ember_agent_put32(b + 4, (uint32_t)dropped);
	ember_agent_put32(b + 8, (uint32_t)(dropped >> 32));
}

static inline int ember_agent_started_decode(const void *in, size_t len,
					     uint32_t *pid, uint64_t *dropped)
{
	const uint8_t *b = in;

	if (len != EMBER_AGENT_STARTED_SIZE)
		return EMBER_AGENT_E_FIELD;
	*pid = ember_agent_get32(b);
	*dropped = (uint64_t)ember_agent_get32(b + 4) |
		   (uint64_t)ember_agent_get32(b + 8) << 32;
	if (*pid == 0)
		return EMBER_AGENT_E_FIELD;
	return 0;
}

/* A PROCS entry's flags. */
#define EMBER_AGENT_PROC_EXITED	  1U /* ended; kind and code say how */
#define EMBER_AGENT_PROC_ATTACHED 2U /* a connection streams it now */
#define EMBER_AGENT_PROC_TTY	  4U /* on a pseudo-terminal */

/* One process of a PROCS payload (PROTOCOL.md, LIST). */
struct ember_agent_proc {
	uint32_t pid;
	uint32_t flags; /* EMBER_AGENT_PROC_* */
	uint32_t kind; /* with EXITED: enum ember_agent_exit_kind */
	int32_t code; /* with EXITED: the status or signal */
	uint64_t dropped; /* bytes of output dropped while detached */
	const char *cmd; /* argv, each argument followed by a NUL; not
			    NUL-terminated as a whole; maybe cut short */
	uint32_t cmd_len; /* at most EMBER_AGENT_PROC_CMD_MAX */
};

/*
 * Append @p to the @cap-byte buffer @out at *@off: 0, or
 * EMBER_AGENT_E_NOSPACE (nothing written).  cmd_len is cut to
 * EMBER_AGENT_PROC_CMD_MAX.
 */
static inline int ember_agent_proc_encode(void *out, size_t cap, size_t *off,
					  const struct ember_agent_proc *p)
{
	uint32_t n = p->cmd_len > EMBER_AGENT_PROC_CMD_MAX ?
			     EMBER_AGENT_PROC_CMD_MAX :
			     p->cmd_len;
	uint8_t *b = (uint8_t *)out + *off;

	if (cap < *off || cap - *off < EMBER_AGENT_PROC_HDR + (size_t)n)
		return EMBER_AGENT_E_NOSPACE;
	ember_agent_put32(b, p->pid);
	ember_agent_put32(b + 4, p->flags);
	ember_agent_put32(b + 8, p->kind);
	ember_agent_put32(b + 12, (uint32_t)p->code);
	ember_agent_put32(b + 16, (uint32_t)p->dropped);
	ember_agent_put32(b + 20, (uint32_t)(p->dropped >> 32));
	ember_agent_put32(b + 24, n);
	if (n)
		__builtin_memcpy(b + EMBER_AGENT_PROC_HDR, p->cmd, n);
	*off += EMBER_AGENT_PROC_HDR + n;
	return 0;
}

/*
 * The next entry of the PROCS payload @in (@len bytes) at *@off into @p
 * (cmd points into @in).  1 and *@off advanced, 0 at the end, or
 * EMBER_AGENT_E_TRUNCATED / _FIELD (pid 0, a command over the maximum,
 * an exit kind out of range).
 */
static inline int ember_agent_proc_next(const void *in, size_t len, size_t *off,
					struct ember_agent_proc *p)
{
	const uint8_t *b = (const uint8_t *)in + *off;

	if (*off >= len)
		return 0;
	if (len - *off < EMBER_AGENT_PROC_HDR)
		return EMBER_AGENT_E_TRUNCATED;
	p->pid = ember_agent_get32(b);
	p->flags = ember_agent_get32(b + 4);
	p->kind = ember_agent_get32(b + 8);
	p->code = (int32_t)ember_agent_get32(b + 12);
	p->dropped = (uint64_t)ember_agent_get32(b + 16) |
		     (uint64_t)ember_agent_get32(b + 20) << 32;
	p->cmd_len = ember_agent_get32(b + 24);
	if (p->cmd_len > EMBER_AGENT_PROC_CMD_MAX || p->pid == 0 ||
	    p->kind > EMBER_AGENT_TIMEOUT)
		return EMBER_AGENT_E_FIELD;
	if (len - *off - EMBER_AGENT_PROC_HDR < p->cmd_len)
		return EMBER_AGENT_E_TRUNCATED;
	p->cmd = (const char *)b + EMBER_AGENT_PROC_HDR;
	*off += EMBER_AGENT_PROC_HDR + p->cmd_len;
	return 1;
}

#endif /* EMBER_GUEST_PROTOCOL_H */
