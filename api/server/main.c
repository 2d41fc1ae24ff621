// SPDX-License-Identifier: Apache-2.0
/*
 * ember's main: the command line, at the top of the house.  The only file
 * that knows every module: it starts the event loop and the control
 * interface (vmm/control.h), turns the flags into control calls (the first
 * client of that interface), a --config-file into the same calls
 * (config_file.h), serves the control socket with --api-sock (server.h),
 * and waits for the VM's end.  vmm/ is a library below it: nothing there
 * includes api/.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../../vmm/config.h"
#include "../../vmm/control.h"
#include "../../vmm/event.h"
#include "../../vmm/seccomp/seccomp.h"
#include "../../vmm/log.h"
#include "../../vmm/persist/persist.h"
#include "../../vmm/vm.h"
#include "config_file.h"
#include "routes.h"
#include "server.h"

#define EMBER_VERSION "0.1.0"
/* Firecracker's socket when neither --api-sock nor --no-api is given. */
#define DEFAULT_API_SOCK "/run/firecracker.socket"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ember --kernel PATH [options]\n"
		"       ember --api-sock PATH [options]\n"
		"       ember --config-file FILE [--no-api] [options]\n"
		"       ember merge-diff DIFF_STATE DIFF_MEM OUT_STATE OUT_MEM\n"
		"Boot a Linux microVM on /dev/kvm.\n"
		"\n"
		"  --api-sock PATH    serve Firecracker's API (HTTP/1.1, JSON) on the\n"
		"                     Unix socket PATH; without --kernel or\n"
		"                     --config-file the VM waits for InstanceStart\n"
		"  --config-file FILE configure from Firecracker's JSON (the shape of\n"
		"                     GET /vm/config) and start at once; as with\n"
		"                     Firecracker the socket is then\n"
		"                     " DEFAULT_API_SOCK
		" unless --api-sock or --no-api\n"
		"  --no-api           no control socket (the default with --kernel)\n"
		"  --id ID            the instance id GET / reports\n"
		"  --kernel PATH      ELF vmlinux or bzImage (x86_64, 64-bit boot protocol)\n"
		"  --initrd PATH      initramfs (uncompressed cpio is fastest)\n"
		"  --append ARGS      extra kernel arguments (they win over ember's defaults)\n"
		"  --mem MIB          guest RAM in MiB (default 128; ember's guest needs 32)\n"
		"  --vcpus N          vCPUs, 1-%d (default 1)\n"
		"  --console KIND     stdio (default), none, or file:PATH\n"
		"  --run CMD          have ember's guest init run CMD with /bin/sh -c;\n"
		"                     ember exits with its status\n"
		"  --boot-timer       report the guest's boot-timer write (init start)\n"
		"  --drive path=FILE[,ro][,root][,id=NAME][,bw=BYTES/MS][,ops=N/MS]\n"
		"                     a virtio-blk disk on a raw image or an ember\n"
		"                     overlay (repeatable, up to 16); root: it is\n"
		"                     /dev/vda and the root filesystem; bw, ops: a\n"
		"                     rate limit of BYTES (requests N) per MS ms\n"
		"  --no-rng           no virtio-rng entropy device\n"
		"  --vsock cid=N,uds=PATH\n"
		"                     virtio-vsock for guest CID N; the host side is\n"
		"                     the Unix socket PATH (CONNECT <port>); guest\n"
		"                     connections to port P reach PATH_P\n"
		"  --net tap=NAME[,mac=MAC][,id=ID]\n"
		"                     a virtio-net interface on the existing tap NAME\n"
		"                     (repeatable, up to %d; the first is the guest's\n"
		"                     eth0); give the guest its address with\n"
		"                     --append ip=ADDR::GW:MASK::eth0:off\n"
		"  --stats            print timings, VM exits and memory at the end\n"
		"  --pvm auto|on|off  PVM host profile (default auto: detected)\n"
		"  --no-seccomp       no seccomp filters (for debugging only; a\n"
		"                     warning says so at every start).  By default\n"
		"                     each thread (main, event, vCPU) runs under its\n"
		"                     own allow-list once the VM starts\n"
		"  -v, --verbose      more log lines (twice: debug)\n"
		"  -h, --help         this text\n"
		"  --version          print the version\n"
		"\n"
		"Exit status: the guest command's with --run, 0 after a guest reset\n"
		"without --run, %d for errors of ember itself, 2 for bad usage,\n"
		"%d when a thread made a system call its seccomp filter forbids\n"
		"(after one line naming the thread and the call).\n",
		CONFIG_MAX_VCPUS, CONFIG_MAX_NETS, VM_EXIT_EMBER_ERROR,
		SECCOMP_EXIT_STATUS);
}

