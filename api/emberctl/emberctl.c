// SPDX-License-Identifier: Apache-2.0
/*
 * emberctl: create and drive sandboxes (ember microVMs with the guest
 * agent).  See usage() and README.md.
 *
 *   emberctl run [options]            start one, print its id
 *   emberctl exec [options] ID -- CMD run CMD in it, streaming output
 *   emberctl cp SRC DST               copy a file in or out (ID:PATH)
 *   emberctl ls                       list the live and parked ones
 *   emberctl pause [--to-disk] ID...  freeze them (in memory, or parked)
 *   emberctl resume ID...             let them run on
 *   emberctl kill ID...               end them, leaving nothing behind
 *   emberctl ttl ID S                 renew one's TTL: S seconds from now
 *   emberctl template build|ls|rm     snapshots that `run` restores
 *   emberctl run-code ID CODE         Python/JavaScript in its interpreter
 *   emberctl context ls|create|...    the interpreter's contexts (code.c)
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../guest-init/protocol.h"
#include "../../vmm/config.h"
#include "../sandbox/agent_client.h"
#include "../sandbox/clock.h"
#include "../sandbox/jail.h"
#include "../sandbox/net.h"
#include "../sandbox/sandbox.h"
#include "../sandbox/sibling.h"
#include "../sandbox/template.h"
#include "commands.h"

/* exec's exit statuses for its own troubles (docker's, coreutils'). */
#define EXIT_OWN      125
#define EXIT_NOEXEC   126
#define EXIT_NOTFOUND 127
#define EXIT_TIMEOUT  124

#define CONNECT_MS   10000 /* exec/cp: until the agent answers a PING */
#define BUILD_TTL_S  3600 /* template build: the longest it may take */
#define DEF_TEMPLATE "default" /* plain `run` restores it when it exists */
#define FILE_IDLE_MS 120000 /* cp: give up when no byte moves this long */

/*
 * cp's temporary file, removed by the signal handler if emberctl is
 * stopped mid-copy (the one piece of global state, for that handler).
 */
static char cp_tmp[PATH_MAX];

static void usage(FILE *f)
{
	fputs("usage: emberctl COMMAND [options]\n"
	      "Create and drive sandboxes: ember microVMs with a guest agent.\n"
	      "\n"
	      "  run [--template NAME | --boot] [--ttl S] [--boot-timeout S]\n"
	      "      [--mem MIB] [--vcpus N] [--rootfs FILE] [--kernel FILE]\n"
	      "      [--net [nat|host-only|none]]\n"
	      "      [--jail[=UID:GID]] [--jail-uid UID] [--jail-gid GID]\n"
	      "        start a sandbox; print its id once its agent answers.\n"
	      "        --template restores a template (fast); --boot\n"
	      "        boots the kernel.  Neither: the template \"default\"\n"
	      "        when it exists and no --mem, --vcpus, --rootfs or\n"
	      "        --kernel is given, else a boot.  Defaults: 256 MiB,\n"
	      "        1 vCPU, TTL 300 s (0: none) counted from when run\n"
	      "        returns, boot timeout 300 s.  --net (nat): out to the\n"
	      "        host's network, never to the host itself or another\n"
	      "        sandbox; host-only: to its namespace's host side\n"
	      "        (172.16.0.1; ip netns exec ember-ID) alone; none\n"
	      "        (default): no network.  --jail (root; a restore only):\n"
	      "        ember runs through ember-jailer ($EMBER_JAILER_BIN,\n"
	      "        else beside emberctl) as UID:GID (default 1000:1000)\n"
	      "        in a chroot under $EMBER_STATE_DIR/jails, cgroup\n"
	      "        ember/ID (memory: guest RAM + 256 MiB); not parkable\n"
	      "  exec [-i] [--timeout S] [--env K=V]... [--cwd DIR] ID -- CMD [ARG...]\n"
	      "  exec [options] ID --python CODE [ARG...]\n"
	      "        run CMD (or python3 -c CODE) in the sandbox, its output\n"
	      "        streamed; -i forwards stdin; exit status: the command's,\n"
	      "        128+N for signal N, 124 timeout, 125 emberctl failed,\n"
	      "        126 cannot execute, 127 not found\n"
	      "  cp SRC DST\n"
	      "        copy a file; exactly one of SRC/DST is ID:PATH\n"
	      "  ls    list the live and parked sandboxes\n"
	      "  pause [--to-disk] ID...\n"
	      "        freeze sandboxes in memory: no CPU used, the TTL\n"
	      "        stopped, exec and cp refused until resumed; --to-disk\n"
	      "        parks them: a snapshot in the sandbox's directory, and\n"
	      "        no process or memory left until resume\n"
	      "  resume [--boot-timeout S] ID...\n"
	      "        let paused sandboxes run on; parked ones are restored\n"
	      "        (same id, disk and files; the TTL goes on)\n"
	      "  ttl ID S\n"
	      "        renew a sandbox's TTL: it ends S seconds from now\n"
	      "        (pauses still stop the clock)\n"
	      "  kill ID...\n"
	      "        end sandboxes (parked too), remove everything they used\n"
	      "  template build NAME [--rootfs FILE] [--kernel FILE] [--mem MIB]\n"
	      "      [--vcpus N] [--setup CMD]... [--timeout S]\n"
	      "      [--boot-timeout S] [--if-missing] [--no-interp]\n"
	      "      [--no-net | --net [nat|host-only|none]]\n"
	      "        boot a sandbox, run each setup command (sh -c CMD;\n"
	      "        the first that fails ends the build), start the code\n"
	      "        interpreter (unless --no-interp), snapshot it as\n"
	      "        template NAME (a-z, 0-9, _, -; at most 64); --timeout:\n"
	      "        the longest the build may take (3600 s); --if-missing:\n"
	      "        nothing to do when NAME exists and is up to date (same\n"
	      "        kernel and rootfs, unchanged since, same --mem,\n"
	      "        --vcpus, --no-interp and --no-net), else it is built\n"
	      "        again; its guest has a network device (run --net)\n"
	      "        unless --no-net; --net: the network of the setup\n"
	      "        commands (default none)\n"
	      "  template save ID NAME\n"
	      "        snapshot the running sandbox ID as template NAME; it\n"
	      "        runs on unchanged (paused while its memory and disk\n"
	      "        are copied)\n"
	      "  template ls\n"
	      "        list the templates\n"
	      "  template rm [--force] NAME...\n"
	      "        remove templates; one that a sandbox (live or parked)\n"
	      "        was made from is refused, unless --force: then those\n"
	      "        sandboxes are killed first\n"
	      "  run-code [--language python|javascript] [--context C]\n"
	      "      [--timeout S] [--image-dir DIR] [--json] ID CODE|-\n"
	      "        run CODE (- reads stdin) in the sandbox's code\n"
	      "        interpreter, in a context that keeps its state between\n"
	      "        calls (default: the language's own); output streamed,\n"
	      "        then the last expression's value; charts saved as\n"
	      "        DIR/ID-N.png (DIR: .); exit status 1 for an error in\n"
	      "        the code (its traceback on stderr), 124 timeout\n"
	      "  context ls ID | create ID [--language L] [--cwd DIR]\n"
	      "      | restart ID CTX | rm ID CTX\n"
	      "        the interpreter's contexts; create prints the new id\n"
	      "\n"
	      "An ID may be any unique prefix of one.  Paths: $EMBER_BIN,\n"
	      "$EMBER_KERNEL, $EMBER_ROOTFS, else ember, guest/vmlinux and\n"
	      "guest/rootfs.ext4 beside emberctl; state in $EMBER_STATE_DIR\n"
	      "(default /var/lib/ember/sandboxes for root, else\n"
	      "$XDG_RUNTIME_DIR/ember or /tmp/ember-UID), templates in its\n"
	      "templates directory.\n",
	      f);
}

