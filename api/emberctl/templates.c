// SPDX-License-Identifier: Apache-2.0
/* emberctl template build|save|ls|rm: the snapshots that `run` restores. */

#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../sandbox/files.h"
#include "../sandbox/sandbox.h"
#include "../sandbox/template.h"
#include "cli.h"
#include "commands.h"
#include "help.h"

#define BUILD_TTL_S 3600 /* template build: the longest it may take */

/* No control character in @s: it fits a line of the template's info. */
static bool one_line(const char *s)
{
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			return false;
	return true;
}

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
	if (t->spare_drives != o->spare_drives)
		return "another number of spare drives";
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
		{ "replace", no_argument, NULL, 'E' },
		{ "no-interp", no_argument, NULL, 'n' },
		{ "no-net", no_argument, NULL, 'x' },
		{ "net", optional_argument, NULL, 'N' },
		{ "from-image", required_argument, NULL, 'I' },
		{ "dockerfile", required_argument, NULL, 'F' },
		{ "context", required_argument, NULL, 'C' },
		{ "build-arg", required_argument, NULL, 'A' },
		{ "disk-mib", required_argument, NULL, 'D' },
		{ "start-cmd", required_argument, NULL, 'S' },
		{ "ready-cmd", required_argument, NULL, 'R' },
		{ "ready-port", required_argument, NULL, 'P' },
		{ "ready-timeout", required_argument, NULL, 'T' },
		{ "spare-drives", required_argument, NULL, 'Y' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char ember[PATH_MAX], kernel[PATH_MAX], rootfs[PATH_MAX], err[4096];
	char init[PATH_MAX], agent[PATH_MAX], busybox[PATH_MAX],
		interp[PATH_MAX];
	const char *kernel_opt = NULL, *rootfs_opt = NULL, *name, *bname;
	char src_abs[PATH_MAX], stand_in[SANDBOX_TEMPLATE_MAX + 1] = "";
	struct template_image_opts io = { 0 };
	struct template_docker_opts dk = { 0 };
	char ctx[PATH_MAX];
	const char **bargs = NULL;
	struct template_times times = { 0 };
	unsigned int disk_mib = 0;
	struct template_build_opts o = {
		.mem_mib = SANDBOX_DEF_MEM,
		.vcpus = 1,
		.boot_timeout_s = SANDBOX_DEF_BOOT_S,
		.build_ttl_s = BUILD_TTL_S,
		.out_fd = 2,
	};
	const char **setup;
	struct template_info t;
	bool if_missing = false, replace = false;
	int c, rc = 2;

	/* --setup and --build-arg at most once per argument: argc bounds them. */
	setup = calloc((size_t)argc + 1, sizeof(*setup));
	bargs = calloc((size_t)argc + 1, sizeof(*bargs));
	if (!setup || !bargs) {
		free(setup);
		free(bargs);
		cli__report("out of memory");
		return 1;
	}
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
		case 'c':
			if (cli__parse_machine(c, optarg, &o.mem_mib, &o.vcpus))
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
			if (cli__parse_net(argc, argv, &o.net_mode))
				goto out;
			break;
		case 't':
			if (cli__parse_uint("--timeout", optarg, 1, 7 * 86400,
					    &o.build_ttl_s))
				goto out;
			break;
		case 'b':
			if (cli__parse_uint("--boot-timeout", optarg, 1, 86400,
					    &o.boot_timeout_s))
				goto out;
			break;
		case 'i':
			if_missing = true;
			break;
		case 'E':
			replace = true;
			break;
		case 'I':
			io.src = optarg;
			break;
		case 'F':
			dk.dockerfile = optarg;
			break;
		case 'C':
			dk.context = optarg;
			break;
		case 'A':
			if (!strchr(optarg, '=') || optarg[0] == '=') {
				fprintf(stderr,
					"emberctl: --build-arg wants K=V, not "
					"'%s'\n",
					optarg);
				goto out;
			}
			bargs[dk.n_build_args++] = optarg;
			break;
		case 'D':
			/* A sandbox's overlay takes a 512 GiB base. */
			if (cli__parse_uint("--disk-mib", optarg, 1, 1u << 19,
					    &disk_mib))
				goto out;
			break;
		case 'S':
			o.start_cmd = optarg;
			break;
		case 'R':
			o.ready_cmd = optarg;
			break;
		case 'P':
			if (cli__parse_uint("--ready-port", optarg, 1, 65535,
					    &o.ready_port))
				goto out;
			break;
		case 'T':
			if (cli__parse_uint("--ready-timeout", optarg, 1, 86400,
					    &o.ready_timeout_s))
				goto out;
			break;
		case 'Y':
			if (cli__parse_uint("--spare-drives", optarg, 0,
					    SANDBOX_MAX_SPARE_DRIVES,
					    &o.spare_drives))
				goto out;
			break;
		case 'h':
			help__usage(stdout);
			rc = 0;
			goto out;
		default:
			cli__bad_option("template build", argv);
			goto out;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "emberctl: usage: emberctl template build NAME "
				"[options] (see emberctl --help)\n");
		goto out;
	}
	name = argv[optind];
	if (cli__template_name(name))
		goto out;
	if (o.no_net && o.net_mode != NET_NONE) {
		fprintf(stderr,
			"emberctl: template build: --no-net and --net "
			"%s exclude each other\n",
			net__mode_name(o.net_mode));
		goto out;
	}
	/*
	 * An empty SRC is no image; a line break or other control
	 * character could not be recorded in the template's info (one
	 * record a line), which would refuse it only after the build.
	 */
	if (io.src && (!io.src[0] || !one_line(io.src))) {
		fprintf(stderr, "emberctl: template build: --from-image wants "
				"a SRC, without control characters\n");
		goto out;
	}
	if ((o.start_cmd && !o.start_cmd[0]) ||
	    (o.ready_cmd && !o.ready_cmd[0])) {
		fprintf(stderr, "emberctl: template build: --start-cmd and "
				"--ready-cmd want a command, not ''\n");
		goto out;
	}
	if (io.src && rootfs_opt) {
		fprintf(stderr, "emberctl: template build: --from-image and "
				"--rootfs exclude each other\n");
		goto out;
	}
	if (o.ready_timeout_s && !o.ready_cmd && !o.ready_port) {
		fprintf(stderr, "emberctl: template build: --ready-timeout "
				"goes with --ready-cmd or --ready-port\n");
		goto out;
	}
	if (disk_mib && !io.src) {
		fprintf(stderr, "emberctl: template build: --disk-mib goes "
				"with --from-image\n");
		goto out;
	}
	rc = 1;
	if (cli__default_path("ember", NULL, "EMBER_BIN", "ember", 1, ember,
			      sizeof(ember)) ||
	    cli__default_path("kernel", kernel_opt, "EMBER_KERNEL",
			      "guest/vmlinux", 0, kernel, sizeof(kernel)))
		goto out;
	if (io.src || dk.dockerfile) {
		/* ember's parts for the image's disk (image.h). */
		if (cli__default_path("ember's guest init", NULL,
				      "EMBER_GUEST_INIT", "guest/init", 0, init,
				      sizeof(init)) ||
		    cli__default_path("ember's guest agent", NULL,
				      "EMBER_GUEST_AGENT", "guest/agent", 0,
				      agent, sizeof(agent)) ||
		    cli__default_path("busybox (static: apt-get install "
				      "busybox-static)",
				      getenv("EMBER_BUSYBOX") ? NULL :
								"/bin/busybox",
				      "EMBER_BUSYBOX", NULL, 1, busybox,
				      sizeof(busybox)) ||
		    cli__default_path("ember's code interpreter", NULL,
				      "EMBER_GUEST_INTERP", "guest/interp", 0,
				      interp, sizeof(interp)))
			goto out;
		io.init = init;
		io.agent = agent;
		io.busybox = busybox;
		io.interp = o.no_interp ? NULL : interp;
		io.disk_mib = disk_mib;
		/*
		 * As the info records it (--if-missing compares them): the
		 * path absolute, so that it names the same from anywhere.
		 */
		if (io.src) {
			if (image__src_abs(io.src, src_abs, sizeof(src_abs))) {
				cli__report("--from-image: SRC too long");
				goto out;
			}
			io.src = src_abs;
		} else {
			char *abs = realpath(dk.dockerfile, NULL);

			if (abs && strlen(abs) < sizeof(src_abs)) {
				snprintf(src_abs, sizeof(src_abs), "%s", abs);
				dk.dockerfile = src_abs;
			}
			free(abs);
		}
		if (files__pathf(rootfs, sizeof(rootfs), "%s%s",
				 io.src ? "" : "dockerfile:",
				 io.src ? io.src : dk.dockerfile) ||
		    !one_line(rootfs)) {
			cli__report("the SRC or Dockerfile path is too long or "
				    "has a control character");
			goto out;
		}
		if (dk.dockerfile) {
			/* The context: else the Dockerfile's directory. */
			snprintf(ctx, sizeof(ctx), "%s", dk.dockerfile);
			if (!dk.context)
				dk.context = dirname(ctx);
			dk.build_args = bargs;
			dk.img = io;
		}
	} else if (cli__default_path("rootfs", rootfs_opt, "EMBER_ROOTFS",
				     "guest/rootfs.ext4", 0, rootfs,
				     sizeof(rootfs))) {
		goto out;
	}
	if ((if_missing || replace) &&
	    template__open(name, &t, NULL, err, sizeof(err)) == 0) {
		const char *why =
			replace ? "--replace" : stale(&t, kernel, rootfs, &o);
		char ids[256];
		size_t users;

		if (!why) {
			printf("%s\n", name);
			rc = fflush(stdout) == 0 ? 0 : 1;
			goto out;
		}
		/* A sandbox uses its files: the new one could not replace it. */
		if (template__users(name, &users, ids, sizeof(ids), err,
				    sizeof(err)) < 0) {
			cli__report(err);
			goto out;
		}
		if (users) {
			fprintf(stderr,
				"emberctl: template %s is %s (%s) but in use "
				"by %zu sandbox%s (%s): kill %s first\n",
				name,
				replace ? "to be replaced" : "out of date", why,
				users, users == 1 ? "" : "es", ids,
				users == 1 ? "it" : "them");
			goto out;
		}
		/*
		 * Built under a stand-in name, then put in its place in one
		 * step (template__replace): until then, and if the build
		 * fails, the old one stays as it is.
		 */
		snprintf(stand_in, sizeof(stand_in), "%.*s-rebuild-%u",
			 SANDBOX_TEMPLATE_MAX - 17, name, (unsigned)getpid());
		fprintf(stderr,
			"emberctl: template %s is %s (%s): building it again "
			"(it stays until the new one is built)\n",
			name, replace ? "to be replaced" : "out of date", why);
	}
	o.ember = ember;
	o.kernel = kernel;
	o.rootfs = rootfs;
	o.setup = setup;
	o.sig_fd = cli__block_stops(1);
	o.times = &times;
	bname = stand_in[0] ? stand_in : name;
	if ((dk.dockerfile ? template__build_dockerfile(&o, &dk, bname, err,
							sizeof(err)) :
	     io.src ? template__build_image(&o, &io, bname, err, sizeof(err)) :
		      template__build(&o, bname, err, sizeof(err))) < 0) {
		/* Its first line, then whether the old one is still there. */
		if (stand_in[0]) {
			size_t len = strlen(err);

			snprintf(err + len, sizeof(err) - len,
				 "%s(template %s is kept as it was)",
				 strchr(err, '\n') ? "\n" : " ", name);
		}
		cli__report(err);
		goto out;
	}
	if (stand_in[0] &&
	    template__replace(stand_in, name, err, sizeof(err)) < 0) {
		char why[512];

		cli__report(err);
		template__remove(stand_in, true, why, sizeof(why));
		goto out;
	}
	template_times__format(&times, err, sizeof(err));
	fprintf(stderr, "emberctl: built template %s: %s\n", name, err);
	printf("%s\n", name);
	rc = fflush(stdout) == 0 ? 0 : 1;
