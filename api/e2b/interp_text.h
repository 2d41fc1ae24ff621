/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The code interpreter service's requests and plain-text answers
 * (interp_text.c), which /execute (interp_exec.c) and /contexts
 * (interp.c) share: E2B's server answers its errors as plain text.
 */
#ifndef EMBER_API_E2B_INTERP_TEXT_H
#define EMBER_API_E2B_INTERP_TEXT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "e2b.h"

#define INTERP_CTX_ID_MAX 64 /* bytes of a context id in a path or body */
#define INTERP_LANG_MAX	  32 /* bytes of a language name */

/* Answer @status with the message (at most 1023 bytes) as text/plain. */
__attribute__((format(printf, 3, 4))) int
interp_text__reply(struct e2b_resp *resp, unsigned int status, const char *fmt,
		   ...);

/* @len bytes of the id @id for a message: at most INTERP_CTX_ID_MAX,
   printable. */
void interp_text__clean_id(char out[INTERP_CTX_ID_MAX + 1], const char *id,
			   size_t len);

/* Whether @id (@len bytes) is a context id as ember's interpreter makes
   them (and E2B's UUIDs). */
bool interp_text__id_ok(const char *id, size_t len);

/*
 * The requested language @lang (NULL: none asked, *@language left as it
 * is) as ember's interpreter's name in *@language: E2B's name (its
 * normalize_language(): case and surrounding blanks ignored, "js" for
 * javascript; "" is python).  0, or -EINVAL with the name, cleaned for a
 * message, in @name when ember's interpreter lacks it.
 */
int interp_text__language(const char *lang, const char **language,
			  char name[INTERP_LANG_MAX + 1]);

/* Answer 400: the language @name is not one ember's interpreter has. */
int interp_text__bad_language(struct e2b_resp *resp, const char *name);

/*
 * The request's body as a JSON object ("" counts as {} when @empty_ok).
 * NULL with the answer in @resp.
 */
json_t *interp_text__body(const struct e2b_req *r, bool empty_ok,
			  struct e2b_resp *resp);

/*
 * The member @key of @o as a string: 0 with *@out (NULL when absent, null
 * or ""), -EINVAL when it is of another type.
 */
int interp_text__opt_string(const json_t *o, const char *key, const char **out);

#endif /* EMBER_API_E2B_INTERP_TEXT_H */
