/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <jansson.h>

#include "manifest.h"
#include "sha.h"

void
mf_entry_free(struct mf_entry *e)
{
	free(e->path);
	free(e->target);
	e->path = e->target = NULL;
}

char *
mf_path_normalise(const char *p, size_t len, char *err, size_t errlen)
{
	char *out;
	size_t o = 0, i = 0;

	if (len == 0) {
		snprintf(err, errlen, "empty path");
		return NULL;
	}
	if (memchr(p, '\0', len)) {
		snprintf(err, errlen, "path holds a NUL byte");
		return NULL;
	}
	if (p[0] == '/') {
		snprintf(err, errlen, "absolute path refused");
		return NULL;
	}
	if ((out = malloc(len + 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	while (i < len) {
		size_t j = i;

		while (j < len && p[j] != '/')
			j++;
		if (j - i == 2 && p[i] == '.' && p[i + 1] == '.') {
			snprintf(err, errlen, "path with a '..' component refused");
			free(out);
			return NULL;
		}
		if (j > i && !(j - i == 1 && p[i] == '.')) {
			if (o > 0)
				out[o++] = '/';
			memcpy(out + o, p + i, j - i);
			o += j - i;
		}
		i = j + 1;
	}
	if (o == 0) {
		snprintf(err, errlen, "path names the root itself");
		free(out);
		return NULL;
	}
	out[o] = '\0';
	return out;
}

bool
mf_needs_escape(const char *name)
{
	return strpbrk(name, "\\\n\r") != NULL;
}

char *
mf_escape(const char *name)
{
	char *out = malloc(2 * strlen(name) + 1), *q = out;

	if (out == NULL)
		return NULL;
	for (const char *p = name; *p; p++) {
		switch (*p) {
		case '\\': *q++ = '\\'; *q++ = '\\'; break;
		case '\n': *q++ = '\\'; *q++ = 'n'; break;
		case '\r': *q++ = '\\'; *q++ = 'r'; break;
		default: *q++ = *p;
		}
	}
	*q = '\0';
	return out;
}

/* Undo mf_escape on name[0..len) into out (len+1 bytes); -1 if bad. */
static int
unescape(const char *name, size_t len, char *out, size_t *outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		if (name[i] != '\\') {
			out[o++] = name[i];
			continue;
		}
		if (++i == len)
			return -1;
		switch (name[i]) {
		case '\\': out[o++] = '\\'; break;
		case 'n': out[o++] = '\n'; break;
		case 'r': out[o++] = '\r'; break;
		default: return -1;
		}
	}
	*outlen = o;
	return 0;
}

static bool
hex64(const char *s, size_t len, char out[65])
{
	if (len < 64)
		return false;
	for (int i = 0; i < 64; i++) {
		if (!isxdigit((unsigned char)s[i]))
			return false;
		out[i] = (char)tolower((unsigned char)s[i]);
	}
	out[64] = '\0';
	return true;
}

int
mf_parse_sum_line(const char *line, size_t len, struct mf_entry *e,
    char *err, size_t errlen)
{
	const char *name;
	size_t nlen, ulen;
	bool escaped = false;
	char *raw;

	memset(e, 0, sizeof(*e));
	if (len > 0 && line[0] == '\\') {
		escaped = true;
		line++, len--;
	}
	if (len > 8 && memcmp(line, "SHA256 (", 8) == 0) {
		/* BSD tag form: the name ends at the last ") = " */
		const char *end = NULL;

		for (size_t i = 8; i + 4 + 64 <= len; i++)
			if (memcmp(line + i, ") = ", 4) == 0)
				end = line + i;
		if (end == NULL || (size_t)(end - line) + 4 + 64 != len ||
		    !hex64(end + 4, 64, e->sha256)) {
			snprintf(err, errlen, "malformed 'SHA256 (NAME) = HEX' "
			    "line");
			return -1;
		}
		name = line + 8;
		nlen = (size_t)(end - name);
	} else {
		if (!hex64(line, len, e->sha256) || len < 66 ||
		    line[64] != ' ') {
			snprintf(err, errlen, "not a sha256sum line (64 hex "
			    "digits, two spaces, a name)");
			return -1;
		}
		name = line + 65;
		nlen = len - 65;
		if (nlen > 0 && (name[0] == ' ' || name[0] == '*'))
			name++, nlen--;
	}
	if ((raw = malloc(nlen + 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (escaped) {
		if (unescape(name, nlen, raw, &ulen) < 0) {
			snprintf(err, errlen, "bad backslash escape in name");
			free(raw);
			return -1;
		}
	} else {
		memcpy(raw, name, nlen);
		ulen = nlen;
	}
	e->path = mf_path_normalise(raw, ulen, err, errlen);
	free(raw);
	return e->path ? 0 : -1;
}

int
mf_parse_json_line(const char *line, size_t len, struct mf_entry *e,
    char *err, size_t errlen)
{
	json_error_t je;
	json_t *o, *v;
	int rc = -1;

	memset(e, 0, sizeof(*e));
	o = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	if (o == NULL) {
		snprintf(err, errlen, "invalid JSON: %s", je.text);
		return -1;
	}
	if (!json_is_object(o)) {
		snprintf(err, errlen, "not a JSON object");
		goto out;
	}
	v = json_object_get(o, "path");
	if (!json_is_string(v)) {
		snprintf(err, errlen, "'path' %s", v ? "is not a string" :
		    "is missing");
		goto out;
	}
	e->path = mf_path_normalise(json_string_value(v), json_string_length(v),
	    err, errlen);
	if (e->path == NULL)
		goto out;
	v = json_object_get(o, "type");
	if (v && json_is_string(v) &&
	    strcmp(json_string_value(v), "symlink") == 0) {
		v = json_object_get(o, "target");
		if (!json_is_string(v) || json_string_length(v) == 0 ||
		    strlen(json_string_value(v)) != json_string_length(v)) {
			snprintf(err, errlen, "symlink 'target' missing or not a "
			    "string");
			goto out;
		}
		e->type = MF_SYMLINK;
		if ((e->target = strdup(json_string_value(v))) == NULL)
			goto out;
		rc = 0;
		goto out;
	}
	if (v && !(json_is_string(v) &&
	    strcmp(json_string_value(v), "file") == 0)) {
		snprintf(err, errlen, "'type' must be \"file\" or \"symlink\"");
		goto out;
	}
	v = json_object_get(o, "sha256");
	if (!json_is_string(v) || json_string_length(v) != 64 ||
	    !hex64(json_string_value(v), 64, e->sha256)) {
		snprintf(err, errlen, "'sha256' %s", v ? "is not 64 hex digits" :
		    "is missing");
		goto out;
	}
	v = json_object_get(o, "size_bytes");
	if (v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			snprintf(err, errlen, "'size_bytes' is not a "
			    "non-negative integer");
			goto out;
		}
		e->has_size = true;
		e->size = (uint64_t)json_integer_value(v);
	}
	rc = 0;
out:
	json_decref(o);
	if (rc < 0)
		mf_entry_free(e);
	return rc;
}

bool
mf_is_json(const char *line, size_t len)
{
	while (len > 0 && (*line == ' ' || *line == '\t'))
		line++, len--;
	return len > 0 && *line == '{';
}

static int
open_walk(int rootfd, const char *path, int flags)
{
	char *copy = strdup(path), *p, *slash;
	int dfd = rootfd, fd = -1, e;

	if (copy == NULL)
		return -1;
	for (p = copy; (slash = strchr(p, '/')) != NULL; p = slash + 1) {
		int nfd;

		*slash = '\0';
		nfd = openat(dfd, p, O_PATH | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		e = errno;
		if (dfd != rootfd)
			close(dfd);
		if (nfd < 0) {
			free(copy);
			errno = e;
			return -1;
		}
		dfd = nfd;
	}
	fd = openat(dfd, p, flags | O_NOFOLLOW);
	e = errno;
	if (dfd != rootfd)
		close(dfd);
	free(copy);
	errno = e;
	return fd;
}

int
mf_open_beneath(int rootfd, const char *path, int flags)
{
	static atomic_int no_openat2;
	struct open_how how = {
		.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
		    RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV
	};
	int fd;

	if (!atomic_load(&no_openat2)) {
		fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
		if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
			return fd;
		atomic_store(&no_openat2, 1);
	}
	return open_walk(rootfd, path, flags | O_CLOEXEC);
}

int
mf_readlink_beneath(int rootfd, const char *path, char *buf, size_t len)
{
	const char *slash = strrchr(path, '/');
	int dfd = rootfd, e;
	ssize_t n;

	if (slash) {
		char *dir = strndup(path, (size_t)(slash - path));

		if (dir == NULL)
			return -1;
		dfd = mf_open_beneath(rootfd, dir, O_PATH | O_DIRECTORY);
		free(dir);
		if (dfd < 0)
			return -1;
	}
	n = readlinkat(dfd, slash ? slash + 1 : path, buf, len - 1);
	e = errno;
	if (dfd != rootfd)
		close(dfd);
	errno = e;
	if (n < 0)
		return -1;
	if ((size_t)n >= len - 1)
		return errno = ENAMETOOLONG, -1;
	buf[n] = '\0';
	return 0;
}

static bool
same_stat(const struct stat *a, const struct stat *b)
{
	return a->st_size == b->st_size && a->st_ino == b->st_ino &&
	    a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	    a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	    a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	    a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

enum mf_status
mf_hash_file(int rootfd, const char *path, void *buf, size_t buflen,
    char hex[65], uint64_t *size, int *err)
{
	struct stat a, b;
	struct kv_sha256 h;
	uint8_t md[KV_SHA256_LEN];
	enum mf_status st = MF_UNSTABLE;
	int fd;

	*err = 0;
	fd = mf_open_beneath(rootfd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		*err = errno;
		return errno == ENOENT ? MF_MISSING : errno == ELOOP ?
		    MF_NOT_REGULAR : MF_UNREADABLE;
	}
	if (fstat(fd, &a) < 0 || !S_ISREG(a.st_mode)) {
		*err = errno;
		close(fd);
		return S_ISREG(a.st_mode) ? MF_UNREADABLE : MF_NOT_REGULAR;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	for (int attempt = 0; attempt < 3 && st == MF_UNSTABLE; attempt++) {
		uint64_t total = 0;
		ssize_t n;

		if (attempt > 0 && fstat(fd, &a) < 0)
			break;
		if (kv_sha256_init(&h) < 0) {
			*err = ENOMEM;
			st = MF_UNREADABLE;
			break;
		}
		while ((n = pread(fd, buf, buflen, (off_t)total)) != 0) {
			if (n < 0) {
				if (errno == EINTR || errno == EAGAIN)
					continue;
				*err = errno;
				st = MF_UNREADABLE;
				break;
			}
			kv_sha256_update(&h, buf, (size_t)n);
			total += (uint64_t)n;
		}
		if (st == MF_UNSTABLE && kv_sha256_final(&h, md) == 0 &&
		    fstat(fd, &b) == 0 && same_stat(&a, &b) &&
		    total == (uint64_t)b.st_size) {
			kv_hex(md, KV_SHA256_LEN, hex);
			*size = total;
			st = MF_OK;
		}
		kv_sha256_free(&h);
	}
	close(fd);
	return st;
}

struct pool {
	size_t n;
	const size_t *order;
	atomic_size_t next;
	size_t buflen;
	void (*fn)(size_t, void *, size_t, void *);
	void *ctx;
};

static void *
worker(void *arg)
{
	struct pool *p = arg;
	void *buf = malloc(p->buflen);
	size_t k;

	if (buf == NULL)
		return (void *)1;
	while ((k = atomic_fetch_add(&p->next, 1)) < p->n)
		p->fn(p->order ? p->order[k] : k, buf, p->buflen, p->ctx);
	free(buf);
	return NULL;
}

int
mf_pool(size_t n, const size_t *order, int jobs, size_t buflen,
    void (*fn)(size_t, void *, size_t, void *), void *ctx)
{
	struct pool p = { n, order, 0, buflen, fn, ctx };
	pthread_t *t;
	int started = 0;
	void *res;
	int rc = 0;

	if (jobs < 1)
		jobs = 1;
	if ((size_t)jobs > n)
		jobs = n > 0 ? (int)n : 1;
	if ((t = calloc((size_t)jobs, sizeof(*t))) == NULL)
		return -1;
	for (int i = 1; i < jobs; i++)
		if (pthread_create(&t[i], NULL, worker, &p) == 0)
			started++;
	res = worker(&p);		/* the calling thread works too */
	if (res != NULL)
		rc = -1;
	for (int i = 1; i <= started; i++) {
		pthread_join(t[i], &res);
		if (res != NULL)
			rc = -1;
	}
	free(t);
	/* if every worker failed to get a buffer, nothing ran */
	return atomic_load(&p.next) >= n ? 0 : rc ? rc : -1;
}

bool
mf_excluded(char *const *globs, const char *rel)
{
	const char *base = strrchr(rel, '/');

	base = base ? base + 1 : rel;
	for (; globs && *globs; globs++) {
		const char *subject = strchr(*globs, '/') ? rel : base;

		if (fnmatch(*globs, subject, FNM_PERIOD) == 0)
			return true;
	}
	return false;
}

static int
add(struct mf_walk *w, const char *rel, enum mf_type type, uint64_t size)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 256;
		struct mf_item *nv = realloc(w->v, cap * sizeof(*nv));

		if (nv == NULL)
			return -1;
		w->v = nv;
		w->cap = cap;
	}
	if ((w->v[w->n].path = strdup(rel)) == NULL)
		return -1;
	w->v[w->n].type = type;
	w->v[w->n].size = size;
	w->n++;
	return 0;
}

static bool
utf8_ok(const char *s)
{
	json_t *j = json_string(s);

	json_decref(j);
	return j != NULL;
}

/* Walk directory dfd (at rel) recursively; dfd is closed. */
static int
walk_dir(struct mf_walk *w, int dfd, const char *rel, char *err,
    size_t errlen)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	int rc = 0;

	if (d == NULL) {
		close(dfd);
		snprintf(err, errlen, "%s", *rel ? rel : ".");
		return -1;
	}
	while (rc == 0 && (errno = 0, de = readdir(d)) != NULL) {
		struct stat st;
		char *sub;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (asprintf(&sub, "%s%s%s", rel, *rel ? "/" : "",
		    de->d_name) < 0)
			return closedir(d), -1;
		if (mf_excluded(w->exclude, sub)) {
			free(sub);
			continue;
		}
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT) {
				snprintf(err, errlen, "%s", sub);
				rc = -1;
			}
		} else if (w->need_utf8 && !utf8_ok(sub)) {
			w->bad_names++;
		} else if (S_ISDIR(st.st_mode)) {
			int sfd = openat(dirfd(d), de->d_name, O_RDONLY |
			    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sfd < 0) {
				snprintf(err, errlen, "%s", sub);
				rc = -1;
			} else {
				rc = walk_dir(w, sfd, sub, err, errlen);
			}
		} else if (S_ISREG(st.st_mode)) {
			if (!(w->skip && st.st_dev == w->skip_dev &&
			    st.st_ino == w->skip_ino))
				rc = add(w, sub, MF_FILE, (uint64_t)st.st_size);
		} else if (S_ISLNK(st.st_mode)) {
			rc = add(w, sub, MF_SYMLINK, 0);
		} else {
			w->skipped_odd++;
		}
		free(sub);
	}
	if (rc == 0 && errno != 0) {
		snprintf(err, errlen, "%s", *rel ? rel : ".");
		rc = -1;
	}
	closedir(d);
	return rc;
}

int
mf_walk_add(struct mf_walk *w, int rootfd, const char *start, char *err,
    size_t errlen)
{
	struct stat st;
	int fd;

	if (*start == '\0')
		fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	else
		fd = mf_open_beneath(rootfd, start, O_PATH);
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(err, errlen, "%s", *start ? start : ".");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		int dfd = *start ? openat(fd, ".", O_RDONLY | O_DIRECTORY |
		    O_CLOEXEC) : fd;

		if (*start)
			close(fd);
		if (dfd < 0) {
			snprintf(err, errlen, "%s", start);
			return -1;
		}
		return walk_dir(w, dfd, start, err, errlen);
	}
	close(fd);
	if (S_ISREG(st.st_mode))
		return add(w, start, MF_FILE, (uint64_t)st.st_size);
	if (S_ISLNK(st.st_mode))
		return add(w, start, MF_SYMLINK, 0);
	w->skipped_odd++;
	return 0;
}

static int
cmp_item(const void *a, const void *b)
{
	return strcmp(((const struct mf_item *)a)->path,
	    ((const struct mf_item *)b)->path);
}

void
mf_walk_sort(struct mf_walk *w)
{
	size_t o = 0;

	if (w->n > 1)
		qsort(w->v, w->n, sizeof(*w->v), cmp_item);
	for (size_t i = 0; i < w->n; i++) {
		if (o > 0 && strcmp(w->v[o - 1].path, w->v[i].path) == 0) {
			free(w->v[i].path);
			continue;
		}
		w->v[o++] = w->v[i];
	}
	w->n = o;
}

void
mf_walk_free(struct mf_walk *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->v[i].path);
	free(w->v);
	w->v = NULL;
	w->n = w->cap = 0;
}