/*
 * --drive path=FILE[,ro][,root][,id=NAME][,bw=BYTES/MS][,ops=N/MS]: fill
 * @d from @arg (which it splits in place); bw and ops are the rate
 * limiter's buckets (config__parse_bucket()).  Returns 0 or -1 after
 * logging the problem.
 */
static int parse_drive(char *arg, struct drive_config *d)
{
	char *tok, *save = NULL;
	int bad = 0;

	memset(d, 0, sizeof(*d));
	for (tok = strtok_r(arg, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strncmp(tok, "path=", 5) && tok[5])
			d->path = tok + 5;
		else if (!strncmp(tok, "id=", 3) && tok[3] &&
			 strlen(tok + 3) <= 20)
			d->id = tok + 3;
		else if (!strcmp(tok, "ro"))
			d->read_only = true;
		else if (!strcmp(tok, "root"))
			d->root = true;
		else if (!strncmp(tok, "bw=", 3))
			bad = config__parse_bucket(tok + 3,
						   &d->rate_limiter.bandwidth);
		else if (!strncmp(tok, "ops=", 4))
			bad = config__parse_bucket(tok + 4,
						   &d->rate_limiter.ops);
		else
			bad = -EINVAL;
		if (bad) {
			log_error(
				"--drive: unknown or bad part '%s' (use "
				"path=FILE[,ro][,root][,id=NAME][,bw=BYTES/MS]"
				"[,ops=N/MS], id up to 20 bytes)",
				tok);
			return -1;
		}
	}
	if (!d->path) {
		log_error("--drive: path=FILE is required");
		return -1;
	}
	return 0;
}

/*
 * --vsock cid=N,uds=PATH: fill @v from @arg (split in place).  Returns 0
 * or -1 after logging the problem.
 */
static int parse_vsock(char *arg, struct vsock_config *v)
{
	char *tok, *save = NULL;
	bool cid = false;

	memset(v, 0, sizeof(*v));
	for (tok = strtok_r(arg, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strncmp(tok, "cid=", 4) &&
		    !config__parse_uint(tok + 4, 3, UINT32_MAX,
					&v->guest_cid)) {
			cid = true;
		} else if (!strncmp(tok, "uds=", 4) && tok[4]) {
			v->uds_path = tok + 4;
		} else {
			log_error("--vsock: unknown or bad part '%s' (use "
				  "cid=N,uds=PATH, N from 3 to 4294967295)",
				  tok);
			return -1;
		}
	}
	if (!cid || !v->uds_path) {
		log_error("--vsock: cid=N and uds=PATH are both required");
		return -1;
	}
	return 0;
}

/*
 * --net tap=NAME[,mac=MAC][,id=ID]: fill @n from @arg (split in place).
 * Returns 0 or -1 after logging the problem; the rest is checked by
 * control__set_net().
 */
static int parse_net(char *arg, struct net_config *n)
{
	char *tok, *save = NULL;

	memset(n, 0, sizeof(*n));
	for (tok = strtok_r(arg, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strncmp(tok, "tap=", 4) && tok[4]) {
			n->host_dev_name = tok + 4;
		} else if (!strncmp(tok, "mac=", 4) &&
			   !config__parse_mac(tok + 4, n->guest_mac)) {
			n->has_mac = true;
		} else if (!strncmp(tok, "id=", 3) && tok[3]) {
			n->iface_id = tok + 3;
		} else {
			log_error("--net: unknown or bad part '%s' (use "
				  "tap=NAME[,mac=MAC][,id=ID], MAC a unicast "
				  "aa:bb:cc:dd:ee:ff)",
				  tok);
			return -1;
		}
	}
	if (!n->host_dev_name) {
		log_error("--net: tap=NAME is required");
		return -1;
	}
	return 0;
}

