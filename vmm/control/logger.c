// SPDX-License-Identifier: Apache-2.0
/* PUT /logger: where ember's log goes, and its level (see control.h). */
#include "core.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "../log.h"

struct logger_args {
	const char *path;
	enum control_log_level level;
};

static int ctl__set_logger(struct control *c, const void *args,
			   struct control_err *e)
{
	static const enum log_level levels[] = {
		[CONTROL_LOG_OFF] = LOG_NOTE,
		[CONTROL_LOG_ERROR] = LOG_ERROR,
		[CONTROL_LOG_WARNING] = LOG_WARN,
		[CONTROL_LOG_INFO] = LOG_INFO,
		[CONTROL_LOG_DEBUG] = LOG_DEBUG,
		[CONTROL_LOG_TRACE] = LOG_DEBUG,
	};
	const struct logger_args *a = args;
	int fd;

	if (a->level > CONTROL_LOG_TRACE)
		return ctl__err(e, -EINVAL, "Logger error: bad level.");
	if (c->dry_run)
		return 0; /* no files opened, no log level changed */
	if (a->path) {
		fd = ctl__open_sink(a->path);
		if (fd < 0)
			return ctl__err(e, -EINVAL,
					"Logger error: Failed to open target "
					"file: %s (%s)",
					strerror(-fd), a->path);
		log__set_fd(fd);
		if (c->log_fd >= 0)
			close(c->log_fd);
		c->log_fd = fd;
	}
	log__set_level(levels[a->level]);
	return 0;
}

int control__set_logger(struct control *c, const char *path,
			enum control_log_level level, struct control_err *e)
{
	struct logger_args a = { path, level };

	return ctl__run(c, CTL_PREBOOT, ctl__set_logger, &a, e);
}
