// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for the host side of the code interpreter
 * (api/sandbox/interp_client.c) and base64 (api/sandbox/base64.c), without
 * a VM: a forked fake interpreter on a socketpair reads the request line
 * and answers with canned lines, well formed or hostile; the client must
 * pass the events on in order, gather them into an execution, and end a
 * malformed stream with -EPROTO without reading past it.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../api/sandbox/base64.h"
#include "../../api/sandbox/interp_client.h"

/* --- base64 ---------------------------------------------------------------- */

static void test_base64_round_trip(void **state)
{
	unsigned char in[300], out[300];
	char enc[BASE64_ENCODED_SIZE(300)];

	(void)state;
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)(i * 7 + 3);
	for (size_t n = 0; n < 10; n++) {
		size_t len = base64__encode(in, n, enc);

		assert_int_equal(len, (n + 2) / 3 * 4);
		assert_int_equal(base64__decode(enc, len, out), (ssize_t)n);
		assert_memory_equal(in, out, n);
	}
	assert_int_equal(base64__encode("foob", 4, enc), 8);
	assert_string_equal(enc, "Zm9vYg==");
	assert_int_equal(base64__decode("Zm9v\nYmFy", 9, out), 6);
	assert_memory_equal(out, "foobar", 6);
	/* Padding may be left out. */
	assert_int_equal(base64__decode("Zm9vYg", 6, out), 4);
}

static void test_base64_rejects(void **state)
{
	static const char *const bad[] = {
		"Zm9v!", "Z", "Zm9vY", "=Zm9", "Zg=x", "Zg===", "Zm9=v",
	};
	unsigned char out[16];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(base64__decode(bad[i], strlen(bad[i]), out),
				 -EINVAL);
}

/* --- a fake interpreter ------------------------------------------------------ */

/*
 * A client whose peer, a child process, reads one line and then writes
 * @reply (@len bytes) and closes.  The child's pid in *@pid.
 */