enum {
	OPT_KERNEL = 256,
	OPT_API_SOCK,
	OPT_CONFIG_FILE,
	OPT_NO_API,
	OPT_ID,
	OPT_DRIVE,
	OPT_NO_RNG,
	OPT_VSOCK,
	OPT_NET,
	OPT_INITRD,
	OPT_APPEND,
	OPT_MEM,
	OPT_VCPUS,
	OPT_CONSOLE,
	OPT_RUN,
	OPT_BOOT_TIMER,
	OPT_STATS,
	OPT_PVM,
	OPT_NO_SECCOMP,
	OPT_VERSION,
};

/* What the flags say beyond the VM's configuration. */
struct cli {
	const char *api_sock, *config_file, *id;
	bool no_api, cpus_set, mem_set, rng_set, no_seccomp;
};

static int parse_args(int argc, char **argv, struct vm_config *cfg,
		      struct cli *cli)
{
	static const struct option opts[] = {
		{ "kernel", required_argument, NULL, OPT_KERNEL },
		{ "api-sock", required_argument, NULL, OPT_API_SOCK },
		{ "config-file", required_argument, NULL, OPT_CONFIG_FILE },
		{ "no-api", no_argument, NULL, OPT_NO_API },
		{ "id", required_argument, NULL, OPT_ID },
		{ "initrd", required_argument, NULL, OPT_INITRD },
		{ "append", required_argument, NULL, OPT_APPEND },
		{ "mem", required_argument, NULL, OPT_MEM },
		{ "vcpus", required_argument, NULL, OPT_VCPUS },
		{ "console", required_argument, NULL, OPT_CONSOLE },
		{ "run", required_argument, NULL, OPT_RUN },
		{ "boot-timer", no_argument, NULL, OPT_BOOT_TIMER },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "pvm", required_argument, NULL, OPT_PVM },
		{ "no-seccomp", no_argument, NULL, OPT_NO_SECCOMP },
		{ "drive", required_argument, NULL, OPT_DRIVE },
		{ "no-rng", no_argument, NULL, OPT_NO_RNG },
		{ "vsock", required_argument, NULL, OPT_VSOCK },
		{ "net", required_argument, NULL, OPT_NET },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	int verbose = 0, roots = 0, c;
	char err[160];

