// SPDX-License-Identifier: Apache-2.0
/* A sandbox's spare drives: see spare.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "ember_api.h"
#include "files.h"
#include "record.h"
#include "spare.h"

int sandbox__make_spares(const char *dir, unsigned int n, char *err,
			 size_t errlen)
{
	char path[PATH_MAX];
	unsigned int k;
	int fd, rc = 0;

	if (n > SANDBOX_MAX_SPARE_DRIVES)
		return sandbox__errf(err, errlen, -EINVAL,
				     "%u spare drives (at most %d)", n,
				     SANDBOX_MAX_SPARE_DRIVES);
	for (k = 0; k < n; k++) {
		if (files__pathf(path, sizeof(path), "%s/" SANDBOX_SPARE_NAME,
				 dir, k)) {
			rc = sandbox__errf(err, errlen, -ENAMETOOLONG,
					   "sandbox path too long");
			break;
		}
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 || ftruncate(fd, SANDBOX_SPARE_BYTES) < 0)
			rc = -errno;
		if (fd >= 0 && close(fd) < 0 && rc == 0)
			rc = -errno;
		if (rc < 0) {
			sandbox__errf(err, errlen, rc, "spare drive %s: %s",
				      path, strerror(-rc));
			k++; /* remove this one too */
			break;
		}
	}
	if (rc < 0)
		while (k-- > 0)
			if (files__pathf(path, sizeof(path),
					 "%s/" SANDBOX_SPARE_NAME, dir, k) == 0)
				unlink(path);
	return rc;
}

int sandbox__swap_drive(const struct sandbox_info *info, unsigned int slot,
			const char *path, char *err, size_t errlen)
{
	char lock[PATH_MAX], sock[PATH_MAX], own[PATH_MAX], id[16];
	struct sandbox_info cur = *info;
	int fd, rc;

	if (slot >= info->spare_drives)
		return sandbox__errf(err, errlen, -ERANGE,
				     "sandbox %s has %u spare drive%s: no "
				     "slot %u",
				     info->id, info->spare_drives,
				     info->spare_drives == 1 ? "" : "s", slot);
	if (path && path[0] != '/')
		return sandbox__errf(err, errlen, -EINVAL,
				     "spare drive %u: %s is not an absolute "
				     "path",
				     slot, path);
	if (files__pathf(lock, sizeof(lock), "%s/" SANDBOX_PAUSE_LOCK,
			 info->dir) ||
	    files__pathf(sock, sizeof(sock), "%s/" SANDBOX_API_NAME,
			 info->dir) ||
	    files__pathf(own, sizeof(own), "%s/" SANDBOX_SPARE_NAME, info->dir,
			 slot))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "sandbox path too long");
	snprintf(id, sizeof(id), SANDBOX_SPARE_ID, slot);
	/* One pause, park, resume, save or swap at a time. */
	fd = files__lock(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600, LOCK_EX, err,
			 errlen);
	if (fd == -ENOENT)
		return sandbox__errf(err, errlen, -ENOENT, "sandbox %s is gone",
				     info->id);
	if (fd < 0)
		return fd;
	rc = sandbox__read_info(info->dir, &cur);
	if (rc)
		rc = sandbox__errf(err, errlen, rc, "sandbox %s: %s", info->id,
				   rc == -ENOENT ? "gone" : strerror(-rc));
	else if (cur.parked)
		rc = sandbox__errf(err, errlen, -EINVAL,
				   "sandbox %s is parked on disk: resume it "
				   "first",
				   info->id);
	else if (!cur.ready)
		rc = sandbox__errf(err, errlen, -EAGAIN,
				   "sandbox %s is still booting", info->id);
	else if (slot >= cur.spare_drives)
		rc = sandbox__errf(err, errlen, -ERANGE,
				   "sandbox %s has %u spare drives: no slot %u",
				   info->id, cur.spare_drives, slot);
	if (rc)
		goto out;
	rc = ember_api__update_drive(sock, id, path ? path : own, err, errlen);
	if (rc < 0)
		goto out;
	if (path)
		cur.spare_swapped |= 1U << slot;
	else
		cur.spare_swapped &= ~(1U << slot);
	rc = sandbox__write_info(info->dir, &cur);
	if (rc)
		sandbox__errf(err, errlen, rc,
			      "spare drive %u swapped, but writing the info "
			      "file: %s",
			      slot, strerror(-rc));
out:
	close(fd);
	return rc;
}