/*
 * getopt's '?' (opterr is 0): one line naming the option, not getopt's
 * message (which would carry the sandbox id as the program name).
 */
static void bad_option(const char *cmd, char **argv)
{
	fprintf(stderr,
		"emberctl: %s: unknown option or missing value: '%s' (see "
		"emberctl --help)\n",
		cmd, argv[optind - 1]);
}

/* Print "emberctl: <first line>" and the other lines of @msg indented. */
static void report(const char *msg)
{
	const char *nl = strchr(msg, '\n');

	if (!nl) {
		fprintf(stderr, "emberctl: %s\n", msg);
		return;
	}
	fprintf(stderr, "emberctl: %.*s\n", (int)(nl - msg), msg);
	for (msg = nl + 1; *msg; msg = nl + 1) {
		nl = strchr(msg, '\n');
		if (!nl) {
			fprintf(stderr, "  %s\n", msg);
			break;
		}
		fprintf(stderr, "  %.*s\n", (int)(nl - msg), msg);
	}
}

/* A decimal in [@min, @max]: 0, or -1 after saying what is wrong. */
static int parse_uint(const char *opt, const char *s, unsigned int min,
		      unsigned int max, unsigned int *out)
{
	uint64_t v;

	if (config__parse_uint(s, min, max, &v)) {
		fprintf(stderr,
			"emberctl: %s wants a number from %u to %u, not '%s'\n",
			opt, min, max, s);
		return -1;
	}
	*out = (unsigned int)v;
	return 0;
}

/* --- default paths ------------------------------------------------------- */

/*
 * @env's value, else @rel beside this binary, into @out.  A file that is
 * not there (or not executable for @exec) is an error that names it.
 */
static int default_path(const char *what, const char *given, const char *env,
			const char *rel, int exec, char *out, size_t outsz)
{
	const char *e = getenv(env);
	char tried[PATH_MAX];
	int rc;

	rc = sibling__path(given, env, rel, tried, sizeof(tried), out, outsz);
	if (!tried[0]) {
		if (rc == -ENAMETOOLONG)
			fprintf(stderr, "emberctl: %s path too long\n", what);
		else
			fprintf(stderr, "emberctl: /proc/self/exe: %s\n",
				strerror(-rc));
		return -1;
	}
	if (access(tried, exec ? X_OK : R_OK) < 0) {
		if (given)
			fprintf(stderr, "emberctl: %s %s: %s\n", what, tried,
				strerror(errno));
		else
			fprintf(stderr, "emberctl: %s %s: %s (%s %s)\n", what,
				tried, strerror(errno),
				e && *e ? "from" : "set", env);
		return -1;
	}
	/* The supervisor works from /: relative paths would not do. */
	if (rc == -ENAMETOOLONG) {
		fprintf(stderr, "emberctl: %s %s: path too long\n", what,
			tried);
		return -1;
	}
	if (rc < 0) {
		fprintf(stderr, "emberctl: %s %s: %s\n", what, tried,
			strerror(-rc));
		return -1;
	}
	return 0;
}

/* Block the signals that stop us; a signalfd for them, or -1. */
static int block_stops(int with_fd)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (with_fd) {
		sigaddset(&set, SIGQUIT);
		sigaddset(&set, SIGUSR1);
		sigaddset(&set, SIGUSR2);
	}
	sigprocmask(SIG_BLOCK, &set, NULL);
	return with_fd ? signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC) : -1;
}

/* --- run ----------------------------------------------------------------- */

/*
 * Parse --mem and --vcpus (ember's own limits and words, vmm/config.h)
 * into @mem_mib and @vcpus: 0, or 2 after saying what is wrong.
 */
static int parse_machine(int opt, const char *arg, unsigned int *mem_mib,
			 unsigned int *vcpus)
{
	char err[256];
	uint64_t mem;

	if (opt == 'm') {
		if (config__parse_mem(arg, &mem, err, sizeof(err))) {
			fprintf(stderr, "emberctl: --mem %s: %s\n", arg, err);
			return 2;
		}
		*mem_mib = (unsigned int)mem;
		return 0;
	}
	if (config__parse_vcpus(arg, vcpus, err, sizeof(err))) {
		fprintf(stderr, "emberctl: --vcpus %s: %s\n", arg, err);
		return 2;
	}
	return 0;
}

/* A template name from the command line: 0, or 2 after saying why not. */
static int check_template_name(const char *name)
{
	char err[256];

	if (template__name_ok(name, err, sizeof(err)) == 0)
		return 0;
	report(err);
	return 2;
}

/*
 * --net [MODE] (or --net=MODE): the mode into *@mode; a bare --net is
 * nat.  The next argument is taken as the mode when it is no option (a
 * word there that is no mode is an error, not an argument).  0, or 2
 * after saying what is wrong.
 */
static int parse_net(int argc, char **argv, enum net_mode *mode)
{
	const char *arg = optarg;

	if (!arg && optind < argc && argv[optind][0] != '-')
		arg = argv[optind++];
	if (!arg) {
		*mode = NET_NAT;
		return 0;
	}
	if (net__mode_parse(arg, mode) == 0)
		return 0;
	fprintf(stderr,
		"emberctl: --net wants nat, host-only or none, not '%s'\n",
		arg);
	return 2;
}

