/* SPDX-License-Identifier: MIT */
#ifndef KV_MANIFEST_H
#define KV_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

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

enum mf_status {
	MF_OK = 0,
	MF_MISSING,
	MF_UNREADABLE,
	MF_UNSTABLE,		/* changed while hashed, on every try */
	MF_NOT_REGULAR		/* not a regular file (or a symlink now) */
};

/* One file or symlink to hash or check, and what was found there. */
struct mf_job {
	const char *path;
	enum mf_type type;
	uint64_t size;		/* in: a size hint, big first; out: bytes hashed */
	enum mf_status st;
	int err;		/* errno, for MF_UNREADABLE */
	char sha256[65];
	char *target;		/* a symlink's target (malloc'd) */
};

/*
 * Set r's "path" to path; a path that is not valid UTF-8 (possible only
 * in a sha256sum-format manifest) becomes "path":null plus
 * "path_escaped" with printable ASCII kept, '\\' doubled and every other
 * byte written \xHH (two lower-case hex digits).  0, or -1 on ENOMEM.
 */
int mf_set_path(json_t *r, const char *path);

/*
 * The check record of manifest entry e against what was found, j:
 * {"kind":"check","path":..,"status":..} with sha256, size_bytes and the
 * expected values where they differ.  *status gets the status name (a
 * static string).  NULL on ENOMEM.  Pure.
 */
json_t *mf_check_record(const struct mf_entry *e, const struct mf_job *j,
    const char **status);

/* Is rel excluded by one of the globs (a glob without '/' matches the
 * last component, one with '/' the whole path)? */
bool mf_excluded(char *const *globs, const char *rel);

#endif
