/* SPDX-License-Identifier: MIT */
#ifndef KV_MANIFEST_H
#define KV_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * SHA-256 manifests of file trees: the two line formats (JSON lines and
 * sha256sum's), path safety, and hashing under a root directory fd.
 */

enum mf_type { MF_FILE = 0, MF_SYMLINK };

/* One manifest entry as parsed from a line. */
struct mf_entry {
	char *path;		/* normalised, relative; malloc'd */
	enum mf_type type;
	char sha256[65];	/* lower-case hex (files) */
	bool has_size;
	uint64_t size;
	char *target;		/* symlinks; malloc'd */
};

void mf_entry_free(struct mf_entry *e);

/*
 * Normalise a relative path of len bytes into a malloc'd string: "." and
 * empty components are dropped.  An empty path, an absolute one, one with
 * a ".." component or a NUL byte is refused.  Returns the new string or
 * NULL with the reason in err.  Pure.
 */
char *mf_path_normalise(const char *p, size_t len, char *err, size_t errlen);

/* Does name need sha256sum's escaping (it holds '\\', '\n' or '\r')? */
bool mf_needs_escape(const char *name);
/* name with '\\' '\n' '\r' written as \\ \n \r (malloc'd). */
char *mf_escape(const char *name);

/*
 * Parse one line (without its newline) of a sha256sum file: "HEX  NAME",
 * "HEX *NAME", the BSD form "SHA256 (NAME) = HEX", each optionally
 * escaped by a leading '\\'.  Fills e (type MF_FILE).  0, or -1 with
 * the reason in err.  Pure.
 */
int mf_parse_sum_line(const char *line, size_t len, struct mf_entry *e,
    char *err, size_t errlen);

/*
 * Parse one JSON-lines manifest line: {"path":P,"sha256":H,"size_bytes":N}
 * or {"path":P,"type":"symlink","target":T}; other fields are ignored.
 * 0, or -1 with the reason in err.  Pure.
 */
int mf_parse_json_line(const char *line, size_t len, struct mf_entry *e,
    char *err, size_t errlen);

/* Is this first non-blank line a JSON-lines manifest (vs sha256sum)? */
bool mf_is_json(const char *line, size_t len);

/* A bad manifest line: its number and why. */
struct mf_bad {
	size_t line;
	char msg[256];
};

/* A whole manifest, parsed. */
struct mf_manifest {
	bool json;		/* the format found (the first line decides) */
	struct mf_entry *e;	/* the good entries, in file order */
	size_t *line;		/* e[i]'s line number */
	size_t n;
	struct mf_bad *bad;	/* the bad lines, in file order */
	size_t nbad;
};

/*
 * Parse a manifest of len bytes in either format: lines end in LF (a CR
 * before it is dropped), blank lines are skipped, a line that does not
 * parse or repeats an earlier path is a bad line.  No input at all is one
 * bad line (line 0).  0, or -1 on allocation failure.  Pure.
 */
int mf_manifest_parse(const char *buf, size_t len, struct mf_manifest *m);
void mf_manifest_free(struct mf_manifest *m);

/*
 * Open path under rootfd without following any symlink and without
 * leaving the root (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, or a
 * walk with O_NOFOLLOW at each component where openat2 is missing).
 */
int mf_open_beneath(int rootfd, const char *path, int flags);

/* readlink of path under rootfd (the parent opened beneath). */
int mf_readlink_beneath(int rootfd, const char *path, char *buf,
    size_t len);

enum mf_status {
	MF_OK = 0,
	MF_MISSING,
	MF_UNREADABLE,
	MF_UNSTABLE,		/* changed while hashed, on every try */
	MF_NOT_REGULAR		/* not a regular file (or a symlink now) */
};

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

/* Is rel excluded by one of the globs (a glob without '/' matches the
 * last component, one with '/' the whole path)? */
bool mf_excluded(char *const *globs, const char *rel);

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
