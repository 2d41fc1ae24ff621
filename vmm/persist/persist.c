// SPDX-License-Identifier: Apache-2.0
/* Snapshot create and load: the orchestration (see persist.h). */
#include "persist.h"

#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../snapshot/state.h"
#include "../kvm.h"
#include "../log.h"
#include "../pvm/pvm.h"
#include "../vm.h"
#include "parts.h"

#define PERSIST_VERSION 1 /* of the host, memory, vm and vcpu sections */

static int persist__why(char *why, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int persist__why(char *why, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, PERSIST_WHY_MAX, fmt, ap);
	va_end(ap);
	return ret;
}

/* The last error line logged (a part's reason), or @fallback. */
static const char *persist__logged(const char *fallback)
{
	const char *l = log__last_error();

	return *l ? l : fallback;
}

static double persist__now_ms(void)
{
	return log__ms();
}

/* --- the host a snapshot depends on -------------------------------------- */

struct persist_host {
	uint32_t tsc_khz;
	bool pvm;
	char vendor[13];
	uint32_t signature; /* CPUID.1 EAX: family, model, stepping */
};

static void persist__host_now(struct persist_host *h, const struct vm *vm)
{
	unsigned int a = 0, b = 0, c = 0, d = 0;

	memset(h, 0, sizeof(*h));
	h->tsc_khz = vm->tsc_khz;
	h->pvm = vm->pvm;
	__get_cpuid(0, &a, &b, &c, &d);
	memcpy(h->vendor, &b, 4);
	memcpy(h->vendor + 4, &d, 4);
	memcpy(h->vendor + 8, &c, 4);
	__get_cpuid(1, &a, &b, &c, &d);
	h->signature = a;
}

static void persist__save_host(const struct vm *vm, struct snap_buf *b)
{
	struct persist_host h;

	persist__host_now(&h, vm);
	snap_buf__section(b, "host", PERSIST_VERSION);
	snap_buf__u32(b, h.tsc_khz);
	snap_buf__u8(b, h.pvm);
	snap_buf__str(b, h.vendor);
	snap_buf__u32(b, h.signature);
	snap_buf__u32(b, vm->nr_vcpus);
}

/*
 * The guest's TSC runs at the rate it saw at boot; without TSC scaling a
 * host with another rate would make its clocks wrong: refused (0.1%).
 */
static int persist__check_host(const struct snap_state *s, const struct vm *vm,
			       char *why)
{
	struct persist_host now, was;
	struct snap_cur c;
	uint32_t nr_vcpus, diff;

	if (snap_state__find(s, "host", &c) || c.version != PERSIST_VERSION)
		return persist__why(why, -EINVAL,
				    "section host is missing or of another "
				    "version");
	memset(&was, 0, sizeof(was));
	was.tsc_khz = snap_cur__u32(&c);
	was.pvm = snap_cur__u8(&c) != 0;
	snap_cur__str(&c, was.vendor, sizeof(was.vendor));
	was.signature = snap_cur__u32(&c);
	nr_vcpus = snap_cur__u32(&c);
	if (snap_cur__end(&c))
		return persist__why(why, -EINVAL, "section host is malformed");
	persist__host_now(&now, vm);
	if (strcmp(was.vendor, now.vendor))
		return persist__why(why, -EINVAL,
				    "the snapshot was taken on a %s CPU, this "
				    "host has a %s CPU",
				    was.vendor, now.vendor);
	if (was.pvm != now.pvm)
		return persist__why(why, -EINVAL,
				    "the snapshot was taken %s the PVM "
				    "profile, this host runs %s it",
				    was.pvm ? "with" : "without",
				    now.pvm ? "with" : "without");
	diff = was.tsc_khz > now.tsc_khz ? was.tsc_khz - now.tsc_khz :
					   now.tsc_khz - was.tsc_khz;
	if (!now.tsc_khz || (uint64_t)diff * 1000 > now.tsc_khz)
		return persist__why(why, -EINVAL,
				    "the snapshot's TSC ran at %u kHz, this "
				    "host's at %u kHz: its clocks would be "
				    "wrong",
				    was.tsc_khz, now.tsc_khz);
	if (nr_vcpus != vm->nr_vcpus)
		return persist__why(why, -EINVAL,
				    "section host names %u vCPUs, the "
				    "configuration %u",
				    nr_vcpus, vm->nr_vcpus);
	if (was.signature != now.signature)
		log_warn("snapshot: taken on CPU signature 0x%x, this host is "
			 "0x%x",
			 was.signature, now.signature);
	return 0;
}