out:
	free(setup);
	free(bargs);
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
		cli__report(err);
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
			help__usage(stdout);
			return 0;
		} else if (argv[i][0] == '-') {
			fprintf(stderr,
				"emberctl: template rm: unknown option: '%s' "
				"(see emberctl --help)\n",
				argv[i]);
			return 2;
		} else if (cli__template_name(argv[i])) {
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
	cli__block_stops(0); /* no half-removed templates */
	for (i = 1; i < argc; i++) {
		if (argv[i][0] == '-')
			continue;
		if (template__remove(argv[i], force, err, sizeof(err)) < 0) {
			cli__report(err);
			status = 1;
			continue;
		}
		printf("%s\n", argv[i]);
	}
	return fflush(stdout) == 0 ? status : 1;
}

/* template info NAME: what its info file says, one key=value a line. */
static int cmd_template_info(int argc, char **argv)
{
	struct template_info t;
	char err[1024];
	size_t users;

	if (argc == 2 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		help__usage(stdout);
		return 0;
	}
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr,
			"emberctl: usage: emberctl template info NAME\n");
		return 2;
	}
	if (cli__template_name(argv[1]))
		return 2;
	if (template__open(argv[1], &t, NULL, err, sizeof(err)) < 0) {
		cli__report(err);
		return 1;
	}
	if (template__users(t.name, &users, NULL, 0, err, sizeof(err)) < 0)
		users = 0;
	printf("name=%s\nmem=%u\nvcpus=%u\ncreated=%lld\nkernel=%s\n"
	       "rootfs=%s\nsetup=%u\ninterp=%d\nnet=%d\nuser=%s\n"
	       "spare_drives=%u\nbytes=%llu\nsandboxes=%zu\n",
	       t.name, t.mem_mib, t.vcpus, (long long)t.created, t.kernel,
	       t.rootfs, t.setup, t.interp, t.net, t.user, t.spare_drives,
	       (unsigned long long)t.disk_bytes, users);
	return fflush(stdout) == 0 ? 0 : 1;
}

