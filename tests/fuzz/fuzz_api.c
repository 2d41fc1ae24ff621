// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the control socket's routing and body checks
 * (api/server/routes.c, body.c) into the control layer (vmm/control/),
 * on a control in dry-run mode (InstanceStart builds nothing; logger and
 * metrics files are not opened).  The input is a series of requests,
 * each "METHOD PATH\n" then a body up to a NUL byte.  Any crash, leak,
 * sanitizer report or reply that is not 200/204/400 with valid JSON is a
 * bug.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/server/routes.h"
#include "vmm/control.h"
#include "vmm/event.h"
#include "vmm/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct event_loop *el;

static void check_reply(const struct routes_reply *r)
{
	json_t *o;

	if (r->status == 204) {
		if (r->body)
			abort();
		return;
	}
	if ((r->status != 200 && r->status != 400) || !r->body)
		abort();
	o = json_loads(r->body, 0, NULL);
	if (!o)
		abort();
	if (r->status == 400 &&
	    !json_is_string(json_object_get(o, "fault_message")))
		abort();
	json_decref(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	struct control *c;
	int n = 0;

	if (!el) {
		el = event__create(); /* never started: calls run inline */
		log__set_level(LOG_NOTE);
	}
	c = control__create(el, "fuzz");
	if (!c)
		return 0;
	control__dry_run(c);
	while (p < end && n++ < 16) {
		const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
		const uint8_t *nul, *sp;
		char method[16], path[256];
		struct routes_reply r;
		size_t mlen, plen;

		if (!nl)
			break;
		sp = memchr(p, ' ', (size_t)(nl - p));
		if (!sp)
			break;
		mlen = (size_t)(sp - p) < sizeof(method) - 1 ?
			       (size_t)(sp - p) :
			       sizeof(method) - 1;
		memcpy(method, p, mlen);
		method[mlen] = '\0';
		plen = (size_t)(nl - sp - 1) < sizeof(path) - 1 ?
			       (size_t)(nl - sp - 1) :
			       sizeof(path) - 1;
		memcpy(path, sp + 1, plen);
		path[plen] = '\0';
		p = nl + 1;
		nul = memchr(p, '\0', (size_t)(end - p));
		if (!nul)
			nul = end;
		routes__handle(c, method, path, (const char *)p,
			       (size_t)(nul - p), &r);
		check_reply(&r);
		free(r.body);
		p = nul < end ? nul + 1 : end;
	}
	control__destroy(c);
	return 0;
}