	memset(cfg, 0, sizeof(*cfg));
	memset(cli, 0, sizeof(*cli));
	opterr = 0; /* one error line of ours instead of getopt's */
	cfg->mem_mib = 128;
	cfg->vcpus = 1;
	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (c) {
		case OPT_KERNEL:
			cfg->kernel_path = optarg;
			break;
		case OPT_API_SOCK:
			cli->api_sock = optarg;
			break;
		case OPT_CONFIG_FILE:
			cli->config_file = optarg;
			break;
		case OPT_NO_API:
			cli->no_api = true;
			break;
		case OPT_ID:
			cli->id = optarg;
			break;
		case OPT_INITRD:
			cfg->initrd_path = optarg;
			break;
		case OPT_APPEND:
			cfg->append = optarg;
			break;
		case OPT_MEM:
			if (config__parse_mem(optarg, &cfg->mem_mib, err,
					      sizeof(err))) {
				log_error("--mem %s: %s", optarg, err);
				return -1;
			}
			break;
		case OPT_VCPUS:
			if (config__parse_vcpus(optarg, &cfg->vcpus, err,
						sizeof(err))) {
				log_error("--vcpus %s: %s", optarg, err);
				return -1;
			}
			break;
		case OPT_CONSOLE:
			if (!strcmp(optarg, "stdio")) {
				cfg->console = CONSOLE_STDIO;
			} else if (!strcmp(optarg, "none")) {
				cfg->console = CONSOLE_NONE;
			} else if (!strncmp(optarg, "file:", 5) && optarg[5]) {
				cfg->console = CONSOLE_FILE;
				cfg->console_path = optarg + 5;
			} else {
				log_error("--console %s: use stdio, none or "
					  "file:PATH",
					  optarg);
				return -1;
			}
			break;
		case OPT_RUN:
			cfg->run_cmd = optarg;
			cfg->run_len = strlen(optarg);
			break;
		case OPT_BOOT_TIMER:
			cfg->boot_timer = true;
			break;
		case OPT_STATS:
			cfg->stats = true;
			break;
		case OPT_PVM:
			if (!strcmp(optarg, "auto")) {
				cfg->pvm = PVM_AUTO;
			} else if (!strcmp(optarg, "on")) {
				cfg->pvm = PVM_ON;
			} else if (!strcmp(optarg, "off")) {
				cfg->pvm = PVM_OFF;
			} else {
				log_error("--pvm %s: use auto, on or off",
					  optarg);
				return -1;
			}
			break;
		case OPT_DRIVE:
			if (cfg->nr_drives == CONFIG_MAX_DRIVES) {
				log_error("--drive: at most %d drives",
					  CONFIG_MAX_DRIVES);
				return -1;
			}
			if (parse_drive(optarg, &cfg->drives[cfg->nr_drives]))
				return -1;
			if (cfg->drives[cfg->nr_drives].root && roots++) {
				log_error(
					"--drive: only one drive can be root");
				return -1;
			}
			cfg->nr_drives++;
			break;
		case OPT_NO_RNG:
			cfg->no_rng = true;
			break;
		case OPT_NO_SECCOMP:
			cli->no_seccomp = true;
			break;
		case OPT_VSOCK:
			if (parse_vsock(optarg, &cfg->vsock))
				return -1;
			break;
		case OPT_NET:
			if (cfg->nr_nets == CONFIG_MAX_NETS) {
				log_error("--net: at most %d interfaces",
					  CONFIG_MAX_NETS);
				return -1;
			}
			if (parse_net(optarg, &cfg->nets[cfg->nr_nets]))
				return -1;
			cfg->nr_nets++;
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case OPT_VERSION:
			/*
			 * Firecracker's shape: callers (Kata's fc.go) take the
			 * second word of the first line as the version and
			 * compare it with the Firecracker release they need.
			 */
			printf("Firecracker v%s (ember %s)\n\n"
			       "ember %s follows Firecracker's API %s.\n",
			       ROUTES_FIRECRACKER_VERSION, EMBER_VERSION,
			       EMBER_VERSION, ROUTES_FIRECRACKER_VERSION);
			exit(0);
		default:
			log_error(
				"unknown option or missing value: %s (see --help)",
				argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		log_error("unexpected argument '%s' (see --help)",
			  argv[optind]);
		return -1;
	}
	if (!cfg->kernel_path && !cli->api_sock && !cli->config_file) {
		log_error("--kernel PATH is required (see --help)");
		return -1;
	}
	if (cli->no_api && cli->api_sock) {
		log_error("--no-api and --api-sock exclude each other");
		return -1;
	}
	/* Firecracker serves its default socket beside a config file. */
	if (cli->config_file && !cli->api_sock && !cli->no_api)
		cli->api_sock = DEFAULT_API_SOCK;
	log__set_level(verbose >= 2 ? LOG_DEBUG :
		       verbose	    ? LOG_INFO :
				      LOG_WARN);
	return 0;
}

/*
 * Make sure fds 0-2 are open, so that no file ember opens (/dev/kvm, the
 * kernel) lands on one of them when ember was started with them closed.
 */
static void std_fds_open(void)
{
	int fd;

	do {
		fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	} while (fd >= 0 && fd <= STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
}

/*
 * The flags as control calls, in Firecracker's order: machine, boot
 * source, drives (the root first, named drive0, drive1, ... unless id=
 * names them), vsock, entropy; ember's own options.  Returns 0, 2 for a
 * usage error or VM_EXIT_EMBER_ERROR, after one error line.
 */
static int apply_cli(struct control *c, const struct vm_config *cfg)
{
	struct control_options o = {
		.console = cfg->console,
		.console_path = cfg->console_path,
		.run_cmd = cfg->run_cmd,
		.boot_timer = cfg->boot_timer,
		.stats = cfg->stats,
		.pvm = cfg->pvm,
	};
	struct control_err e;
	unsigned int i, pass, n = 0;
	char ids[CONFIG_MAX_DRIVES][16], net_ids[CONFIG_MAX_NETS][16];

	if (control__set_options(c, &o, &e)) {
		log_error("%s", e.msg);
		return 2;
	}
	/*
	 * Without --kernel the configuration comes from a config file or the
	 * control socket: the flags below are the VM's, they only come with
	 * --kernel (and then override a config file's).
	 */
	if (!cfg->kernel_path)
		return 0;
	if (control__set_machine(c, cfg->vcpus, cfg->mem_mib, false, false, &e))
		goto fail;
	if (cfg->kernel_path &&
	    control__set_boot_source(c, cfg->kernel_path, cfg->initrd_path,
				     cfg->append, &e))
		goto fail;
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < cfg->nr_drives; i++) {
			const struct drive_config *d = &cfg->drives[i];
			struct control_drive cd = {
				.path_on_host = d->path,
				.is_root_device = d->root,
				.is_read_only = d->read_only,
				.rate_limiter = d->rate_limiter,
			};

			if ((pass == 0) != d->root)
				continue;
			snprintf(ids[n], sizeof(ids[n]), "drive%u", n);
			cd.drive_id = d->id ? d->id : ids[n];
			n++;
			if (control__set_drive(c, &cd, &e))
				goto fail;
		}
	}
	if (cfg->vsock.uds_path && control__set_vsock(c, cfg->vsock.guest_cid,
						      cfg->vsock.uds_path, &e))
		goto fail;
	for (i = 0; i < cfg->nr_nets; i++) {
		const struct net_config *nc = &cfg->nets[i];
		struct control_net cn = {
			.iface_id = nc->iface_id,
			.host_dev_name = nc->host_dev_name,
			.has_mac = nc->has_mac,
		};

		if (!cn.iface_id) {
			snprintf(net_ids[i], sizeof(net_ids[i]), "net%u", i);
			cn.iface_id = net_ids[i];
		}
		memcpy(cn.guest_mac, nc->guest_mac, 6);
		if (control__set_net(c, &cn, &e))
			goto fail;
	}
	if (control__set_entropy(c, !cfg->no_rng, &e))
		goto fail;
	return 0;
fail:
	log_error("%s", e.msg);
	return VM_EXIT_EMBER_ERROR;
}