static int
bad_line(struct mf_manifest *m, size_t line, const char *msg)
{
	struct mf_bad *nb = realloc(m->bad, (m->nbad + 1) * sizeof(*nb));

	if (nb == NULL)
		return -1;
	m->bad = nb;
	nb[m->nbad].line = line;
	snprintf(nb[m->nbad].msg, sizeof(nb[m->nbad].msg), "%s", msg);
	m->nbad++;
	return 0;
}

static int
good_line(struct mf_manifest *m, size_t line, struct mf_entry *e, size_t *cap)
{
	if (m->n == *cap) {
		size_t c = *cap ? 2 * *cap : 64;
		struct mf_entry *ne = realloc(m->e, c * sizeof(*ne));
		size_t *nl;

		if (ne == NULL)
			return -1;
		m->e = ne;
		if ((nl = realloc(m->line, c * sizeof(*nl))) == NULL)
			return -1;
		m->line = nl;
		*cap = c;
	}
	m->e[m->n] = *e;
	m->line[m->n++] = line;
	return 0;
}

static int
cmp_idx(const void *a, const void *b, void *arg)
{
	const struct mf_entry *e = arg;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int c = strcmp(e[x].path, e[y].path);

	return c ? c : x < y ? -1 : x > y;
}

/* Turn every later entry for an already-listed path into a bad line. */
static int
drop_duplicates(struct mf_manifest *m)
{
	size_t *idx, o = 0;
	bool *dup;
	int rc = 0;

	if (m->n < 2)
		return 0;
	idx = malloc(m->n * sizeof(*idx));
	dup = calloc(m->n, sizeof(*dup));
	if (idx == NULL || dup == NULL) {
		free(idx);
		free(dup);
		return -1;
	}
	for (size_t i = 0; i < m->n; i++)
		idx[i] = i;
	qsort_r(idx, m->n, sizeof(*idx), cmp_idx, m->e);
	for (size_t i = 1; i < m->n; i++)
		if (strcmp(m->e[idx[i]].path, m->e[idx[i - 1]].path) == 0)
			dup[idx[i]] = true;
	for (size_t i = 0; i < m->n; i++) {
		if (!dup[i]) {
			m->e[o] = m->e[i];
			m->line[o++] = m->line[i];
			continue;
		}
		if (bad_line(m, m->line[i], "duplicate entry for a path "
		    "listed before") < 0)
			rc = -1;
		mf_entry_free(&m->e[i]);
	}
	m->n = o;
	free(idx);
	free(dup);
	return rc;
}