static struct interp_client *fake(const char *reply, size_t len, pid_t *pid)
{
	struct interp_client *c;
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	*pid = fork();
	assert_true(*pid >= 0);
	if (*pid == 0) {
		char ch;

		close(sv[0]);
		while (read(sv[1], &ch, 1) == 1 && ch != '\n')
			;
		for (size_t off = 0; off < len;) {
			ssize_t w = write(sv[1], reply + off, len - off);

			if (w <= 0)
				_exit(1);
			off += (size_t)w;
		}
		_exit(0);
	}
	close(sv[1]);
	assert_int_equal(interp_client__attach_fd(sv[0], &c), 0);
	return c;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

struct seen {
	char types[512];
	json_t *x;
	struct interp_gather g;
};

static int on_event(void *arg, const json_t *ev)
{
	struct seen *s = arg;

	strcat(s->types, json_string_value(json_object_get(ev, "type")));
	strcat(s->types, ",");
	return interp__gather(&s->g, ev);
}

static int run(const char *reply, struct seen *s, char *err, size_t errlen)
{
	struct interp_exec_req req = { .code = "x" };
	struct interp_client *c;
	pid_t pid;
	int rc;

	memset(s->types, 0, sizeof(s->types));
	s->x = interp__execution_new();
	assert_non_null(s->x);
	s->g = (struct interp_gather){ .execution = s->x };
	c = fake(reply, strlen(reply), &pid);
	rc = interp_client__execute(c, &req, on_event, s, err, errlen);
	interp_client__free(c);
	reap(pid);
	return rc;
}

static void test_execute_gathers(void **state)
{
	static const char reply[] =
		"{\"type\":\"stdout\",\"text\":\"a\\n\"}\n"
		"{\"type\":\"stderr\",\"text\":\"w\"}\n"
		"{\"type\":\"stdout\",\"text\":\"b\"}\n"
		"{\"type\":\"result\",\"is_main_result\":false,\"png\":\"iVBO\"}\n"
		"{\"type\":\"result\",\"is_main_result\":true,\"text\":\"2\"}\n"
		"{\"type\":\"number_of_executions\",\"execution_count\":3}\n"
		"{\"type\":\"end_of_execution\"}\n"
		"{\"type\":\"stdout\",\"text\":\"never read\"}\n";
	struct seen s;
	char err[256];
	json_t *r;

	(void)state;
	assert_int_equal(run(reply, &s, err, sizeof(err)), 0);
	assert_string_equal(s.types, "stdout,stderr,stdout,result,result,"
				     "number_of_executions,end_of_execution,");
	assert_string_equal(json_string_value(json_object_get(s.x, "stdout")),
			    "a\nb");
	assert_string_equal(json_string_value(json_object_get(s.x, "stderr")),
			    "w");
	r = json_object_get(s.x, "results");
	assert_int_equal(json_array_size(r), 2);
	assert_string_equal(
		json_string_value(json_object_get(json_array_get(r, 0), "png")),
		"iVBO");
	assert_true(json_is_true(
		json_object_get(json_array_get(r, 1), "is_main_result")));
	assert_int_equal(
		json_integer_value(json_object_get(s.x, "execution_count")), 3);
	assert_true(json_is_null(json_object_get(s.x, "error")));
	json_decref(s.x);
}

static void test_execute_error_is_an_event(void **state)
{
	static const char reply[] =
		"{\"type\":\"error\",\"name\":\"ZeroDivisionError\","
		"\"value\":\"division by zero\",\"traceback\":\"tb\"}\n"
		"{\"type\":\"end_of_execution\"}\n";
	struct seen s;
	char err[256];
	json_t *e;

	(void)state;
	assert_int_equal(run(reply, &s, err, sizeof(err)), 0);
	e = json_object_get(s.x, "error");
	assert_string_equal(json_string_value(json_object_get(e, "name")),
			    "ZeroDivisionError");
	assert_string_equal(json_string_value(json_object_get(e, "value")),
			    "division by zero");
	json_decref(s.x);
}

static void test_execute_failure(void **state)
{
	struct seen s;
	char err[256];

	(void)state;
	assert_int_equal(run("{\"type\":\"failure\",\"message\":\"no "
			     "context \\\"q\\\"\\u0007\"}\n",
			     &s, err, sizeof(err)),
			 -EREMOTEIO);
	assert_string_equal(err, "interpreter: no context \"q\" ");
	json_decref(s.x);
}

/* Each of these ends the execute with -EPROTO (or -ECONNRESET). */
static void test_execute_hostile(void **state)
{
	static const struct {
		const char *reply;
		int rc;
	} cases[] = {
		{ "not json\n", -EPROTO },
		{ "[1,2]\n", -EPROTO },
		{ "{\"type\":7}\n", -EPROTO },
		{ "{\"type\":\"bogus\"}\n", -EPROTO },
		{ "{\"type\":\"stdout\"}\n", -EPROTO },
		{ "{\"type\":\"stdout\",\"text\":1}\n", -EPROTO },
		{ "{\"type\":\"result\",\"png\":[]}\n", -EPROTO },
		{ "{\"type\":\"result\",\"is_main_result\":\"yes\"}\n",
		  -EPROTO },
		/* Protocol version 2's members, each of the wrong type. */
		{ "{\"type\":\"result\",\"jpeg\":1}\n", -EPROTO },
		{ "{\"type\":\"result\",\"svg\":[\"<svg>\"]}\n", -EPROTO },
		{ "{\"type\":\"result\",\"markdown\":null}\n", -EPROTO },
		{ "{\"type\":\"result\",\"pdf\":true}\n", -EPROTO },
		{ "{\"type\":\"result\",\"latex\":{}}\n", -EPROTO },
		{ "{\"type\":\"result\",\"javascript\":2.5}\n", -EPROTO },
		{ "{\"type\":\"result\",\"data\":[1,2]}\n", -EPROTO },
		{ "{\"type\":\"result\",\"chart\":\"line\"}\n", -EPROTO },
		{ "{\"type\":\"result\",\"extra\":null}\n", -EPROTO },
		{ "{\"type\":\"error\",\"name\":\"E\",\"value\":\"v\"}\n",
		  -EPROTO },
		{ "{\"type\":\"number_of_executions\",\"execution_count\":-1}\n",
		  -EPROTO },
		{ "{\"type\":\"stdout\",\"text\":\"a\",\"type\":\"x\"}\n",
		  -EPROTO },
		{ "{\"type\":\"stdout\",\"text\":\"cut", -ECONNRESET },
		{ "", -ECONNRESET },
	};
	struct seen s;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = run(cases[i].reply, &s, err, sizeof(err));

		if (rc != cases[i].rc)
			fail_msg("case %zu (%s): %d, not %d (%s)", i,
				 cases[i].reply, rc, cases[i].rc, err);
		json_decref(s.x);
	}
}

