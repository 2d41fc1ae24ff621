// SPDX-License-Identifier: Apache-2.0
/*
 * emberctl's code interpreter commands (guest-init/INTERP.md):
 *
 *   emberctl run-code ID [--language L] [--context C] [--timeout S]
 *                     [--image-dir DIR] [--json] CODE|-
 *   emberctl context ls|create|restart|rm ID ...
 *
 * run-code streams the call's stdout and stderr as they come, then prints
 * the value of the last expression (and the text, or the markdown, of a
 * displayed result without an image), saves each image (PNG: a matplotlib
 * figure; JPEG; SVG) to a file it names, DIR/ID-N.png, .jpg or .svg, and
 * prints an error's traceback; --json prints the whole execution (every
 * member of every result) instead.  Its exit status is 0, 1 for an error
 * in the code, 124 for a timeout, 125 for its own troubles.  The
 * interpreter is started first in a sandbox that lacks one (a booted
 * sandbox; a template's is warm).
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sandbox/base64.h"
#include "../sandbox/interp_client.h"
#include "../sandbox/sandbox.h"
#include "cli.h"
#include "commands.h"

#define EXIT_ERROR    1
#define CODE_MAX      (16u << 20) /* bytes of code read from stdin */
#define ENSURE_MS     300000 /* starting the interpreter in a booted guest */
#define CONTEXT_OP_MS 60000

struct run_code {
	const char *image_dir;
	const char *sandbox_id;
	bool json; /* print the whole execution as JSON instead */
	struct interp_gather gathered; /* for --json and the summary */
	unsigned int images;
	int rc; /* a failure saving an image */
};

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
	va_list ap;

	fputs("emberctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Find sandbox @ref and connect to its interpreter (started if need be). */
static struct interp_client *open_interp(const char *ref,
					 struct sandbox_info *sb)
{
	struct interp_client *c;
	char err[512];
	int rc;

	rc = sandbox__find(ref, sb, err, sizeof(err));
	if (rc < 0) {
		say("%s", err);
		return NULL;
	}
	if (cli__wake(sb) < 0)
		return NULL;
	if (sb->parked) {
		say("sandbox %s is parked on disk: emberctl resume %s first",
		    sb->id, sb->id);
		return NULL;
	}
	if (sb->paused) {
		say("sandbox %s is paused: emberctl resume %s first", sb->id,
		    sb->id);
		return NULL;
	}
	rc = interp_client__ensure(sb->uds, ENSURE_MS, &c, err, sizeof(err));
	if (rc < 0) {
		say("sandbox %s: %s", sb->id, err);
		return NULL;
	}
	return c;
}

/* An image of a result, saved to a file of its own. */
struct image_kind {
	const char *member; /* the result's member */
	const char *ext; /* the file's */
	const char *magic; /* its first bytes; NULL: text, not base64 */
	size_t magic_len;
};

static const struct image_kind image_kinds[] = {
	{ "png", "png", "\x89PNG\r\n\x1a\n", 8 },
	{ "jpeg", "jpg", "\xff\xd8\xff", 3 },
	{ "svg", "svg", NULL, 0 },
};

/* Write @len bytes of @buf to DIR/<sandbox>-<n>.EXT and name it on stdout. */
static int save_file(struct run_code *r, const char *ext, const void *buf,
		     size_t len)
{
	char path[PATH_MAX];
	int fd, rc = 0;

	r->images++;
	if (snprintf(path, sizeof(path), "%s/%s-%u.%s", r->image_dir,
		     r->sandbox_id, r->images, ext) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, buf, len) != (ssize_t)len) {
		rc = -errno;
		say("%s: %s", path, strerror(errno));
	} else {
		printf("image: %s (%zu bytes)\n", path, len);
	}
	if (fd >= 0 && close(fd) < 0 && !rc)
		rc = -errno;
	return rc;
}

/*
 * Save image @data of kind @k (base64, checked by its magic; or text) to
 * a file; -EPROTO when it is not what it says.
 */
static int save_image(struct run_code *r, const struct image_kind *k,
		      const json_t *data)
{
	const char *s = json_string_value(data);
	size_t n = json_string_length(data);
	unsigned char *buf;
	ssize_t len;
	int rc;

	if (!k->magic)
		return save_file(r, k->ext, s, n);
	buf = malloc(n / 4 * 3 + 3);
	if (!buf)
		return -ENOMEM;
	len = base64__decode(s, n, buf);
	if (len < (ssize_t)k->magic_len ||
	    memcmp(buf, k->magic, k->magic_len)) {
		say("the interpreter sent a %s image that is not one",
		    k->member);
		free(buf);
		return -EPROTO;
	}
	rc = save_file(r, k->ext, buf, (size_t)len);
	free(buf);
	return rc;
}

/*
 * A result: its images saved to files; its text printed when it is the
 * main result or has no image (its markdown rather than its text, when it
 * has one: a display(Markdown(...))'s text is only the object's repr).
 */