/* --- create ------------------------------------------------------------ */

static void persist__file_id(const struct stat *st, uint64_t *size,
			     uint64_t *mtime_ns)
{
	*size = (uint64_t)st->st_size;
	*mtime_ns = (uint64_t)st->st_mtim.tv_sec * 1000000000ULL +
		    (uint64_t)st->st_mtim.tv_nsec;
}

/* Write the memory file through a temporary file, then rename it. */
/*
 * Write the memory file to the temporary file @tmp (PATH_MAX bytes) beside
 * it, synced; the caller renames it into place once the state file is
 * written too, so that a refused create changes no file.
 */
static int persist__write_mem(struct vm *vm, const struct persist_create *req,
			      const uint64_t *sel, struct memfile_stats *ms,
			      char *tmp, char *why)
{
	struct memfile_range r = { .hva = vm->mem.map,
				   .size = vm->mem.map_bytes };
	int fd, ret;

	if (snprintf(tmp, PATH_MAX, "%s.tmp.%d", req->mem_path,
		     (int)getpid()) >= PATH_MAX)
		return persist__why(why, -ENAMETOOLONG,
				    "mem_file_path is too long");
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return persist__why(why, -errno, "memory file %s: %s",
				    req->mem_path, strerror(errno));
	ret = memfile__write(fd, &r, 1, sel, req->compress, ms);
	if (!ret && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (ret) {
		unlink(tmp);
		return persist__why(why, ret, "memory file %s: %s",
				    req->mem_path, strerror(-ret));
	}
	return 0;
}

/*
 * The two files must differ, and a Diff must neither overwrite its base
 * nor name a base that was replaced since the restore (a Full snapshot
 * written over it, say): such a snapshot could never load.
 */
static int persist__check_targets(const struct vm *vm,
				  const struct persist_create *req, char *why)
{
	struct stat a, b, now;

	if (!strcmp(req->state_path, req->mem_path) ||
	    (!stat(req->state_path, &a) && !stat(req->mem_path, &b) &&
	     a.st_dev == b.st_dev && a.st_ino == b.st_ino))
		return persist__why(why, -EINVAL,
				    "snapshot_path and mem_file_path name the "
				    "same file");
	if (req->kind != PERSIST_DIFF || vm->mem_base_fd < 0)
		return 0;
	if (fstat(vm->mem_base_fd, &a) < 0)
		return persist__why(why, -errno, "the base memory file: %s",
				    strerror(errno));
	if (!stat(req->mem_path, &b) && a.st_dev == b.st_dev &&
	    a.st_ino == b.st_ino)
		return persist__why(why, -EINVAL,
				    "mem_file_path is this VM's base memory "
				    "file %s: a Diff needs it unchanged",
				    vm->mem_base_path);
	if (stat(vm->mem_base_path, &now) < 0 || now.st_dev != a.st_dev ||
	    now.st_ino != a.st_ino)
		return persist__why(why, -EINVAL,
				    "the base memory file %s was replaced "
				    "since this VM was restored: take a Full "
				    "snapshot",
				    vm->mem_base_path);
	return 0;
}

/* The drives' images hold what the guest wrote before its snapshot. */
static void persist__sync_drives(const struct vm *vm)
{
	unsigned int i;

	for (i = 0; i < vm->cfg.nr_drives; i++) {
		int fd = open(vm->cfg.drives[i].path,
			      O_RDONLY | O_CLOEXEC | O_NONBLOCK);

		if (fd < 0 || fdatasync(fd) < 0)
			log_warn("snapshot: syncing drive %s: %s",
				 vm->cfg.drives[i].path, strerror(errno));
		if (fd >= 0)
			close(fd);
	}
}

static void persist__save_memory(const struct vm *vm, enum persist_kind kind,
				 bool compress, const uint64_t *sel,
				 struct snap_buf *b)
{
	uint64_t i, words = memfile__bitmap_words(vm->mem.map_bytes);

	snap_buf__section(b, "memory", PERSIST_VERSION);
	snap_buf__u64(b, vm->mem.map_bytes);
	snap_buf__u8(b, kind == PERSIST_DIFF);
	/* The form, so that RAM that looks compressed is not taken for it. */
	snap_buf__u8(b, compress);
	if (kind != PERSIST_DIFF)
		return;
	snap_buf__str(b, vm->mem_base_path);
	snap_buf__u64(b, vm->mem_base_size);
	snap_buf__u64(b, vm->mem_base_mtime_ns);
	snap_buf__u64(b, words);
	for (i = 0; i < words; i++)
		snap_buf__u64(b, sel[i]);
}

int persist__create(struct vm *vm, const struct persist_create *req,
		    struct persist_stats *st, char *why)
{
	struct persist_stats local;
	struct snap_buf b;
	uint64_t *sel = NULL, nsel = 0;
	char mem_tmp[PATH_MAX], state_tmp[PATH_MAX];
	double t0 = persist__now_ms();
	unsigned int i;
	char name[32];
	int ret;

	if (!st)
		st = &local;
	state_tmp[0] = '\0';
	ret = persist__check_targets(vm, req, why);
	if (ret)
		return ret;
	memset(st, 0, sizeof(*st));
	memset(&b, 0, sizeof(b));
	if (req->kind == PERSIST_DIFF && !vm->mem_base_path)
		return persist__why(
			why, -EINVAL,
			"a Diff snapshot needs a VM restored from a raw "
			"memory file (its base); this one %s: take a Full "
			"snapshot",
			vm->restored ? "was restored into anonymous memory" :
				       "was booted");
	log__clear_error();
	/*
	 * Full: a booted VM's pages it never touched are zero and are not
	 * read; a restored VM writes every page it holds: those it wrote and
	 * those its base file has data for (the base's holes it did not
	 * write are zero: reading them would only fill the page cache with
	 * zeroes).  Diff: the pages it wrote since it was restored.
	 */
	if (req->kind == PERSIST_DIFF || !vm->mem_base_path ||
	    vm->mem_base_fd >= 0) {
		ret = pages__select(vm->mem.map, vm->mem.map_bytes,
				    req->kind == PERSIST_DIFF ||
					    vm->mem_base_path,
				    &sel, &nsel);
		if (!ret && req->kind != PERSIST_DIFF && vm->mem_base_path)
			ret = pages__add_file_data(
				vm->mem_base_fd, vm->mem.map_bytes, sel, &nsel);
		if (ret) {
			free(sel);
			return persist__why(why, ret,
					    "reading the page map: %s",
					    strerror(-ret));
		}
	}
	snap_buf__init(&b);
	persist__save_host(vm, &b);
	snap_buf__section(&b, "config", CONFIG_STATE_VERSION);
	config_state__save(&vm->cfg, &b);
	persist__save_memory(vm, req->kind, req->compress, sel, &b);
	snap_buf__section(&b, "vm", PERSIST_VERSION);
	ret = vm_state__save(vm->kvm.vm_fd, &b);
	for (i = 0; !ret && i < vm->nr_vcpus; i++) {
		snprintf(name, sizeof(name), "vcpu.%u", i);
		snap_buf__section(&b, name, PERSIST_VERSION);
		ret = vcpu_state__save(&vm->vcpus[i], &b);
	}
	if (!ret)
		ret = dev_state__save(&vm->dm, &b);
	if (!ret)
		ret = snap_buf__finish(&b);
	if (ret) {
		persist__why(why, ret, "saving the VM's state: %s",
			     persist__logged(strerror(-ret)));
		goto out;
	}
	persist__sync_drives(vm);
	ret = persist__write_mem(vm, req, sel, &st->mem, mem_tmp, why);
	if (ret)
		goto out;
	/*
	 * Both files complete under temporary names first: a state file
	 * that cannot be written leaves the old memory file in place.
	 */
	if (snprintf(state_tmp, sizeof(state_tmp), "%s.new.%d", req->state_path,
		     (int)getpid()) >= (int)sizeof(state_tmp))
		ret = -ENAMETOOLONG;
	else
		ret = snap_file__write(state_tmp, b.data, b.len);
	if (!ret && rename(mem_tmp, req->mem_path) < 0)
		ret = -errno;
	if (!ret && rename(state_tmp, req->state_path) < 0)
		ret = -errno;
	if (ret) {
		unlink(mem_tmp);
		unlink(state_tmp);
		persist__why(why, ret, "snapshot file %s: %s", req->state_path,
			     strerror(-ret));
		goto out;
	}
	st->state_bytes = b.len;
	st->ms = persist__now_ms() - t0;
	log__printf(
		LOG_NOTE,
		"snapshot created in %.1f ms: %s, state %llu bytes, "
		"memory %llu of %llu pages selected written (%llu bytes%s)",
		st->ms, req->kind == PERSIST_DIFF ? "Diff" : "Full",
		(unsigned long long)b.len,
		(unsigned long long)st->mem.pages_written,
		(unsigned long long)(sel ? nsel :
					   vm->mem.map_bytes / MEMFILE_PAGE),
		(unsigned long long)st->mem.file_bytes,
		req->compress ? ", compressed" : "");
out:
	snap_buf__free(&b);
	free(sel);
	return ret;
}

/* --- load ---------------------------------------------------------------- */

struct persist_mem {
	bool diff;
	bool compressed; /* the memory file's form */
	uint64_t ram_bytes;
	char base[PATH_MAX];
	uint64_t base_size, base_mtime_ns;
	uint64_t *sel; /* a diff's pages */
};

static int persist__read_memory(const struct snap_state *s,
				struct persist_mem *pm, char *why)
{
	struct snap_cur c;
	uint64_t i, words;

	if (snap_state__find(s, "memory", &c) || c.version != PERSIST_VERSION)
		return persist__why(why, -EINVAL,
				    "section memory is missing or of another "
				    "version");
	pm->ram_bytes = snap_cur__u64(&c);
	pm->diff = snap_cur__u8(&c) != 0;
	pm->compressed = snap_cur__u8(&c) != 0;
	if (pm->diff) {
		snap_cur__str(&c, pm->base, sizeof(pm->base));
		pm->base_size = snap_cur__u64(&c);
		pm->base_mtime_ns = snap_cur__u64(&c);
		words = snap_cur__u64(&c);
		if (c.err || pm->ram_bytes % MEMFILE_PAGE ||
		    words != memfile__bitmap_words(pm->ram_bytes) ||
		    !pm->base[0])
			return persist__why(why, -EINVAL,
					    "section memory is malformed");
		pm->sel = calloc(words, sizeof(*pm->sel));
		if (!pm->sel)
			return persist__why(why, -ENOMEM, "out of memory");
		for (i = 0; i < words; i++)
			pm->sel[i] = snap_cur__u64(&c);
	}
	if (snap_cur__end(&c))
		return persist__why(why, -EINVAL,
				    "section memory is malformed");
	return 0;
}

/* Open @path read-only as a regular file. */
static int persist__open_file(const char *role, const char *path,
			      struct stat *st, char *why)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return persist__why(why, -errno, "%s %s: %s", role, path,
				    strerror(errno));
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		return persist__why(why, -EINVAL, "%s %s: not a regular file",
				    role, path);
	}
	return fd;
}

