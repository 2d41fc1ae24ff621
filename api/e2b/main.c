// SPDX-License-Identifier: Apache-2.0
/*
 * ember-e2b: E2B's API (control plane, envd, code interpreter) on ember
 * sandboxes, for programs written for E2B's SDKs.  See usage() and
 * README.md ("E2B-compatible API").
 *
 *   ember-e2b [--listen ADDR:PORT] (--api-key-file FILE | --api-key KEY)
 *
 * The sandboxes it creates are the sandbox library's (api/sandbox/):
 * their supervisors own them, so they outlive a restart of ember-e2b
 * and emberctl sees them too.
 */
#include <errno.h>
#include <pthread.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sandbox/loopback.h"
#include "../sandbox/sibling.h"
#include "../sandbox/template.h"
#include "e2b.h"
#include "forget.h"
#include "http.h"
#include "procs.h"
#include "template_build.h"

#define DEF_ADDR "127.0.0.1"
#define DEF_PORT 49982
#define KEY_MAX	 256 /* bytes of an API key */
#define SWEEP_S	 30
#define DOMAIN_MAX \
	200 /* bytes of --domain's host name */ /* between two forget__sweep()s */

static void usage(FILE *f)
{
	fputs("usage: ember-e2b (--api-key-file FILE | --api-key KEY) [options]\n"
	      "E2B's API on ember sandboxes: point E2B's SDKs at it with\n"
	      "E2B_API_URL=http://ADDR:PORT, E2B_SANDBOX_URL=http://ADDR:PORT\n"
	      "and E2B_API_KEY=KEY (never E2B_DEBUG).\n"
	      "\n"
	      "  --listen ADDR:PORT  where to listen: a loopback address only\n"
	      "                     (default 127.0.0.1:49982; port 0: any, printed)\n"
	      "  --api-key-file FILE the key: the file's first line\n"
	      "  --api-key KEY       the key (visible to `ps`: prefer the file;\n"
	      "                     also $EMBER_E2B_API_KEY)\n"
	      "  --template NAME     ember's template that E2B's default names\n"
	      "                     (base, code-interpreter-v1) mean (default:\n"
	      "                     default; build it with `emberctl template build\n"
	      "                     default`)\n"
	      "  --net MODE          sandboxes' network: none (default), host-only\n"
	      "                     or nat (root; allow_internet_access=false\n"
	      "                     gives none)\n"
	      "  --boot-timeout S    how long a create or resume may take (120)\n"
	      "  --ember FILE        the VMM ($EMBER_BIN, else ember beside this)\n"
	      "  --domain DOMAIN     the `domain` create and connect answer: the\n"
	      "                     SDK's getHost(PORT) is PORT-ID.DOMAIN, and a\n"
	      "                     request with that Host goes to the guest's PORT\n"
	      "                     (default localhost:LISTENPORT; also\n"
	      "                     $EMBER_E2B_DOMAIN)\n"
	      "State (sandboxes, templates) as emberctl's: $EMBER_STATE_DIR.\n",
	      f);
}

/* @given, else $EMBER_BIN, else ember beside this binary, absolute. */
static int find_ember(const char *given, char *out, size_t outsz)
{
	char tried[PATH_MAX];
	int rc;

	rc = sibling__path(given, "EMBER_BIN", "ember", tried, sizeof(tried),
			   out, outsz);
	if (rc < 0 && !tried[0])
		return rc;
	if (rc < 0 || access(out, X_OK) < 0) {
		fprintf(stderr, "ember-e2b: the VMM %s: %s\n", tried,
			strerror(rc < 0 ? -rc : errno));
		return -ENOENT;
	}
	return 0;
}

/*
 * The domain getHost() names: a host name (letters, digits, '-' and '.',
 * no leading or trailing dot), optionally ":PORT", lowercased into @out.
 */
static int set_domain(const char *d, char *out, size_t outsz)
{
	size_t n = strcspn(d, ":");
	const char *p = d + n;
	unsigned long port = 0;
	char *end = NULL;

	if (*p) {
		errno = 0;
		port = strtoul(p + 1, &end, 10);
	}
	if (!n || n > DOMAIN_MAX || d[0] == '.' || d[n - 1] == '.' ||
	    strspn(d, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		      "0123456789-.") != n ||
	    (*p && (errno || *end || !port || port > 65535 || p[1] == '+' ||
		    p[1] == '-'))) {
		fprintf(stderr,
			"ember-e2b: --domain %s: want a host name, optionally "
			"with :PORT\n",
			d);
		return -1;
	}
	snprintf(out, outsz, "%s", d);
	for (char *c = out; *c; c++)
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c - 'A' + 'a');
	return 0;
}