static void show_result(struct run_code *r, const json_t *ev)
{
	const json_t *md = json_object_get(ev, "markdown"), *v;
	const char *text = json_string_value(json_object_get(ev, "text"));
	bool image = false;
	size_t i;

	for (i = 0; i < sizeof(image_kinds) / sizeof(image_kinds[0]); i++)
		if (json_is_string(json_object_get(ev, image_kinds[i].member)))
			image = true;
	if (json_is_string(md))
		text = json_string_value(md);
	if (text &&
	    (json_is_true(json_object_get(ev, "is_main_result")) || !image)) {
		fputs(text, stdout);
		fputc('\n', stdout);
	}
	for (i = 0; i < sizeof(image_kinds) / sizeof(image_kinds[0]); i++) {
		v = json_object_get(ev, image_kinds[i].member);
		if (json_is_string(v) && save_image(r, &image_kinds[i], v) < 0)
			r->rc = EXIT_OWN;
	}
	fflush(stdout);
}

/* One event: streamed at once, except with --json. */
static int on_event(void *arg, const json_t *ev)
{
	struct run_code *r = arg;
	const char *type = json_string_value(json_object_get(ev, "type"));
	const json_t *t = json_object_get(ev, "text");
	const char *text = json_string_value(t);
	size_t len = json_string_length(t);
	int rc;

	rc = interp__gather(&r->gathered, ev);
	if (rc < 0 || r->json)
		return rc;
	if (!strcmp(type, "stdout")) {
		/* By length: a NUL the code printed is output too. */
		fwrite(text, 1, len, stdout);
		fflush(stdout);
	} else if (!strcmp(type, "stderr")) {
		fwrite(text, 1, len, stderr);
	} else if (!strcmp(type, "result")) {
		show_result(r, ev);
	} else if (!strcmp(type, "error")) {
		const char *tb =
			json_string_value(json_object_get(ev, "traceback"));

		if (tb && *tb)
			fprintf(stderr, "%s%s", tb,
				tb[strlen(tb) - 1] == '\n' ? "" : "\n");
		else
			fprintf(stderr, "%s: %s\n",
				json_string_value(json_object_get(ev, "name")),
				json_string_value(
					json_object_get(ev, "value")));
	}
	return 0;
}

/* All of stdin, NUL-terminated, in a malloc()ed buffer; NULL on error. */
static char *read_stdin(void)
{
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap);

	while (buf) {
		ssize_t n;

		if (len + 1 == cap) {
			char *p =
				cap >= CODE_MAX ? NULL : realloc(buf, cap * 2);

			if (!p) {
				say("code on stdin over %u bytes", CODE_MAX);
				break;
			}
			buf = p;
			cap *= 2;
		}
		n = read(0, buf + len, cap - 1 - len);
		if (n == 0) {
			buf[len] = '\0';
			return buf;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			say("reading stdin: %s", strerror(errno));
			break;
		}
		len += (size_t)n;
	}
	free(buf);
	return NULL;
}

static int parse_seconds(const char *s, uint32_t *ms)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || v > 86400)
		return -EINVAL;
	*ms = (uint32_t)(v * 1000);
	return *ms ? 0 : -EINVAL;
}

int cmd_run_code(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "language", required_argument, NULL, 'l' },
		{ "context", required_argument, NULL, 'c' },
		{ "user", required_argument, NULL, 'u' },
		{ "timeout", required_argument, NULL, 't' },
		{ "image-dir", required_argument, NULL, 'i' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct interp_exec_req req = { 0 };
	struct run_code r = { .image_dir = "." };
	struct interp_client *c;
	struct sandbox_info sb;
	char err[512], *code = NULL;
	const json_t *error;
	int opt, rc;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "+l:c:u:t:i:jh", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'l':
			req.language = optarg;
			break;
		case 'c':
			req.context = optarg;
			break;
		case 'u':
			if (!optarg[0]) {
				say("--user wants a user (NAME, UID, "
				    "NAME:GROUP or UID:GID)");
				return 2;
			}
			req.user = optarg;
			break;
		case 't':
			if (parse_seconds(optarg, &req.timeout_ms)) {
				say("--timeout: seconds, more than 0, at most "
				    "86400: '%s'",
				    optarg);
				return 2;
			}
			break;
		case 'i':
			r.image_dir = optarg;
			break;
		case 'j':
			r.json = true;
			break;
		case 'h':
			printf("usage: emberctl run-code ID [--language "
			       "python|javascript] [--context C]\n"
			       "         [--user U] [--timeout S] [--image-dir DIR] "
			       "[--json] CODE|-\n");
			return 0;
		default:
			say("run-code: bad option '%s' (see emberctl "
			    "run-code --help)",
			    argv[optind - 1]);
			return 2;
		}
	}
	if (argc - optind != 2) {
		say("run-code wants a sandbox id and the code (- for stdin)");
		return 2;
	}
	if (req.language && strcmp(req.language, "python") &&
	    strcmp(req.language, "javascript")) {
		say("--language: python or javascript, not '%s'", req.language);
		return 2;
	}
	if (!strcmp(argv[optind + 1], "-")) {
		code = read_stdin();
		if (!code)
			return EXIT_OWN;
	}
	req.code = code ? code : argv[optind + 1];
	r.gathered.execution = interp__execution_new();
	c = r.gathered.execution ? open_interp(argv[optind], &sb) : NULL;
	if (!c) {
		json_decref(r.gathered.execution);
		free(code);
		return EXIT_OWN;
	}
	r.sandbox_id = sb.id;
	rc = interp_client__execute(c, &req, on_event, &r, err, sizeof(err));
	interp_client__free(c);
	free(code);
	if (rc < 0) {
		say("run-code in sandbox %s: %s", sb.id, err);
		json_decref(r.gathered.execution);
		return EXIT_OWN;
	}
	if (r.json)
		json_dumpf(r.gathered.execution, stdout, JSON_INDENT(2));
	if (r.json)
		putchar('\n');
	error = json_object_get(r.gathered.execution, "error");
	rc = r.rc		    ? r.rc :
	     !json_is_object(error) ? 0 :
	     !strcmp(json_string_value(json_object_get(error, "name")),
		     "TimeoutError") ?
				      EXIT_TIMEOUT :
				      EXIT_ERROR;
	json_decref(r.gathered.execution);
	return rc;
}

