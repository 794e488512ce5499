/* SPDX-License-Identifier: MIT */
#ifndef KV_MFTREE_H
#define KV_MFTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "manifest.h"

/*
 * The file-system half of sha-manifest: opening beneath a root, stable
 * hashing, the worker pool and the tree walk.
 */

/*
 * Open path under rootfd without following any symlink and without
 * leaving the root (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, or a
 * walk with O_NOFOLLOW at each component where openat2 is missing).
 */
int mf_open_beneath(int rootfd, const char *path, int flags);

/* readlink of path under rootfd (the parent opened beneath). */
int mf_readlink_beneath(int rootfd, const char *path, char *buf,
    size_t len);


/*
 * Hash the regular file at path under rootfd with buf as read buffer.
 * The size, mtime and ctime from fstat before and after must agree with
 * each other and with the bytes read, else it is hashed again (up to
 * three tries) and then reported MF_UNSTABLE.  *err gets errno for
 * MF_UNREADABLE.
 */
enum mf_status mf_hash_file(int rootfd, const char *path, void *buf,
    size_t buflen, char hex[65], uint64_t *size, int *err);

/*
 * Run fn(i, buf, ctx) for i in [0, n) on jobs threads, each with its own
 * buffer of buflen bytes; order[] (may be NULL) gives the order in which
 * indices are handed out.  0, or -1 when threads cannot start.
 */
int mf_pool(size_t n, const size_t *order, int jobs, size_t buflen,
    void (*fn)(size_t i, void *buf, size_t buflen, void *ctx), void *ctx);

/*
 * Hash (files) or read (symlinks) jobs[0..n) on nthreads threads, biggest
 * first by the size hints, with buflen-byte reads.  0, or -1 when threads
 * cannot start.
 */
int mf_hash_jobs(int rootfd, struct mf_job *jobs, size_t n, int nthreads,
    size_t buflen);
/* Free the jobs' targets. */
void mf_jobs_free(struct mf_job *jobs, size_t n);

/* A tree walk's result: paths relative to the root, sorted. */
struct mf_item {
	char *path;
	enum mf_type type;
	uint64_t size;		/* lstat size, to schedule big files first */
};

struct mf_walk {
	struct mf_item *v;
	size_t n, cap;
	char **exclude;		/* globs; NULL-terminated */
	dev_t skip_dev;		/* a file not to list (the manifest itself) */
	ino_t skip_ino;
	bool skip;
	size_t skipped_odd;	/* devices, fifos, sockets not listed */
	size_t bad_names;	/* names that are not valid UTF-8, if asked */
	bool need_utf8;
};

/*
 * Add start (a normalised path under rootfd, or "" for the whole root)
 * to w: a directory recursively, a file or a symlink as itself.
 * Returns 0, or -1 with errno and the failing path in err.
 */
int mf_walk_add(struct mf_walk *w, int rootfd, const char *start,
    char *err, size_t errlen);
/* Sort w's items by path (bytewise) and drop duplicates. */
void mf_walk_sort(struct mf_walk *w);
void mf_walk_free(struct mf_walk *w);

#endif
