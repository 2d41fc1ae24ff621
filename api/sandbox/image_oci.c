// SPDX-License-Identifier: Apache-2.0
/*
 * An OCI image layout, checked by ember itself (see image.h): skopeo
 * checks blobs while it copies, but a docker archive carries no digests
 * of its layer files, so the diff_ids in the config are the only proof
 * of the layers, and they are checked here before umoci sees a byte.
 * sha256 is OpenSSL's libcrypto; gzip is zlib.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "files.h"
#include "image.h"
#include "image_internal.h"

/* index.json, manifests and configs: small JSON documents. */
#define OCI_JSON_MAX (4u << 20)
#define OCI_CHUNK    (1u << 20)
#define OCI_REF_NAME "org.opencontainers.image.ref.name"

#define MT_INDEX     "application/vnd.oci.image.index.v1+json"
#define MT_MANIFEST  "application/vnd.oci.image.manifest.v1+json"
#define MT_DOCKER_MF "application/vnd.docker.distribution.manifest.v2+json"

void image_config__free(struct image_config *c)
{
	for (size_t i = 0; i < c->n_env; i++)
		free(c->env[i]);
	for (size_t i = 0; i < c->n_entrypoint; i++)
		free(c->entrypoint[i]);
	for (size_t i = 0; i < c->n_cmd; i++)
		free(c->cmd[i]);
	free(c->env);
	free(c->entrypoint);
	free(c->cmd);
	free(c->workdir);
	free(c->user);
	memset(c, 0, sizeof(*c));
}

/* A JSON array of strings as a malloc()ed vector: 0, -EPROTO, -ENOMEM. */
static int str_vec(const json_t *a, char ***v, size_t *n)
{
	size_t i;
	json_t *e;

	*v = NULL;
	*n = 0;
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		return -EPROTO;
	if (!json_array_size(a))
		return 0;
	*v = calloc(json_array_size(a), sizeof(char *));
	if (!*v)
		return -ENOMEM;
	json_array_foreach(a, i, e)
	{
		if (!json_is_string(e))
			return -EPROTO;
		(*v)[i] = strdup(json_string_value(e));
		if (!(*v)[i])
			return -ENOMEM;
		*n = i + 1;
	}
	return 0;
}

/* A JSON string, or absent/"" as NULL: 0, -EPROTO, -ENOMEM. */
static int str_opt(const json_t *s, char **out)
{
	*out = NULL;
	if (!s || json_is_null(s))
		return 0;
	if (!json_is_string(s))
		return -EPROTO;
	if (!json_string_length(s))
		return 0;
	*out = strdup(json_string_value(s));
	return *out ? 0 : -ENOMEM;
}

int image_config__parse(const char *json, size_t len, struct image_config *c,
			char *err, size_t errlen)
{
	const char *arch, *os;
	json_error_t je;
	json_t *root, *cfg;
	int rc = -EPROTO;

	root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!root || !json_is_object(root))
		goto bad;
	arch = json_string_value(json_object_get(root, "architecture"));
	os = json_string_value(json_object_get(root, "os"));
	if (!arch || !os)
		goto bad;
	if (strcmp(arch, "amd64") || strcmp(os, "linux")) {
		rc = sandbox__errf(
			err, errlen, -ENOTSUP,
			"image is for %.32s/%.32s; ember runs linux/amd64 guests",
			os, arch);
		goto out;
	}
	cfg = json_object_get(root, "config");
	if (cfg && !json_is_null(cfg) && !json_is_object(cfg))
		goto bad;
	if ((rc = str_vec(json_object_get(cfg, "Env"), &c->env, &c->n_env)) ||
	    (rc = str_vec(json_object_get(cfg, "Entrypoint"), &c->entrypoint,
			  &c->n_entrypoint)) ||
	    (rc = str_vec(json_object_get(cfg, "Cmd"), &c->cmd, &c->n_cmd)) ||
	    (rc = str_opt(json_object_get(cfg, "WorkingDir"), &c->workdir)) ||
	    (rc = str_opt(json_object_get(cfg, "User"), &c->user)))
		goto bad;
	rc = 0;
	goto out;