/* A NUL the code printed (\u0000) is kept in the log, and what follows it. */
static void test_gather_keeps_nul(void **state)
{
	static const char reply[] =
		"{\"type\":\"stdout\",\"text\":\"a\\u0000b\"}\n"
		"{\"type\":\"stdout\",\"text\":\"c\"}\n"
		"{\"type\":\"end_of_execution\"}\n";
	struct seen s;
	char err[256];
	json_t *out;

	(void)state;
	assert_int_equal(run(reply, &s, err, sizeof(err)), 0);
	out = json_object_get(s.x, "stdout");
	assert_int_equal(json_string_length(out), 4);
	assert_memory_equal(json_string_value(out), "a\0bc", 4);
	json_decref(s.x);
}

/* A NUL inside a line is part of it: the JSON before it does not pass. */
static void test_execute_nul_in_line(void **state)
{
	static const char reply[] =
		"{\"type\":\"stdout\",\"text\":\"a\"}\0junk\n"
		"{\"type\":\"end_of_execution\"}\n";
	struct interp_exec_req req = { .code = "x" };
	struct interp_client *c;
	char err[256];
	pid_t pid;

	(void)state;
	c = fake(reply, sizeof(reply) - 1, &pid);
	assert_int_equal(
		interp_client__execute(c, &req, NULL, NULL, err, sizeof(err)),
		-EPROTO);
	interp_client__free(c);
	reap(pid);
}

/* A line over INTERP_MAX_LINE is refused once that much has come. */
static void test_execute_line_too_long(void **state)
{
	size_t len = INTERP_MAX_LINE + 16;
	struct interp_exec_req req = { .code = "x" };
	struct interp_client *c;
	char *reply = malloc(len), err[256];
	pid_t pid;

	(void)state;
	assert_non_null(reply);
	memset(reply, 'a', len);
	c = fake(reply, len, &pid);
	assert_int_equal(
		interp_client__execute(c, &req, NULL, NULL, err, sizeof(err)),
		-EPROTO);
	interp_client__free(c);
	reap(pid);
	free(reply);
}

static void test_request_answers(void **state)
{
	static const struct {
		const char *op, *reply;
		int rc;
	} cases[] = {
		{ "ping", "{\"type\":\"pong\",\"version\":1}\n", 0 },
		{ "ping", "{\"type\":\"ok\"}\n", -EPROTO },
		{ "list_contexts",
		  "{\"type\":\"contexts\",\"contexts\":[{\"id\":\"python\","
		  "\"language\":\"python\",\"cwd\":\"/root\"}]}\n",
		  0 },
		{ "list_contexts",
		  "{\"type\":\"contexts\",\"contexts\":[{\"id\":1}]}\n",
		  -EPROTO },
		{ "create_context",
		  "{\"type\":\"context\",\"context\":{\"id\":\"ab\","
		  "\"language\":\"python\",\"cwd\":\"/\"}}\n",
		  0 },
		{ "create_context", "{\"type\":\"context\"}\n", -EPROTO },
		{ "delete_context", "{\"type\":\"ok\"}\n", 0 },
		{ "delete_context",
		  "{\"type\":\"failure\",\"message\":\"x\"}\n", -EREMOTEIO },
	};
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *req = json_pack("{s:s}", "op", cases[i].op), *ans;
		struct interp_client *c;
		pid_t pid;
		int rc;

		c = fake(cases[i].reply, strlen(cases[i].reply), &pid);
		rc = interp_client__request(c, req, 5000, &ans, err,
					    sizeof(err));
		if (rc != cases[i].rc)
			fail_msg("case %zu: %d, not %d (%s)", i, rc,
				 cases[i].rc, err);
		assert_true(rc == 0 ? ans != NULL : ans == NULL);
		json_decref(ans);
		json_decref(req);
		interp_client__free(c);
		reap(pid);
	}
}