static int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mem", required_argument, NULL, 'm' },
		{ "vcpus", required_argument, NULL, 'c' },
		{ "ttl", required_argument, NULL, 't' },
		{ "rootfs", required_argument, NULL, 'r' },
		{ "kernel", required_argument, NULL, 'k' },
		{ "boot-timeout", required_argument, NULL, 'b' },
		{ "template", required_argument, NULL, 'T' },
		{ "boot", no_argument, NULL, 'B' },
		{ "net", optional_argument, NULL, 'N' },
		{ "jail", optional_argument, NULL, 'J' },
		{ "jail-uid", required_argument, NULL, 'U' },
		{ "jail-gid", required_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char ember[PATH_MAX], kernel[PATH_MAX], rootfs[PATH_MAX], err[4096];
	char id[SANDBOX_ID_LEN + 1], jailer[PATH_MAX];
	unsigned int jail_id;
	bool jail = false;
	const char *kernel_opt = NULL, *rootfs_opt = NULL, *boot_opt = NULL;
	struct template_info t;
	struct sandbox_opts o = {
		.mem_mib = SANDBOX_DEF_MEM,
		.vcpus = 1,
		.ttl_s = SANDBOX_DEF_TTL,
		.boot_timeout_s = SANDBOX_DEF_BOOT_S,
	};
	bool boot = false;
	int c;

	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
		case 'c':
			if (parse_machine(c, optarg, &o.mem_mib, &o.vcpus))
				return 2;
			boot_opt = c == 'm' ? "--mem" : "--vcpus";
			break;
		case 't':
			if (parse_uint("--ttl", optarg, 0, 100U * 365 * 86400,
				       &o.ttl_s))
				return 2;
			break;
		case 'b':
			if (parse_uint("--boot-timeout", optarg, 1, 86400,
				       &o.boot_timeout_s))
				return 2;
			break;
		case 'r':
			rootfs_opt = optarg;
			boot_opt = "--rootfs";
			break;
		case 'k':
			kernel_opt = optarg;
			boot_opt = "--kernel";
			break;
		case 'T':
			if (check_template_name(optarg))
				return 2;
			o.template_name = optarg;
			break;
		case 'B':
			boot = true;
			break;
		case 'N':
			if (parse_net(argc, argv, &o.net_mode))
				return 2;
			break;
		case 'J':
			jail = true;
			if (optarg &&
			    jail__parse_ids(optarg, &o.jail_uid, &o.jail_gid)) {
				fprintf(stderr,
					"emberctl: --jail=%s: use UID:GID "
					"(neither 0)\n",
					optarg);
				return 2;
			}
			break;
		case 'U':
		case 'G':
			if (parse_uint(c == 'U' ? "--jail-uid" : "--jail-gid",
				       optarg, 1, 4294967294U, &jail_id))
				return 2;
			if (c == 'U')
				o.jail_uid = (uid_t)jail_id;
			else
				o.jail_gid = (gid_t)jail_id;
			jail = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			bad_option("run", argv);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "emberctl: run takes no arguments: %s\n",
			argv[optind]);
		return 2;
	}
	if (boot && o.template_name) {
		fprintf(stderr, "emberctl: run: --template and --boot exclude "
				"each other\n");
		return 2;
	}
	if (o.template_name && boot_opt) {
		fprintf(stderr,
			"emberctl: run --template: %s is the template's (see "
			"emberctl template ls)\n",
			boot_opt);
		return 2;
	}
	/* Plain `run`: the default template when there is one. */
	if (!boot && !boot_opt && !o.template_name &&
	    template__open(DEF_TEMPLATE, &t, NULL, err, sizeof(err)) == 0)
		o.template_name = DEF_TEMPLATE;
	if (default_path("ember", NULL, "EMBER_BIN", "ember", 1, ember,
			 sizeof(ember)))
		return 1;
	if (!o.template_name &&
	    (default_path("kernel", kernel_opt, "EMBER_KERNEL", "guest/vmlinux",
			  0, kernel, sizeof(kernel)) ||
	     default_path("rootfs", rootfs_opt, "EMBER_ROOTFS",
			  "guest/rootfs.ext4", 0, rootfs, sizeof(rootfs))))
		return 1;
	o.ember = ember;
	if (!o.template_name) {
		o.kernel = kernel;
		o.rootfs = rootfs;
	}
	if (jail) {
		if (!o.template_name) {
			fprintf(stderr, "emberctl: run --jail restores a "
					"template: give --template NAME (or "
					"build the template default)\n");
			return 2;
		}
		if (default_path("ember-jailer", NULL, "EMBER_JAILER_BIN",
				 "ember-jailer", 1, jailer, sizeof(jailer)))
			return 1;
		o.jailer = jailer;
		o.jail_uid = o.jail_uid ? o.jail_uid : JAIL_DEF_UID;
		o.jail_gid = o.jail_gid ? o.jail_gid : JAIL_DEF_GID;
	}
	block_stops(0);
	if (sandbox__run(&o, id, err, sizeof(err)) < 0) {
		report(err);
		return 1;
	}
	printf("%s\n", id);
	if (fflush(stdout) == 0)
		return 0;
	/* Nobody learnt the id: nobody could use or kill the sandbox. */
	fprintf(stderr, "emberctl: writing the id: %s; sandbox removed\n",
		strerror(errno));
	{
		struct sandbox_info sb;

		if (sandbox__find(id, &sb, err, sizeof(err)) == 0)
			sandbox__kill(&sb, err, sizeof(err));
	}
	return 1;
}

/* --- the agent of a sandbox ---------------------------------------------- */

/*
 * Find the sandbox @ref and connect to its agent, which must answer a
 * PING within CONNECT_MS.  NULL after reporting why.
 */
static struct agent_client *open_agent(const char *ref, struct sandbox_info *sb)
{
	struct agent_client *c;
	char err[512];
	int rc;

	rc = sandbox__find(ref, sb, err, sizeof(err));
	if (rc < 0) {
		report(err);
		return NULL;
	}
	if (sb->paused) {
		fprintf(stderr,
			"emberctl: sandbox %s is %s (emberctl resume %s)\n",
			sb->id, sb->parked ? "parked" : "paused", sb->id);
		return NULL;
	}
	rc = sandbox__agent_connect(sb, CONNECT_MS, &c, err, sizeof(err));
	if (rc < 0) {
		report(err);
		return NULL;
	}
	return c;
}