bad:
	if (rc == -ENOMEM)
		sandbox__errf(err, errlen, rc, "out of memory");
	else
		rc = sandbox__errf(err, errlen, -EPROTO,
				   "not an OCI image config%s%s",
				   root ? "" : ": ", root ? "" : je.text);
out:
	json_decref(root);
	return rc;
}

static json_t *vec_json(char *const *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

int image_config__write(const struct image_config *c, const char *path,
			char *err, size_t errlen)
{
	char tmp[PATH_MAX];
	json_t *o = json_object();
	char *text = NULL;
	int rc = -ENOMEM;

	if (!o)
		goto out;
	json_object_set_new(o, "env", vec_json(c->env, c->n_env));
	json_object_set_new(o, "entrypoint",
			    vec_json(c->entrypoint, c->n_entrypoint));
	json_object_set_new(o, "cmd", vec_json(c->cmd, c->n_cmd));
	if (c->workdir)
		json_object_set_new(o, "workdir", json_string(c->workdir));
	if (c->user)
		json_object_set_new(o, "user", json_string(c->user));
	if (c->digest[0])
		json_object_set_new(o, "digest", json_string(c->digest));
	text = json_dumps(o, JSON_INDENT(1) | JSON_SORT_KEYS);
	if (!text)
		goto out;
	rc = files__pathf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!rc)
		rc = files__replace(path, tmp, text, strlen(text), 0644,
				    FILES_NOFOLLOW);
out:
	json_decref(o);
	free(text);
	if (rc)
		return sandbox__errf(err, errlen, rc, "%s: %s", path,
				     strerror(-rc));
	return 0;
}

/* ---- blobs -------------------------------------------------------------- */

