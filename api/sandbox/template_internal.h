/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What template.c shares with template_save.c (a template made from a
 * running sandbox) and with nothing else: the steps every new template
 * goes through, so that a saved template is laid out, locked, recorded
 * and published exactly as a built one (template.h).  Implemented in
 * template.c.
 */
#ifndef EMBER_API_TEMPLATE_INTERNAL_H
#define EMBER_API_TEMPLATE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "template.h"

/*
 * template__root() - <state>/templates into @out (@outsz bytes); with
 * @create, made (0700) when missing.  0, or a negative errno with @err.
 */
int template__root(char *out, size_t outsz, bool create, char *err,
		   size_t errlen);

/*
 * template__begin() - the new template @name's hidden directory
 * <@root>/.NAME.new into @tmp (@tmpsz bytes), made, with its lock file
 * created and flock()ed exclusive in *@lock_fd (the caller closes it
 * once the directory is published or removed).  A .NAME.new whose lock
 * is free (a build that died) is removed first.  -EEXIST when NAME
 * exists or another build holds .NAME.new; other negative errno, and
 * then nothing is left.
 */
int template__begin(const char *root, const char *name, char *tmp, size_t tmpsz,
		    int *lock_fd, char *err, size_t errlen);

/*
 * template__write_info() - write @t's mem, vcpus, created, kernel,
 * rootfs, setup, interp and net as the info file of the template
 * directory @dir (0400, atomically through info.tmp).  0, -EINVAL (a
 * newline in kernel or rootfs), -ENAMETOOLONG, or the failing call's
 * negative errno (no info.tmp left).
 */
int template__write_info(const char *dir, const struct template_info *t);

/*
 * template__seal() - chmod 0400 the file @name in @dir: a template's
 * files are read-only.  0 or a negative errno.
 */
int template__seal(const char *dir, const char *name);

/*
 * template__publish() - make the template @name whole and visible: seal
 * its disk, state and memory files in @tmp (template__seal()), write its
 * info @t, and rename @tmp to @dir (both in the templates directory,
 * under the lock of template__begin()).  0, or a negative errno with the
 * reason in @err (-EEXIST: another build made @name meanwhile); then
 * @tmp is still there, the caller's to remove.
 */
int template__publish(const char *tmp, const char *dir,
		      const struct template_info *t, const char *name,
		      char *err, size_t errlen);

#endif /* EMBER_API_TEMPLATE_INTERNAL_H */