static int key_from_file(const char *file, char *key, size_t keylen)
{
	FILE *f = fopen(file, "re");
	size_t n;

	if (!f) {
		fprintf(stderr, "ember-e2b: %s: %s\n", file, strerror(errno));
		return -1;
	}
	if (!fgets(key, (int)keylen, f))
		key[0] = '\0';
	fclose(f);
	n = strcspn(key, "\r\n");
	key[n] = '\0';
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "api-key", required_argument, NULL, 'k' },
		{ "api-key-file", required_argument, NULL, 'K' },
		{ "template", required_argument, NULL, 't' },
		{ "net", required_argument, NULL, 'n' },
		{ "boot-timeout", required_argument, NULL, 'b' },
		{ "ember", required_argument, NULL, 'e' },
		{ "domain", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct e2b_server srv = {
		.default_template = "default",
		.net_mode = NET_NONE,
		.boot_timeout_s = 120,
	};
	char addr[64] = DEF_ADDR, key[KEY_MAX + 2] = "", ember[PATH_MAX];
	char err[512], state[PATH_MAX], domain[DOMAIN_MAX + 16] = "";
	const char *ember_arg = NULL, *env_key = getenv("EMBER_E2B_API_KEY");
	unsigned int port = DEF_PORT;
	struct e2b_http *h = NULL;
	sigset_t set;
	int c, sig, rc = 1;
	unsigned long v;
	char *end;

	if (env_key)
		snprintf(key, sizeof(key), "%s", env_key);
	if (getenv("EMBER_E2B_DOMAIN") &&
	    set_domain(getenv("EMBER_E2B_DOMAIN"), domain, sizeof(domain)))
		return 2;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			if (loopback__parse_listen(optarg, NULL, addr,
						   sizeof(addr), &port)) {
				fprintf(stderr,
					"ember-e2b: --listen %s: want ADDR:PORT\n",
					optarg);
				return 2;
			}
			break;
		case 'k':
			snprintf(key, sizeof(key), "%s", optarg);
			break;
		case 'K':
			if (key_from_file(optarg, key, sizeof(key)))
				return 2;
			break;
		case 't':
			if (template__name_ok(optarg, err, sizeof(err))) {
				fprintf(stderr, "ember-e2b: --template: %s\n",
					err);
				return 2;
			}
			srv.default_template = optarg;
			break;
		case 'n':
			if (net__mode_parse(optarg, &srv.net_mode)) {
				fprintf(stderr,
					"ember-e2b: --net %s: none, host-only or nat\n",
					optarg);
				return 2;
			}
			break;
		case 'b':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || *end || !v || v > 3600) {
				fprintf(stderr,
					"ember-e2b: --boot-timeout %s: 1-3600 s\n",
					optarg);
				return 2;
			}
			srv.boot_timeout_s = (unsigned int)v;
			break;
		case 'e':
			ember_arg = optarg;
			break;
		case 'd':
			if (set_domain(optarg, domain, sizeof(domain)))
				return 2;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (!key[0] || strlen(key) > KEY_MAX) {
		fprintf(stderr,
			"ember-e2b: an API key of 1-%d bytes is required "
			"(--api-key-file FILE)\n",
			KEY_MAX);
		return 2;
	}
	if (find_ember(ember_arg, ember, sizeof(ember)))
		return 2;
	if (sandbox__state_dir(state, sizeof(state), err, sizeof(err)) < 0) {
		fprintf(stderr, "ember-e2b: state directory: %s\n", err);
		return 1;
	}
	if (template_build__init(err, sizeof(err))) {
		fprintf(stderr, "ember-e2b: template builds: %s\n", err);
		return 1;
	}
	srv.ember = ember;
	srv.api_key = key;
	/* The sandbox library wants these blocked; sigwait() takes them. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	srv.pool = pool__new();
	srv.procs = procs__new();
	if (!srv.pool || !srv.procs) {
		fprintf(stderr, "ember-e2b: out of memory\n");
		goto out;
	}
	if (e2b_http__start(&srv, addr, port, &h, err, sizeof(err))) {
		fprintf(stderr, "ember-e2b: %s\n", err);
		goto out;
	}
	if (!domain[0])
		snprintf(domain, sizeof(domain), "localhost:%u",
			 e2b_http__port(h));
	srv.domain = domain;
	printf("ember-e2b: listening on http://%s%s%s:%u\n",
	       strchr(addr, ':') ? "[" : "", addr, strchr(addr, ':') ? "]" : "",
	       e2b_http__port(h));
	fflush(stdout);
	sigdelset(&set, SIGUSR1);
	for (;;) {
		const struct timespec ts = { .tv_sec = SWEEP_S };

		sig = sigtimedwait(&set, NULL, &ts);
		if (sig < 0 && errno == EAGAIN) {
			forget__sweep(&srv, false);
			template_build__sweep();
			continue;
		}
		if (sig < 0 && errno == EINTR)
			continue;
		if (sig < 0 || sig == SIGINT || sig == SIGTERM || sig == SIGHUP)
			break;
	}
	/* Running commands' streams end first, then the connections. */
	procs__stop(srv.procs);
	e2b_http__stop(h);
	rc = 0;
out:
	if (srv.procs && srv.pool)
		forget__sweep(&srv, true);
	if (srv.procs)
		procs__free(srv.procs);
	pool__free(srv.pool);
	return rc;
}
