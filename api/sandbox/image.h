/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Images: the user's own root file system, as it comes (a docker or podman
 * `save` archive, an OCI archive, an OCI image layout directory, a root
 * directory or an ext4 image), made into an ext4 disk for a template, with
 * no loop mount: skopeo normalises archives into an OCI layout, ember
 * checks every blob's sha256 and every layer's diff_id itself, umoci
 * applies the layers and mkfs.ext4 -d makes the disk.  The image's run
 * defaults (Env, WorkingDir, User, Entrypoint, Cmd) come back with it.
 *
 * Specs: the OCI image spec v1.0 (image-layout.md, image-index.md,
 * manifest.md, config.md, descriptor.md), Docker's `save` format
 * (manifest.json), POSIX ustar and pax headers (tar).
 *
 * Every function returns 0 or a negative errno; those taking @err/@errlen
 * leave one line there on failure (see sandbox__errf).
 */
#ifndef EMBER_API_IMAGE_H
#define EMBER_API_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../guest-init/protocol.h"

/* What a SRC is, found by its content (image__sniff) or by a prefix. */
enum image_kind {
	IMAGE_UNKNOWN = 0,
	IMAGE_DOCKER_ARCHIVE, /* tar holding manifest.json (docker save) */
	IMAGE_OCI_ARCHIVE, /* tar holding oci-layout and index.json */
	IMAGE_OCI_LAYOUT, /* directory holding oci-layout, DIR[:tag] */
	IMAGE_ROOT_DIR, /* any other directory: a root file system */
	IMAGE_EXT4, /* a file with the ext4 magic at byte 1080 */
};

/* The name of @k for messages ("docker-archive", ...). */
const char *image__kind_name(enum image_kind k);

/*
 * image__sniff_bytes() - the kind of a file whose first @len bytes are
 * @buf (pure; fuzzed).  An ext4 image needs >= 1082 bytes; a tar is walked
 * header by header (ustar, with GNU long names and pax headers skipped)
 * for "manifest.json" (docker) and "oci-layout" + "index.json" (OCI) at
 * its top, within @len.  IMAGE_UNKNOWN when neither.
 */
enum image_kind image__sniff_bytes(const uint8_t *buf, size_t len);

/*
 * image__ext4_bytes() - the size in bytes the ext4 superblock @sb (the
 * 1024 bytes at byte 1024 of the image) gives its file system (blocks
 * count x block size), or 0 when @sb has no ext4 magic or a block size
 * over 64 KiB.  Pure: a shorter file is a truncated image.
 */
uint64_t image__ext4_bytes(const uint8_t *sb);

/*
 * image__parse_src() - split a SRC as the user wrote it: an optional
 * prefix ("docker-archive:", "oci-archive:", "oci:", "dir:", "ext4:")
 * sets *@kind (else IMAGE_UNKNOWN: to be sniffed), the path goes to
 * @path (@pathsz bytes) and, for a directory or "oci:" SRC, a ":tag"
 * after the last '/' goes to @tag (@tagsz bytes; "" when none).  Pure.
 * 0, -ENAMETOOLONG, or -EINVAL for an empty path or tag.
 */
int image__parse_src(const char *src, enum image_kind *kind, char *path,
		     size_t pathsz, char *tag, size_t tagsz);

/*
 * image__src_abs() - @src with its path made absolute and its links
 * resolved (realpath(3)), the prefix and the ":tag" kept as they are, into
 * @out (@outsz bytes), so that a SRC typed relative to one directory names
 * the same image from any other (a template's info records it; `template
 * build --if-missing` compares it).  A SRC whose path does not resolve
 * (missing: the build will say so) is copied as it is.  Reads the file
 * system; 0 or -ENAMETOOLONG.
 */
int image__src_abs(const char *src, char *out, size_t outsz);

/*
 * The image's run defaults, from its config's "config" object (absent
 * ones are NULL or empty).  All strings are malloc()ed and owned by the
 * struct: release with image_config__free().
 */
struct image_config {
	char **env; /* "K=V", n_env of them */
	size_t n_env;
	char **entrypoint, **cmd; /* argv vectors, n_ of each */
	size_t n_entrypoint, n_cmd;
	char *workdir; /* NULL when unset */
	char *user; /* "name", "uid", "uid:gid", ...; NULL when unset */
	char digest[72]; /* "sha256:<hex>" of the manifest; "" for a dir/ext4 */
};

/* Free what @c holds and zero it (@c itself is the caller's). */
void image_config__free(struct image_config *c);

/*
 * image_config__parse() - the run defaults and the platform from the OCI
 * config JSON @json (@len bytes), pure: fills @c (free it even on
 * failure).  -EPROTO with a line in @err when it is not an image config,
 * -ENOTSUP when "architecture" is not amd64 or "os" not linux ("image is
 * for linux/arm64; ember runs linux/amd64 guests").
 */
int image_config__parse(const char *json, size_t len, struct image_config *c,
			char *err, size_t errlen);