/* One context request: print its answer (ls: a table; create: the id). */
static int context_op(const char *ref, json_t *req)
{
	const char *op = json_string_value(json_object_get(req, "op"));
	struct interp_client *c;
	struct sandbox_info sb;
	json_t *ans = NULL, *v;
	char err[512];
	size_t i;
	int rc;

	c = open_interp(ref, &sb);
	if (!c)
		return EXIT_OWN;
	rc = interp_client__request(c, req, CONTEXT_OP_MS, &ans, err,
				    sizeof(err));
	interp_client__free(c);
	if (rc < 0) {
		say("sandbox %s: %s", sb.id, err);
		return EXIT_OWN;
	}
	if (!strcmp(op, "create_context")) {
		puts(json_string_value(json_object_get(
			json_object_get(ans, "context"), "id")));
	} else if (!strcmp(op, "list_contexts")) {
		printf("%-18s %-11s %-10s %s\n", "CONTEXT", "LANGUAGE", "USER",
		       "CWD");
		json_array_foreach(json_object_get(ans, "contexts"), i, v)
		{
			const char *u =
				json_string_value(json_object_get(v, "user"));

			printf("%-18s %-11s %-10s %s\n",
			       json_string_value(json_object_get(v, "id")),
			       json_string_value(
				       json_object_get(v, "language")),
			       u ? u : "-",
			       json_string_value(json_object_get(v, "cwd")));
		}
	}
	json_decref(ans);
	return 0;
}

int cmd_context(int argc, char **argv)
{
	const char *sub = argc >= 2 ? argv[1] : "";
	const char *lang = "python", *cwd = NULL, *user = NULL;
	json_t *req = NULL;
	int i, rc;

	if (!strcmp(sub, "ls") && argc == 3) {
		req = json_pack("{s:s}", "op", "list_contexts");
	} else if (!strcmp(sub, "create") && argc >= 3) {
		for (i = 3; i + 1 < argc; i += 2) {
			if (!strcmp(argv[i], "--language"))
				lang = argv[i + 1];
			else if (!strcmp(argv[i], "--cwd"))
				cwd = argv[i + 1];
			else if (!strcmp(argv[i], "--user"))
				user = argv[i + 1];
			else
				break;
		}
		if (i != argc) {
			say("usage: emberctl context create ID [--language "
			    "python|javascript] [--cwd DIR] [--user U]");
			return 2;
		}
		req = json_pack("{s:s, s:s}", "op", "create_context",
				"language", lang);
		if (req && cwd)
			json_object_set_new(req, "cwd", json_string(cwd));
		if (req && user)
			json_object_set_new(req, "user", json_string(user));
	} else if ((!strcmp(sub, "restart") || !strcmp(sub, "rm")) &&
		   argc == 4) {
		req = json_pack("{s:s, s:s}", "op",
				!strcmp(sub, "rm") ? "delete_context" :
						     "restart_context",
				"context", argv[3]);
	} else {
		say("usage: emberctl context ls ID | create ID [--language L] "
		    "[--cwd DIR] [--user U] | restart ID CTX | rm ID CTX");
		return 2;
	}
	if (!req) {
		say("bad arguments (not UTF-8?)");
		return 2;
	}
	rc = context_op(argv[2], req);
	json_decref(req);
	return rc;
}
