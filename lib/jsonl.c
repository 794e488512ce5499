/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "jsonl.h"

void
jsonl_init(struct jsonl_reader *r, FILE *fp, const char *name, size_t max_line)
{
	memset(r, 0, sizeof(*r));
	r->fp = fp;
	r->name = name ? name : "stdin";
	r->max_line = max_line ? max_line : KV_MAX_LINE_DEFAULT;
}

void
jsonl_free(struct jsonl_reader *r)
{
	free(r->buf);
	r->buf = NULL;
	r->cap = 0;
}

/*
 * Read one line into r->buf without its newline.  Returns its length,
 * -1 at end of input, -2 when over r->max_line (rest consumed), -3 on
 * a read error or allocation failure.  Bytes are taken one by one so a
 * NUL inside a line stays inside that line (and makes it invalid JSON)
 * instead of hiding the line's end.
 */
static long
readline(struct jsonl_reader *r)
{
	size_t len = 0;
	int c, toolong = 0, any = 0;

	while ((c = getc_unlocked(r->fp)) != EOF) {
		any = 1;
		if (c == '\n')
			break;
		if (toolong)
			continue;
		if (len >= r->max_line) {
			toolong = 1;
			continue;
		}
		if (len + 1 >= r->cap) {
			size_t ncap = r->cap ? r->cap * 2 : 4096;
			char *nb;

			if (ncap > r->max_line + 1)
				ncap = r->max_line + 1;
			if ((nb = realloc(r->buf, ncap)) == NULL)
				return -3;
			r->buf = nb;
			r->cap = ncap;
		}
		r->buf[len++] = (char)c;
	}
	if (ferror(r->fp))
		return -3;
	if (!any)
		return -1;
	if (toolong)
		return -2;
	if (r->buf == NULL && (r->buf = malloc(r->cap = 4096)) == NULL)
		return -3;
	r->buf[len] = '\0';
	return (long)len;
}

static int
blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return 0;
	return 1;
}

enum jsonl_status
jsonl_next(struct jsonl_reader *r, json_t **out)
{
	json_error_t je;
	json_t *v;
	long n;

	*out = NULL;
	for (;;) {
		n = readline(r);
		if (n == -1)
			return JSONL_EOF;
		r->lineno++;
		if (n == -3) {
			snprintf(r->err, sizeof(r->err), "read error: %s",
			    strerror(errno));
			return JSONL_BAD;
		}
		if (n == -2) {
			snprintf(r->err, sizeof(r->err),
			    "line longer than %zu bytes", r->max_line);
			return JSONL_BAD;
		}
		if (!blank(r->buf, (size_t)n))
			break;
	}
	if (n > 0 && r->buf[n - 1] == '\r')
		r->buf[--n] = '\0';
	v = json_loadb(r->buf, (size_t)n, 0, &je);
	if (v == NULL) {
		snprintf(r->err, sizeof(r->err), "invalid JSON: %s (column %d)",
		    je.text, je.column);
		return JSONL_BAD;
	}
	if (!json_is_object(v)) {
		json_decref(v);
		snprintf(r->err, sizeof(r->err),
		    "invalid record: not a JSON object");
		return JSONL_BAD;
	}
	*out = v;
	return JSONL_OK;
}

/*
 * One buffer per thread, reused across records: jansson dumps into it in
 * one pass and the line goes out in one fwrite, instead of a callback per
 * token.  It grows to the longest record written; a thread's buffer is
 * freed when the thread exits.
 */
struct dumpbuf {
	char *p;
	size_t cap;
};

static pthread_key_t dumpkey;
static pthread_once_t dumponce = PTHREAD_ONCE_INIT;
static int dumpkey_ok;

static void
dumpbuf_free(void *v)
{
	struct dumpbuf *b = v;

	free(b->p);
	free(b);
}

static void
dumpkey_init(void)
{
	dumpkey_ok = pthread_key_create(&dumpkey, dumpbuf_free) == 0;
}

static struct dumpbuf *
dumpbuf_get(void)
{
	struct dumpbuf *b;

	if (pthread_once(&dumponce, dumpkey_init) != 0 || !dumpkey_ok)
		return NULL;
	if ((b = pthread_getspecific(dumpkey)) != NULL)
		return b;
	if ((b = calloc(1, sizeof(*b))) == NULL)
		return NULL;
	if (pthread_setspecific(dumpkey, b) != 0) {
		free(b);
		return NULL;
	}
	return b;
}

int
jsonl_write(FILE *out, const json_t *rec, bool flush)
{
	struct dumpbuf *b = dumpbuf_get();
	size_t n;

	if (b == NULL)
		return -1;
	for (;;) {
		n = json_dumpb(rec, b->p, b->cap, JSON_COMPACT);
		if (n == 0)
			return -1;
		if (n < b->cap)
			break;
		char *nb = realloc(b->p, n + 1);
		if (nb == NULL)
			return -1;
		b->p = nb;
		b->cap = n + 1;
	}
	b->p[n] = '\n';
	if (fwrite(b->p, 1, n + 1, out) != n + 1)
		return -1;
	if (flush && fflush(out) != 0)
		return -1;
	return ferror(out) ? -1 : 0;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t
utf8_seq(const unsigned char *s)
{
	size_t n, i;
	unsigned c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	for (i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f) ||
	    (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f))
		return 0;
	return n;
}

void
jsonl_clean_utf8(char *s)
{
	unsigned char *p = (unsigned char *)s;
	size_t n;

	while (*p) {
		if ((n = utf8_seq(p)) == 0) {
			*p++ = '?';
			continue;
		}
		p += n;
	}
}