/* --- exec ---------------------------------------------------------------- */

/*
 * The guest's base environment (PROTOCOL.md, ENV): sending any ENV
 * replaces the agent's whole environment, and --env adds to it instead.
 */
static const char *const base_env[] = {
	"PATH=" EMBER_GUEST_PATH,
	"HOME=" EMBER_GUEST_HOME,
	"TERM=" EMBER_GUEST_TERM,
};

#define BASE_ENV_N (sizeof(base_env) / sizeof(base_env[0]))

/* Add "K=V" to @env (@n entries), replacing an earlier K. */
static void env_set(const char **env, size_t *n, const char *kv)
{
	size_t klen = (size_t)(strchr(kv, '=') - kv);

	for (size_t i = 0; i < *n; i++) {
		if (!strncmp(env[i], kv, klen) && env[i][klen] == '=') {
			env[i] = kv;
			return;
		}
	}
	env[(*n)++] = kv;
}

static int exit_status(const struct agent_exec_result *r)
{
	switch (r->kind) {
	case EMBER_AGENT_EXITED:
		return r->code;
	case EMBER_AGENT_SIGNALLED:
		return 128 + r->code;
	default:
		return EXIT_TIMEOUT;
	}
}

/* The status for a command the guest could not start (docker's). */
static int start_failure_status(int guest_errno)
{
	switch (guest_errno) {
	case ENOENT:
		return EXIT_NOTFOUND;
	case EACCES:
	case EPERM:
	case ENOEXEC:
	case EISDIR:
	case ENOTDIR:
	case ELOOP:
	case ENAMETOOLONG:
	case ETXTBSY:
	case E2BIG:
		return EXIT_NOEXEC;
	default:
		return EXIT_OWN;
	}
}

struct exec_opts {
	int interactive;
	uint32_t timeout_ms;
	const char *cwd;
	char *python;
	const char *env[EMBER_AGENT_MAX_ENV];
	size_t envc;
};