/* template save ID NAME: the running sandbox ID as template NAME. */
static int cmd_template_save(int argc, char **argv)
{
	struct sandbox_info sb;
	char err[1024];

	if (argc == 2 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		help__usage(stdout);
		return 0;
	}
	if (argc != 3 || argv[1][0] == '-' || argv[2][0] == '-') {
		fprintf(stderr, "emberctl: usage: emberctl template save ID "
				"NAME\n");
		return 2;
	}
	if (cli__template_name(argv[2]))
		return 2;
	cli__block_stops(0); /* the sandbox must not stay paused */
	if (sandbox__find(argv[1], &sb, err, sizeof(err)) < 0 ||
	    template__from_sandbox(&sb, argv[2], err, sizeof(err)) < 0) {
		cli__report(err);
		return 1;
	}
	printf("%s\n", argv[2]);
	return fflush(stdout) == 0 ? 0 : 1;
}

int cmd_template(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "build"))
		return cmd_template_build(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "save"))
		return cmd_template_save(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "ls"))
		return cmd_template_ls(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "rm"))
		return cmd_template_rm(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "info"))
		return cmd_template_info(argc - 1, argv + 1);
	if (argc >= 2 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		help__usage(stdout);
		return 0;
	}
	fprintf(stderr,
		"emberctl: template: %s%s%s (build, save, ls, info, rm; see "
		"emberctl --help)\n",
		argc < 2 ? "which command?" : "unknown command '",
		argc < 2 ? "" : argv[1], argc < 2 ? "" : "'");
	return 2;
}
