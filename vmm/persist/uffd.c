// SPDX-License-Identifier: Apache-2.0
/*
 * The Uffd memory backend of PUT /snapshot/load (see persist.h): guest RAM
 * is anonymous memory registered with a userfaultfd, and an external page
 * server fills each page on its first touch.  The handshake is
 * Firecracker's: ember connects to the server's Unix socket and sends, in
 * one message, a JSON array describing each guest memory region and, as
 * SCM_RIGHTS, the userfaultfd.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <linux/userfaultfd.h>

#include "../mem.h"
#include "persist.h"

#define UFFD_MSG_MAX 4096 /* bytes of the region description */

static int uffd__why(char *why, int ret, const char *what, const char *path)
{
	snprintf(why, PERSIST_WHY_MAX, "Uffd backend %s: %s: %s", path, what,
		 strerror(-ret));
	return ret;
}

/* One region per guest memory region, offsets as in the memory file. */
static int uffd__describe(const struct guest_mem *m, char *buf, size_t n)
{
	size_t used = 0;
	uint64_t off = 0;
	unsigned int i;
	int w;

	w = snprintf(buf, n, "[");
	for (i = 0; i < m->nr_regions && w >= 0 && (size_t)w < n - used; i++) {
		used += (size_t)w;
		w = snprintf(buf + used, n - used,
			     "%s{\"base_host_virt_addr\":%llu,\"size\":%llu,"
			     "\"offset\":%llu,\"page_size\":%u,"
			     "\"page_size_kib\":%u}",
			     i ? "," : "",
			     (unsigned long long)(uintptr_t)m->region[i].hva,
			     (unsigned long long)m->region[i].size,
			     (unsigned long long)off, 4096u, 4u);
		off += m->region[i].size;
	}
	if (w < 0 || (size_t)w >= n - used)
		return -E2BIG;
	used += (size_t)w;
	w = snprintf(buf + used, n - used, "]");
	return w < 0 || (size_t)w >= n - used ? -E2BIG : (int)(used + 1);
}

int uffd__connect(struct guest_mem *m, const char *path, int *uffd_out,
		  int *sock_out, char *why)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)m->map, .len = m->map_bytes },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char msg[UFFD_MSG_MAX];
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov;
	struct msghdr mh = { 0 };
	struct cmsghdr *c;
	int uffd, s = -1, len, ret;

	*uffd_out = *sock_out = -1;
	if (strlen(path) >= sizeof(sa.sun_path))
		return uffd__why(why, -ENAMETOOLONG, "socket path", path);
	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0)
		return uffd__why(why, -errno, "userfaultfd", path);
	if (ioctl(uffd, UFFDIO_API, &api) < 0 ||
	    ioctl(uffd, UFFDIO_REGISTER, &reg) < 0) {
		ret = uffd__why(why, -errno, "registering guest RAM", path);
		goto fail;
	}
	len = uffd__describe(m, msg, sizeof(msg));
	if (len < 0) {
		ret = uffd__why(why, len, "region list", path);
		goto fail;
	}
	/*
	 * Non-blocking: a page server whose backlog is full (or that never
	 * accepts) gets an error, never the event thread stuck in connect().
	 */
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = uffd__why(why, -errno,
				errno == EAGAIN ? "connect (the page server "
						  "is not accepting)" :
						  "connect",
				path);
		goto fail;
	}
	iov = (struct iovec){ .iov_base = msg, .iov_len = (size_t)len };
	memset(&ctl, 0, sizeof(ctl));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = ctl.buf;
	mh.msg_controllen = sizeof(ctl.buf);
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &uffd, sizeof(int));
	if (sendmsg(s, &mh, MSG_NOSIGNAL) != len) {
		ret = uffd__why(why, errno ? -errno : -EIO,
				"sending the "
				"userfaultfd",
				path);
		goto fail;
	}
	*uffd_out = uffd;
	*sock_out = s;
	return 0;
fail:
	if (s >= 0)
		close(s);
	close(uffd);
	return ret;
}