/* Options of exec, before and after the ID: 0, or an exit status. */
static int exec_options(int argc, char **argv, struct exec_opts *x)
{
	static const struct option opts[] = {
		{ "interactive", no_argument, NULL, 'i' },
		{ "timeout", required_argument, NULL, 't' },
		{ "env", required_argument, NULL, 'e' },
		{ "cwd", required_argument, NULL, 'w' },
		{ "python", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char *end;
	double t;
	int c;

	optind = 0; /* a full re-initialisation: a new vector each time */
	while ((c = getopt_long(argc, argv, "+ie:w:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			x->interactive = 1;
			break;
		case 't':
			errno = 0;
			t = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(t >= 0) ||
			    t > 4294967.0) {
				fprintf(stderr,
					"emberctl: --timeout wants seconds, "
					"not '%s'\n",
					optarg);
				return EXIT_OWN;
			}
			x->timeout_ms = (uint32_t)(t * 1000);
			if (t > 0 && !x->timeout_ms)
				x->timeout_ms = 1;
			break;
		case 'e':
			if (!strchr(optarg, '=') || optarg[0] == '=') {
				fprintf(stderr,
					"emberctl: --env wants NAME=VALUE, "
					"not '%s'\n",
					optarg);
				return EXIT_OWN;
			}
			if (x->envc >= EMBER_AGENT_MAX_ENV - BASE_ENV_N) {
				fprintf(stderr,
					"emberctl: too many --env options\n");
				return EXIT_OWN;
			}
			x->env[x->envc++] = optarg;
			break;
		case 'w':
			x->cwd = optarg;
			break;
		case 'p':
			x->python = optarg;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			bad_option("exec", argv);
			return EXIT_OWN;
		}
	}
	return 0;
}

static int cmd_exec(int argc, char **argv)
{
	struct exec_opts x = { 0 };
	const char *env[EMBER_AGENT_MAX_ENV], **cmd, *ref, **pyargv = NULL;
	struct agent_exec_req req = { .stdout_fd = 1, .stderr_fd = 2 };
	struct agent_exec_result res;
	struct agent_client *c;
	struct sandbox_info sb;
	size_t envc = 0;
	int rc, n;

	/* exec [opts] ID [opts] [--] CMD...: options around the ID. */
	rc = exec_options(argc, argv, &x);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (optind >= argc) {
		fprintf(stderr, "emberctl: exec wants a sandbox id\n");
		return EXIT_OWN;
	}
	n = optind;
	ref = argv[n];
	rc = exec_options(argc - n, argv + n, &x);
	if (rc)
		return rc < 0 ? 0 : rc;
	cmd = (const char **)argv + n + optind;
	if (x.python) {
		int extra = argc - n - optind;

		pyargv = calloc((size_t)extra + 4, sizeof(*pyargv));
		if (!pyargv) {
			report("out of memory");
			return EXIT_OWN;
		}
		pyargv[0] = "python3";
		pyargv[1] = "-c";
		pyargv[2] = x.python;
		for (int i = 0; i < extra; i++)
			pyargv[3 + i] = cmd[i];
		cmd = pyargv;
	} else if (!cmd[0]) {
		fprintf(stderr, "emberctl: exec wants a command: "
				"emberctl exec ID -- CMD [ARG...]\n");
		return EXIT_OWN;
	}
	if (x.envc) {
		for (size_t i = 0; i < BASE_ENV_N; i++)
			env[envc++] = base_env[i];
		for (size_t i = 0; i < x.envc; i++)
			env_set(env, &envc, x.env[i]);
		env[envc] = NULL;
		req.env = env;
	}
	req.argv = cmd;
	req.cwd = x.cwd;
	req.timeout_ms = x.timeout_ms;
	req.stdin_fd = x.interactive ? 0 : -1;
	req.sig_fd = block_stops(1);
	c = open_agent(ref, &sb);
	if (!c) {
		free(pyargv);
		return EXIT_OWN;
	}
	rc = agent_client__exec(c, &req, &res);
	if (rc == 0) {
		rc = exit_status(&res);
	} else if (rc == -EREMOTEIO) {
		fprintf(stderr, "emberctl: %s\n", agent_client__error(c));
		rc = start_failure_status(agent_client__guest_errno(c));
	} else {
		fprintf(stderr, "emberctl: exec in sandbox %s: %s\n", sb.id,
			agent_client__error(c));
		rc = EXIT_OWN;
	}
	agent_client__free(c);
	free(pyargv);
	return rc;
}

/* --- cp ------------------------------------------------------------------ */

static void cp_stop(int sig)
{
	if (cp_tmp[0])
		unlink(cp_tmp);
	_exit(128 + sig);
}

/* Is @arg ID:PATH?  Then split it: the part before ':' has no '/'. */
static int split_remote(char *arg, char **ref, char **path)
{
	char *colon = strchr(arg, ':');

	if (!colon || colon == arg || memchr(arg, '/', (size_t)(colon - arg)))
		return 0;
	*colon = '\0';
	*ref = arg;
	*path = colon + 1;
	return 1;
}

/*
 * Not ID:PATH, but meant as one?  "a/b:/tmp/x" has a ':' after a part
 * that is no path (a local path with ':' starts with '/' or '.' there);
 * returns the length of that would-be id, else 0.
 */
static int bad_ref(const char *arg)
{
	const char *colon = strchr(arg, ':');

	if (!colon || colon == arg || arg[0] == '/' || arg[0] == '.')
		return 0;
	return (int)(colon - arg);
}

/* The last component of @p (trailing slashes ignored) in @out. */
static int base_name(const char *p, char *out, size_t outsz)
{
	size_t len = strlen(p);
	const char *b;

	while (len > 1 && p[len - 1] == '/')
		len--;
	for (b = p + len; b > p && b[-1] != '/'; b--)
		;
	len -= (size_t)(b - p);
	if (!len || len >= outsz || (len == 1 && b[0] == '/') ||
	    (len == 1 && b[0] == '.') || (len == 2 && !strncmp(b, "..", 2)))
		return -1;
	memcpy(out, b, len);
	out[len] = '\0';
	return 0;
}

static int cp_in(struct agent_client *c, const char *src, const char *gdst)
{
	char base[NAME_MAX + 1], path[PATH_MAX];
	size_t len = strlen(gdst);
	struct stat st;
	uint32_t mode;
	int fd, rc;

	fd = open(src, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "emberctl: %s: %s\n", src, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	if (S_ISDIR(st.st_mode)) {
		fprintf(stderr,
			"emberctl: %s: copying directories is not "
			"supported\n",
			src);
		close(fd);
		return 1;
	}
	if (base_name(src, base, sizeof(base)) < 0)
		snprintf(base, sizeof(base), "file");
	/* A directory destination gets the source's name. */
	if (gdst[len - 1] == '/')
		snprintf(path, sizeof(path), "%s%s", gdst, base);
	else
		snprintf(path, sizeof(path), "%s", gdst);
	/* A device or FIFO source has no mode a file should get. */
	mode = S_ISREG(st.st_mode) ? st.st_mode & 07777 : 0644;
	rc = agent_client__write_file(c, fd, path, mode, FILE_IDLE_MS);
	if (rc == -EREMOTEIO && agent_client__guest_errno(c) == EISDIR &&
	    gdst[len - 1] != '/' && lseek(fd, 0, SEEK_SET) == 0) {
		snprintf(path, sizeof(path), "%s/%s", gdst, base);
		rc = agent_client__write_file(c, fd, path, mode, FILE_IDLE_MS);
	}
	close(fd);
	if (rc < 0) {
		fprintf(stderr, "emberctl: copying to %s: %s\n", path,
			agent_client__error(c));
		return 1;
	}
	return 0;
}

/* To a device or FIFO (/dev/null, /dev/stdout): written in place. */
static int cp_out_in_place(struct agent_client *c, const char *gsrc,
			   const char *path)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC), rc;

	if (fd < 0) {
		fprintf(stderr, "emberctl: %s: %s\n", path, strerror(errno));
		return 1;
	}
	rc = agent_client__read_file(c, gsrc, fd, FILE_IDLE_MS);
	if (rc < 0)
		fprintf(stderr, "emberctl: copying %s: %s\n", gsrc,
			agent_client__error(c));
	if (close(fd) < 0 && rc == 0) {
		fprintf(stderr, "emberctl: %s: %s\n", path, strerror(errno));
		rc = -EIO;
	}
	return rc < 0 ? 1 : 0;
}

static int cp_out(struct agent_client *c, const char *gsrc, const char *dst)
{
	char base[NAME_MAX + 1], path[PATH_MAX], dir[PATH_MAX], name[PATH_MAX];
	size_t len = strlen(dst);
	struct stat st;
	mode_t mask, mode;
	int fd, rc;

	if (base_name(gsrc, base, sizeof(base)) < 0 ||
	    gsrc[strlen(gsrc) - 1] == '/') {
		fprintf(stderr, "emberctl: %s: not a file name\n", gsrc);
		return 1;
	}
	/* A directory destination gets the source's name. */
	if (dst[len - 1] == '/' || (stat(dst, &st) == 0 && S_ISDIR(st.st_mode)))
		rc = snprintf(path, sizeof(path), "%s%s%s", dst,
			      dst[len - 1] == '/' ? "" : "/", base);
	else
		rc = snprintf(path, sizeof(path), "%s", dst);
	if (rc < 0 || (size_t)rc >= sizeof(path)) {
		fprintf(stderr, "emberctl: %s: path too long\n", dst);
		return 1;
	}
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return cp_out_in_place(c, gsrc, path);
	/* Through a symbolic link: the file it names is replaced. */
	if (realpath(path, dir))
		snprintf(path, sizeof(path), "%s", dir);
	snprintf(dir, sizeof(dir), "%s", path);
	snprintf(name, sizeof(name), "%s", path);
	rc = snprintf(cp_tmp, sizeof(cp_tmp), "%s/.%s.emberctl-XXXXXX",
		      dirname(dir), basename(name));
	if (rc < 0 || (size_t)rc >= sizeof(cp_tmp)) {
		cp_tmp[0] = '\0';
		fprintf(stderr, "emberctl: %s: path too long\n", path);
		return 1;
	}
	fd = mkostemp(cp_tmp, O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "emberctl: %s: %s\n", path, strerror(errno));
		cp_tmp[0] = '\0';
		return 1;
	}
	rc = agent_client__read_file(c, gsrc, fd, FILE_IDLE_MS);
	if (rc < 0) {
		fprintf(stderr, "emberctl: copying %s: %s\n", gsrc,
			agent_client__error(c));
		goto fail;
	}
	/* An existing file keeps its mode; a new one gets 0666 - umask. */
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
		mode = st.st_mode & 07777;
	} else {
		mask = umask(0);
		umask(mask);
		mode = 0666 & ~mask;
	}
	if (fchmod(fd, mode) < 0 || fsync(fd) < 0) {
		fprintf(stderr, "emberctl: %s: %s\n", cp_tmp, strerror(errno));
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		fprintf(stderr, "emberctl: %s: %s\n", cp_tmp, strerror(errno));
		goto fail;
	}
	fd = -1;
	if (rename(cp_tmp, path) < 0) {
		fprintf(stderr, "emberctl: %s: %s\n", path, strerror(errno));
		goto fail;
	}
	cp_tmp[0] = '\0';
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlink(cp_tmp);
	cp_tmp[0] = '\0';
	return 1;
}