static void test_gather_caps_logs(void **state)
{
	struct interp_gather g = { .execution = interp__execution_new() };
	char *big = malloc(INTERP_MAX_LOG / 2 + 1);
	json_t *ev;

	(void)state;
	assert_non_null(big);
	memset(big, 'x', INTERP_MAX_LOG / 2);
	big[INTERP_MAX_LOG / 2] = '\0';
	ev = json_pack("{s:s, s:s}", "type", "stdout", "text", big);
	for (int i = 0; i < 3; i++)
		assert_int_equal(interp__gather(&g, ev), 0);
	assert_int_equal(strlen(json_string_value(
				 json_object_get(g.execution, "stdout"))),
			 INTERP_MAX_LOG);
	json_decref(ev);
	json_decref(g.execution);
	free(big);
}

/* A guest flooding results: refused past the count, then past the bytes. */
static void test_gather_caps_results(void **state)
{
	struct interp_gather g = { .execution = interp__execution_new() };
	char *big = malloc(INTERP_MAX_RESULT_BYTES / 2 + 1);
	json_t *ev;
	int i;

	(void)state;
	ev = json_pack("{s:s, s:s}", "type", "result", "text", "1");
	for (i = 0; i < INTERP_MAX_RESULTS; i++)
		assert_int_equal(interp__gather(&g, ev), 0);
	assert_int_equal(interp__gather(&g, ev), -EMSGSIZE);
	assert_int_equal(
		json_array_size(json_object_get(g.execution, "results")),
		INTERP_MAX_RESULTS);
	json_decref(ev);
	json_decref(g.execution);
	g = (struct interp_gather){ .execution = interp__execution_new() };
	assert_non_null(big);
	memset(big, 'A', INTERP_MAX_RESULT_BYTES / 2);
	big[INTERP_MAX_RESULT_BYTES / 2] = '\0';
	ev = json_pack("{s:s, s:s}", "type", "result", "png", big);
	assert_int_equal(interp__gather(&g, ev), 0);
	assert_int_equal(interp__gather(&g, ev), 0);
	assert_int_equal(interp__gather(&g, ev), -EMSGSIZE);
	json_decref(ev);
	json_decref(g.execution);
	free(big);
}

/*
 * A result of protocol version 2 with every member: each one kept as it
 * came (json of any type), and a null json left out.
 */
static void test_execute_gathers_rich_results(void **state)
{
	static const char reply[] =
		"{\"type\":\"result\",\"is_main_result\":true,"
		"\"text\":\"   a\\n0  1\",\"html\":\"<table>\","
		"\"markdown\":\"# m\",\"svg\":\"<svg/>\",\"png\":\"iVBO\","
		"\"jpeg\":\"/9j/\",\"pdf\":\"JVBE\",\"latex\":\"$x$\","
		"\"json\":[1,{\"k\":null}],\"javascript\":\"f()\","
		"\"data\":{\"a\":[1,2,3]},"
		"\"chart\":{\"type\":\"pie\",\"title\":null,\"elements\":"
		"[{\"label\":\"No\",\"angle\":324,\"radius\":1}]},"
		"\"extra\":{\"application/vnd.x+json\":{\"v\":1}},"
		"\"unknown\":5}\n"
		"{\"type\":\"result\",\"json\":\"s\"}\n"
		"{\"type\":\"result\",\"json\":null,\"text\":\"t\"}\n"
		"{\"type\":\"end_of_execution\"}\n";
	static const char *const strings[][2] = {
		{ "text", "   a\n0  1" }, { "html", "<table>" },
		{ "markdown", "# m" },	  { "svg", "<svg/>" },
		{ "png", "iVBO" },	  { "jpeg", "/9j/" },
		{ "pdf", "JVBE" },	  { "latex", "$x$" },
		{ "javascript", "f()" },
	};
	json_t *rs, *r, *want, *v;
	const char *key;
	struct seen s;
	char err[256];
	size_t i;

	(void)state;
	assert_int_equal(run(reply, &s, err, sizeof(err)), 0);
	rs = json_object_get(s.x, "results");
	assert_int_equal(json_array_size(rs), 3);
	r = json_array_get(rs, 0);
	assert_true(json_is_true(json_object_get(r, "is_main_result")));
	for (i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
		const char *got =
			json_string_value(json_object_get(r, strings[i][0]));

		if (!got || strcmp(got, strings[i][1]))
			fail_msg("%s: %s", strings[i][0],
				 got ? got : "(missing)");
	}
	want = json_loads("{\"json\":[1,{\"k\":null}],"
			  "\"data\":{\"a\":[1,2,3]},"
			  "\"chart\":{\"type\":\"pie\",\"title\":null,"
			  "\"elements\":[{\"label\":\"No\",\"angle\":324,"
			  "\"radius\":1}]},"
			  "\"extra\":{\"application/vnd.x+json\":{\"v\":1}}}",
			  0, NULL);
	assert_non_null(want);
	json_object_foreach(want, key, v)
	{
		if (!json_equal(json_object_get(r, key), v))
			fail_msg("%s differs", key);
	}
	/* is_main_result, 9 strings, 4 others; not "unknown". */
	assert_int_equal(json_object_size(r), 14);
	r = json_array_get(rs, 1);
	assert_string_equal(json_string_value(json_object_get(r, "json")), "s");
	assert_true(json_is_false(json_object_get(r, "is_main_result")));
	r = json_array_get(rs, 2);
	assert_null(json_object_get(r, "json"));
	assert_string_equal(json_string_value(json_object_get(r, "text")), "t");
	json_decref(want);
	json_decref(s.x);
}

