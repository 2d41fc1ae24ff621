// SPDX-License-Identifier: Apache-2.0
/*
 * containerd.task.v2.Task (runtime/v2/task/shim.proto) for ember: each
 * task a container in the shim's microVM (pod.h), its processes run
 * through the guest agent (proc.h), its root a disk (rootfs.h).  One
 * shim serves one task, or every container of a pod (main.c groups them
 * by the CRI plugin's sandbox-id annotation).  Handlers run in threads
 * of their own (ttrpc.h); the service's lock guards the containers and
 * processes, never held across a VM operation or an agent call.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../sandbox/agent_client.h"
#include "../sandbox/clock.h"
#include "../sandbox/files.h"
#include "../sandbox/lookup.h"
#include "../sandbox/sandbox.h"
#include "binds.h"
#include "oci_spec.h"
#include "pod.h"
#include "proc.h"
#include "proto/cgroups2.pb-c.h"
#include "proto/empty.pb-c.h"
#include "proto/events.pb-c.h"
#include "proto/runtimeoptions.pb-c.h"
#include "proto/shim.pb-c.h"
#include "proto/task_types.pb-c.h"
#include "rootfs.h"
#include "shim.h"

#define TASK_SERVICE "containerd.task.v2.Task"
#define STATE_FILE   "ember.state" /* in the bundle: what delete cleans */
#define SPEC_MAX     (4 << 20)
#define MAX_EXECS    64
#define EXEC_ID_MAX  128

struct container {
	struct container *next;
	char *id, *bundle;
	bool ready; /* Create finished */
	struct oci_spec spec;
	struct proc *init;
	struct proc *execs[MAX_EXECS];
	size_t nr_execs;
	unsigned int slot;
	bool attached, host_mounted, paused;
	char rootfs_dir[PATH_MAX]; /* BUNDLE/rootfs */
	char disk[PATH_MAX]; /* our copy; "" for a block device */
};

struct shim_service {
	struct shim_ctx ctx;
	pthread_mutex_t lock;
	pthread_cond_t exited;
	struct container *containers;
	struct pod pod;
	int conf_rc;
	char conf_err[512];
};

/* --- replies and events ------------------------------------------------ */