/*
 * image_config__write() - @c as a JSON object {"env": [...], "workdir":
 * s, "user": s, "entrypoint": [...], "cmd": [...], "digest": s} (unset
 * ones left out) into the new file @path, mode 0644, write-then-rename.
 */
int image_config__write(const struct image_config *c, const char *path,
			char *err, size_t errlen);

/*
 * image_oci__check() - check the OCI layout at @dir and pick the image
 * tagged @tag (NULL or "": the only one in index.json): the manifest, the
 * config and every layer must be in blobs/sha256 with the sha256 and the
 * size their descriptors give, each layer, gunzipped when its media type
 * says so, must hash to the config's rootfs.diff_ids[i], and the config
 * must be linux/amd64.  Fills @c with the config's run defaults (free it
 * even on failure).  -ENOENT (missing tag or blob), -EBADMSG (a digest or
 * size mismatch), -EPROTO (bad JSON or media type), -ENOTSUP (platform or
 * a compression other than gzip), each with one line naming the file.
 */
int image_oci__check(const char *dir, const char *tag, struct image_config *c,
		     char *err, size_t errlen);

/*
 * Where ember's guest parts go in a disk made from an image (protocol.h,
 * EMBER_GUEST_LIBDIR): init (booted as init=IMAGE_GUEST_INIT), the agent
 * (EMBER_GUEST_AGENT, found there by init), the image's run defaults
 * (EMBER_GUEST_DEFAULTS; guest-init/PROTOCOL.md, "Image defaults") and,
 * for images without the tools ember's builds use (sh, sync), a static
 * busybox with a link per applet in EMBER_GUEST_BINDIR, last in PATH.
 */
#define IMAGE_GUEST_INIT EMBER_GUEST_LIBDIR "/init"

/* The account a template runs commands as unless its image has a USER. */
#define IMAGE_USER_NAME "user"
#define IMAGE_USER_HOME "/home/user"
#define IMAGE_USER_ID	1000 /* the first free one from here */

/*
 * What image__to_ext4() adds to the disk (NULL in image_opts: nothing),
 * all owned by root: IMAGE_GUEST_INIT and EMBER_GUEST_AGENT from @init
 * and @agent (static binaries: they run on glibc and musl images alike),
 * EMBER_GUEST_DEFAULTS from the image's config (image__defaults), and
 * @busybox (NULL: none) with its applets' links, the interpreter
 * (@interp) where given.  With @add_user and no
 * User in the image's config, the account IMAGE_USER_NAME (uid and gid
 * IMAGE_USER_ID or the next free, home IMAGE_USER_HOME, in /etc/passwd
 * and /etc/group, and sudo without a password where the image has
 * /etc/sudoers.d) unless the image has it, and it becomes the default
 * user.  Files of an earlier ember in EMBER_GUEST_LIBDIR are replaced.
 */
struct image_guest {
	const char *init, *agent, *busybox;
	/*
	 * NULL, or the code interpreter's directory (guest-init/interp/:
	 * ember-interp, *.py, *.js), put in EMBER_GUEST_LIBDIR/interp with,
	 * when there is a @busybox, EMBER_GUEST_BINDIR/ember-interp: a
	 * busybox sh script that runs it with the image's own python3, or
	 * says that the image has no Python (exit 69, EX_UNAVAILABLE).
	 */
	const char *interp;
	bool add_user;
};

/*
 * image__defaults() - the defaults file for an image with the run
 * defaults @c and the default user @user (NULL: @c's, if any): records
 * "env=K=V", "cwd=DIR", "user=SPEC", each ending in a NUL
 * (guest-init/PROTOCOL.md, "Image defaults"), in a malloc()ed buffer
 * *@out of *@len bytes that the caller frees (ember_defaults_encode()).
 * EMBER_GUEST_BINDIR is added at the end of the image's PATH.  Pure.
 * -ENOMEM; -E2BIG (with a line in @err) for more than
 * EMBER_DEFAULTS_MAX_ENV env entries or a file over EMBER_DEFAULTS_MAX
 * bytes (the agent's limits); -EINVAL for an Env entry without NAME=, a
 * relative WorkingDir or a malformed User.
 */
int image__defaults(const struct image_config *c, const char *user, char **out,
		    size_t *len, char *err, size_t errlen);

/*
 * image__defaults_parse() - the run defaults back from the @len bytes of
 * a defaults file at @buf (what image__defaults() wrote into a disk ember
 * made: a template's, as `FROM template:NAME` or an ext4 SRC brings it),
 * into @c (image_config__free() it; its fields are set only from the
 * file): env, workdir and user; the ":" EMBER_GUEST_BINDIR that
 * image__defaults() added to PATH is taken off again, so that a round
 * trip adds it once.  Pure.  0 (an empty file: nothing set), -EINVAL
 * with the decoder's reason in @err for a malformed file, -ENOMEM.
 */
int image__defaults_parse(const void *buf, size_t len, struct image_config *c,
			  char *err, size_t errlen);

