// SPDX-License-Identifier: Apache-2.0
/*
 * emberctl run: a new sandbox, restored from a template or booted, its id
 * printed once its agent answers.
 */

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../sandbox/jail.h"
#include "../sandbox/sandbox.h"
#include "../sandbox/template.h"
#include "cli.h"
#include "commands.h"
#include "help.h"

#define DEF_TEMPLATE "default" /* plain `run` restores it when it exists */

int cmd_run(int argc, char **argv)
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
		{ "spare-drives", required_argument, NULL, 'S' },
		{ "on-timeout", required_argument, NULL, 'O' },
		{ "auto-resume", no_argument, NULL, 'A' },
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
			if (cli__parse_machine(c, optarg, &o.mem_mib, &o.vcpus))
				return 2;
			boot_opt = c == 'm' ? "--mem" : "--vcpus";
			break;
		case 't':
			if (cli__parse_uint("--ttl", optarg, 0,
					    100U * 365 * 86400, &o.ttl_s))
				return 2;
			break;
		case 'b':
			if (cli__parse_uint("--boot-timeout", optarg, 1, 86400,
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
			if (cli__template_name(optarg))
				return 2;
			o.template_name = optarg;
			break;
		case 'B':
			boot = true;
			break;
		case 'N':
			if (cli__parse_net(argc, argv, &o.net_mode))
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
			if (cli__parse_uint(c == 'U' ? "--jail-uid" :
						       "--jail-gid",
					    optarg, 1, 4294967294U, &jail_id))
				return 2;
			if (c == 'U')
				o.jail_uid = (uid_t)jail_id;
			else
				o.jail_gid = (gid_t)jail_id;
			jail = true;
			break;
		case 'S':
			if (cli__parse_uint("--spare-drives", optarg, 0,
					    SANDBOX_MAX_SPARE_DRIVES,
					    &o.spare_drives))
				return 2;
			break;
		case 'O':
			if (strcmp(optarg, "pause") && strcmp(optarg, "kill")) {
				fprintf(stderr,
					"emberctl: --on-timeout wants pause or "
					"kill, not '%s'\n",
					optarg);
				return 2;
			}
			o.ttl_park = !strcmp(optarg, "pause");
			break;
		case 'A':
			o.auto_resume = true;
			break;
		case 'h':
			help__usage(stdout);
			return 0;
		default:
			cli__bad_option("run", argv);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "emberctl: run takes no arguments: %s\n",
			argv[optind]);
		return 2;
	}
	if (o.ttl_park && !o.ttl_s) {
		fprintf(stderr, "emberctl: run --on-timeout pause: the sandbox "
				"has no TTL (--ttl 0)\n");
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
	if (cli__default_path("ember", NULL, "EMBER_BIN", "ember", 1, ember,
			      sizeof(ember)))
		return 1;
	if (!o.template_name &&
	    (cli__default_path("kernel", kernel_opt, "EMBER_KERNEL",
			       "guest/vmlinux", 0, kernel, sizeof(kernel)) ||
	     cli__default_path("rootfs", rootfs_opt, "EMBER_ROOTFS",
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
		if (cli__default_path("ember-jailer", NULL, "EMBER_JAILER_BIN",
				      "ember-jailer", 1, jailer,
				      sizeof(jailer)))
			return 1;
		o.jailer = jailer;
		o.jail_uid = o.jail_uid ? o.jail_uid : JAIL_DEF_UID;
		o.jail_gid = o.jail_gid ? o.jail_gid : JAIL_DEF_GID;
	}
	cli__block_stops(0);
	if (sandbox__run(&o, id, err, sizeof(err)) < 0) {
		cli__report(err);
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
