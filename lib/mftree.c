/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

#include "mftree.h"
#include "sha.h"

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
		    RESOLVE_NO_MAGICLINKS
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
	if (fstat(fd, &a) < 0) {
		*err = errno;
		close(fd);
		return MF_UNREADABLE;	/* a is not filled in: never read it */
	}
	if (!S_ISREG(a.st_mode)) {
		close(fd);
		return MF_NOT_REGULAR;
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

struct jobctx {
	int rootfd;
	struct mf_job *jobs;
};

static void
hash_one(size_t i, void *buf, size_t buflen, void *arg)
{
	struct jobctx *c = arg;
	struct mf_job *j = &c->jobs[i];
	char target[4096];

	if (j->type == MF_FILE) {
		j->st = mf_hash_file(c->rootfd, j->path, buf, buflen, j->sha256,
		    &j->size, &j->err);
		return;
	}
	if (mf_readlink_beneath(c->rootfd, j->path, target,
	    sizeof(target)) < 0) {
		j->err = errno;
		j->st = errno == ENOENT ? MF_MISSING : errno == EINVAL ?
		    MF_NOT_REGULAR : MF_UNREADABLE;
		return;
	}
	j->target = strdup(target);
	j->st = j->target ? MF_OK : MF_UNREADABLE;
}

static int
cmp_size_desc(const void *a, const void *b, void *arg)
{
	const struct mf_job *j = arg;
	uint64_t x = j[*(const size_t *)a].size, y = j[*(const size_t *)b].size;

	return x < y ? 1 : x > y ? -1 : 0;
}

int
mf_hash_jobs(int rootfd, struct mf_job *jobs, size_t n, int nthreads,
    size_t buflen)
{
	struct jobctx c = { rootfd, jobs };
	size_t *order = malloc((n ? n : 1) * sizeof(*order));
	int rc;

	if (order == NULL)
		return -1;
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof(*order), cmp_size_desc, jobs);
	for (size_t i = 0; i < n; i++)
		jobs[i].size = 0;
	rc = mf_pool(n, order, nthreads, buflen, hash_one, &c);
	free(order);
	return rc;
}

void
mf_jobs_free(struct mf_job *jobs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(jobs[i].target);
		jobs[i].target = NULL;
	}
}
