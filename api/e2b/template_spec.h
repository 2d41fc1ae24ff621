/* SPDX-License-Identifier: Apache-2.0 */
/*
 * E2B's serialized template (the body of POST
 * /v2/templates/{templateID}/builds/{buildID}, TemplateBuildStartV2 in
 * E2B's OpenAPI spec: what the SDKs' Template builder sends) made into a
 * Dockerfile that `emberctl template build --dockerfile` builds
 * (template_spec.c; pure: no I/O, so unit-tested and fuzzed alone):
 *
 *   fromTemplate NAME    FROM template:NAME (E2B's default names, base
 *                        and code-interpreter-v1, the caller's default);
 *                        then USER of the base user given (E2B: user)
 *   fromImage /PATH      FROM /PATH: a local image ember reads (docker
 *                        save or OCI archive, OCI layout, root directory,
 *                        ext4 image); a registry name is refused
 *   RUN [cmd, user?]     RUN ["/bin/sh","-c",cmd] (exec form: nothing
 *                        substituted), between USER user and USER of
 *                        the user in effect when a user is given
 *   COPY [src, dest,     ADD HASH.tar /.ember-copy/HASH/ (the upload,
 *    user?, mode?]       extracted in the build VM), then, as root, a
 *                        script giving Docker COPY's semantics from it
 *                        to dest (relative: in the WORKDIR in effect)
 *                        and chown -R user, chmod -R mode of what it
 *                        copied; it removes /.ember-copy/HASH
 *   ENV [k, v, ...]      ENV k='v' each (quoted: literal)
 *   WORKDIR [dir]        WORKDIR 'dir'
 *   USER [user]          USER 'user'
 *   startCmd, readyCmd   kept for --start-cmd and --ready-cmd
 *
 * Refused with a message for the SDK's BuildError, naming the step:
 * fromImageRegistry (registry credentials), a fromImage that is not an
 * absolute path, both or neither of fromImage and fromTemplate, an
 * unknown step type, a value with a newline or NUL where the Dockerfile
 * is line-based, an ENV name that is not one, a COPY without filesHash,
 * a template whose Dockerfile is over DOCKERFILE_MAX_STEPS instructions
 * (-E2BIG; the step that went over named).
 * force (skipCache) is ignored: ember's build cache is by content.
 */
#ifndef EMBER_API_E2B_TEMPLATE_SPEC_H
#define EMBER_API_E2B_TEMPLATE_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define TEMPLATE_SPEC_MAX_STEPS 400 /* E2B steps of a template */
#define TEMPLATE_SPEC_HASH_LEN	64 /* hex digits of a COPY's filesHash */
#define TEMPLATE_SPEC_COPY_DIR	"/.ember-copy" /* where uploads land */
#define TEMPLATE_SPEC_STEP_MAX	16 /* bytes of a step name: "base", "12" */

/* One template made into a Dockerfile. */
struct template_spec {
	char *dockerfile; /* the text, NUL-terminated; malloc()ed */
	size_t len; /* its bytes */
	char *start_cmd; /* NULL: none; malloc()ed */
	char *ready_cmd; /* NULL: none; malloc()ed */
	/* The uploads the context needs: HASH.tar each, @n_hashes. */
	char (*hashes)[TEMPLATE_SPEC_HASH_LEN + 1];
	size_t n_hashes;
	/* E2B's step name ("1".. for instruction 0..) of each Dockerfile
	   line (1-based, @n_lines entries; [0] unused): "base" for FROM. */
	unsigned int *line_step; /* 0: base; N: E2B's step N */
	size_t n_lines;
	bool from_template;
};

/*
 * Make the template @body (a JSON object) into @out.  @dflt is ember's
 * template that E2B's default names mean; @base_user (NULL or "": none)
 * is the user the steps start as, a USER line after FROM (E2B's builds:
 * "user", as its base image has), else they run as the base's user,
 * taken as root; a RUN or COPY given another user restores that after
 * it.  0; or -EINVAL with the
 * reason in @err (@errlen bytes, one line) and the step it is about in
 * @step ("base", "N" for instruction N-1; @steplen >=
 * TEMPLATE_SPEC_STEP_MAX), -E2BIG past TEMPLATE_SPEC_MAX_STEPS steps or
 * DOCKERFILE_MAX_STEPS Dockerfile instructions, or TEXT_MAX bytes (1 MiB)
 * of Dockerfile, -ENOMEM.
 * @out is zeroed first and left empty on failure; free it with
 * template_spec__free().
 */
int template_spec__parse(const json_t *body, const char *dflt,
			 const char *base_user, struct template_spec *out,
			 char *err, size_t errlen, char *step, size_t steplen);

/* Free what @s holds (not @s); @s may be empty. */
void template_spec__free(struct template_spec *s);

/*
 * The E2B step name for the Dockerfile line @line of @s into @step
 * (@steplen bytes): "base" for line 0 or FROM, else "N"; "finalize"
 * past the last line.
 */
void template_spec__step_name(const struct template_spec *s, unsigned int line,
			      char *step, size_t steplen);

/* Whether @name is one of E2B's default template names (base, ...). */
bool template_spec__is_default(const char *name);

#endif /* EMBER_API_E2B_TEMPLATE_SPEC_H */
