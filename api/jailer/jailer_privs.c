// SPDX-License-Identifier: Apache-2.0
/*
 * What the jailed process may do: resource limits (setrlimit(2)), its uid
 * and gid, its capabilities (capabilities(7), applied with libcap-ng) and
 * no_new_privs (PR_SET_NO_NEW_PRIVS, prctl(2)).
 */
#include <cap-ng.h>
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "jailer.h"

int jail_privs__set_rlimits(const struct jail_args *a, struct jail_err *e)
{
	struct rlimit r = { a->no_file, a->no_file };

	if (setrlimit(RLIMIT_NOFILE, &r))
		return jail_err__set(e, errno, NULL,
				     "set resource limit no-file=%llu",
				     (unsigned long long)a->no_file);
	r.rlim_cur = r.rlim_max = a->fsize;
	if (setrlimit(RLIMIT_FSIZE, &r))
		return jail_err__set(e, errno, NULL,
				     "set resource limit fsize=%llu",
				     (unsigned long long)a->fsize);
	return 0;
}

/*
 * The one capability a uid 0 jail keeps: Firecracker's jailer leaves
 * root every capability, and Kata (--uid 0) relies on it, creating the
 * logs and metrics FIFOs it passes with mode 0000.  Only files in the
 * jail are reachable, all of them the caller's.
 */
#define ROOT_KEEPS CAP_DAC_OVERRIDE

int jail_privs__drop_bounding(const struct jail_args *a, struct jail_err *e)
{
	/* libcap-ng reads /proc/self/status here: not in the chroot. */
	capng_clear(CAPNG_SELECT_ALL);
	if (a->uid == 0 &&
	    capng_update(CAPNG_ADD, CAPNG_BOUNDING_SET, ROOT_KEEPS))
		return jail_err__set(e, EPERM, NULL,
				     "keep CAP_DAC_OVERRIDE for uid 0");
	if (capng_apply(CAPNG_SELECT_BOUNDS))
		return jail_err__set(e, EPERM, NULL,
				     "drop the capability bounding set");
	return 0;
}

/*
 * Every capability set empty but for @keep (a capability number, or -1)
 * in the bounding, permitted and effective sets, checked with the
 * kernel's own interfaces.
 */
static bool caps_only(int keep)
{
	__u32 mask[_LINUX_CAPABILITY_U32S_3] = { 0 };
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3,
						0 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
	unsigned long i;
	int i_ret;

	if (keep >= 0)
		mask[keep / 32] = 1U << (keep % 32);
	if (syscall(SYS_capget, &hdr, d))
		return false;
	for (i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
		if (d[i].effective != mask[i] || d[i].permitted != mask[i] ||
		    d[i].inheritable)
			return false;
	for (i = 0;; i++) {
		i_ret = prctl(PR_CAPBSET_READ, i, 0, 0, 0);
		if (i_ret < 0)
			break; /* past the last capability */
		if (i_ret != ((long)i == keep) ||
		    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, i, 0, 0) != 0)
			return false;
	}
	return i > 0;
}

int jail_privs__drop(const struct jail_args *a, bool *dropped,
		     struct jail_err *e)
{
	*dropped = false;
	if (setgroups(0, NULL))
		return jail_err__set(e, errno, NULL, "setgroups([])");
	if (setresgid(a->gid, a->gid, a->gid))
		return jail_err__set(e, errno, NULL, "setgid %u",
				     (unsigned int)a->gid);
	if (setresuid(a->uid, a->uid, a->uid))
		return jail_err__set(e, errno, NULL, "setuid %u",
				     (unsigned int)a->uid);
	*dropped = true;
	/* setuid() to non-root empties permitted and effective; not for 0. */
	capng_clear(CAPNG_SELECT_ALL);
	if (a->uid == 0 &&
	    capng_update(CAPNG_ADD, CAPNG_PERMITTED | CAPNG_EFFECTIVE,
			 ROOT_KEEPS))
		return jail_err__set(e, EPERM, NULL,
				     "keep CAP_DAC_OVERRIDE for uid 0");
	if (capng_apply(CAPNG_SELECT_CAPS | CAPNG_SELECT_AMBIENT))
		return jail_err__set(e, EPERM, NULL, "drop capabilities");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return jail_err__set(e, errno, NULL, "set no_new_privs");
	if (!caps_only(a->uid == 0 ? ROOT_KEEPS : -1))
		return jail_err__set(e, EPERM, "a capability is left",
				     "check capabilities");
	return 0;
}