static int
cmp_bad(const void *a, const void *b)
{
	size_t x = ((const struct mf_bad *)a)->line;
	size_t y = ((const struct mf_bad *)b)->line;

	return x < y ? -1 : x > y;
}

int
mf_manifest_parse(const char *buf, size_t len, struct mf_manifest *m)
{
	size_t pos = 0, line = 0, cap = 0;
	bool decided = false;
	char err[256];

	memset(m, 0, sizeof(*m));
	while (pos < len) {
		const char *s = buf + pos, *nl = memchr(s, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - s) : len - pos, k;
		struct mf_entry e;
		int rc;

		pos += n + (nl != NULL);
		line++;
		if (n > 0 && s[n - 1] == '\r')
			n--;
		for (k = 0; k < n && (s[k] == ' ' || s[k] == '\t'); k++)
			;
		if (k == n)
			continue;
		if (!decided) {
			m->json = mf_is_json(s, n);
			decided = true;
		}
		rc = m->json ? mf_parse_json_line(s, n, &e, err, sizeof(err)) :
		    mf_parse_sum_line(s, n, &e, err, sizeof(err));
		if (rc < 0 ? bad_line(m, line, err) < 0 :
		    good_line(m, line, &e, &cap) < 0) {
			if (rc == 0)
				mf_entry_free(&e);
			mf_manifest_free(m);
			return -1;
		}
	}
	if (!decided && bad_line(m, 0, "manifest has no entries") < 0)
		return -1;
	if (drop_duplicates(m) < 0) {
		mf_manifest_free(m);
		return -1;
	}
	if (m->nbad > 1)
		qsort(m->bad, m->nbad, sizeof(*m->bad), cmp_bad);
	return 0;
}

void
mf_manifest_free(struct mf_manifest *m)
{
	for (size_t i = 0; i < m->n; i++)
		mf_entry_free(&m->e[i]);
	free(m->e);
	free(m->line);
	free(m->bad);
	memset(m, 0, sizeof(*m));
}