/*
 * image__user_add() - the account @name for the texts of /etc/passwd
 * @passwd and /etc/group @group (NUL-terminated; NULL: the file is
 * missing, and a root line is written first).  When @passwd has @name
 * already: 1, its uid and gid in *@uid and *@gid, nothing else.  Else 0:
 * uid = the first from IMAGE_USER_ID up that @passwd does not use, gid =
 * the group @name's if @group has one, else the uid when free in @group,
 * else the first free from IMAGE_USER_ID; *@new_passwd and *@new_group
 * (malloc()ed, the caller frees) are the texts with the lines added
 * ("@name:x:UID:GID::@home:@shell").  Pure.  -ENOMEM, -EOVERFLOW (no
 * free id below 65534).
 */
int image__user_add(const char *passwd, const char *group, const char *name,
		    const char *home, const char *shell, char **new_passwd,
		    char **new_group, uint32_t *uid, uint32_t *gid);

/*
 * The host's disk: an image's layers may be a small gzip of a huge tar.
 * Before umoci applies them, image__to_ext4() sums their tars (it reads
 * them all anyway, for the diff_ids) and stops, with one error, as soon
 * as they are over what the state directory's file system has free,
 * halved (the unpacked tree and the disk made from it are there
 * together), or over EMBER_IMAGE_MAX_MIB MiB (IMAGE_MAX_ENV: a decimal
 * number, the most an image may take unpacked; unset: no such bound).
 * The disk is checked the same way before mkfs.ext4 runs, and while
 * any tool runs, one that leaves under IMAGE_FREE_FLOOR_MIB MiB free
 * there is killed (-ENOSPC): a layer's sparse files, which tar keeps
 * small, are not in the sum.
 */
#define IMAGE_MAX_ENV	     "EMBER_IMAGE_MAX_MIB"
#define IMAGE_FREE_FLOOR_MIB 16

/*
 * image__unpack_room() - the most bytes an image's layers may unpack to
 * where @free_bytes are free (statvfs f_bavail x f_frsize): half of them,
 * at most @max_mib MiB (NULL or "": no bound; else IMAGE_MAX_ENV's text,
 * a decimal number from 1), into *@room; *@capped says that @max_mib is
 * the bound.  Pure: 0, or -EINVAL (with a line in @err) for a @max_mib
 * that is not such a number.
 */
int image__unpack_room(uint64_t free_bytes, const char *max_mib, uint64_t *room,
		       bool *capped, char *err, size_t errlen);

/* Where image__to_ext4()'s time went, in ms (0: the stage did not run). */
struct image_times {
	unsigned int read_ms; /* skopeo copy: the archive or layout read */
	unsigned int check_ms; /* ember's digest and diff_id checks */
	unsigned int unpack_ms; /* umoci unpack: the layers applied */
	unsigned int disk_ms; /* mkfs.ext4 -d and the owners, or the copy */
	unsigned int guest_ms; /* ember's parts added (struct image_guest) */
};

/* How image__to_ext4() builds. */
struct image_opts {
	uint64_t disk_mib; /* the disk's least size in MiB; 0: what it needs */
	int timeout_s; /* each tool's limit; 0: 600 s */
	/*
	 * An fd (a signalfd, a pipe's read end, an eventfd) that becomes
	 * readable when the caller must stop: the running tool's process
	 * group is killed and image__to_ext4() fails with -ECANCELED, after
	 * removing its work.  -1: none.  Not read, only polled.
	 */
	int stop_fd;
	const struct image_guest *guest; /* NULL: the image as it is */
	struct image_times *times; /* NULL, or filled as the stages end */
};

/*
 * image__to_ext4() - make the ext4 disk @out_ext4 (a new file; replaced
 * if there) from @src (see image__parse_src), working in @work (a
 * directory that must not exist yet: it is created and always removed,
 * whatever happens), and fill @cfg with the image's run defaults (empty
 * for a root directory or an ext4 image; free it even on failure).
 * Runs skopeo, umoci, mkfs.ext4, debugfs, e2fsck and resize2fs.  As
 * non-root, umoci unpacks rootless and debugfs then sets the owners (its
 * record, else root's) and restores the device nodes and security.* /
 * trusted.* xattrs it lost, read from the layer tars.  On failure
 * nothing is left (neither @work nor @out_ext4) and @err names the stage,
 * the file and the tool's last line of output.  With @o->guest, ember's
 * parts are then added (struct image_guest).  skopeo's copy recompresses
 * zstd layers as gzip (umoci 0.4.7 cannot apply zstd).  The host's disk
 * is bounded as said above IMAGE_MAX_ENV: -ENOSPC ("no space left: SRC
 * needs over N MiB unpacked, the state directory has M MiB free"), -EFBIG
 * (over EMBER_IMAGE_MAX_MIB), -EINVAL (a bad EMBER_IMAGE_MAX_MIB, before
 * any work).  As root, skopeo keeps its
 * blob-info cache in /var/lib/containers/cache (skopeo 1.9 cannot move
 * it); as non-root it is in @work.
 */
int image__to_ext4(const struct image_opts *o, const char *src,
		   const char *work, const char *out_ext4,
		   struct image_config *cfg, char *err, size_t errlen);

#endif /* EMBER_API_IMAGE_H */
