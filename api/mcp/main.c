// SPDX-License-Identifier: Apache-2.0
/*
 * ember-mcp: an MCP server whose tools create and drive ember sandboxes,
 * for AI agents.  See usage() and README.md ("ember-mcp").
 *
 *   ember-mcp [--stdio]                       one client on stdin/stdout
 *   ember-mcp --http [ADDR:]PORT [--token-file FILE]
 *                                             Streamable HTTP on loopback
 *
 * A sandbox belongs to the principal that created it (owner.h: the local
 * user over stdio, the bearer token over HTTP), not to the session: it
 * lives until its TTL, a kill or its park's end, and any session of the
 * same principal, in this ember-mcp or a later one, may use it.  With
 * --kill-on-disconnect, every sandbox a session creates is killed when
 * the session ends (stdin's EOF, an HTTP DELETE) and when the server is
 * stopped (SIGINT, SIGTERM, SIGHUP).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../vmm/config.h"
#include "../sandbox/loopback.h"
#include "../sandbox/sandbox.h"
#include "../sandbox/sibling.h"
#include "../sandbox/template.h"
#include "owner.h"
#include "transport.h"

#ifndef EMBER_VERSION
#define EMBER_VERSION "0.1.0"
#endif

#define TOKEN_BYTES  32 /* of a generated token, shown as hex */
#define TOKEN_MAX    512
#define STOP_WATCH_S 60 /* a stop that takes longer ends with SIGALRM */
#define DEF_ADDR     "127.0.0.1"

static bool kill_on_stop; /* --kill-on-disconnect, for the stop messages */

static void usage(FILE *f)
{
	fputs("usage: ember-mcp [--stdio] [options]\n"
	      "       ember-mcp --http [ADDR:]PORT [--token-file FILE] [options]\n"
	      "An MCP server: tools to create ember sandboxes (microVMs), run\n"
	      "code and commands in them, move files, pause and kill them.\n"
	      "\n"
	      "  --stdio            JSON-RPC on stdin/stdout, one client (the\n"
	      "                     default); logs on stderr\n"
	      "  --http [ADDR:]PORT Streamable HTTP at http://ADDR:PORT/mcp;\n"
	      "                     ADDR a loopback address (default 127.0.0.1;\n"
	      "                     [::1] for IPv6), PORT 0: any free port\n"
	      "  --token-file FILE  the bearer token clients must send: FILE's\n"
	      "                     first line (a new random one is written to\n"
	      "                     FILE, mode 0600, when it does not exist);\n"
	      "                     else $EMBER_MCP_TOKEN, else a random one\n"
	      "                     printed on stderr\n"
	      "  --session-idle S   end an HTTP session after S seconds without\n"
	      "                     a request and with no call running (1800 s)\n"
	      "  --kill-on-disconnect\n"
	      "                     kill the sandboxes a session created when\n"
	      "                     it ends (and when ember-mcp stops); by\n"
	      "                     default they outlive it: they are the\n"
	      "                     local user's (stdio) or the token's (HTTP)\n"
	      "                     until their timeout or kill_sandbox\n"
	      "  --confirm          ask the user (MCP elicitation) before each\n"
	      "                     run_code and run_command\n"
	      "  --template NAME    create_sandbox's default template (default)\n"
	      "  --ttl S            create_sandbox's default timeout (300 s)\n"
	      "  --ember FILE, --kernel FILE, --rootfs FILE\n"
	      "                     the VMM, and the kernel and rootfs to boot\n"
	      "                     when no template fits ($EMBER_BIN,\n"
	      "                     $EMBER_KERNEL, $EMBER_ROOTFS, else ember,\n"
	      "                     guest/vmlinux, guest/rootfs.ext4 beside\n"
	      "                     ember-mcp)\n"
	      "\n"
	      "State (sandboxes, templates) as emberctl's: $EMBER_STATE_DIR.\n",
	      f);
}

/*
 * @given, else $@env, else @rel beside this binary, as an absolute path
 * in @out; "" (and a warning when @must) when there is no such file.
 */