/*
 * The signal that asked ember to stop (SIGINT, SIGTERM, SIGHUP), the
 * eventfd that wakes the event thread for it, and the VM it stops once
 * built: process-wide because a signal handler can reach nothing else.
 */
static volatile sig_atomic_t stop_signal;
static int stop_fd = -1;
static struct control *the_control;

static void on_signal(int sig)
{
	uint64_t one = 1;
	int saved = errno;

	if (!stop_signal)
		stop_signal = sig;
	/* A failed write means the counter is already non-zero: woken. */
	if (stop_fd >= 0 && write(stop_fd, &one, sizeof(one)) < 0)
		one = 0;
	errno = saved;
}

/* On the event thread: tell the control (main checks before it exists). */
static void on_stop_fd(void *opaque, int fd)
{
	struct control *c = __atomic_load_n(&the_control, __ATOMIC_ACQUIRE);
	uint64_t n;

	(void)opaque;
	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		return;
	if (c)
		control__signal(c, stop_signal);
}

/*
 * ember merge-diff DIFF_STATE DIFF_MEM OUT_STATE OUT_MEM: a Diff snapshot
 * and its base folded into a Full one (vmm/persist/persist.h).
 */
static int merge_diff(int argc, char **argv)
{
	char why[PERSIST_WHY_MAX];

	if (argc != 6) {
		log_error("usage: ember merge-diff DIFF_STATE DIFF_MEM "
			  "OUT_STATE OUT_MEM");
		return 2;
	}
	if (persist__merge(argv[2], argv[3], argv[4], argv[5], why)) {
		log_error("merge-diff: %s", why);
		return VM_EXIT_EMBER_ERROR;
	}
	return 0;
}

