/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "manifest.h"

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

/* The status of e against j, as a name. */
static const char *
check_status(const struct mf_entry *e, const struct mf_job *j)
{
	switch (j->st) {
	case MF_OK:
		if (e->type == MF_SYMLINK)
			return strcmp(j->target, e->target) ? "modified" : "ok";
		if (e->has_size && e->size != j->size)
			return "size_changed";
		return strcmp(e->sha256, j->sha256) ? "modified" : "ok";
	case MF_MISSING:
		return "missing";
	case MF_UNREADABLE:
		return "unreadable";
	case MF_UNSTABLE:
		return "unstable";
	case MF_NOT_REGULAR:
		return "modified";
	}
	return "unreadable";
}

static const char *
check_reason(const struct mf_entry *e, const struct mf_job *j)
{
	switch (j->st) {
	case MF_NOT_REGULAR:
		return e->type == MF_SYMLINK ? "no longer a symlink" :
		    "no longer a regular file";
	case MF_UNREADABLE:
		return strerror(j->err);
	case MF_UNSTABLE:
		return "changed while it was hashed";
	default:
		return NULL;
	}
}

int
mf_set_path(json_t *r, const char *path)
{
	static const char hexd[] = "0123456789abcdef";
	char *esc, *q;
	json_t *v = json_string(path);
	int rc;

	if (v != NULL)
		return json_object_set_new(r, "path", v);
	/* not UTF-8: a null path and every byte spelt out */
	if ((esc = malloc(4 * strlen(path) + 1)) == NULL)
		return -1;
	q = esc;
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if (*p == '\\') {
			*q++ = '\\';
			*q++ = '\\';
		} else if (*p >= 0x20 && *p < 0x7f) {
			*q++ = (char)*p;
		} else {
			*q++ = '\\';
			*q++ = 'x';
			*q++ = hexd[*p >> 4];
			*q++ = hexd[*p & 15];
		}
	}
	*q = '\0';
	rc = json_object_set_new(r, "path", json_null()) ||
	    json_object_set_new(r, "path_escaped", json_string(esc));
	free(esc);
	return rc ? -1 : 0;
}

json_t *
mf_check_record(const struct mf_entry *e, const struct mf_job *j,
    const char **status)
{
	const char *st = check_status(e, j), *why = check_reason(e, j);
	bool ok = strcmp(st, "ok") == 0;
	json_t *r = json_pack("{s:s}", "kind", "check");
	int bad = r == NULL || mf_set_path(r, e->path) < 0;

	if (!bad && e->type == MF_SYMLINK) {
		bad |= json_object_set_new(r, "type", json_string("symlink"));
		if (j->st == MF_OK)
			bad |= json_object_set_new(r, "target",
			    json_string(j->target));
		if (j->st == MF_OK && !ok)
			bad |= json_object_set_new(r, "expected_target",
			    json_string(e->target));
	} else if (!bad && j->st == MF_OK) {
		bad |= json_object_set_new(r, "sha256", json_string(j->sha256));
		bad |= json_object_set_new(r, "size_bytes",
		    json_integer((json_int_t)j->size));
		if (!ok)
			bad |= json_object_set_new(r, "expected_sha256",
			    json_string(e->sha256));
		if (strcmp(st, "size_changed") == 0)
			bad |= json_object_set_new(r, "expected_size_bytes",
			    json_integer((json_int_t)e->size));
	}
	if (!bad)
		bad |= json_object_set_new(r, "status", json_string(st));
	if (!bad && why)
		bad |= json_object_set_new(r, "reason", json_string(why));
	if (bad) {
		json_decref(r);
		return NULL;
	}
	*status = st;
	return r;
}