int
jsonl_error(FILE *out, const char *name, size_t line, const char *msg)
{
	char clean[1024];
	json_t *rec;
	int rc;

	snprintf(clean, sizeof(clean), "%s", msg);
	jsonl_clean_utf8(clean);
	fprintf(stderr, "%s: %s:%zu: %s\n", kv_progname, name, line, clean);
	rec = json_pack("{s:s, s:I, s:s}", "kind", "error", "line",
	    (json_int_t)line, "error", clean);
	if (rec == NULL)
		rec = json_pack("{s:s, s:I, s:s}", "kind", "error", "line",
		    (json_int_t)line, "error", "invalid record");
	if (rec == NULL)
		return -1;
	rc = jsonl_write(out, rec, true);
	json_decref(rec);
	return rc;
}

int
jsonl_filter(FILE *in, const char *name, FILE *out, jsonl_fn fn, void *ctx,
    const struct jsonl_filter *opt, size_t *nrec)
{
	struct jsonl_reader r;
	enum jsonl_status st;
	char err[sizeof(r.err)];
	const char *msg;
	json_t *rec;
	int status = KV_OK;
	size_t n = 0;

	jsonl_init(&r, in, name, opt->max_line);
	while ((st = jsonl_next(&r, &rec)) != JSONL_EOF) {
		n++;
		if (st == JSONL_BAD && ferror(in)) {
			kv_warn("%s: %s", name, r.err);
			status = KV_IOERR;
			break;
		}
		if (st == JSONL_OK) {
			err[0] = '\0';
			if (fn(rec, ctx, err, sizeof(err)) == 0) {
				if (jsonl_write(out, rec, opt->flush) != 0) {
					json_decref(rec);
					status = KV_IOERR;
					break;
				}
				json_decref(rec);
				continue;
			}
			json_decref(rec);
			msg = err[0] ? err : "record rejected";
			memcpy(r.err, msg, strnlen(msg, sizeof(r.err) - 1));
			r.err[strnlen(msg, sizeof(r.err) - 1)] = '\0';
		}
		status = KV_DATAERR;
		if (jsonl_error(out, name, r.lineno, r.err) != 0) {
			status = KV_IOERR;
			break;
		}
		if (opt->strict)
			break;
	}
	jsonl_free(&r);
	if (nrec)
		*nrec = n;
	return status;
}

enum jf_status
jf_num(const json_t *o, const char *key, double *out, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (v == NULL || json_is_null(v))
		return JF_ABSENT;
	if (!json_is_number(v)) {
		snprintf(err, errlen, "field '%s' must be a number", key);
		return JF_BAD;
	}
	*out = json_number_value(v);
	if (!isfinite(*out)) {
		snprintf(err, errlen, "field '%s' is not finite", key);
		return JF_BAD;
	}
	return JF_OK;
}

enum jf_status
jf_u64(const json_t *o, const char *key, uint64_t max, uint64_t *out,
    char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);
	double d;

	if (v == NULL || json_is_null(v))
		return JF_ABSENT;
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		if (i < 0 || (uint64_t)i > max)
			goto range;
		*out = (uint64_t)i;
		return JF_OK;
	}
	if (!json_is_real(v)) {
		snprintf(err, errlen, "field '%s' must be an integer", key);
		return JF_BAD;
	}
	d = json_real_value(v);
	if (d != floor(d) || !isfinite(d)) {
		snprintf(err, errlen, "field '%s' must be an integer", key);
		return JF_BAD;
	}
	if (d < 0 || d > (double)max)
		goto range;
	*out = (uint64_t)d;
	return JF_OK;
range:
	snprintf(err, errlen, "field '%s' out of range 0..%llu", key,
	    (unsigned long long)max);
	return JF_BAD;
}

enum jf_status
jf_str(const json_t *o, const char *key, const char **out, char *err,
    size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (v == NULL || json_is_null(v))
		return JF_ABSENT;
	if (!json_is_string(v)) {
		snprintf(err, errlen, "field '%s' must be a string", key);
		return JF_BAD;
	}
	*out = json_string_value(v);
	return JF_OK;
}

enum jf_status
jf_bool(const json_t *o, const char *key, bool *out, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (v == NULL || json_is_null(v))
		return JF_ABSENT;
	if (!json_is_boolean(v)) {
		snprintf(err, errlen, "field '%s' must be true or false", key);
		return JF_BAD;
	}
	*out = json_is_true(v);
	return JF_OK;
}

int
jset_num(json_t *o, const char *key, double x)
{
	json_t *v;

	if (!isfinite(x))
		v = json_null();
	else if (x == floor(x) && fabs(x) < 9007199254740992.0)
		v = json_integer((json_int_t)x);
	else
		v = json_real(x);
	return json_object_set_new(o, key, v);
}

int
jset_u64(json_t *o, const char *key, uint64_t x)
{
	if (x > (uint64_t)INT64_MAX)
		return jset_num(o, key, (double)x);
	return json_object_set_new(o, key, json_integer((json_int_t)x));
}

int
jset_str(json_t *o, const char *key, const char *s)
{
	return json_object_set_new(o, key, s ? json_string(s) : json_null());
}

int
jset_bool(json_t *o, const char *key, bool b)
{
	return json_object_set_new(o, key, json_boolean(b));
}

int
jset_null(json_t *o, const char *key)
{
	return json_object_set_new(o, key, json_null());
}
