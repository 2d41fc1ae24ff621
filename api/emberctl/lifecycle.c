// SPDX-License-Identifier: Apache-2.0
/*
 * emberctl's life-cycle commands: ls, kill, ttl, pause (in memory or
 * parked on disk), resume, and swap-drive (a spare drive's file).
 */

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../sandbox/jail.h"
#include "../sandbox/sandbox.h"
#include "../sandbox/spare.h"
#include "cli.h"
#include "commands.h"
#include "help.h"

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

int cmd_ls(int argc, char **argv)
{
	struct sandbox_info *v;
	int64_t now = (int64_t)time(NULL);
	char err[512], age[16], ttl[16], pid[16], when[16];
	const char *net;
	size_t n;

	(void)argv;
	if (argc > 1) {
		fprintf(stderr, "emberctl: ls takes no arguments\n");
		return 2;
	}
	if (sandbox__list(&v, &n, err, sizeof(err)) < 0) {
		cli__report(err);
		return 1;
	}
	printf("%-12s  %-8s  %7s  %5s  %-7s  %-7s  %-7s  %-12s  %-9s  %s\n",
	       "ID", "PID", "MEM", "VCPUS", "STATE", "AGE", "TTL", "ON-TIMEOUT",
	       "NET", "TEMPLATE");
	for (size_t i = 0; i < n; i++) {
		const struct sandbox_info *s = &v[i];

		/* The wall clock's: after a jump back, 0 rather than less. */
		fmt_dur(s->created && now > s->created ? now - s->created : 0,
			age, sizeof(age));
		if (!s->ready)
			snprintf(ttl, sizeof(ttl), "booting");
		else if (!s->ttl_s)
			snprintf(ttl, sizeof(ttl), "-");
		else
			fmt_dur(sandbox__ttl_left(s), ttl, sizeof(ttl));
		if (s->ember && !s->parked)
			snprintf(pid, sizeof(pid), "%d", (int)s->ember);
		else
			snprintf(pid, sizeof(pid), "-");
		/* "-": no network device; else its mode (none too). */
		net = s->net_dev ? net__mode_name(s->net_mode) : "-";
		/* What its TTL's end does; "+resume": run --auto-resume. */
		snprintf(when, sizeof(when), "%s%s",
			 s->ttl_park ? "pause" : "kill",
			 s->auto_resume ? "+resume" : "");
		printf("%-12s  %-8s  %6uM  %5u  %-7s  %-7s  %-7s  %-12s  %-9s  "
		       "%s\n",
		       s->id, pid, s->mem_mib, s->vcpus, sandbox__state_name(s),
		       age, ttl, when, net,
		       s->template_name[0] ? s->template_name : "-");
	}
	free(v);
	return fflush(stdout) == 0 ? 0 : 1;
}

int cmd_kill(int argc, char **argv)
{
	struct sandbox_info sb;
	char err[512];
	int status = 0, rc;

	if (argc < 2) {
		fprintf(stderr, "emberctl: usage: emberctl kill ID...\n");
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		help__usage(stdout);
		return 0;
	}
	cli__block_stops(0); /* finish what was started: no half-removed dirs */
	for (int i = 1; i < argc; i++) {
		rc = sandbox__find(argv[i], &sb, err, sizeof(err));
		if (rc == 0)
			rc = sandbox__kill(&sb, err, sizeof(err));
		if (rc < 0) {
			cli__report(err);
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
int cmd_ttl(int argc, char **argv)
{
	struct sandbox_info sb;
	unsigned int ttl_s;
	char err[512];
	int rc;

	if (argc == 2 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		help__usage(stdout);
		return 0;
	}
	if (argc != 3) {
		fprintf(stderr, "emberctl: usage: emberctl ttl ID SECONDS\n");
		return 2;
	}
	if (cli__parse_uint("ttl", argv[2], 1, 31536000, &ttl_s))
		return 2;
	rc = sandbox__find(argv[1], &sb, err, sizeof(err));
	if (rc == 0)
		rc = sandbox__renew(&sb, ttl_s, err, sizeof(err));
	if (rc < 0) {
		cli__report(err);
		return 1;
	}
	printf("%s\n", sb.id);
	return fflush(stdout) == 0 ? 0 : 1;
}

/* swap-drive ID SLOT [FILE]: FILE into spare drive SLOT, else its own. */
int cmd_swap_drive(int argc, char **argv)
{
	struct sandbox_info sb;
	unsigned int slot;
	char err[1024], *abs = NULL;
	int rc;

	if (argc == 2 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		help__usage(stdout);
		return 0;
	}
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "emberctl: usage: emberctl swap-drive ID SLOT "
				"[FILE]\n");
		return 2;
	}
	if (cli__parse_uint("swap-drive SLOT", argv[2], 0,
			    SANDBOX_MAX_SPARE_DRIVES - 1, &slot))
		return 2;
	if (argc == 4) {
		abs = realpath(argv[3], NULL);
		if (!abs) {
			fprintf(stderr, "emberctl: swap-drive: %s: %s\n",
				argv[3], strerror(errno));
			return 1;
		}
	}
	rc = sandbox__find(argv[1], &sb, err, sizeof(err));
	if (rc == 0)
		rc = sandbox__swap_drive(&sb, slot, abs, err, sizeof(err));
	free(abs);
	if (rc < 0) {
		cli__report(err);
		return 1;
	}
	printf("%s\n", sb.id);
	return fflush(stdout) == 0 ? 0 : 1;
}

/*
 * pause [--to-disk] ID... / resume [--boot-timeout S] ID...: each id
 * printed once done.
 */
static int pause_or_resume(int argc, char **argv, bool pause)
{
	const char *cmd = pause ? "pause" : "resume";
	unsigned int timeout_s = SANDBOX_DEF_BOOT_S;
	char ember[PATH_MAX] = "", err[4096];
	struct sandbox_info sb;
	bool to_disk = false;
	int status = 0, rc, i, nids = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			help__usage(stdout);
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
			if (cli__parse_uint("--boot-timeout", argv[++i], 1,
					    86400, &timeout_s))
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
	cli__block_stops(0); /* a park or a restore is seen through */
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
			    cli__default_path("ember", NULL, "EMBER_BIN",
					      "ember", 1, ember, sizeof(ember)))
				return 1;
			rc = sandbox__resume(&sb, ember, timeout_s, err,
					     sizeof(err));
		}
		if (rc < 0) {
			cli__report(err);
			status = 1;
			continue;
		}
		printf("%s\n", sb.id);
	}
	return fflush(stdout) == 0 ? status : 1;
}

int cmd_pause(int argc, char **argv)
{
	return pause_or_resume(argc, argv, true);
}

int cmd_resume(int argc, char **argv)
{
	return pause_or_resume(argc, argv, false);
}