static int cmd_cp(int argc, char **argv)
{
	char *sref, *spath, *dref, *dpath;
	struct sigaction sa = { .sa_handler = cp_stop };
	struct agent_client *c;
	struct sandbox_info sb;
	int in, out, bad, rc;

	if (argc == 2 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc != 3) {
		fprintf(stderr, "emberctl: usage: emberctl cp SRC DST (one of "
				"them ID:PATH)\n");
		return 2;
	}
	out = split_remote(argv[1], &sref, &spath);
	in = split_remote(argv[2], &dref, &dpath);
	bad = bad_ref(argv[1]) ? 1 : bad_ref(argv[2]) ? 2 : 0;
	if (!in && !out && bad) {
		fprintf(stderr, "emberctl: cp: not a sandbox id: %.*s\n",
			bad_ref(argv[bad]), argv[bad]);
		return 2;
	}
	if (in == out) {
		fprintf(stderr, "emberctl: cp: exactly one of SRC and DST must "
				"be ID:PATH\n");
		return 2;
	}
	if (!*(in ? dpath : spath) || !*argv[in ? 1 : 2]) {
		fprintf(stderr, "emberctl: cp: empty path\n");
		return 2;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	c = open_agent(in ? dref : sref, &sb);
	if (!c)
		return 1;
	rc = in ? cp_in(c, argv[1], dpath) : cp_out(c, spath, argv[2]);
	agent_client__free(c);
	return rc;
}

/* --- ls, kill ------------------------------------------------------------ */

static void fmt_dur(int64_t s, char *out, size_t outsz)
{
	if (s < 0)
		s = 0;
	if (s < 60)
		snprintf(out, outsz, "%ds", (int)s);
	else if (s < 3600)
		snprintf(out, outsz, "%dm%02ds", (int)(s / 60), (int)(s % 60));
	else if (s < 86400)
		snprintf(out, outsz, "%dh%02dm", (int)(s / 3600),
			 (int)(s / 60 % 60));
	else
		snprintf(out, outsz, "%dd%02dh", (int)(s / 86400),
			 (int)(s / 3600 % 24));
}

static int cmd_ls(int argc, char **argv)
{
	struct sandbox_info *v;
	int64_t now = (int64_t)time(NULL);
	char err[512], age[16], ttl[16], pid[16];
	const char *net;
	size_t n;

	(void)argv;
	if (argc > 1) {
		fprintf(stderr, "emberctl: ls takes no arguments\n");
		return 2;
	}
	if (sandbox__list(&v, &n, err, sizeof(err)) < 0) {
		report(err);
		return 1;
	}
	printf("%-12s  %-8s  %7s  %5s  %-7s  %-7s  %-7s  %-9s  %s\n", "ID",
	       "PID", "MEM", "VCPUS", "STATE", "AGE", "TTL", "NET", "TEMPLATE");
	for (size_t i = 0; i < n; i++) {
		const struct sandbox_info *s = &v[i];

		fmt_dur(s->created ? now - s->created : 0, age, sizeof(age));
		if (!s->ready)
			snprintf(ttl, sizeof(ttl), "booting");
		else if (!s->ttl_s)
			snprintf(ttl, sizeof(ttl), "-");
		else
			fmt_dur(sandbox__ttl_left(s, now), ttl, sizeof(ttl));
		if (s->ember && !s->parked)
			snprintf(pid, sizeof(pid), "%d", (int)s->ember);
		else
			snprintf(pid, sizeof(pid), "-");
		/* "-": no network device; else its mode (none too). */
		net = s->net_dev ? net__mode_name(s->net_mode) : "-";
		printf("%-12s  %-8s  %6uM  %5u  %-7s  %-7s  %-7s  %-9s  %s\n",
		       s->id, pid, s->mem_mib, s->vcpus, sandbox__state_name(s),
		       age, ttl, net,
		       s->template_name[0] ? s->template_name : "-");
	}
	free(v);
	return fflush(stdout) == 0 ? 0 : 1;
}

static int cmd_kill(int argc, char **argv)
{
	struct sandbox_info sb;
	char err[512];
	int status = 0, rc;

	if (argc < 2) {
		fprintf(stderr, "emberctl: usage: emberctl kill ID...\n");
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	block_stops(0); /* finish what was started: no half-removed dirs */
	for (int i = 1; i < argc; i++) {
		rc = sandbox__find(argv[i], &sb, err, sizeof(err));
		if (rc == 0)
			rc = sandbox__kill(&sb, err, sizeof(err));
		if (rc < 0) {
			report(err);
			status = 1;
			continue;
		}
		if (rc == 1)
			fprintf(stderr,
				"emberctl: sandbox %s did not stop in time: "
				"killed\n",
				sb.id);
		printf("%s\n", sb.id);
	}
	return fflush(stdout) == 0 ? status : 1;
}

/* ttl ID SECONDS: the sandbox lives SECONDS from now (not paused). */
static int cmd_ttl(int argc, char **argv)
{
	struct sandbox_info sb;
	unsigned int ttl_s;
	char err[512];
	int rc;

	if (argc == 2 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc != 3) {
		fprintf(stderr, "emberctl: usage: emberctl ttl ID SECONDS\n");
		return 2;
	}
	if (parse_uint("ttl", argv[2], 1, 31536000, &ttl_s))
		return 2;
	rc = sandbox__find(argv[1], &sb, err, sizeof(err));
	if (rc == 0)
		rc = sandbox__renew(&sb, ttl_s, err, sizeof(err));
	if (rc < 0) {
		report(err);
		return 1;
	}
	printf("%s\n", sb.id);
	return fflush(stdout) == 0 ? 0 : 1;
}

/*
 * pause [--to-disk] ID... / resume [--boot-timeout S] ID...: each id
 * printed once done.
 */
static int cmd_pause(int argc, char **argv, bool pause)
{
	const char *cmd = pause ? "pause" : "resume";
	unsigned int timeout_s = SANDBOX_DEF_BOOT_S;
	char ember[PATH_MAX] = "", err[4096];
	struct sandbox_info sb;
	bool to_disk = false;
	int status = 0, rc, i, nids = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (pause && !strcmp(argv[i], "--to-disk")) {
			to_disk = true;
		} else if (!pause && !strcmp(argv[i], "--boot-timeout")) {
			if (i + 1 == argc) {
				fprintf(stderr,
					"emberctl: resume: "
					"--boot-timeout wants seconds\n");
				return 2;
			}
			if (parse_uint("--boot-timeout", argv[++i], 1, 86400,
				       &timeout_s))
				return 2;
		} else if (argv[i][0] == '-') {
			fprintf(stderr,
				"emberctl: %s: unknown option: '%s' (see "
				"emberctl --help)\n",
				cmd, argv[i]);
			return 2;
		} else {
			nids++;
		}
	}
	if (!nids) {
		fprintf(stderr, "emberctl: usage: emberctl %s\n",
			pause ? "pause [--to-disk] ID..." :
				"resume [--boot-timeout S] ID...");
		return 2;
	}
	block_stops(0); /* a park or a restore is seen through */
	for (i = 1; i < argc; i++) {
		if (argv[i][0] == '-') {
			i += !strcmp(argv[i], "--boot-timeout");
			continue;
		}
		rc = sandbox__find(argv[i], &sb, err, sizeof(err));
		if (rc == 0 && pause && to_disk) {
			rc = sandbox__park(&sb, err, sizeof(err));
		} else if (rc == 0 && pause) {
			rc = sandbox__pause(&sb, true, err, sizeof(err));
		} else if (rc == 0) {
			if (sb.parked && !ember[0] &&
			    default_path("ember", NULL, "EMBER_BIN", "ember", 1,
					 ember, sizeof(ember)))
				return 1;
			rc = sandbox__resume(&sb, ember, timeout_s, err,
					     sizeof(err));
		}
		if (rc < 0) {
			report(err);
			status = 1;
			continue;
		}
		printf("%s\n", sb.id);
	}
	return fflush(stdout) == 0 ? status : 1;
}

/* --- template ------------------------------------------------------------ */

/*
 * Why the existing template @t is not what a build with @kernel, @rootfs
 * and @o would make: another kernel or rootfs, one changed since, other
 * memory or vCPUs.  NULL when it is.
 */
static const char *stale(const struct template_info *t, const char *kernel,
			 const char *rootfs,
			 const struct template_build_opts *o)
{
	struct stat st;

	if (strcmp(t->kernel, kernel))
		return "another kernel";
	if (strcmp(t->rootfs, rootfs))
		return "another rootfs";
	if (stat(kernel, &st) == 0 && st.st_mtime >= t->created)
		return "the kernel changed since";
	if (stat(rootfs, &st) == 0 && st.st_mtime >= t->created)
		return "the rootfs changed since";
	if (t->mem_mib != o->mem_mib || t->vcpus != o->vcpus)
		return "other memory or vCPUs";
	if (t->interp != !o->no_interp)
		return t->interp ? "built with the code interpreter" :
				   "built without the code interpreter";
	if (t->net != !o->no_net)
		return t->net ? "built with a network device" :
				"built without a network device";
	return NULL;
}

static int cmd_template_build(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mem", required_argument, NULL, 'm' },
		{ "vcpus", required_argument, NULL, 'c' },
		{ "rootfs", required_argument, NULL, 'r' },
		{ "kernel", required_argument, NULL, 'k' },
		{ "setup", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 't' },
		{ "boot-timeout", required_argument, NULL, 'b' },
		{ "if-missing", no_argument, NULL, 'i' },
		{ "no-interp", no_argument, NULL, 'n' },
		{ "no-net", no_argument, NULL, 'x' },
		{ "net", optional_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char ember[PATH_MAX], kernel[PATH_MAX], rootfs[PATH_MAX], err[4096];
	const char *kernel_opt = NULL, *rootfs_opt = NULL, *name;
	struct template_build_opts o = {
		.mem_mib = SANDBOX_DEF_MEM,
		.vcpus = 1,
		.boot_timeout_s = SANDBOX_DEF_BOOT_S,
		.build_ttl_s = BUILD_TTL_S,
		.out_fd = 2,
	};
	const char **setup;
	struct template_info t;
	bool if_missing = false;
	int c, rc = 2;

	/* --setup at most once per argument: argc bounds them. */
	setup = calloc((size_t)argc + 1, sizeof(*setup));
	if (!setup) {
		report("out of memory");
		return 1;
	}
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
		case 'c':
			if (parse_machine(c, optarg, &o.mem_mib, &o.vcpus))
				goto out;
			break;
		case 'r':
			rootfs_opt = optarg;
			break;
		case 'k':
			kernel_opt = optarg;
			break;
		case 's':
			setup[o.nsetup++] = optarg;
			break;
		case 'n':
			o.no_interp = true;
			break;
		case 'x':
			o.no_net = true;
			break;
		case 'N':
			if (parse_net(argc, argv, &o.net_mode))
				goto out;
			break;
		case 't':
			if (parse_uint("--timeout", optarg, 1, 7 * 86400,
				       &o.build_ttl_s))
				goto out;
			break;
		case 'b':
			if (parse_uint("--boot-timeout", optarg, 1, 86400,
				       &o.boot_timeout_s))
				goto out;
			break;
		case 'i':
			if_missing = true;
			break;
		case 'h':
			usage(stdout);
			rc = 0;
			goto out;
		default:
			bad_option("template build", argv);
			goto out;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "emberctl: usage: emberctl template build NAME "
				"[options] (see emberctl --help)\n");
		goto out;
	}
	name = argv[optind];
	if (check_template_name(name))
		goto out;
	if (o.no_net && o.net_mode != NET_NONE) {
		fprintf(stderr,
			"emberctl: template build: --no-net and --net "
			"%s exclude each other\n",
			net__mode_name(o.net_mode));
		goto out;
	}
	rc = 1;
	if (default_path("ember", NULL, "EMBER_BIN", "ember", 1, ember,
			 sizeof(ember)) ||
	    default_path("kernel", kernel_opt, "EMBER_KERNEL", "guest/vmlinux",
			 0, kernel, sizeof(kernel)) ||
	    default_path("rootfs", rootfs_opt, "EMBER_ROOTFS",
			 "guest/rootfs.ext4", 0, rootfs, sizeof(rootfs)))
		goto out;
	if (if_missing &&
	    template__open(name, &t, NULL, err, sizeof(err)) == 0) {
		const char *why = stale(&t, kernel, rootfs, &o);

		if (!why) {
			printf("%s\n", name);
			rc = fflush(stdout) == 0 ? 0 : 1;
			goto out;
		}
		fprintf(stderr,
			"emberctl: template %s is out of date (%s): "
			"building it again\n",
			name, why);
		block_stops(0);
		if (template__remove(name, false, err, sizeof(err)) < 0) {
			report(err);
			goto out;
		}
	}
	o.ember = ember;
	o.kernel = kernel;
	o.rootfs = rootfs;
	o.setup = setup;
	o.sig_fd = block_stops(1);
	if (template__build(&o, name, err, sizeof(err)) < 0) {
		report(err);
		goto out;
	}
	printf("%s\n", name);
	rc = fflush(stdout) == 0 ? 0 : 1;
out:
	free(setup);
	return rc;
}