/*
 * Every thread kind's seccomp filter, built now while every call is still
 * allowed (vmm/seccomp/seccomp.h), or the warning that there will be none.
 * Returns 0, or VM_EXIT_EMBER_ERROR after an error line.
 */
static int seccomp_prepare(const struct cli *cli, struct seccomp_set *sc)
{
	int ret;

	memset(sc, 0, sizeof(*sc));
	if (cli->no_seccomp) {
		fprintf(stderr,
			"ember: WARNING: --no-seccomp: no seccomp filters, "
			"ember's threads may make any system call (for "
			"debugging only)\n");
		return 0;
	}
	ret = seccomp__init();
	if (!ret)
		ret = seccomp__build_all(sc);
	if (ret) {
		log_error("seccomp: cannot prepare the filters: %s (run with "
			  "--no-seccomp to go without)",
			  strerror(-ret));
		return VM_EXIT_EMBER_ERROR;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct api_server *api = NULL;
	struct control *c = NULL;
	struct event_loop *el;
	struct seccomp_set sc;
	struct control_err e;
	struct vm_config cfg;
	struct cli cli;
	int status, ret;

	std_fds_open();
	if (argc > 1 && !strcmp(argv[1], "merge-diff"))
		return merge_diff(argc, argv);
	if (parse_args(argc, argv, &cfg, &cli))
		return 2;
	/*
	 * A console reader that has gone (ember ... | head) must not kill
	 * ember: its writes fail with EPIPE instead, and the guest's output
	 * is dropped while the VM runs on (vmm/backends/console_out.h).
	 */
	signal(SIGPIPE, SIG_IGN);
	status = seccomp_prepare(&cli, &sc);
	if (status)
		goto out_seccomp;
	status = VM_EXIT_EMBER_ERROR;
	el = event__create();
	if (!el)
		goto out_seccomp;
	stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (stop_fd < 0 || event__add(el, stop_fd, on_stop_fd, NULL) ||
	    event__start(el)) {
		log_error("event loop: %s", strerror(errno));
		goto out_event;
	}
	c = control__create(el, cli.id);
	if (!c)
		goto out_event;
	__atomic_store_n(&the_control, c, __ATOMIC_RELEASE);
	if (!cli.no_seccomp)
		control__set_seccomp(c, &sc);
	/* Stop the guest cleanly (and restore the terminal) on these. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (stop_signal)
		control__signal(c, stop_signal);

	status = 0;
	if (cli.config_file && api_config__apply(c, cli.config_file, &e)) {
		log_error("%s: %s", cli.config_file, e.msg);
		status = VM_EXIT_EMBER_ERROR;
	}
	if (!status)
		status = apply_cli(c, &cfg);
	if (!status && cli.api_sock) {
		api = api_server__start(el, c, cli.api_sock, &e);
		if (!api) {
			log_error("%s", e.msg);
			status = VM_EXIT_EMBER_ERROR;
		}
	}
	/* A failed start has logged its reason (the builder's line). */
	if (!status && (cfg.kernel_path || cli.config_file) &&
	    control__start(c, &e))
		status = VM_EXIT_EMBER_ERROR;
	/*
	 * From here on this thread only waits for the VM's end and frees
	 * it: its own filter (vmm/seccomp/filter_main.c).
	 */
	if (!status && !cli.no_seccomp) {
		ret = seccomp__install(&sc, SECCOMP_MAIN, "main");
		if (ret) {
			log_error("seccomp: the main thread's filter: %s",
				  strerror(-ret));
			status = VM_EXIT_EMBER_ERROR;
		}
	}
	if (!status)
		status = control__wait(c);
	api_server__stop(api);
out_event:
	event__destroy(el);
	control__destroy(c); /* NULL when it was never made */
out_seccomp:
	seccomp__free_all(&sc);
	return status;
}