static void find_path(const char *what, const char *given, const char *env,
		      const char *rel, bool must, char *out, size_t outsz)
{
	char tried[PATH_MAX];
	int rc;

	rc = sibling__path(given, env, rel, tried, sizeof(tried), out, outsz);
	if (rc < 0 && tried[0] && (must || given))
		fprintf(stderr, "ember-mcp: warning: %s %s: %s\n", what, tried,
			strerror(-rc));
}

/* The token of --token-file @file: its first line, or a new one. */
static int token_from_file(const char *file, char *tok, size_t toklen)
{
	unsigned char r[TOKEN_BYTES];
	FILE *f = fopen(file, "re");
	size_t n;
	int fd;

	if (f) {
		if (!fgets(tok, (int)toklen, f))
			tok[0] = '\0';
		fclose(f);
		tok[strcspn(tok, "\r\n")] = '\0';
		if (!tok[0]) {
			fprintf(stderr, "ember-mcp: %s: no token in it\n",
				file);
			return -1;
		}
		return 0;
	}
	if (errno != ENOENT) {
		fprintf(stderr, "ember-mcp: %s: %s\n", file, strerror(errno));
		return -1;
	}
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		fprintf(stderr, "ember-mcp: getrandom: %s\n", strerror(errno));
		return -1;
	}
	for (n = 0; n < sizeof(r); n++)
		snprintf(tok + 2 * n, 3, "%02x", r[n]);
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || dprintf(fd, "%s\n", tok) < 0 || close(fd) < 0) {
		fprintf(stderr, "ember-mcp: %s: %s\n", file, strerror(errno));
		if (fd >= 0)
			unlink(file);
		return -1;
	}
	return 0;
}

/* [ADDR:]PORT, ADDR maybe [v6]: 0, or -1 after saying what is wrong. */
static int parse_listen(const char *arg, char *addr, size_t addrlen,
			unsigned int *port)
{
	if (loopback__parse_listen(arg, DEF_ADDR, addr, addrlen, port)) {
		fprintf(stderr,
			"ember-mcp: --http wants [ADDR:]PORT, PORT 0-65535, "
			"not '%s'\n",
			arg);
		return -1;
	}
	return 0;
}

/* stdio: a stop signal ends the session from this thread, then exits. */
static void *stop_thread(void *arg)
{
	sigset_t *set = arg;
	siginfo_t si;
	int sig;

	sig = sigwaitinfo(set, &si);
	if (sig < 0)
		return NULL;
	fprintf(stderr, "ember-mcp: %s (from pid %d): stopping%s\n",
		strsignal(sig), (int)si.si_pid,
		kill_on_stop ? ", killing the sandboxes" : "");
	alarm(STOP_WATCH_S);
	/* A boot under way sees the signal again and gives up. */
	kill(getpid(), sig);
	stdio__stop();
	_exit(0);
}