/* "1.5G", "340M", "12K": @bytes for a column. */
static void fmt_size(uint64_t bytes, char *out, size_t outsz)
{
	static const char unit[] = "KMGT";
	double v = (double)bytes / 1024;
	int u = 0;

	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	snprintf(out, outsz, v < 10 ? "%.1f%c" : "%.0f%c", v, unit[u]);
}

static int cmd_template_ls(int argc, char **argv)
{
	struct template_info *v;
	char err[512], size[16], when[32];
	size_t n, users;

	(void)argv;
	if (argc > 1) {
		fprintf(stderr, "emberctl: template ls takes no arguments\n");
		return 2;
	}
	if (template__list(&v, &n, err, sizeof(err)) < 0) {
		report(err);
		return 1;
	}
	printf("%-20s  %7s  %5s  %7s  %-16s  %s\n", "NAME", "MEM", "VCPUS",
	       "SIZE", "CREATED", "SANDBOXES");
	for (size_t i = 0; i < n; i++) {
		time_t at = (time_t)v[i].created;
		struct tm tm;

		fmt_size(v[i].disk_bytes, size, sizeof(size));
		if (!localtime_r(&at, &tm) ||
		    !strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm))
			snprintf(when, sizeof(when), "-");
		if (template__users(v[i].name, &users, NULL, 0, err,
				    sizeof(err)) < 0)
			users = 0;
		printf("%-20s  %6uM  %5u  %7s  %-16s  %zu\n", v[i].name,
		       v[i].mem_mib, v[i].vcpus, size, when, users);
	}
	free(v);
	return fflush(stdout) == 0 ? 0 : 1;
}