/*
 * Guest RAM for the snapshot: the raw memory file mapped MAP_PRIVATE, or
 * a compressed one read into anonymous memory; a diff's base mapped and
 * its pages read over it.  Sets @base (malloc()ed) to the raw file the
 * RAM maps, NULL for anonymous RAM.
 */
static int persist__load_memory(const struct persist_load *req,
				const struct persist_mem *pm,
				struct guest_mem *mem, char **base,
				struct stat *base_st, int *base_fd, char *why)
{
	const char *base_path = pm->diff ? pm->base : req->backend_path;
	struct memfile_range r;
	char what[PERSIST_WHY_MAX - 100];
	struct stat st;
	uint64_t bytes, size, mtime;
	bool z = false;
	int fd, bfd = -1, ret;

	*base = NULL;
	*base_fd = -1;
	fd = persist__open_file("memory file", req->backend_path, &st, why);
	if (fd < 0)
		return fd;
	/* The form the state file recorded, never what the bytes suggest. */
	z = pm->compressed;
	ret = memfile__probe_as(fd, z ? MEMFILE_COMPRESSED : MEMFILE_RAW,
				&bytes, what, sizeof(what));
	if (ret) {
		persist__why(why, ret,
			     "memory file %s (the snapshot's was "
			     "written %s): %s",
			     req->backend_path, z ? "compressed" : "raw",
			     ret == -EINVAL ? what : strerror(-ret));
		goto out;
	}
	if (bytes != pm->ram_bytes) {
		ret = persist__why(why, -EINVAL,
				   "memory file %s holds %llu bytes of RAM, "
				   "the snapshot has %llu",
				   req->backend_path, (unsigned long long)bytes,
				   (unsigned long long)pm->ram_bytes);
		goto out;
	}
	if (pm->diff) {
		bfd = persist__open_file("the diff's base memory file",
					 pm->base, base_st, why);
		if (bfd < 0) {
			ret = bfd;
			goto out;
		}
		persist__file_id(base_st, &size, &mtime);
		if (size != pm->base_size || mtime != pm->base_mtime_ns) {
			ret = persist__why(
				why, -EINVAL,
				"the diff's base memory file %s changed since "
				"the snapshot (size or mtime)",
				pm->base);
			goto out;
		}
		/* It is mapped as RAM: a raw memory file of exactly that. */
		if (size != pm->ram_bytes) {
			ret = persist__why(why, -EINVAL,
					   "the diff's base %s holds %llu "
					   "bytes, the snapshot's RAM is %llu",
					   pm->base, (unsigned long long)size,
					   (unsigned long long)pm->ram_bytes);
			goto out;
		}
		ret = mem__map_file(mem, pm->ram_bytes, bfd);
	} else if (z) {
		ret = mem__create(mem, pm->ram_bytes);
	} else {
		*base_st = st;
		ret = mem__map_file(mem, pm->ram_bytes, fd);
	}
	if (ret) {
		persist__why(why, ret, "guest RAM of %llu MiB: %s",
			     (unsigned long long)(pm->ram_bytes >> 20),
			     strerror(-ret));
		goto out;
	}
	if (pm->diff || z) {
		r.hva = mem->map;
		r.size = mem->map_bytes;
		ret = memfile__read_as(fd, z ? MEMFILE_COMPRESSED : MEMFILE_RAW,
				       &r, 1, pm->diff ? pm->sel : NULL, what,
				       sizeof(what));
		if (ret) {
			persist__why(why, ret, "memory file %s: %s",
				     req->backend_path,
				     ret == -EINVAL ? what : strerror(-ret));
			mem__destroy(mem);
			goto out;
		}
	}
	if (pm->diff || !z) {
		*base = realpath(base_path, NULL);
		if (!*base) {
			ret = persist__why(why, -errno, "memory file %s: %s",
					   base_path, strerror(errno));
			mem__destroy(mem);
			goto out;
		}
		/* Kept: a Full snapshot reads only where the base has data. */
		if (pm->diff) {
			*base_fd = bfd;
			bfd = -1;
		} else {
			*base_fd = fd;
			fd = -1;
		}
	}
out:
	if (bfd >= 0)
		close(bfd);
	if (fd >= 0)
		close(fd);
	return ret;
}