/* A result with @member (a JSON object) whose compact JSON is @size bytes. */
static json_t *result_of_size(const char *member, size_t size)
{
	/* {"a":"..."}: 8 bytes around the string. */
	char *fill = malloc(size - 8 + 1);
	json_t *ev;

	assert_non_null(fill);
	memset(fill, 'd', size - 8);
	fill[size - 8] = '\0';
	ev = json_pack("{s:s, s:{s:s}}", "type", "result", member, "a", fill);
	free(fill);
	assert_non_null(ev);
	return ev;
}

/*
 * The bytes of data, chart, extra and json count as their compact JSON:
 * exactly INTERP_MAX_RESULT_BYTES passes, one more byte does not, and a
 * refused result is not kept.
 */
static void test_gather_counts_objects(void **state)
{
	static const char *const members[] = { "data", "chart", "extra",
					       "json" };
	struct interp_gather g;
	json_t *ev, *one;
	size_t i;

	(void)state;
	one = json_pack("{s:s, s:s}", "type", "result", "text", "1");
	assert_non_null(one);
	for (i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
		g = (struct interp_gather){ .execution =
						    interp__execution_new() };
		ev = result_of_size(members[i], INTERP_MAX_RESULT_BYTES + 1);
		assert_int_equal(interp__gather(&g, ev), -EMSGSIZE);
		json_decref(ev);
		assert_int_equal(json_array_size(json_object_get(g.execution,
								 "results")),
				 0);
		ev = result_of_size(members[i], INTERP_MAX_RESULT_BYTES);
		assert_int_equal(interp__gather(&g, ev), 0);
		json_decref(ev);
		assert_int_equal(g.result_bytes, INTERP_MAX_RESULT_BYTES);
		assert_int_equal(interp__gather(&g, one), -EMSGSIZE);
		assert_int_equal(json_array_size(json_object_get(g.execution,
								 "results")),
				 1);
		json_decref(g.execution);
	}
	json_decref(one);
}

static void test_bad_requests(void **state)
{
	struct interp_exec_req req = { .code = "x", .language = "cobol" };
	struct interp_client *c;
	char err[256];
	pid_t pid;

	(void)state;
	c = fake("", 0, &pid);
	assert_int_equal(
		interp_client__execute(c, &req, NULL, NULL, err, sizeof(err)),
		-EINVAL);
	req.language = NULL;
	req.env = (const char *const[]){ "NOEQUALS", NULL };
	assert_int_equal(
		interp_client__execute(c, &req, NULL, NULL, err, sizeof(err)),
		-EINVAL);
	interp_client__free(c);
	reap(pid);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base64_round_trip),
		cmocka_unit_test(test_base64_rejects),
		cmocka_unit_test(test_execute_gathers),
		cmocka_unit_test(test_execute_error_is_an_event),
		cmocka_unit_test(test_execute_failure),
		cmocka_unit_test(test_execute_hostile),
		cmocka_unit_test(test_execute_nul_in_line),
		cmocka_unit_test(test_gather_keeps_nul),
		cmocka_unit_test(test_execute_line_too_long),
		cmocka_unit_test(test_request_answers),
		cmocka_unit_test(test_gather_caps_logs),
		cmocka_unit_test(test_gather_caps_results),
		cmocka_unit_test(test_execute_gathers_rich_results),
		cmocka_unit_test(test_gather_counts_objects),
		cmocka_unit_test(test_bad_requests),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
