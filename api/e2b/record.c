// SPDX-License-Identifier: Apache-2.0
/* ember-e2b's record of a sandbox: e2b.json in its directory (record.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../sandbox/files.h"
#include "record.h"

void record__release(struct e2b_record *r)
{
	json_decref(r->metadata);
	json_decref(r->env_vars);
	r->metadata = NULL;
	r->env_vars = NULL;
}

/* A fresh random token of RECORD_TOKEN_LEN hex digits into @out. */
static int random_token(char out[RECORD_TOKEN_LEN + 1])
{
	unsigned char raw[RECORD_TOKEN_LEN / 2];
	ssize_t n;

	n = getrandom(raw, sizeof(raw), 0);
	if (n != (ssize_t)sizeof(raw))
		return n < 0 ? -errno : -EIO;
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

static bool is_token(const char *t)
{
	return t && strlen(t) == RECORD_TOKEN_LEN &&
	       strspn(t, "0123456789abcdef") == RECORD_TOKEN_LEN;
}

int record__init(struct e2b_record *r, const char *template_id)
{
	int rc;

	memset(r, 0, sizeof(*r));
	rc = random_token(r->token);
	if (rc)
		return rc;
	snprintf(r->template_id, sizeof(r->template_id), "%s",
		 template_id ? template_id : "");
	r->metadata = json_object();
	r->env_vars = json_object();
	if (!r->metadata || !r->env_vars) {
		record__release(r);
		return -ENOMEM;
	}
	return 0;
}

/* An object whose every value is a string. */
static int strings_only(const json_t *o)
{
	const char *k;
	json_t *v;

	if (!json_is_object(o))
		return 0;
	json_object_foreach((json_t *)o, k, v) if (!json_is_string(v)) return 0;
	return 1;
}

int record__load(const char *dir, struct e2b_record *r)
{
	char path[PATH_MAX], *buf;
	json_error_t jerr;
	json_t *j, *md, *env;
	const char *tok, *tid, *ttok;
	ssize_t n;
	int fd;

	memset(r, 0, sizeof(*r));
	if (snprintf(path, sizeof(path), "%s/%s", dir, RECORD_NAME) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	/* Whole, in one read: it is small (json_loadfd reads bytewise). */
	buf = malloc(RECORD_MAX_BYTES + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	do
		n = read(fd, buf, RECORD_MAX_BYTES + 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	j = n > 0 && n <= (ssize_t)RECORD_MAX_BYTES ?
		    json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, &jerr) :
		    NULL;
	free(buf);
	if (!j)
		return n < 0 ? -EIO : -EINVAL;
	tok = json_string_value(json_object_get(j, "token"));
	tid = json_string_value(json_object_get(j, "templateID"));
	md = json_object_get(j, "metadata");
	env = json_object_get(j, "envVars");
	ttok = json_string_value(json_object_get(j, "trafficToken"));
	if (!is_token(tok) ||
	    (json_object_get(j, "trafficToken") && !is_token(ttok)) || !tid ||
	    strlen(tid) > RECORD_ID_MAX || !strings_only(md) ||
	    !strings_only(env)) {
		json_decref(j);
		return -EINVAL;
	}
	memcpy(r->token, tok, RECORD_TOKEN_LEN + 1);
	if (ttok)
		memcpy(r->traffic_token, ttok, RECORD_TOKEN_LEN + 1);
	snprintf(r->template_id, sizeof(r->template_id), "%s", tid);
	r->metadata = json_incref(md);
	r->env_vars = json_incref(env);
	json_decref(j);
	return 0;
}

int record__save(const char *dir, const struct e2b_record *r)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	json_t *j;
	char *text;
	size_t len;
	int rc;

	if (snprintf(path, sizeof(path), "%s/%s", dir, RECORD_NAME) >=
		    (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, RECORD_NAME) >=
		    (int)sizeof(tmp))
		return -ENAMETOOLONG;
	j = json_pack("{s:s, s:s, s:O, s:O}", "token", r->token, "templateID",
		      r->template_id, "metadata", r->metadata, "envVars",
		      r->env_vars);
	if (j && r->traffic_token[0] &&
	    json_object_set_new(j, "trafficToken",
				json_string(r->traffic_token))) {
		json_decref(j);
		j = NULL;
	}
	if (!j)
		return -ENOMEM;
	text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (!text)
		return -ENOMEM;
	len = strlen(text);
	if (len > RECORD_MAX_BYTES) {
		free(text);
		return -EFBIG;
	}
	rc = files__replace(path, tmp, text, len, 0600, FILES_NOFOLLOW);
	free(text);
	return rc;
}

/* Whether @token is @want (a token of RECORD_TOKEN_LEN), in constant time. */
static int token_eq(const char *want, const char *token)
{
	unsigned char diff = 0;

	if (!token || strlen(token) != RECORD_TOKEN_LEN ||
	    strlen(want) != RECORD_TOKEN_LEN)
		return 0;
	for (size_t i = 0; i < RECORD_TOKEN_LEN; i++)
		diff |= (unsigned char)(token[i] ^ want[i]);
	return diff == 0;
}

int record__token_ok(const struct e2b_record *r, const char *token)
{
	return token_eq(r->token, token);
}

int record__add_traffic_token(struct e2b_record *r)
{
	return random_token(r->traffic_token);
}

int record__traffic_ok(const struct e2b_record *r, const char *token)
{
	return !r->traffic_token[0] || token_eq(r->traffic_token, token);
}

int record__metadata_match(const struct e2b_record *r, const json_t *want)
{
	const char *k;
	json_t *v;

	if (!json_is_object(want))
		return 1;
	json_object_foreach((json_t *)want, k, v)
	{
		const char *have =
			json_string_value(json_object_get(r->metadata, k));

		if (!have || !json_is_string(v) ||
		    strcmp(have, json_string_value(v)))
			return 0;
	}
	return 1;
}