/* Apply the vsock, drive and network overrides to the saved configuration. */
static int persist__override(const struct persist_load *req,
			     struct vm_config *cfg, char *why)
{
	unsigned int i, j;
	char *p;

	if (req->vsock_uds) {
		if (!cfg->vsock.uds_path)
			return persist__why(why, -EINVAL,
					    "vsock_override: the snapshot has "
					    "no vsock device");
		p = strdup(req->vsock_uds);
		if (!p)
			return persist__why(why, -ENOMEM, "out of memory");
		free((char *)cfg->vsock.uds_path);
		cfg->vsock.uds_path = p;
	}
	for (i = 0; i < req->nr_drives; i++) {
		for (j = 0; j < cfg->nr_drives; j++)
			if (cfg->drives[j].id &&
			    !strcmp(cfg->drives[j].id, req->drives[i].drive_id))
				break;
		if (j == cfg->nr_drives)
			return persist__why(why, -EINVAL,
					    "drive_overrides: the snapshot has "
					    "no drive %s",
					    req->drives[i].drive_id);
		p = strdup(req->drives[i].path);
		if (!p)
			return persist__why(why, -ENOMEM, "out of memory");
		free((char *)cfg->drives[j].path);
		cfg->drives[j].path = p;
	}
	for (i = 0; i < req->nr_nets; i++) {
		const char *tap = req->nets[i].host_dev_name;

		for (j = 0; j < cfg->nr_nets; j++)
			if (!strcmp(cfg->nets[j].iface_id,
				    req->nets[i].iface_id))
				break;
		if (j == cfg->nr_nets)
			return persist__why(why, -EINVAL,
					    "network_overrides: the snapshot "
					    "has no network interface %s",
					    req->nets[i].iface_id);
		if (!tap || !*tap || strlen(tap) > 15)
			return persist__why(why, -EINVAL,
					    "network_overrides: host_dev_name "
					    "must be 1 to 15 bytes");
		p = strdup(tap);
		if (!p)
			return persist__why(why, -ENOMEM, "out of memory");
		free((char *)cfg->nets[j].host_dev_name);
		cfg->nets[j].host_dev_name = p;
	}
	return 0;
}