static bool digest_ok(const char *d)
{
	if (!d || strlen(d) != IMAGE_DIGEST_LEN || strncmp(d, "sha256:", 7))
		return false;
	for (const char *p = d + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

static void hex(const unsigned char *md, char *out)
{
	static const char x[] = "0123456789abcdef";

	memcpy(out, "sha256:", 7);
	for (int i = 0; i < 32; i++) {
		out[7 + 2 * i] = x[md[i] >> 4];
		out[8 + 2 * i] = x[md[i] & 15];
	}
	out[IMAGE_DIGEST_LEN] = '\0';
}

/* What hashing a blob found. */
struct blob_sum {
	char digest[IMAGE_DIGEST_LEN + 1]; /* of the bytes in the file */
	char diff_id[IMAGE_DIGEST_LEN + 1]; /* of them gunzipped, if asked */
	uint64_t size;
	uint64_t unpacked; /* bytes of the tar: gunzipped, or size */
	bool gz_bad; /* the gzip stream is corrupt or cut short */
};

/*
 * Hash the blob at @path; with @gz its gunzipped bytes too (into
 * @s->diff_id; a bad or truncated gzip stream sets @s->gz_bad and the
 * raw hash goes on, so that a digest mismatch is said first).  0,
 * -ENOENT, -ENOMEM or read(2)'s errno; -EFBIG as soon as its tar is over
 * @room bytes (a small gzip can hold a huge tar: it is not read on).
 */
static int blob_hash(const char *path, bool gz, struct blob_sum *s,
		     struct image_tar *scan, uint64_t room)
{
	EVP_MD_CTX *raw = EVP_MD_CTX_new(), *un = EVP_MD_CTX_new();
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned char *in = malloc(OCI_CHUNK), *out = malloc(OCI_CHUNK);
	z_stream z = { 0 };
	bool zinit = false, zend = false;
	int fd = -1, rc = -ENOMEM;
	ssize_t n;

	s->size = 0;
	s->unpacked = 0;
	s->diff_id[0] = '\0';
	s->gz_bad = false;
	if (!raw || !un || !in || !out ||
	    !EVP_DigestInit_ex(raw, EVP_sha256(), NULL) ||
	    !EVP_DigestInit_ex(un, EVP_sha256(), NULL))
		goto out;
	if (gz) {
		if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
			goto out;
		zinit = true;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	while ((n = read(fd, in, OCI_CHUNK)) > 0) {
		EVP_DigestUpdate(raw, in, (size_t)n);
		s->size += (uint64_t)n;
		if (!gz)
			s->unpacked += (uint64_t)n;
		if (s->unpacked > room) {
			rc = -EFBIG;
			goto out;
		}
		if (!gz && scan)
			image_tar__feed(scan, in, (size_t)n);
		if (!gz || s->gz_bad)
			continue;
		z.next_in = in;
		z.avail_in = (uInt)n;
		while (z.avail_in && !zend) {
			int zr;

			z.next_out = out;
			z.avail_out = OCI_CHUNK;
			zr = inflate(&z, Z_NO_FLUSH);
			if (zr != Z_OK && zr != Z_STREAM_END) {
				s->gz_bad = true;
				break;
			}
			EVP_DigestUpdate(un, out, OCI_CHUNK - z.avail_out);
			s->unpacked += OCI_CHUNK - z.avail_out;
			if (s->unpacked > room) {
				rc = -EFBIG;
				goto out;
			}
			if (scan)
				image_tar__feed(scan, out,
						OCI_CHUNK - z.avail_out);
			/* Concatenated gzip members are one stream to tar. */
			if (zr == Z_STREAM_END) {
				if (z.avail_in)
					inflateReset(&z);
				else
					zend = true;
			}
		}
		if (zend && z.avail_in)
			s->gz_bad = true;
	}
	if (n < 0) {
		rc = -errno;
		goto out;
	}
	if (gz && !zend)
		s->gz_bad = true; /* truncated */
	EVP_DigestFinal_ex(raw, md, NULL);
	hex(md, s->digest);
	if (gz) {
		EVP_DigestFinal_ex(un, md, NULL);
		hex(md, s->diff_id);
	} else {
		memcpy(s->diff_id, s->digest, sizeof(s->diff_id));
	}
	rc = 0;
out:
	if (zinit)
		inflateEnd(&z);
	if (fd >= 0)
		close(fd);
	EVP_MD_CTX_free(raw);
	EVP_MD_CTX_free(un);
	free(in);
	free(out);
	return rc;
}

/* A descriptor's digest and size, checked: its path under @dir. */
static int desc_path(const char *dir, const json_t *desc, char *path,
		     size_t pathsz, const char **digest, json_int_t *size,
		     char *err, size_t errlen)
{
	*digest = json_string_value(json_object_get(desc, "digest"));
	*size = json_integer_value(json_object_get(desc, "size"));
	if (!json_is_object(desc) || !digest_ok(*digest) || *size < 0)
		return sandbox__errf(err, errlen, -EPROTO,
				     "%s: a descriptor without a sha256 digest "
				     "and a size",
				     dir);
	if (files__pathf(path, pathsz, "%s/blobs/sha256/%s", dir, *digest + 7))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "%s: path too long", dir);
	return 0;
}

/*
 * The blob @desc names, checked against its digest and size; when @gz,
 * its diff_id in @s too.
 */
static int blob_check(const char *dir, const json_t *desc, bool gz,
		      struct blob_sum *s, struct image_tar *scan, uint64_t room,
		      char *err, size_t errlen)
{
	char path[PATH_MAX];
	const char *digest;
	json_int_t size;
	int rc = desc_path(dir, desc, path, sizeof(path), &digest, &size, err,
			   errlen);

	if (rc)
		return rc;
	rc = blob_hash(path, gz, s, scan, room);
	if (rc == -EFBIG)
		return sandbox__errf(err, errlen, rc,
				     "%s: its tar is over %llu MiB", path,
				     (unsigned long long)(room >> 20));
	if (rc)
		return sandbox__errf(err, errlen, rc, "%s: %s", path,
				     strerror(-rc));
	if (strcmp(s->digest, digest) || s->size != (uint64_t)size)
		return sandbox__errf(err, errlen, -EBADMSG,
				     "%s: digest mismatch: its bytes are %s "
				     "(%llu bytes), its descriptor says %s "
				     "(%lld bytes)",
				     path, s->digest,
				     (unsigned long long)s->size, digest,
				     (long long)size);
	if (s->gz_bad)
		return sandbox__errf(err, errlen, -EBADMSG,
				     "%s: corrupt or truncated gzip layer",
				     path);
	return 0;
}

/* The JSON blob @desc names, checked, parsed: a new reference or NULL. */
static json_t *blob_json(const char *dir, const json_t *desc, char **text,
			 size_t *len, char *err, size_t errlen, int *rc)
{
	char path[PATH_MAX];
	struct blob_sum s;
	const char *digest;
	json_int_t size;
	json_error_t je;
	json_t *j;
	FILE *f;

	*rc = desc_path(dir, desc, path, sizeof(path), &digest, &size, err,
			errlen);
	if (*rc)
		return NULL;
	if (size > OCI_JSON_MAX) {
		*rc = sandbox__errf(err, errlen, -EPROTO,
				    "%s: %lld bytes is too big for JSON", path,
				    (long long)size);
		return NULL;
	}
	*rc = blob_check(dir, desc, false, &s, NULL, UINT64_MAX, err, errlen);
	if (*rc)
		return NULL;
	*text = malloc((size_t)size + 1);
	f = fopen(path, "re");
	if (!*text || !f || fread(*text, 1, (size_t)size, f) != (size_t)size) {
		*rc = sandbox__errf(err, errlen, -EIO, "%s: cannot read it",
				    path);
		if (f)
			fclose(f);
		free(*text);
		*text = NULL;
		return NULL;
	}
	fclose(f);
	(*text)[size] = '\0';
	*len = (size_t)size;
	j = json_loadb(*text, *len, JSON_REJECT_DUPLICATES, &je);
	if (!j || !json_is_object(j)) {
		*rc = sandbox__errf(err, errlen, -EPROTO, "%s: bad JSON: %s",
				    path, j ? "not an object" : je.text);
		json_decref(j);
		return NULL;
	}
	return j;
}

/* index.json's descriptor of the image tagged @tag (borrowed). */
static json_t *pick(const char *dir, json_t *index, const char *tag, char *err,
		    size_t errlen, int *rc)
{
	json_t *ms = json_object_get(index, "manifests"), *m, *found = NULL;
	size_t i;

	*rc = 0;
	if (!json_is_array(ms) || !json_array_size(ms)) {
		*rc = sandbox__errf(err, errlen, -ENOENT,
				    "%s/index.json: no image in it", dir);
		return NULL;
	}
	if (!tag || !*tag) {
		if (json_array_size(ms) == 1)
			return json_array_get(ms, 0);
		*rc = sandbox__errf(err, errlen, -ENOENT,
				    "%s holds %zu images: name one as DIR:TAG",
				    dir, json_array_size(ms));
		return NULL;
	}
	json_array_foreach(ms, i, m)
	{
		const char *n = json_string_value(json_object_get(
			json_object_get(m, "annotations"), OCI_REF_NAME));

		if (n && !strcmp(n, tag))
			found = m;
	}
	if (!found)
		*rc = sandbox__errf(err, errlen, -ENOENT,
				    "%s: no image tagged \"%s\"", dir, tag);
	return found;
}

/* Whether the layer media type @mt is gzip (1), plain tar (0), else < 0. */
static int layer_gz(const char *mt)
{
	static const char *const plain[] = {
		"application/vnd.oci.image.layer.v1.tar",
		"application/vnd.docker.image.rootfs.diff.tar",
	};
	static const char *const gz[] = {
		"application/vnd.oci.image.layer.v1.tar+gzip",
		"application/vnd.docker.image.rootfs.diff.tar.gzip",
	};

	for (int i = 0; mt && i < 2; i++) {
		if (!strcmp(mt, plain[i]))
			return 0;
		if (!strcmp(mt, gz[i]))
			return 1;
	}
	return -ENOTSUP;
}

int image_oci__check(const char *dir, const char *tag, struct image_config *c,
		     char *err, size_t errlen)
{
	return image_oci__check_scan(dir, tag, c, NULL, UINT64_MAX, NULL, err,
				     errlen);
}

int image_oci__check_scan(const char *dir, const char *tag,
			  struct image_config *c, struct image_tar *scan,
			  uint64_t room, uint64_t *unpacked, char *err,
			  size_t errlen)
{
	char path[PATH_MAX];
	char *mtext = NULL, *ctext = NULL;
	size_t mlen = 0, clen = 0, i;
	json_t *index = NULL, *man = NULL, *conf = NULL, *desc, *layers, *l;
	json_t *diff_ids;
	json_error_t je;
	const char *mt;
	uint64_t total = 0;
	ssize_t n;
	int rc;

	memset(c, 0, sizeof(*c));
	if (unpacked)
		*unpacked = 0;
	rc = files__pathf(path, sizeof(path), "%s/index.json", dir);
	if (rc)
		return sandbox__errf(err, errlen, rc, "%s: path too long", dir);
	index = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!index) {
		n = access(path, F_OK) ? -ENOENT : -EPROTO;
		return sandbox__errf(err, errlen, (int)n, "%s: %s", path,
				     n == -ENOENT ? "missing" : je.text);
	}
	desc = pick(dir, index, tag, err, errlen, &rc);
	if (!desc)
		goto out;
	mt = json_string_value(json_object_get(desc, "mediaType"));
	if (mt && !strcmp(mt, MT_INDEX)) {
		rc = sandbox__errf(err, errlen, -ENOTSUP,
				   "%s: a nested image index (a multi-platform "
				   "image): copy it with skopeo first",
				   dir);
		goto out;
	}
	man = blob_json(dir, desc, &mtext, &mlen, err, errlen, &rc);
	if (!man)
		goto out;
	snprintf(c->digest, sizeof(c->digest), "%s",
		 json_string_value(json_object_get(desc, "digest")));
	mt = json_string_value(json_object_get(man, "mediaType"));
	if (mt && strcmp(mt, MT_MANIFEST) && strcmp(mt, MT_DOCKER_MF)) {
		rc = sandbox__errf(err, errlen, -EPROTO,
				   "%s: manifest %s: media type %.80s", dir,
				   c->digest, mt);
		goto out;
	}
	conf = blob_json(dir, json_object_get(man, "config"), &ctext, &clen,
			 err, errlen, &rc);
	if (!conf)
		goto out;
	rc = image_config__parse(ctext, clen, c, err, errlen);
	if (rc)
		goto out;
	layers = json_object_get(man, "layers");
	diff_ids = json_object_get(json_object_get(conf, "rootfs"), "diff_ids");
	if (!json_is_array(layers) || !json_is_array(diff_ids) ||
	    json_array_size(layers) != json_array_size(diff_ids)) {
		rc = sandbox__errf(err, errlen, -EPROTO,
				   "%s: manifest %s: layers and the config's "
				   "rootfs.diff_ids do not match",
				   dir, c->digest);
		goto out;
	}
	json_array_foreach(layers, i, l)
	{
		const char *want =
			json_string_value(json_array_get(diff_ids, i));
		const char *lmt =
			json_string_value(json_object_get(l, "mediaType"));
		int gz = layer_gz(lmt);
		struct blob_sum s;

		if (gz < 0) {
			rc = sandbox__errf(err, errlen, -ENOTSUP,
					   "%s: layer %zu: media type %.80s "
					   "(only tar and tar+gzip)",
					   dir, i, lmt ? lmt : "(none)");
			goto out;
		}
		rc = blob_check(dir, l, gz, &s, scan, room - total, err,
				errlen);
		total += s.unpacked;
		if (unpacked)
			*unpacked = total;
		if (rc)
			goto out;
		if (scan && scan->error) {
			rc = sandbox__errf(
				err, errlen, scan->error,
				"%s: layer %zu (%s): reading its tar: "
				"%s",
				dir, i, s.digest, strerror(-scan->error));
			goto out;
		}
		if (scan)
			image_tar__next_layer(scan);
		if (!want || strcmp(want, s.diff_id)) {
			rc = sandbox__errf(
				err, errlen, -EBADMSG,
				"%s: layer %zu (%s): diff_id "
				"mismatch: its tar is %s, the config "
				"says %.80s",
				dir, i, s.digest, s.diff_id,
				want ? want : "(none)");
			goto out;
		}
	}
	rc = 0;
out:
	json_decref(index);
	json_decref(man);
	json_decref(conf);
	free(mtext);
	free(ctext);
	return rc;
}
