// SPDX-License-Identifier: Apache-2.0
/* --config-file (see config_file.h). */
#include "config_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "../../devices/fileio.h"
#include "body.h"

/* Read the whole file (a regular file, at most CONFIG_FILE_MAX bytes). */
static char *config__read(const char *path, size_t *len, struct control_err *e)
{
	struct stat st;
	char *buf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		snprintf(e->msg, sizeof(e->msg), "%s", strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > CONFIG_FILE_MAX) {
		snprintf(e->msg, sizeof(e->msg), "%s",
			 S_ISREG(st.st_mode) ? "larger than 1 MiB" :
					       "not a regular file");
		close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf || fileio__pread_all(fd, buf, (uint64_t)st.st_size, 0)) {
		snprintf(e->msg, sizeof(e->msg), "cannot read it");
		free(buf);
		close(fd);
		return NULL;
	}
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

/* Prefix @e with the section's name, as "drives: ...". */
static int config__in(const char *section, int ret, struct control_err *e)
{
	char msg[sizeof(e->msg)];

	if (!ret)
		return 0;
	snprintf(msg, sizeof(msg), "\"%s\": %.400s", section, e->msg);
	memcpy(e->msg, msg, sizeof(msg));
	return ret;
}

int api_config__apply(struct control *c, const char *path,
		      struct control_err *e)
{
	static const char *const unsupported[] = {
		"balloon",
		"mmds-config",
		"cpu-config",
		"memory-hotplug",
	};
	json_error_t je;
	json_t *root, *v, *item;
	size_t len, i;
	char *text;
	int ret = 0;

	text = config__read(path, &len, e);
	if (!text)
		return -EINVAL;
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (!root) {
		snprintf(e->msg, sizeof(e->msg), "%s at line %d column %d",
			 je.text, je.line, je.column);
		return -EINVAL;
	}
	if (!json_is_object(root)) {
		snprintf(e->msg, sizeof(e->msg), "not a JSON object");
		ret = -EINVAL;
		goto out;
	}
	for (i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++) {
		v = json_object_get(root, unsupported[i]);
		if (v && !json_is_null(v)) {
			snprintf(e->msg, sizeof(e->msg),
				 "\"%s\" is not supported by ember",
				 unsupported[i]);
			ret = -EINVAL;
			goto out;
		}
	}
	v = json_object_get(root, "network-interfaces");
	if (v && !json_is_null(v) && !json_is_array(v)) {
		snprintf(e->msg, sizeof(e->msg),
			 "\"network-interfaces\" must be an array");
		ret = -EINVAL;
		goto out;
	}
	if (!json_object_get(root, "boot-source") ||
	    json_is_null(json_object_get(root, "boot-source"))) {
		snprintf(e->msg, sizeof(e->msg), "missing field `boot-source`");
		ret = -EINVAL;
		goto out;
	}
	if (!json_is_array(json_object_get(root, "drives"))) {
		snprintf(e->msg, sizeof(e->msg),
			 "missing field `drives` (an array, may be empty)");
		ret = -EINVAL;
		goto out;
	}
	/* Firecracker's order: logger, metrics, machine, boot, drives, ... */
	v = json_object_get(root, "logger");
	if (v && !json_is_null(v))
		ret = config__in("logger", body__logger(c, v, e), e);
	v = json_object_get(root, "metrics");
	if (!ret && v && !json_is_null(v))
		ret = config__in("metrics", body__metrics(c, v, e), e);
	v = json_object_get(root, "machine-config");
	if (!ret && v && !json_is_null(v))
		ret = config__in("machine-config",
				 body__machine_config(c, v, false, e), e);
	if (!ret)
		ret = config__in(
			"boot-source",
			body__boot_source(
				c, json_object_get(root, "boot-source"), e),
			e);
	json_array_foreach(json_object_get(root, "drives"), i, item)
	{
		if (ret)
			break;
		ret = config__in("drives", body__drive(c, NULL, item, e), e);
	}
	json_array_foreach(json_object_get(root, "network-interfaces"), i, item)
	{
		if (ret)
			break;
		ret = config__in("network-interfaces",
				 body__net(c, NULL, item, e), e);
	}
	v = json_object_get(root, "vsock");
	if (!ret && v && !json_is_null(v))
		ret = config__in("vsock", body__vsock(c, v, e), e);
	v = json_object_get(root, "entropy");
	if (!ret && v && !json_is_null(v))
		ret = config__in("entropy", body__entropy(c, v, e), e);
out:
	json_decref(root);
	return ret;
}