static int persist__restore_parts(struct vm *vm, const struct snap_state *s,
				  char *why)
{
	struct snap_cur c;
	unsigned int i;
	char name[32];
	int ret;

	ret = persist__check_host(s, vm, why);
	if (ret)
		return ret;
	log__clear_error();
	if (snap_state__find(s, "vm", &c) || c.version != PERSIST_VERSION)
		return persist__why(why, -EINVAL,
				    "section vm is missing or of another "
				    "version");
	ret = vm_state__restore(vm->kvm.vm_fd, &c);
	for (i = 0; !ret && i < vm->nr_vcpus; i++) {
		snprintf(name, sizeof(name), "vcpu.%u", i);
		if (snap_state__find(s, name, &c) ||
		    c.version != PERSIST_VERSION)
			return persist__why(why, -EINVAL,
					    "section %s is missing or of "
					    "another version",
					    name);
		ret = vcpu_state__restore(&vm->vcpus[i], &c);
	}
	snprintf(name, sizeof(name), "vcpu.%u", vm->nr_vcpus);
	if (!ret && !snap_state__find(s, name, &c))
		return persist__why(why, -EINVAL,
				    "the snapshot has more vCPUs than its "
				    "configuration");
	if (!ret)
		ret = dev_state__restore(&vm->dm, s);
	if (ret)
		return persist__why(why, ret, "%s",
				    persist__logged(strerror(-ret)));
	return 0;
}

