// SPDX-License-Identifier: Apache-2.0
/*
 * The code interpreter service's requests and plain-text answers
 * (interp_text.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "e2b.h"
#include "interp_text.h"

#define TEXT_PLAIN "text/plain; charset=utf-8"

int interp_text__reply(struct e2b_resp *resp, unsigned int status,
		       const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(msg))
		n = (int)sizeof(msg) - 1;
	/* On failure it answers 500 itself. */
	reply__bytes(resp, status, TEXT_PLAIN, msg, (size_t)n);
	return 0;
}

void interp_text__clean_id(char out[INTERP_CTX_ID_MAX + 1], const char *id,
			   size_t len)
{
	size_t i;

	if (len > INTERP_CTX_ID_MAX)
		len = INTERP_CTX_ID_MAX;
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)id[i];

		out[i] = ch < 0x20 || ch >= 0x7f ? '?' : (char)ch;
	}
	out[len] = '\0';
}

bool interp_text__id_ok(const char *id, size_t len)
{
	size_t i;

	if (!len || len > INTERP_CTX_ID_MAX)
		return false;
	for (i = 0; i < len; i++) {
		char ch = id[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
		      ch == '.'))
			return false;
	}
	return true;
}

/*
 * E2B's language name (its normalize_language(): case and surrounding
 * blanks ignored, "js" for javascript; none is python) as ember's
 * interpreter's, or NULL with the name, cleaned for a message, in @name.
 */
static const char *language_of(const char *lang, char name[INTERP_LANG_MAX + 1])
{
	size_t len, i;

	while (*lang == ' ' || *lang == '\t' || *lang == '\n' || *lang == '\r')
		lang++;
	len = strlen(lang);
	while (len && (lang[len - 1] == ' ' || lang[len - 1] == '\t' ||
		       lang[len - 1] == '\n' || lang[len - 1] == '\r'))
		len--;
	if (len > INTERP_LANG_MAX)
		len = INTERP_LANG_MAX;
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)lang[i];

		if (ch >= 'A' && ch <= 'Z')
			ch = (unsigned char)(ch - 'A' + 'a');
		else if (ch < 0x20 || ch >= 0x7f)
			ch = '?';
		name[i] = (char)ch;
	}
	name[len] = '\0';
	if (!len || !strcmp(name, "python"))
		return "python";
	if (!strcmp(name, "javascript") || !strcmp(name, "js"))
		return "javascript";
	return NULL;
}

int interp_text__language(const char *lang, const char **language,
			  char name[INTERP_LANG_MAX + 1])
{
	const char *l;

	if (!lang)
		return 0;
	l = language_of(lang, name);
	if (!l)
		return -EINVAL;
	*language = l;
	return 0;
}

int interp_text__bad_language(struct e2b_resp *resp, const char *name)
{
	return interp_text__reply(
		resp, 400,
		"language \"%s\" is not supported by ember: its code "
		"interpreter runs python and javascript (\"js\")",
		name);
}

json_t *interp_text__body(const struct e2b_req *r, bool empty_ok,
			  struct e2b_resp *resp)
{
	json_error_t je;
	json_t *b;

	if (!r->body || r->len > E2B_MAX_BODY) {
		interp_text__reply(resp, 400, "the body must be a JSON object");
		return NULL;
	}
	if (!r->len && empty_ok) {
		b = json_object();
		if (!b)
			interp_text__reply(resp, 500, "out of memory");
		return b;
	}
	b = json_loadb(r->body, r->len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(b)) {
		json_decref(b);
		interp_text__reply(resp, 400,
				   "the body must be a JSON object: %.200s",
				   b ? "not an object" : je.text);
		return NULL;
	}
	return b;
}

int interp_text__opt_string(const json_t *o, const char *key, const char **out)
{
	const json_t *v = json_object_get(o, key);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return -EINVAL;
	if (json_string_length(v))
		*out = json_string_value(v);
	return 0;
}
