/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The programs and files that ship beside the front ends (ember, the
 * guest kernel and rootfs, ember-jailer): a path given on the command
 * line wins, then an environment variable, then the file of that name in
 * the running binary's own directory, so that a build tree or an
 * installed bin/ works without configuration.
 */
#ifndef EMBER_API_SIBLING_H
#define EMBER_API_SIBLING_H

#include <stddef.h>

/*
 * sibling__path() - where the file @rel beside this binary is: @given
 * when not NULL, else $@env when set and not empty, else @rel in the
 * directory of /proc/self/exe.  That path, as chosen, is left in @tried
 * (@triedsz bytes; "" when /proc/self/exe could not be read or the path
 * would not fit), for messages; then it is resolved (realpath(3)) into
 * @out (@outsz bytes).  0; or the negative errno of readlink(2) or
 * realpath(3), or -ENAMETOOLONG, and then @out is "".  Whether the file
 * may be run or read is the caller's to check.
 */
int sibling__path(const char *given, const char *env, const char *rel,
		  char *tried, size_t triedsz, char *out, size_t outsz);

#endif /* EMBER_API_SIBLING_H */