static int cmd_template_rm(int argc, char **argv)
{
	char err[1024];
	bool force = false;
	int status = 0, i, n = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--force") || !strcmp(argv[i], "-f"))
			force = true;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (argv[i][0] == '-') {
			fprintf(stderr,
				"emberctl: template rm: unknown option: '%s' "
				"(see emberctl --help)\n",
				argv[i]);
			return 2;
		} else if (check_template_name(argv[i])) {
			return 2;
		} else {
			n++;
		}
	}
	if (!n) {
		fprintf(stderr, "emberctl: usage: emberctl template rm "
				"[--force] NAME...\n");
		return 2;
	}
	block_stops(0); /* no half-removed templates */
	for (i = 1; i < argc; i++) {
		if (argv[i][0] == '-')
			continue;
		if (template__remove(argv[i], force, err, sizeof(err)) < 0) {
			report(err);
			status = 1;
			continue;
		}
		printf("%s\n", argv[i]);
	}
	return fflush(stdout) == 0 ? status : 1;
}

/* template save ID NAME: the running sandbox ID as template NAME. */
static int cmd_template_save(int argc, char **argv)
{
	struct sandbox_info sb;
	char err[1024];

	if (argc == 2 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc != 3 || argv[1][0] == '-' || argv[2][0] == '-') {
		fprintf(stderr, "emberctl: usage: emberctl template save ID "
				"NAME\n");
		return 2;
	}
	if (check_template_name(argv[2]))
		return 2;
	block_stops(0); /* the sandbox must not stay paused */
	if (sandbox__find(argv[1], &sb, err, sizeof(err)) < 0 ||
	    template__from_sandbox(&sb, argv[2], err, sizeof(err)) < 0) {
		report(err);
		return 1;
	}
	printf("%s\n", argv[2]);
	return fflush(stdout) == 0 ? 0 : 1;
}

static int cmd_template(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "build"))
		return cmd_template_build(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "save"))
		return cmd_template_save(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "ls"))
		return cmd_template_ls(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "rm"))
		return cmd_template_rm(argc - 1, argv + 1);
	if (argc >= 2 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr,
		"emberctl: template: %s%s%s (build, save, ls, rm; see "
		"emberctl --help)\n",
		argc < 2 ? "which command?" : "unknown command '",
		argc < 2 ? "" : argv[1], argc < 2 ? "" : "'");
	return 2;
}

/* Make sure fds 0-2 are open: our own files must not land there. */
static void sane_stdio(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 &&
		    open("/dev/null", fd ? O_WRONLY : O_RDONLY) < 0)
			_exit(EXIT_OWN);
}

int main(int argc, char **argv)
{
	const char *cmd;

	sane_stdio();
	signal(SIGPIPE, SIG_IGN);
	opterr = 0; /* bad_option() speaks instead */
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	cmd = argv[1];
	argc--;
	argv++;
	if (!strcmp(cmd, "run"))
		return cmd_run(argc, argv);
	if (!strcmp(cmd, "exec"))
		return cmd_exec(argc, argv);
	if (!strcmp(cmd, "cp"))
		return cmd_cp(argc, argv);
	if (!strcmp(cmd, "ls"))
		return cmd_ls(argc, argv);
	if (!strcmp(cmd, "kill"))
		return cmd_kill(argc, argv);
	if (!strcmp(cmd, "pause"))
		return cmd_pause(argc, argv, true);
	if (!strcmp(cmd, "resume"))
		return cmd_pause(argc, argv, false);
	if (!strcmp(cmd, "template"))
		return cmd_template(argc, argv);
	if (!strcmp(cmd, "ttl"))
		return cmd_ttl(argc, argv);
	if (!strcmp(cmd, "run-code"))
		return cmd_run_code(argc, argv);
	if (!strcmp(cmd, "context"))
		return cmd_context(argc, argv);
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") ||
	    !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr,
		"emberctl: unknown command '%s' (run, exec, cp, ls, pause, "
		"resume, kill, ttl, template, run-code, context; see "
		"emberctl "
		"--help)\n",
		cmd);
	return 2;
}