static int stdio_main(const struct server_config *cfg, sigset_t *set)
{
	pthread_t th;
	int rc;

	if (pthread_create(&th, NULL, stop_thread, set)) {
		fprintf(stderr, "ember-mcp: cannot start a thread\n");
		return 1;
	}
	rc = stdio__serve(cfg, 0, 1);
	if (rc < 0) {
		fprintf(stderr, "ember-mcp: %s\n", strerror(-rc));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "stdio", no_argument, NULL, 's' },
		{ "http", required_argument, NULL, 'H' },
		{ "token-file", required_argument, NULL, 'f' },
		{ "confirm", no_argument, NULL, 'C' },
		{ "session-idle", required_argument, NULL, 'I' },
		{ "kill-on-disconnect", no_argument, NULL, 'K' },
		{ "template", required_argument, NULL, 'T' },
		{ "ttl", required_argument, NULL, 't' },
		{ "ember", required_argument, NULL, 'e' },
		{ "kernel", required_argument, NULL, 'k' },
		{ "rootfs", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	char ember[PATH_MAX], kernel[PATH_MAX], rootfs[PATH_MAX];
	char addr[64], token[TOKEN_MAX + 1], err[512];
	char principal[OWNER_PRINCIPAL_MAX];
	const char *http = NULL, *token_file = NULL, *ember_opt = NULL;
	const char *kernel_opt = NULL, *rootfs_opt = NULL, *env_tok;
	struct server_config cfg = {
		.mcp = {
			.tools = tools__table,
			.ntools = TOOL_COUNT,
			.version = EMBER_VERSION,
		},
		.backend = {
			.template_name = "default",
			.ttl_s = SANDBOX_DEF_TTL,
		},
	};
	struct http_server *h = NULL;
	unsigned int port = 0, idle_s = HTTP_SESSION_IDLE_S;
	uint64_t v;
	sigset_t set;
	int c, sig, rc;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			http = NULL;
			break;
		case 'H':
			http = optarg;
			break;
		case 'f':
			token_file = optarg;
			break;
		case 'C':
			cfg.mcp.confirm = true;
			break;
		case 'K':
			cfg.backend.kill_on_disconnect = true;
			kill_on_stop = true;
			break;
		case 'I':
			if (config__parse_uint(optarg, 1, 7 * 86400, &v)) {
				fprintf(stderr,
					"ember-mcp: --session-idle wants "
					"seconds, 1 to 604800, not '%s'\n",
					optarg);
				return 2;
			}
			idle_s = (unsigned int)v;
			break;
		case 'T':
			if (template__name_ok(optarg, err, sizeof(err))) {
				fprintf(stderr, "ember-mcp: --template: %s\n",
					err);
				return 2;
			}
			cfg.backend.template_name = optarg;
			break;
		case 't':
			if (config__parse_uint(optarg, 1, 86400, &v)) {
				fprintf(stderr,
					"ember-mcp: --ttl wants seconds, 1 to "
					"86400, not '%s'\n",
					optarg);
				return 2;
			}
			cfg.backend.ttl_s = (unsigned int)v;
			break;
		case 'e':
			ember_opt = optarg;
			break;
		case 'k':
			kernel_opt = optarg;
			break;
		case 'r':
			rootfs_opt = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("ember-mcp %s\n", EMBER_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "ember-mcp: unexpected argument '%s'\n",
			argv[optind]);
		return 2;
	}
	if (http && parse_listen(http, addr, sizeof(addr), &port))
		return 2;
	find_path("ember", ember_opt, "EMBER_BIN", "ember", true, ember,
		  sizeof(ember));
	find_path("kernel", kernel_opt, "EMBER_KERNEL", "guest/vmlinux", false,
		  kernel, sizeof(kernel));
	find_path("rootfs", rootfs_opt, "EMBER_ROOTFS", "guest/rootfs.ext4",
		  false, rootfs, sizeof(rootfs));
	cfg.backend.ember = ember[0] ? ember : "ember";
	cfg.backend.kernel = kernel;
	cfg.backend.rootfs = rootfs;
	owner__user(principal);
	cfg.backend.principal = principal;

	/*
	 * The stop signals go to this thread alone (sigwait); every other
	 * thread inherits them blocked, as sandbox__run() wants.
	 */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	if (http) {
		env_tok = getenv("EMBER_MCP_TOKEN");
		if (token_file) {
			if (token_from_file(token_file, token, sizeof(token)))
				return 1;
		} else if (env_tok && *env_tok) {
			snprintf(token, sizeof(token), "%s", env_tok);
		} else {
			unsigned char r[TOKEN_BYTES];

			if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
				return 1;
			for (size_t i = 0; i < sizeof(r); i++)
				snprintf(token + 2 * i, 3, "%02x", r[i]);
			fprintf(stderr, "ember-mcp: token %s\n", token);
		}
		if (owner__token(token, principal)) {
			fprintf(stderr,
				"ember-mcp: hashing the token failed\n");
			return 1;
		}
		rc = http__start(&cfg, addr, port, token, idle_s, &h, err,
				 sizeof(err));
		if (rc < 0) {
			fprintf(stderr, "ember-mcp: --http: %s\n", err);
			return 1;
		}
		fprintf(stderr,
			"ember-mcp: listening on http://%s%s%s:%u/mcp\n",
			strchr(addr, ':') ? "[" : "", addr,
			strchr(addr, ':') ? "]" : "", http__port(h));
		sigwait(&set, &sig);
		fprintf(stderr, "ember-mcp: %s: stopping%s\n", strsignal(sig),
			kill_on_stop ? ", killing the sandboxes" : "");
		alarm(STOP_WATCH_S);
		/* A boot under way sees the signal again and gives up. */
		kill(getpid(), sig);
		http__stop(h);
		return 0;
	}
	return stdio_main(&cfg, &set);
}