int persist__load(const struct persist_load *req, struct event_loop *el,
		  struct vm **out, char *why)
{
	char what[PERSIST_WHY_MAX - 100];
	struct persist_mem pm;
	struct snap_state s;
	struct snap_cur c;
	struct vm_config cfg;
	struct guest_mem mem;
	struct stat base_st;
	struct vm *vm = NULL;
	char *base = NULL;
	double t0 = persist__now_ms();
	size_t len = 0;
	void *data = NULL;
	int uffd = -1, uffd_sock = -1, base_fd = -1, ret;

	*out = NULL;
	memset(&pm, 0, sizeof(pm));
	memset(&cfg, 0, sizeof(cfg));
	memset(&mem, 0, sizeof(mem));
	memset(&base_st, 0, sizeof(base_st));
	ret = snap_file__read(req->state_path, &data, &len, what, sizeof(what));
	if (ret) {
		persist__why(why, ret, "snapshot file %s: %s", req->state_path,
			     what);
		goto out;
	}
	ret = snap_state__parse(&s, data, len, what, sizeof(what));
	if (ret) {
		persist__why(why, ret, "snapshot file %s: %s", req->state_path,
			     what);
		goto out;
	}
	if (snap_state__find(&s, "config", &c) ||
	    c.version != CONFIG_STATE_VERSION) {
		ret = persist__why(why, -EINVAL,
				   "section config is missing or of another "
				   "version (this ember reads %u: a snapshot "
				   "of an older ember, make it again)",
				   CONFIG_STATE_VERSION);
		goto out;
	}
	log__clear_error();
	ret = config_state__restore(&cfg, &c);
	if (ret) {
		persist__why(why, ret, "%s",
			     persist__logged("section config is refused"));
		goto out;
	}
	if (req->local) {
		cfg.console = req->local->console;
		cfg.console_path = req->local->console_path;
		cfg.boot_timer = req->local->boot_timer;
		cfg.stats = req->local->stats;
		/*
		 * An explicit --pvm decides, as for a boot: in a jail
		 * (no /sys) auto-detection cannot see a PVM host.
		 */
		if (req->local->pvm != PVM_AUTO)
			cfg.pvm = req->local->pvm;
	}
	ret = persist__override(req, &cfg, why);
	if (ret)
		goto out;
	ret = persist__read_memory(&s, &pm, why);
	if (ret)
		goto out;
	if (pm.ram_bytes != cfg.mem_mib << 20) {
		ret = persist__why(why, -EINVAL,
				   "section memory has %llu bytes of RAM, the "
				   "configuration %llu MiB",
				   (unsigned long long)pm.ram_bytes,
				   (unsigned long long)cfg.mem_mib);
		goto out;
	}
	if (req->backend == PERSIST_BACKEND_UFFD) {
		if (pm.diff) {
			ret = persist__why(
				why, -EINVAL,
				"a Diff snapshot cannot be served by "
				"a page server: merge it onto its "
				"base first");
			goto out;
		}
		ret = mem__create(&mem, pm.ram_bytes);
		if (!ret)
			ret = uffd__connect(&mem, req->backend_path, &uffd,
					    &uffd_sock, why);
		else
			persist__why(why, ret, "guest RAM: %s", strerror(-ret));
	} else {
		ret = persist__load_memory(req, &pm, &mem, &base, &base_st,
					   &base_fd, why);
	}
	if (ret) {
		mem__destroy(&mem);
		goto out;
	}
	log__clear_error();
	ret = vm__create_restored(&cfg, &mem, el, &vm);
	if (ret) {
		persist__why(why, ret, "%s", persist__logged(strerror(-ret)));
		goto out;
	}
	vm->mem_base_path = base;
	base = NULL;
	vm->mem_base_fd = base_fd;
	base_fd = -1;
	vm->uffd = uffd;
	vm->uffd_sock = uffd_sock;
	uffd = uffd_sock = -1;
	if (vm->mem_base_path)
		persist__file_id(&base_st, &vm->mem_base_size,
				 &vm->mem_base_mtime_ns);
	ret = persist__restore_parts(vm, &s, why);
	if (ret) {
		devmgr__hold(&vm->dm, true);
		vm__destroy(vm);
		goto out;
	}
	*out = vm;
	log__printf(LOG_NOTE, "snapshot loaded in %.1f ms: %s%s, %llu MiB",
		    persist__now_ms() - t0, pm.diff ? "diff over " : "",
		    vm->mem_base_path ? vm->mem_base_path :
		    vm->uffd >= 0     ? "page server" :
					"anonymous memory",
		    (unsigned long long)(pm.ram_bytes >> 20));
out:
	if (base_fd >= 0)
		close(base_fd);
	if (uffd >= 0)
		close(uffd);
	if (uffd_sock >= 0)
		close(uffd_sock);
	config__free_strings(&cfg);
	free(base);
	free(pm.sel);
	free(data);
	return ret;
}
