/* SPDX-License-Identifier: MIT */
#ifndef KV_JSONL_H
#define KV_JSONL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#define KV_MAX_LINE_DEFAULT (64u << 20)	/* 64 MiB: a 128K-token prompt is ~1 MiB */

/* Result of reading one line. */
enum jsonl_status {
	JSONL_EOF = 0,
	JSONL_OK,		/* *out holds a JSON object (caller decrefs) */
	JSONL_BAD		/* line unusable; reader's err says why */
};

struct jsonl_reader {
	FILE *fp;
	const char *name;	/* "stdin" or a file name, for messages */
	size_t lineno;		/* number of the line last returned */
	size_t max_line;	/* longest line accepted, in bytes */
	char *buf;
	size_t cap;
	char err[256];
};

/* Set up r to read JSON lines from fp; max_line 0 means the default. */
void jsonl_init(struct jsonl_reader *r, FILE *fp, const char *name,
    size_t max_line);
void jsonl_free(struct jsonl_reader *r);

/*
 * Read the next non-empty line as a JSON object.  CRLF endings are
 * accepted; empty and whitespace-only lines are skipped.  An over-long
 * line is consumed whole and reported as JSONL_BAD, as are invalid JSON,
 * invalid UTF-8 and a value that is not an object.  A read error is
 * reported as JSONL_BAD with errno's text and sets r->fp's error flag.
 */
enum jsonl_status jsonl_next(struct jsonl_reader *r, json_t **out);

/* Write rec as one compact line; flush if asked.  0, or -1 on error. */
int jsonl_write(FILE *out, const json_t *rec, bool flush);

/*
 * Report a bad line: "prog: NAME:LINE: msg" on stderr and the record
 * {"kind":"error","line":LINE,"error":msg} on out.  Returns -1 if the
 * record could not be written.
 */
int jsonl_error(FILE *out, const char *name, size_t line, const char *msg);

/*
 * Make s valid UTF-8 in place: every byte that does not start a complete,
 * valid sequence (a message cut mid-character, raw input bytes) becomes
 * '?'.  Messages that quote input pass through this before JSON.
 */
void jsonl_clean_utf8(char *s);

/*
 * A per-record filter: fn gets each record and edits it in place.  It
 * returns 0 on success, or -1 with a message in err.
 */
typedef int (*jsonl_fn)(json_t *rec, void *ctx, char *err, size_t errlen);

struct jsonl_filter {
	bool strict;		/* stop at the first bad record */
	bool flush;		/* flush after each record */
	size_t max_line;
};

/*
 * Run fn over every record of in, writing exactly one line per input
 * record (the edited record, or an error record) to out.  Returns the
 * exit status: KV_OK, KV_DATAERR if any record was bad, KV_IOERR on a
 * read or write error.  *nrec, if not NULL, gets the record count.
 */
int jsonl_filter(FILE *in, const char *name, FILE *out, jsonl_fn fn,
    void *ctx, const struct jsonl_filter *opt, size_t *nrec);

/* Field access with the reason in err when it fails. */
enum jf_status { JF_ABSENT = 0, JF_OK = 1, JF_BAD = -1 };

/* A finite number (integer or real); null counts as absent. */
enum jf_status jf_num(const json_t *o, const char *key, double *out,
    char *err, size_t errlen);
/* A non-negative integer <= max (an integral real is accepted). */
enum jf_status jf_u64(const json_t *o, const char *key, uint64_t max,
    uint64_t *out, char *err, size_t errlen);
/* A string. */
enum jf_status jf_str(const json_t *o, const char *key, const char **out,
    char *err, size_t errlen);
/* A boolean. */
enum jf_status jf_bool(const json_t *o, const char *key, bool *out,
    char *err, size_t errlen);

/*
 * Set o[key] to x: a JSON integer when x is integral and exactly
 * representable, a real otherwise, null when x is not finite.
 * Returns 0, or -1 on allocation failure.
 */
int jset_num(json_t *o, const char *key, double x);
int jset_u64(json_t *o, const char *key, uint64_t x);
int jset_str(json_t *o, const char *key, const char *s);
int jset_bool(json_t *o, const char *key, bool b);
int jset_null(json_t *o, const char *key);

#endif
