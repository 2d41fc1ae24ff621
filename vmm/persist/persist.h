/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Snapshots of a VM: create (PUT /snapshot/create) and load
 * (PUT /snapshot/load).  The orchestration only: the file formats are
 * snapshot/state.h and snapshot/memfile.h, each part of the VM saves and
 * restores its own section (parts.h), devices through their classes.
 *
 * A snapshot is a state file and a memory file.  Full: every page of RAM
 * (zero pages are holes; the never-touched pages of a booted VM are not
 * even read).  Diff: only the pages changed since the VM was restored,
 * as a memory file whose page bitmap the state file holds, with the path
 * and identity (size, mtime) of the raw memory file the VM was restored
 * from, its base: loading a diff maps the base and reads the diff's pages
 * over it.  A diff's base must therefore stay in place; memfile__merge()
 * folds a diff into it.
 */
#ifndef EMBER_VMM_PERSIST_PERSIST_H
#define EMBER_VMM_PERSIST_PERSIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../snapshot/memfile.h"
#include "../config.h"

struct event_loop;
struct vm;

#define PERSIST_WHY_MAX 400 /* bytes of a reason */

enum persist_kind { PERSIST_FULL = 0, PERSIST_DIFF };

/* PUT /snapshot/create. */
struct persist_create {
	const char *state_path; /* snapshot_path */
	const char *mem_path; /* mem_file_path */
	enum persist_kind kind;
	bool compress; /* the memory file zlib-compressed */
};

/* What a create did, for the figures. */
struct persist_stats {
	double ms; /* wall time of the whole create */
	uint64_t state_bytes;
	struct memfile_stats mem;
};

/*
 * persist__create() - write a snapshot of the Paused VM @vm (on the event
 * thread, as every control call): the memory file first, then the state
 * file, each to a temporary file renamed into place once synced (mode
 * 0600), so a reader never sees half a snapshot and a snapshot of a
 * restored VM may replace the file it was restored from.  The drives'
 * images are synced.  Returns 0 with @st filled (may be NULL), or a
 * negative errno with the reason in @why (PERSIST_WHY_MAX bytes): -EINVAL
 * for a Diff of a VM that was not restored from a raw memory file.
 */
int persist__create(struct vm *vm, const struct persist_create *req,
		    struct persist_stats *st, char *why);

enum persist_backend { PERSIST_BACKEND_FILE = 0, PERSIST_BACKEND_UFFD };

struct persist_drive_override {
	const char *drive_id; /* a drive of the snapshot */
	const char *path; /* its new path_on_host */
};

/* network_overrides: a network interface on another tap. */
struct persist_net_override {
	const char *iface_id; /* an interface of the snapshot */
	const char *host_dev_name; /* its new tap */
};

/* PUT /snapshot/load. */
struct persist_load {
	const char *state_path;
	enum persist_backend backend;
	const char *backend_path; /* the memory file, or the page server */
	const char *vsock_uds; /* vsock_override.uds_path; NULL: as saved */
	struct persist_drive_override drives[CONFIG_MAX_DRIVES];
	unsigned int nr_drives;
	struct persist_net_override nets[CONFIG_MAX_NETS];
	unsigned int nr_nets;
	/* This process's console, figures and PVM options (not saved). */
	const struct vm_config *local;
};

/*
 * persist__load() - a VM from the snapshot @req (on the event thread, in
 * a process that has no VM yet).  Everything is checked before anything
 * is applied: the state file (magic, version, CRC, every section's
 * bounds), the host (architecture, CPU vendor, TSC rate, PVM profile, the
 * XSAVE area), the memory file (form, size; a diff's base by size and
 * mtime), the drive overrides; KVM then refuses register values it cannot
 * take.  The VM is left Paused (vm__resume() runs it).  Returns 0 with
 * *@out, or a negative errno with the reason in @why: nothing is left
 * (no VM, no open file), and the process can load again.
 */
int persist__load(const struct persist_load *req, struct event_loop *el,
		  struct vm **out, char *why);

/*
 * persist__merge() - a Full snapshot (@out_state, @out_mem) from the Diff
 * snapshot @diff_state with memory file @diff_mem (raw or compressed) and
 * the base memory file its state names (checked unchanged): the base is
 * copied (holes kept), the diff's pages written over the copy; the base
 * itself is not changed.  Files are written through temporary files and
 * renamed (mode 0600).  Returns 0, or a negative errno with the reason in
 * @why (PERSIST_WHY_MAX bytes).  `ember merge-diff` runs it.
 */
int persist__merge(const char *diff_state, const char *diff_mem,
		   const char *out_state, const char *out_mem, char *why);

struct guest_mem;

/*
 * uffd__connect() - the Uffd backend's handshake (Firecracker's): register
 * all of @m (anonymous, not yet touched) with a new userfaultfd for
 * missing pages, connect to the page server's Unix socket @path and send
 * it, in one message, the JSON array of regions [{"base_host_virt_addr",
 * "size", "offset" (in the memory file), "page_size" (bytes),
 * "page_size_kib"}] with the userfaultfd as SCM_RIGHTS.  Returns 0 with
 * the userfaultfd and the connected socket in *@uffd and *@sock (the
 * caller keeps both open for the VM's life), or a negative errno with
 * the reason in @why.
 */
int uffd__connect(struct guest_mem *m, const char *path, int *uffd, int *sock,
		  char *why);

/*
 * pages__select() - a bitmap (bit i: page i of 4 KiB from @hva, @bytes
 * long, both page aligned) of the pages that hold something, read from
 * /proc/self/pagemap: present or swapped; with @changed_only, present
 * pages of a file mapping are left out (untouched or only read: the file
 * holds them), so only pages this process wrote are selected.  Returns 0
 * with the malloc()ed bitmap in *@out (the caller frees) and the number
 * of pages selected in *@selected, or a negative errno.
 */
int pages__select(const void *hva, uint64_t bytes, bool changed_only,
		  uint64_t **out, uint64_t *selected);

/*
 * pages__add_file_data() - also select in @sel (a bitmap for @bytes) the
 * pages where the file @fd has data (SEEK_DATA/SEEK_HOLE; past its end
 * nothing), adding the newly selected ones to *@selected.  Returns 0 or a
 * negative errno.
 */
int pages__add_file_data(int fd, uint64_t bytes, uint64_t *sel,
			 uint64_t *selected);

#endif /* EMBER_VMM_PERSIST_PERSIST_H */