static void fail(struct ttrpc_reply *r, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fail(struct ttrpc_reply *r, int code, const char *fmt, ...)
{
	va_list ap;

	r->code = code;
	va_start(ap, fmt);
	vsnprintf(r->message, sizeof(r->message), fmt, ap);
	va_end(ap);
}

/* containerd's errdefs as gRPC codes, for a negative errno. */
static int code_of(int rc)
{
	switch (rc) {
	case -ENOENT:
		return TTRPC_NOT_FOUND;
	case -EEXIST:
		return TTRPC_ALREADY_EXISTS;
	case -EINVAL:
	case -E2BIG:
		return TTRPC_INVALID_ARGUMENT;
	case -ENOTSUP:
		return TTRPC_UNIMPLEMENTED;
	case -ENOSPC:
	case -ENOMEM:
		return TTRPC_RESOURCE_EXHAUSTED;
	case -EBUSY:
	case -ESRCH:
		return TTRPC_FAILED_PRECONDITION;
	default:
		return TTRPC_UNKNOWN;
	}
}

static void pack(struct ttrpc_reply *r, const ProtobufCMessage *m)
{
	size_t n = protobuf_c_message_get_packed_size(m);

	r->payload = malloc(n ? n : 1);
	if (!r->payload) {
		fail(r, TTRPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	r->len = protobuf_c_message_pack(m, r->payload);
}

static void empty(struct ttrpc_reply *r)
{
	Google__Protobuf__Empty e = GOOGLE__PROTOBUF__EMPTY__INIT;

	pack(r, &e.base);
}

static void publish(struct shim_service *s, const char *topic,
		    const char *type_url, const ProtobufCMessage *m)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(n ? n : 1);

	if (!buf)
		return;
	protobuf_c_message_pack(m, buf);
	if (s->ctx.events)
		shim_events__publish(s->ctx.events, topic, type_url, buf, n);
	free(buf);
}

static void stamp(Google__Protobuf__Timestamp *t, const struct timespec *ts)
{
	t->seconds = ts->tv_sec;
	t->nanos = (int32_t)ts->tv_nsec;
}

static uint32_t vm_pid(const struct shim_service *s)
{
	return s->pod.running && s->pod.info.ember > 0 ?
		       (uint32_t)s->pod.info.ember :
		       (uint32_t)getpid();
}

/* --- lookups (under the lock) ------------------------------------------ */

static struct container *find(struct shim_service *s, const char *id)
{
	struct container *c;

	for (c = s->containers; c; c = c->next)
		if (c->ready && !strcmp(c->id, id))
			return c;
	return NULL;
}

static struct proc *find_proc(struct container *c, const char *exec_id)
{
	size_t i;

	if (!exec_id || !exec_id[0])
		return c->init;
	for (i = 0; i < c->nr_execs; i++)
		if (!strcmp(c->execs[i]->id, exec_id))
			return c->execs[i];
	return NULL;
}

/*
 * The container and process a request names, or a NOT_FOUND reply.
 * With the lock held.
 */
static struct proc *lookup(struct shim_service *s, const char *id,
			   const char *exec_id, struct container **cp,
			   struct ttrpc_reply *r)
{
	struct container *c = find(s, id);
	struct proc *pr;

	if (!c) {
		fail(r, TTRPC_NOT_FOUND, "task %s: not found", id);
		return NULL;
	}
	pr = find_proc(c, exec_id);
	if (!pr) {
		fail(r, TTRPC_NOT_FOUND, "process %s of task %s: not found",
		     exec_id, id);
		return NULL;
	}
	if (cp)
		*cp = c;
	return pr;
}

/* --- a process's end ------------------------------------------------------ */

static void on_exit_cb(void *opaque, struct proc *pr)
{
	struct shim_service *s = opaque;
	Containerd__Events__TaskExit ev = CONTAINERD__EVENTS__TASK_EXIT__INIT;
	Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
	struct container *c;
	size_t i;

	pthread_mutex_lock(&s->lock);
	pr->state = PROC_STOPPED;
	stamp(&ts, &pr->exited_at);
	ev.container_id = pr->cid;
	ev.id = pr->id[0] ? pr->id : pr->cid;
	ev.pid = vm_pid(s);
	ev.exit_status = pr->exit_status;
	ev.exited_at = &ts;
	/* The init's end ends the container's other processes, as runc. */
	c = find(s, pr->cid);
	if (c && c->init == pr)
		for (i = 0; i < c->nr_execs; i++)
			proc__signal(c->execs[i], SIGKILL);
	publish(s, "/tasks/exit", "containerd.events.TaskExit", &ev.base);
	pthread_cond_broadcast(&s->exited);
	pthread_mutex_unlock(&s->lock);
}

/* --- the bundle's state file (for `delete`) ------------------------------- */

static int write_state(const struct shim_service *s, const struct container *c)
{
	char path[PATH_MAX], tmp[PATH_MAX], text[PATH_MAX * 2 + 64];
	int n;

	if ((size_t)snprintf(path, sizeof(path), "%s/" STATE_FILE, c->bundle) >=
		    sizeof(path) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/." STATE_FILE ".tmp",
			     c->bundle) >= sizeof(tmp))
		return -ENAMETOOLONG;
	/*
	 * The VM only in its owner's: a pod's other containers must not
	 * take the pod's VM with them when containerd cleans up after them.
	 */
	n = snprintf(text, sizeof(text), "sandbox=%s\ndisk=%s\nrootfs=%s\n",
		     s->pod.running && !strcmp(s->pod.owner, c->id) ?
			     s->pod.info.id :
			     "",
		     c->disk, c->host_mounted ? c->rootfs_dir : "");
	return files__replace(path, tmp, text, (size_t)n, 0600, FILES_NOFOLLOW);
}

/*
 * Is @id one containerd would make (its identifiers package): 1-76
 * letters and digits, single '.', '_' or '-' between them?  It becomes a
 * file name on the host and a directory in the guest.
 */
static bool id_ok(const char *id)
{
	size_t i, n = strlen(id);

	if (!n || n > 76)
		return false;
	for (i = 0; i < n; i++) {
		bool alnum = (id[i] >= 'a' && id[i] <= 'z') ||
			     (id[i] >= 'A' && id[i] <= 'Z') ||
			     (id[i] >= '0' && id[i] <= '9');

		if (alnum)
			continue;
		if (!strchr("._-", id[i]) || i == 0 || i == n - 1 ||
		    strchr("._-", id[i + 1]))
			return false;
	}
	return true;
}

/*
 * Where our copy of task @id's root goes (disk_path() makes the directory):
 * STATE/containerd/NS/ID.ext4.
 */
static int disk_name(const char *ns, const char *id, char *dir, size_t dirlen,
		     char *out, size_t outlen, char *err, size_t errlen)
{
	char state[PATH_MAX];
	int rc;

	/* Both become names of the state directory's files. */
	if ((ns && ns[0] && !id_ok(ns)) || !id_ok(id)) {
		sandbox__errf(err, errlen, 0, "a bad namespace or task id");
		return -EINVAL;
	}
	rc = sandbox__state_dir(state, sizeof(state), err, errlen);
	if (rc)
		return rc;
	if ((size_t)snprintf(dir, dirlen, "%s/containerd/%s", state,
			     ns && ns[0] ? ns : "default") >= dirlen ||
	    (size_t)snprintf(out, outlen, "%s/%s.ext4", dir, id) >= outlen)
		return -ENAMETOOLONG;
	return 0;
}

/*
 * The state file of @bundle into @buf (@size bytes), NUL-terminated: its
 * length, 0 when there is none, or -errno.  Only a regular file is read
 * (a FIFO there must not hang `delete`).
 */
static ssize_t read_state(const char *path, char *buf, size_t size)
{
	struct stat st;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return n;
}

/* Is @rootfs the directory "rootfs" of @bundle (symbolic links resolved)? */
static bool bundle_rootfs(const char *bundle, const char *rootfs)
{
	char a[PATH_MAX], b[PATH_MAX], parent[PATH_MAX];
	size_t n = strlen(rootfs);

	if (n <= 7 || n >= sizeof(parent) || strcmp(rootfs + n - 7, "/rootfs"))
		return false;
	memcpy(parent, rootfs, n - 7);
	parent[n - 7] = '\0';
	return realpath(bundle, a) && realpath(parent, b) && !strcmp(a, b);
}

/*
 * The state file names what Create made; it is only a hint, never trusted
 * as a path: the disk removed is the one Create makes for @ns/@id, the
 * directory unmounted @bundle/rootfs, the sandbox killed one named by its
 * full id.
 */
int shim_service__cleanup_bundle(const char *bundle, const char *ns,
				 const char *id, char *err, size_t errlen)
{
	char path[PATH_MAX], dir[PATH_MAX], disk[PATH_MAX];
	char text[PATH_MAX * 2 + 64], *save = NULL, *first, *k, *v;
	char ignored[256];
	struct sandbox_info info;
	ssize_t n;
	int rc = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/" STATE_FILE, bundle) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	n = read_state(path, text, sizeof(text));
	if (n < 0) {
		sandbox__errf(err, errlen, 0, "%s: %s", path,
			      n == -EINVAL ? "not a regular file" :
					     strerror((int)-n));
		return (int)n;
	}
	if (!n) {
		unlink(path);
		return 0;
	}
	for (first = text; files__next_kv(first, &save, &k, &v) > 0;
	     first = NULL) {
		if (!strcmp(k, "sandbox") && sandbox__is_id(v) &&
		    sandbox__find(v, &info, err, errlen) == 0 &&
		    !strcmp(info.id, v))
			rc = sandbox__kill(&info, err, errlen);
		else if (!strcmp(k, "disk") && v[0] && id &&
			 !disk_name(ns, id, dir, sizeof(dir), disk,
				    sizeof(disk), ignored, sizeof(ignored)) &&
			 !strcmp(v, disk))
			unlink(disk);
		else if (!strcmp(k, "rootfs") && v[0] &&
			 bundle_rootfs(bundle, v) &&
			 (size_t)snprintf(disk, sizeof(disk), "%s/rootfs",
					  bundle) < sizeof(disk))
			rootfs__unmount(disk);
	}
	unlink(path);
	return rc;
}

/* --- Create ---------------------------------------------------------------- */

static int read_spec(const char *bundle, struct oci_spec *spec, char *err,
		     size_t errlen)
{
	char path[PATH_MAX], *buf;
	struct stat st;
	ssize_t n;
	int fd, rc;

	if ((size_t)snprintf(path, sizeof(path), "%s/config.json", bundle) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		rc = -errno;
		sandbox__errf(err, errlen, 0, "%s: %s", path, strerror(errno));
		return rc;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		sandbox__errf(err, errlen, 0, "%s: not a regular file", path);
		close(fd);
		return -EINVAL;
	}
	buf = malloc(SPEC_MAX);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	n = read(fd, buf, SPEC_MAX);
	close(fd);
	if (n < 0 || n == SPEC_MAX) {
		sandbox__errf(err, errlen, 0, "%s: %s", path,
			      n < 0 ? strerror(errno) : "over 4 MiB");
		free(buf);
		return n < 0 ? -EIO : -E2BIG;
	}
	rc = oci_spec__parse(buf, (size_t)n, spec, err, errlen);
	free(buf);
	return rc;
}

/* Where our copy of a container's root goes: beside the sandboxes. */
static int disk_path(const struct shim_service *s, const char *id, char *out,
		     size_t outlen, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	int rc = disk_name(s->ctx.ns, id, dir, sizeof(dir), out, outlen, err,
			   errlen);

	if (rc)
		return rc;
	rc = files__mkdir_p(dir);
	if (rc)
		sandbox__errf(err, errlen, 0, "%s: %s", dir, strerror(-rc));
	return rc;
}

/* Undo what Create made for @c (not its processes). */
static void teardown(struct shim_service *s, struct container *c)
{
	if (c->attached)
		pod__detach(&s->pod, c->id, c->slot);
	c->attached = false;
	if (c->disk[0])
		unlink(c->disk);
	c->disk[0] = '\0';
	if (c->host_mounted)
		rootfs__unmount(c->rootfs_dir);
	c->host_mounted = false;
}

static void unlink_container(struct shim_service *s, struct container *c)
{
	struct container **pp;

	for (pp = &s->containers; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			return;
		}
}

static void free_container(struct container *c)
{
	size_t i;

	proc__free(c->init);
	for (i = 0; i < c->nr_execs; i++)
		proc__free(c->execs[i]);
	oci_spec__free(&c->spec);
	free(c->id);
	free(c->bundle);
	free(c);
}

static int create_disk(struct shim_service *s, struct container *c,
		       const Containerd__Task__V2__CreateTaskRequest *q,
		       const char **disk, uint64_t *sectors, char *err,
		       size_t errlen)
{
	struct rootfs_mount m[16];
	char work[PATH_MAX + 16];
	const char *dev;
	size_t i;
	int rc, fd;

	if (q->n_rootfs > 16) {
		sandbox__errf(err, errlen, 0, "%zu rootfs mounts: at most 16",
			      q->n_rootfs);
		return -E2BIG;
	}
	for (i = 0; i < q->n_rootfs; i++) {
		m[i].type = q->rootfs[i]->type;
		m[i].source = q->rootfs[i]->source;
		m[i].options = (const char *const *)q->rootfs[i]->options;
	}
	/* NULL-terminated option lists: protobuf-c gives counts. */
	for (i = 0; i < q->n_rootfs; i++) {
		const char **o =
			calloc(q->rootfs[i]->n_options + 1, sizeof(char *));
		size_t k;

		if (!o) {
			while (i--)
				free((void *)m[i].options);
			return -ENOMEM;
		}
		for (k = 0; k < q->rootfs[i]->n_options; k++)
			o[k] = q->rootfs[i]->options[k];
		m[i].options = o;
	}
	dev = rootfs__block_device(m, q->n_rootfs);
	if (dev) {
		/* devmapper: the guest gets the snapshot's device. */
		uint64_t bytes = 0;

		fd = open(dev, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || ioctl(fd, BLKGETSIZE64, &bytes)) {
			rc = -errno;
			sandbox__errf(err, errlen, 0, "%s: %s", dev,
				      strerror(errno));
			if (fd >= 0)
				close(fd);
			goto out;
		}
		close(fd);
		*disk = dev;
		*sectors = bytes / 512;
		rc = 0;
		goto out;
	}
	rc = -ENAMETOOLONG;
	if ((size_t)snprintf(c->rootfs_dir, sizeof(c->rootfs_dir), "%s/%s",
			     c->bundle,
			     q->n_rootfs ? "rootfs" : c->spec.root_path) >=
	    sizeof(c->rootfs_dir))
		goto out;
	if (c->spec.root_path[0] == '/' && !q->n_rootfs)
		snprintf(c->rootfs_dir, sizeof(c->rootfs_dir), "%s",
			 c->spec.root_path);
	if (q->n_rootfs) {
		mkdir(c->rootfs_dir, 0711);
		rc = rootfs__mount(m, q->n_rootfs, c->rootfs_dir, err, errlen);
		if (rc)
			goto out;
		c->host_mounted = true;
	}
	rc = disk_path(s, c->id, c->disk, sizeof(c->disk), err, errlen);
	if (rc)
		goto out;
	snprintf(work, sizeof(work), "%s.work", c->disk);
	rc = rootfs__to_disk(c->rootfs_dir, c->disk, work, 0, sectors, err,
			     errlen);
	if (rc) {
		c->disk[0] = '\0';
		goto out;
	}
	*disk = c->disk;
out:
	for (i = 0; i < q->n_rootfs; i++)
		free((void *)m[i].options);
	return rc;
}

/*
 * The runtime's options (containerd's configuration, or ctr's
 * --runtime-config-path): its ConfigPath file configures the pod's VM,
 * when this Create starts it.
 */
static int runtime_options(struct shim_service *s,
			   const Google__Protobuf__Any *any, char *err,
			   size_t errlen)
{
	Runtimeoptions__V1__Options *o;
	struct pod_conf conf;
	int rc = 0;

	o = runtimeoptions__v1__options__unpack(NULL, any->value.len,
						any->value.data);
	if (!o)
		return sandbox__errf(err, errlen, -EINVAL,
				     "malformed runtime options");
	if (o->config_path[0]) {
		rc = pod__conf(&conf, o->config_path, err, errlen);
		if (!rc && pod__set_conf(&s->pod, &conf) == 0)
			s->conf_rc = 0;
	} else if (s->conf_rc) {
		rc = sandbox__errf(err, errlen, -EINVAL, "%s", s->conf_err);
	}
	runtimeoptions__v1__options__free_unpacked(o, NULL);
	return rc;
}

/* The pod's microVM started in a thread of its own. */
struct vm_job {
	struct shim_service *s;
	const char *cid;
	const struct oci_spec *spec;
	bool started;
	int rc;
	int64_t ms;
	char err[1024];
};

static void *start_vm(void *arg)
{
	struct vm_job *j = arg;
	int64_t t0 = clock__mono_ms();

	j->rc = pod__start(&j->s->pod, j->cid, j->spec, j->err, sizeof(j->err));
	j->ms = clock__mono_ms() - t0;
	return NULL;
}

static void do_create(struct shim_service *s, const uint8_t *buf, size_t len,
		      struct ttrpc_reply *r)
{
	struct vm_job job = { 0 };
	int64_t t0, t_disk = 0, t_vm = 0;
	pthread_t vm_thread;
	Containerd__Task__V2__CreateTaskRequest *q;
	Containerd__Task__V2__CreateTaskResponse resp =
		CONTAINERD__TASK__V2__CREATE_TASK_RESPONSE__INIT;
	Containerd__Events__TaskCreate ev =
		CONTAINERD__EVENTS__TASK_CREATE__INIT;
	Containerd__Events__TaskIO io = CONTAINERD__EVENTS__TASK_IO__INIT;
	struct container *c = NULL, *o;
	struct oci_process proc_spec;
	const char *disk = NULL;
	uint64_t sectors = 0;
	char err[1024] = "";
	int rc;

	q = containerd__task__v2__create_task_request__unpack(NULL, len, buf);
	if (!q) {
		fail(r, TTRPC_INVALID_ARGUMENT, "malformed CreateTaskRequest");
		return;
	}
	if (!id_ok(q->id) || !q->bundle[0]) {
		fail(r, TTRPC_INVALID_ARGUMENT,
		     "CreateTaskRequest: a bad id (1-76 letters, digits and "
		     "single . _ -) or no bundle");
		goto out;
	}
	if (q->checkpoint[0]) {
		fail(r, TTRPC_UNIMPLEMENTED,
		     "restoring a checkpoint: not implemented by the ember "
		     "runtime");
		goto out;
	}
	if (q->options &&
	    !strcmp(q->options->type_url, "runtimeoptions.v1.Options")) {
		rc = runtime_options(s, q->options, err, sizeof(err));
		if (rc) {
			fail(r, code_of(rc), "ember shim: %s", err);
			goto out;
		}
	} else if (s->conf_rc) {
		fail(r, TTRPC_FAILED_PRECONDITION, "ember shim: %s",
		     s->conf_err);
		goto out;
	}
	c = calloc(1, sizeof(*c));
	if (!c || !(c->id = strdup(q->id)) ||
	    !(c->bundle = strdup(q->bundle))) {
		fail(r, TTRPC_RESOURCE_EXHAUSTED, "out of memory");
		goto out;
	}
	pthread_mutex_lock(&s->lock);
	for (o = s->containers; o; o = o->next)
		if (!strcmp(o->id, c->id))
			break;
	if (!o) {
		c->next = s->containers;
		s->containers = c;
	}
	pthread_mutex_unlock(&s->lock);
	if (o) {
		fail(r, TTRPC_ALREADY_EXISTS, "task %s: already exists", q->id);
		free(c->id);
		free(c->bundle);
		free(c);
		c = NULL;
		goto out;
	}
	rc = read_spec(c->bundle, &c->spec, err, sizeof(err));
	if (!rc && c->spec.process.terminal != (bool)q->terminal)
		c->spec.process.terminal = q->terminal;
	t0 = clock__mono_ms();
	/*
	 * The microVM starts (or restores) while the root's disk is made:
	 * the two do not wait for each other.
	 */
	if (!rc) {
		job.s = s;
		job.cid = c->id;
		job.spec = &c->spec;
		job.started =
			pthread_create(&vm_thread, NULL, start_vm, &job) == 0;
		if (!job.started)
			start_vm(&job);
		rc = create_disk(s, c, q, &disk, &sectors, err, sizeof(err));
		t_disk = clock__mono_ms();
		if (job.started)
			pthread_join(vm_thread, NULL);
		if (!rc && job.rc) {
			rc = job.rc;
			snprintf(err, sizeof(err), "%s", job.err);
		}
		t_vm = job.ms;
	}
	/* From here on `delete` can find the VM if the shim dies. */
	if (!rc)
		rc = write_state(s, c);
	if (!rc)
		rc = pod__attach(&s->pod, c->id, disk, sectors, &c->spec,
				 &c->slot, err, sizeof(err));
	if (!rc) {
		c->attached = true;
		rc = binds__copy(&s->pod, c->id, &c->spec, err, sizeof(err));
	}
	if (!rc)
		rc = pod__seal(&s->pod, c->id, &c->spec, err, sizeof(err));
	if (!rc)
		fprintf(stderr,
			"ember shim: task %s created in %lld ms (its disk %lld "
			"ms, the microVM %lld ms%s, its root in the guest "
			"%lld ms)\n",
			c->id, (long long)(clock__mono_ms() - t0),
			(long long)(t_disk - t0), (long long)t_vm,
			s->pod.restored ? ", restored" : "",
			(long long)(clock__mono_ms() -
				    (t0 > t_disk ? t0 : t_disk)));
	if (rc) {
		fail(r, code_of(rc), "ember: task %s: %s", c->id,
		     err[0] ? err : strerror(-rc));
		goto undo;
	}
	proc_spec = c->spec.process;
	memset(&c->spec.process, 0, sizeof(c->spec.process));
	c->init = proc__new(&s->pod, c->id, "", &proc_spec, q->stdin, q->stdout,
			    q->stderr, q->terminal, on_exit_cb, s);
	if (!c->init) {
		oci_process__free(&proc_spec);
		fail(r, TTRPC_RESOURCE_EXHAUSTED, "out of memory");
		goto undo;
	}
	pthread_mutex_lock(&s->lock);
	c->ready = true;
	pthread_mutex_unlock(&s->lock);
	resp.pid = vm_pid(s);
	pack(r, &resp.base);
	io.stdin = q->stdin;
	io.stdout = q->stdout;
	io.stderr = q->stderr;
	io.terminal = q->terminal;
	ev.container_id = c->id;
	ev.bundle = c->bundle;
	ev.n_rootfs = q->n_rootfs;
	ev.rootfs = q->rootfs;
	ev.io = &io;
	ev.pid = resp.pid;
	publish(s, "/tasks/create", "containerd.events.TaskCreate", &ev.base);
	goto out;
undo:
	teardown(s, c);
	{
		char path[PATH_MAX + 16];
		bool last;

		snprintf(path, sizeof(path), "%s/" STATE_FILE, c->bundle);
		unlink(path);
		pthread_mutex_lock(&s->lock);
		unlink_container(s, c);
		last = !s->containers;
		pthread_mutex_unlock(&s->lock);
		if (last)
			pod__stop(&s->pod);
	}
	free_container(c);
out:
	containerd__task__v2__create_task_request__free_unpacked(q, NULL);
}

/* --- Start, State, Wait ------------------------------------------------------ */

static void do_start(struct shim_service *s, const uint8_t *buf, size_t len,
		     struct ttrpc_reply *r)
{
	Containerd__Task__V2__StartRequest *q;
	Containerd__Task__V2__StartResponse resp =
		CONTAINERD__TASK__V2__START_RESPONSE__INIT;
	struct container *c;
	struct proc *pr;
	char err[1024] = "";
	int rc;

	q = containerd__task__v2__start_request__unpack(NULL, len, buf);
	if (!q) {
		fail(r, TTRPC_INVALID_ARGUMENT, "malformed StartRequest");
		return;
	}
	pthread_mutex_lock(&s->lock);
	pr = lookup(s, q->id, q->exec_id, &c, r);
	if (pr && pr->state != PROC_CREATED) {
		fail(r, TTRPC_FAILED_PRECONDITION,
		     "process %s of task %s: already started", q->exec_id,
		     q->id);
		pr = NULL;
	}
	if (pr)
		pr->state = PROC_RUNNING; /* no second Start meanwhile */
	pthread_mutex_unlock(&s->lock);
	if (!pr)
		goto out;
	rc = proc__start(pr, err, sizeof(err));
	if (rc) {
		fail(r, code_of(rc), "ember: starting %s: %s", q->id, err);
		pthread_mutex_lock(&s->lock);
		pthread_cond_broadcast(&s->exited);
		pthread_mutex_unlock(&s->lock);
		goto out;
	}
	resp.pid = vm_pid(s);
	pack(r, &resp.base);
	if (q->exec_id[0]) {
		Containerd__Events__TaskExecStarted ev =
			CONTAINERD__EVENTS__TASK_EXEC_STARTED__INIT;

		ev.container_id = q->id;
		ev.exec_id = q->exec_id;
		ev.pid = resp.pid;
		publish(s, "/tasks/exec-started",
			"containerd.events.TaskExecStarted", &ev.base);
	} else {
		Containerd__Events__TaskStart ev =
			CONTAINERD__EVENTS__TASK_START__INIT;

		ev.container_id = q->id;
		ev.pid = resp.pid;
		publish(s, "/tasks/start", "containerd.events.TaskStart",
			&ev.base);
	}
out:
	containerd__task__v2__start_request__free_unpacked(q, NULL);
}

static Containerd__V1__Types__Status status_of(const struct container *c,
					       const struct proc *pr)
{
	switch (pr->state) {
	case PROC_CREATED:
		return CONTAINERD__V1__TYPES__STATUS__CREATED;
	case PROC_RUNNING:
		return c->paused ? CONTAINERD__V1__TYPES__STATUS__PAUSED :
				   CONTAINERD__V1__TYPES__STATUS__RUNNING;
	default:
		return CONTAINERD__V1__TYPES__STATUS__STOPPED;
	}
}

static void do_state(struct shim_service *s, const uint8_t *buf, size_t len,
		     struct ttrpc_reply *r)
{
	Containerd__Task__V2__StateRequest *q;
	Containerd__Task__V2__StateResponse resp =
		CONTAINERD__TASK__V2__STATE_RESPONSE__INIT;
	Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
	struct container *c;
	struct proc *pr;

	q = containerd__task__v2__state_request__unpack(NULL, len, buf);
	if (!q) {
		fail(r, TTRPC_INVALID_ARGUMENT, "malformed StateRequest");
		return;
	}
	pthread_mutex_lock(&s->lock);
	pr = lookup(s, q->id, q->exec_id, &c, r);
	if (pr) {
		resp.id = q->id;
		resp.exec_id = q->exec_id;
		resp.bundle = c->bundle;
		resp.pid = vm_pid(s);
		resp.status = status_of(c, pr);
		resp.stdin = pr->stdin_path;
		resp.stdout = pr->stdout_path;
		resp.stderr = pr->stderr_path;
		resp.terminal = pr->terminal;
		if (pr->state == PROC_STOPPED) {
			resp.exit_status = pr->exit_status;
			stamp(&ts, &pr->exited_at);
			resp.exited_at = &ts;
		}
		pack(r, &resp.base);
	}
	pthread_mutex_unlock(&s->lock);
	containerd__task__v2__state_request__free_unpacked(q, NULL);
}

static void do_wait(struct shim_service *s, const uint8_t *buf, size_t len,
		    struct ttrpc_reply *r)
{
	Containerd__Task__V2__WaitRequest *q;
	Containerd__Task__V2__WaitResponse resp =
		CONTAINERD__TASK__V2__WAIT_RESPONSE__INIT;
	Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
	struct container *c;
	struct proc *pr;

	q = containerd__task__v2__wait_request__unpack(NULL, len, buf);
	if (!q) {
		fail(r, TTRPC_INVALID_ARGUMENT, "malformed WaitRequest");
		return;
	}
	pthread_mutex_lock(&s->lock);
	for (;;) {
		pr = lookup(s, q->id, q->exec_id, &c, r);
		if (!pr || pr->state == PROC_STOPPED)
			break;
		pthread_cond_wait(&s->exited, &s->lock);
	}
	if (pr) {
		resp.exit_status = pr->exit_status;
		stamp(&ts, &pr->exited_at);
		resp.exited_at = &ts;
		pack(r, &resp.base);
	}
	pthread_mutex_unlock(&s->lock);
	containerd__task__v2__wait_request__free_unpacked(q, NULL);
}

/* --- Kill, Pids, Pause, Resume ---------------------------------------------- */

static void do_kill(struct shim_service *s, const uint8_t *buf, size_t len,
		    struct ttrpc_reply *r)
{
	Containerd__Task__V2__KillRequest *q;
	struct container *c;
	struct proc *pr;
	size_t i;
	int rc;

	q = containerd__task__v2__kill_request__unpack(NULL, len, buf);
	if (!q) {
		fail(r, TTRPC_INVALID_ARGUMENT, "malformed KillRequest");
		return;
	}
	pthread_mutex_lock(&s->lock);
	pr = lookup(s, q->id, q->exec_id, &c, r);
	if (!pr)
		goto unlock;
	if (q->signal < 1 || q->signal > 64) {
		fail(r, TTRPC_INVALID_ARGUMENT, "signal %u: not 1-64",
		     q->signal);
		goto unlock;
	}
	if (pr->state == PROC_CREATED && q->signal == SIGKILL) {
		/* Killed before it started: it never will. */
		Containerd__Events__TaskExit ev =
			CONTAINERD__EVENTS__TASK_EXIT__INIT;
		Google__Protobuf__Timestamp ts =
			GOOGLE__PROTOBUF__TIMESTAMP__INIT;

		pr->state = PROC_STOPPED;
		pr->exit_status = 128 + SIGKILL;
		clock_gettime(CLOCK_REALTIME, &pr->exited_at);
		stamp(&ts, &pr->exited_at);
		ev.container_id = pr->cid;
		ev.id = pr->id[0] ? pr->id : pr->cid;
		ev.pid = vm_pid(s);
		ev.exit_status = pr->exit_status;
		ev.exited_at = &ts;
		publish(s, "/tasks/exit", "containerd.events.TaskExit",
			&ev.base);
		pthread_cond_broadcast(&s->exited);
		empty(r);
		goto unlock;
	}
	rc = proc__signal(pr, (int)q->signal);
	if (q->all)
		for (i = 0; i < c->nr_execs; i++)
			proc__signal(c->execs[i], (int)q->signal);
	if (rc == -ESRCH && !q->all)
		fail(r, TTRPC_NOT_FOUND, "process already finished");
	else if (rc == -EBUSY)
		fail(r, TTRPC_UNAVAILABLE,
		     "signal %u: the guest takes no more for now", q->signal);
	else
		empty(r);
unlock:
	pthread_mutex_unlock(&s->lock);
	containerd__task__v2__kill_request__free_unpacked(q, NULL);
}

static void do_pids(struct shim_service *s, const uint8_t *buf, size_t len,
		    struct ttrpc_reply *r)
{
	Containerd__Task__V2__PidsRequest *q;
	Containerd__Task__V2__PidsResponse resp =
		CONTAINERD__TASK__V2__PIDS_RESPONSE__INIT;
	Containerd__V1__Types__ProcessInfo info =
		CONTAINERD__V1__TYPES__PROCESS_INFO__INIT;
	Containerd__V1__Types__ProcessInfo *list[1] = { &info };
	struct container *c;

	q = containerd__task__v2__pids_request__unpack(NULL, len, buf);
	if (!q) {
		fail(r, TTRPC_INVALID_ARGUMENT, "malformed PidsRequest");
		return;
	}
	pthread_mutex_lock(&s->lock);
	c = find(s, q->id);
	if (!c) {
		fail(r, TTRPC_NOT_FOUND, "task %s: not found", q->id);
	} else {
		/*
		 * The guest's processes are the VM's: the host sees one
		 * process, ember, as it sees one for any microVM runtime.
		 */
		info.pid = vm_pid(s);
		resp.n_processes = 1;
		resp.processes = list;
		pack(r, &resp.base);
	}
	pthread_mutex_unlock(&s->lock);
	containerd__task__v2__pids_request__free_unpacked(q, NULL);
}

static void do_pause(struct shim_service *s, const uint8_t *buf, size_t len,
		     struct ttrpc_reply *r, bool pause)
{
	Containerd__Task__V2__PauseRequest *q;
	struct container *c;
	char err[1024];
	char *id;
	int rc;

	/* PauseRequest and ResumeRequest are the same: id = 1. */
	q = containerd__task__v2__pause_request__unpack(NULL, len, buf);
	if (!q) {
		fail(r, TTRPC_INVALID_ARGUMENT, "malformed request");
		return;
	}
	id = q->id;
	pthread_mutex_lock(&s->lock);
	c = find(s, id);
	pthread_mutex_unlock(&s->lock);
	if (!c) {
		fail(r, TTRPC_NOT_FOUND, "task %s: not found", id);
		goto out;
	}
	rc = sandbox__pause(&s->pod.info, pause, err, sizeof(err));
	if (rc) {
		fail(r, code_of(rc), "ember: %s %s: %s",
		     pause ? "pausing" : "resuming", id, err);
		goto out;
	}
	empty(r);
	pthread_mutex_lock(&s->lock);
	/*
	 * The VM is the pod's: all its containers pause with it, and each
	 * gets its event.
	 */
	for (c = s->containers; c; c = c->next) {
		if (!c->ready || c->paused == pause)
			continue;
		c->paused = pause;
		if (pause) {
			Containerd__Events__TaskPaused ev =
				CONTAINERD__EVENTS__TASK_PAUSED__INIT;

			ev.container_id = c->id;
			publish(s, "/tasks/paused",
				"containerd.events.TaskPaused", &ev.base);
		} else {
			Containerd__Events__TaskResumed ev =
				CONTAINERD__EVENTS__TASK_RESUMED__INIT;

			ev.container_id = c->id;
			publish(s, "/tasks/resumed",
				"containerd.events.TaskResumed", &ev.base);
		}
	}
	pthread_mutex_unlock(&s->lock);
out:
	containerd__task__v2__pause_request__free_unpacked(q, NULL);
}

/* --- Exec, ResizePty, CloseIO ----------------------------------------------- */

static void do_exec(struct shim_service *s, const uint8_t *buf, size_t len,
		    struct ttrpc_reply *r)
{
	Containerd__Task__V2__ExecProcessRequest *q;
	Containerd__Events__TaskExecAdded ev =
		CONTAINERD__EVENTS__TASK_EXEC_ADDED__INIT;
	struct oci_process spec;
	struct container *c;
	struct proc *pr = NULL;
	char err[512];
	int rc;

	q = containerd__task__v2__exec_process_request__unpack(NULL, len, buf);
	if (!q) {
		fail(r, TTRPC_INVALID_ARGUMENT, "malformed ExecProcessRequest");
		return;
	}
	if (!q->exec_id[0] || strlen(q->exec_id) > EXEC_ID_MAX || !q->spec) {
		fail(r, TTRPC_INVALID_ARGUMENT,
		     "exec: an exec id (1-%d bytes) and a spec are needed",
		     EXEC_ID_MAX);
		goto out;
	}
	rc = oci_process__parse((const char *)q->spec->value.data,
				q->spec->value.len, &spec, err, sizeof(err));
	if (rc) {
		oci_process__free(&spec);
		fail(r, code_of(rc), "exec %s: %s", q->exec_id, err);
		goto out;
	}
	if (spec.terminal != (bool)q->terminal)
		spec.terminal = q->terminal;
	pthread_mutex_lock(&s->lock);
	c = find(s, q->id);
	if (!c) {
		fail(r, TTRPC_NOT_FOUND, "task %s: not found", q->id);
	} else if (c->init->state != PROC_RUNNING) {
		fail(r, TTRPC_FAILED_PRECONDITION,
		     "task %s: not running: cannot exec in it", q->id);
	} else if (find_proc(c, q->exec_id)) {
		fail(r, TTRPC_ALREADY_EXISTS, "exec %s: already exists",
		     q->exec_id);
	} else if (c->nr_execs == MAX_EXECS) {
		fail(r, TTRPC_RESOURCE_EXHAUSTED,
		     "task %s: %d execs at once at most", q->id, MAX_EXECS);
	} else {
		pr = proc__new(&s->pod, c->id, q->exec_id, &spec, q->stdin,
			       q->stdout, q->stderr, q->terminal, on_exit_cb,
			       s);
		if (pr)
			c->execs[c->nr_execs++] = pr;
		else
			fail(r, TTRPC_RESOURCE_EXHAUSTED, "out of memory");
	}
	pthread_mutex_unlock(&s->lock);
	oci_process__free(&spec);
	if (!pr)
		goto out;
	empty(r);
	ev.container_id = q->id;
	ev.exec_id = q->exec_id;
	publish(s, "/tasks/exec-added", "containerd.events.TaskExecAdded",
		&ev.base);
out:
	containerd__task__v2__exec_process_request__free_unpacked(q, NULL);
}

static void do_resize(struct shim_service *s, const uint8_t *buf, size_t len,
		      struct ttrpc_reply *r)
{
	Containerd__Task__V2__ResizePtyRequest *q;
	struct proc *pr;
	int rc;

	q = containerd__task__v2__resize_pty_request__unpack(NULL, len, buf);
	if (!q) {
		fail(r, TTRPC_INVALID_ARGUMENT, "malformed ResizePtyRequest");
		return;
	}
	pthread_mutex_lock(&s->lock);
	pr = lookup(s, q->id, q->exec_id, NULL, r);
	if (pr) {
		rc = proc__resize(pr, q->width, q->height);
		if (rc == -ENOTTY)
			fail(r, TTRPC_FAILED_PRECONDITION,
			     "process has no terminal");
		else
			empty(r); /* a finished one: nothing to resize */
	}
	pthread_mutex_unlock(&s->lock);
	containerd__task__v2__resize_pty_request__free_unpacked(q, NULL);
}

static void do_close_io(struct shim_service *s, const uint8_t *buf, size_t len,
			struct ttrpc_reply *r)
{
	Containerd__Task__V2__CloseIORequest *q;
	struct proc *pr;

	q = containerd__task__v2__close_iorequest__unpack(NULL, len, buf);
	if (!q) {
		fail(r, TTRPC_INVALID_ARGUMENT, "malformed CloseIORequest");
		return;
	}
	pthread_mutex_lock(&s->lock);
	pr = lookup(s, q->id, q->exec_id, NULL, r);
	if (pr) {
		if (q->stdin)
			proc__close_stdin(pr);
		empty(r);
	}
	pthread_mutex_unlock(&s->lock);
	containerd__task__v2__close_iorequest__free_unpacked(q, NULL);
}

/* --- Delete, Connect, Stats, Shutdown ----------------------------------------- */

static void do_delete(struct shim_service *s, const uint8_t *buf, size_t len,
		      struct ttrpc_reply *r)
{
	Containerd__Task__V2__DeleteRequest *q;
	Containerd__Task__V2__DeleteResponse resp =
		CONTAINERD__TASK__V2__DELETE_RESPONSE__INIT;
	Containerd__Events__TaskDelete ev =
		CONTAINERD__EVENTS__TASK_DELETE__INIT;
	Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
	struct container *c = NULL;
	struct proc *pr, *gone = NULL;
	bool last = false;
	size_t i;

	q = containerd__task__v2__delete_request__unpack(NULL, len, buf);
	if (!q) {
		fail(r, TTRPC_INVALID_ARGUMENT, "malformed DeleteRequest");
		return;
	}
	pthread_mutex_lock(&s->lock);
	pr = lookup(s, q->id, q->exec_id, &c, r);
	if (pr && pr->state == PROC_RUNNING) {
		fail(r, TTRPC_FAILED_PRECONDITION,
		     "cannot delete a running process (%s%s%s)", q->id,
		     q->exec_id[0] ? " " : "", q->exec_id);
		pr = NULL;
	}
	if (pr) {
		if (pr->state == PROC_CREATED) {
			pr->exit_status = 0;
			clock_gettime(CLOCK_REALTIME, &pr->exited_at);
		}
		resp.pid = vm_pid(s);
		resp.exit_status = pr->exit_status;
		stamp(&ts, &pr->exited_at);
		resp.exited_at = &ts;
		if (q->exec_id[0]) {
			for (i = 0; i < c->nr_execs; i++)
				if (c->execs[i] == pr)
					break;
			c->execs[i] = c->execs[--c->nr_execs];
			gone = pr;
		} else {
			c->ready = false; /* no more requests find it */
		}
		/* A Wait on what never ran: it is gone, NOT_FOUND. */
		pthread_cond_broadcast(&s->exited);
	}
	pthread_mutex_unlock(&s->lock);
	if (!pr)
		goto out;
	if (!q->exec_id[0]) {
		char path[PATH_MAX + 16];

		teardown(s, c);
		snprintf(path, sizeof(path), "%s/" STATE_FILE, c->bundle);
		pthread_mutex_lock(&s->lock);
		unlink_container(s, c);
		last = !s->containers;
		pthread_mutex_unlock(&s->lock);
		if (last)
			pod__stop(&s->pod);
		unlink(path);
	}
	pack(r, &resp.base);
	ev.container_id = q->id;
	ev.id = q->exec_id[0] ? q->exec_id : q->id;
	ev.pid = resp.pid;
	ev.exit_status = resp.exit_status;
	ev.exited_at = &ts;
	if (!q->exec_id[0])
		publish(s, "/tasks/delete", "containerd.events.TaskDelete",
			&ev.base);
	proc__free(gone);
	if (!q->exec_id[0])
		free_container(c);
out:
	containerd__task__v2__delete_request__free_unpacked(q, NULL);
}

static void do_connect(struct shim_service *s, const uint8_t *buf, size_t len,
		       struct ttrpc_reply *r)
{
	Containerd__Task__V2__ConnectRequest *q;
	Containerd__Task__V2__ConnectResponse resp =
		CONTAINERD__TASK__V2__CONNECT_RESPONSE__INIT;

	q = containerd__task__v2__connect_request__unpack(NULL, len, buf);
	if (!q) {
		fail(r, TTRPC_INVALID_ARGUMENT, "malformed ConnectRequest");
		return;
	}
	pthread_mutex_lock(&s->lock);
	resp.shim_pid = (uint32_t)getpid();
	resp.task_pid = vm_pid(s);
	pthread_mutex_unlock(&s->lock);
	pack(r, &resp.base);
	containerd__task__v2__connect_request__free_unpacked(q, NULL);
}

/* ember's CPU time (µs) and resident memory (bytes), from /proc. */
static void vm_usage(pid_t pid, uint64_t *user_us, uint64_t *sys_us,
		     uint64_t *rss)
{
	char path[64], buf[1024], *p;
	unsigned long long ut = 0, st = 0, pages = 0;
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f;

	*user_us = *sys_us = *rss = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
			sscanf(p + 2,
			       "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
			       "%llu %llu",
			       &ut, &st);
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%*u %llu", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	if (hz > 0) {
		*user_us = ut * 1000000ull / (unsigned long long)hz;
		*sys_us = st * 1000000ull / (unsigned long long)hz;
	}
	*rss = pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void do_stats(struct shim_service *s, const uint8_t *buf, size_t len,
		     struct ttrpc_reply *r)
{
	Containerd__Task__V2__StatsRequest *q;
	Containerd__Task__V2__StatsResponse resp =
		CONTAINERD__TASK__V2__STATS_RESPONSE__INIT;
	Io__Containerd__Cgroups__V2__Metrics m =
		IO__CONTAINERD__CGROUPS__V2__METRICS__INIT;
	Io__Containerd__Cgroups__V2__CPUStat cpu =
		IO__CONTAINERD__CGROUPS__V2__CPUSTAT__INIT;
	Io__Containerd__Cgroups__V2__MemoryStat mem =
		IO__CONTAINERD__CGROUPS__V2__MEMORY_STAT__INIT;
	Google__Protobuf__Any any = GOOGLE__PROTOBUF__ANY__INIT;
	uint8_t *packed = NULL;
	struct container *c;
	pid_t pid = 0;
	size_t n;

	q = containerd__task__v2__stats_request__unpack(NULL, len, buf);
	if (!q) {
		fail(r, TTRPC_INVALID_ARGUMENT, "malformed StatsRequest");
		return;
	}
	pthread_mutex_lock(&s->lock);
	c = find(s, q->id);
	if (c && s->pod.running)
		pid = s->pod.info.ember;
	pthread_mutex_unlock(&s->lock);
	if (!c) {
		fail(r, TTRPC_NOT_FOUND, "task %s: not found", q->id);
		goto out;
	}
	/*
	 * The VM's cost on the host, as cgroup v2 metrics: ember's CPU time
	 * and resident memory (the guest's memory it touched), the limit
	 * the VM's size.
	 */
	vm_usage(pid, &cpu.user_usec, &cpu.system_usec, &mem.usage);
	cpu.usage_usec = cpu.user_usec + cpu.system_usec;
	mem.usage_limit = (uint64_t)s->pod.info.mem_mib << 20;
	m.cpu = &cpu;
	m.memory = &mem;
	n = protobuf_c_message_get_packed_size(&m.base);
	packed = malloc(n ? n : 1);
	if (!packed) {
		fail(r, TTRPC_RESOURCE_EXHAUSTED, "out of memory");
		goto out;
	}
	protobuf_c_message_pack(&m.base, packed);
	any.type_url = "io.containerd.cgroups.v2.Metrics";
	any.value.data = packed;
	any.value.len = n;
	resp.stats = &any;
	pack(r, &resp.base);
out:
	free(packed);
	containerd__task__v2__stats_request__free_unpacked(q, NULL);
}

static void do_shutdown(struct shim_service *s, struct ttrpc_reply *r)
{
	bool idle;

	pthread_mutex_lock(&s->lock);
	idle = !s->containers;
	pthread_mutex_unlock(&s->lock);
	empty(r);
	/* A pod's shim stays while any of its containers does. */
	if (idle && s->ctx.server)
		ttrpc_server__stop(s->ctx.server);
}

/* --- the service ----------------------------------------------------------------- */

void shim_service__handle(void *opaque, const struct ttrpc_call *call,
			  struct ttrpc_reply *r)
{
	struct shim_service *s = opaque;
	const char *m = call->method;
	const uint8_t *b = call->payload;
	size_t n = call->len;

	r->code = TTRPC_OK;
	if (strcmp(call->service, TASK_SERVICE)) {
		fail(r, TTRPC_UNIMPLEMENTED, "service %s: not implemented",
		     call->service);
		return;
	}
	if (!strcmp(m, "Create"))
		do_create(s, b, n, r);
	else if (!strcmp(m, "Start"))
		do_start(s, b, n, r);
	else if (!strcmp(m, "State"))
		do_state(s, b, n, r);
	else if (!strcmp(m, "Wait"))
		do_wait(s, b, n, r);
	else if (!strcmp(m, "Kill"))
		do_kill(s, b, n, r);
	else if (!strcmp(m, "Delete"))
		do_delete(s, b, n, r);
	else if (!strcmp(m, "Pids"))
		do_pids(s, b, n, r);
	else if (!strcmp(m, "Pause"))
		do_pause(s, b, n, r, true);
	else if (!strcmp(m, "Resume"))
		do_pause(s, b, n, r, false);
	else if (!strcmp(m, "Exec"))
		do_exec(s, b, n, r);
	else if (!strcmp(m, "ResizePty"))
		do_resize(s, b, n, r);
	else if (!strcmp(m, "CloseIO"))
		do_close_io(s, b, n, r);
	else if (!strcmp(m, "Connect"))
		do_connect(s, b, n, r);
	else if (!strcmp(m, "Stats"))
		do_stats(s, b, n, r);
	else if (!strcmp(m, "Shutdown"))
		do_shutdown(s, r);
	else
		fail(r, TTRPC_UNIMPLEMENTED, "%s/%s: not implemented",
		     TASK_SERVICE, m);
}

struct shim_service *shim_service__new(const struct shim_ctx *ctx)
{
	struct shim_service *s = calloc(1, sizeof(*s));
	struct pod_conf conf;

	if (!s)
		return NULL;
	s->ctx = *ctx;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->exited, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* A bad configuration fails each Create, saying why. */
	s->conf_rc = pod__conf(&conf, NULL, s->conf_err, sizeof(s->conf_err));
	pod__init(&s->pod, &conf);
	return s;
}

void shim_service__free(struct shim_service *s)
{
	struct container *c;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	c = s->containers;
	s->containers = NULL;
	pthread_mutex_unlock(&s->lock);
	while (c) {
		struct container *next = c->next;

		teardown(s, c);
		free_container(c);
		c = next;
	}
	pod__stop(&s->pod);
	free(s);
}
