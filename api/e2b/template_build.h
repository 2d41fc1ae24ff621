/* SPDX-License-Identifier: Apache-2.0 */
/*
 * E2B's template-build API (template_build.c), as the SDKs' Template
 * builder calls it (E2B's OpenAPI spec):
 *
 *   POST /v3/templates                        a build of a new template
 *   GET  /templates/{templateID}/files/{hash} whether a COPY's files are
 *                                             here; else where to PUT them
 *   PUT  /e2b-uploads/{token}/{hash}          the upload (a tar, gzip or
 *                                             not), authenticated by the
 *                                             build's token in the URL
 *   POST /v2/templates/{templateID}/builds/{buildID}   start it
 *   GET  /templates/{templateID}/builds/{buildID}/status?logsOffset=N
 *   GET  /templates/aliases/{alias}           whether a template exists
 *
 * A build is `emberctl template build` of the Dockerfile template_spec.h
 * makes, run by a child process whose output lines are the build's log.
 * The templateID is the ember template's name (one starting with '-' is
 * refused: emberctl would read it as an option), so Sandbox.create(name)
 * starts it.  emberctl runs in a process group of its own, with no
 * signal blocked, and gets SIGTERM should ember-e2b end; the build ends
 * when emberctl does (what is left of its group is killed then).
 * Limits: TEMPLATE_BUILD_RUNNING builds at once (the others wait), 32
 * builds kept (a new one takes the place of the oldest finished one, or
 * of one never started for ten minutes), uploads of E2B_MAX_UPLOAD
 * bytes, builds and uploads forgotten an hour after they were made (a
 * finished build's status ten minutes after it finished).  The build's files are under <state>/e2b-builds
 * (0700): BUILDID/ (the Dockerfile and the context, removed when the
 * build ends) and files/HASH.tar (the uploads, shared by builds).
 */
#ifndef EMBER_API_E2B_TEMPLATE_BUILD_H
#define EMBER_API_E2B_TEMPLATE_BUILD_H

#include <stdbool.h>

#include "reply.h"

struct e2b_server;

#define TEMPLATE_BUILD_RUNNING 2 /* builds running at once */
#define TEMPLATE_BUILD_UPLOADS "/e2b-uploads/" /* the upload URLs' path */

/*
 * Ready the build directory (removing what a previous ember-e2b left)
 * and find emberctl (beside this binary, or $EMBERCTL_BIN).  0, or a
 * negative errno with @err; without emberctl builds fail with a message
 * (ember-e2b still serves the rest).
 */
int template_build__init(char *err, size_t errlen);

/*
 * Answer @r when it is one of the control-plane calls above (not the
 * upload): 1 with @resp filled; 0 when it is not one.
 */
int template_build__route(struct e2b_server *srv, const struct e2b_req *r,
			  struct e2b_resp *resp);

/* Whether @path is an upload's (its credential is the URL's token). */
bool template_build__is_upload(const char *path);

/*
 * Whether the upload @method @path names a build waiting for files by
 * its token: 0, or -1 with the refusal in @resp (401, 404, 405).
 */
int template_build__upload_check(const char *method, const char *path,
				 struct e2b_resp *resp);

/*
 * A file for an upload's body to go to (an unnamed file in the uploads'
 * directory: nothing is left if the upload is cut short), or a negative
 * errno.
 */
int template_build__upload_fd(void);

/* Store the upload @r (its body in r->body_fd) and answer it. */
int template_build__upload(const struct e2b_req *r, struct e2b_resp *resp);

/*
 * Forget builds and uploads past their time (called every 30 s from
 * main's loop).
 */
void template_build__sweep(void);

#endif /* EMBER_API_E2B_TEMPLATE_BUILD_H */
