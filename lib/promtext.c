/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "promtext.h"

#define MAX_LABELS 128

struct family {
	char *name, *type, *help;
	bool has_samples;
};

struct parser {
	struct family *fam;
	size_t nfam, cap;
	char *err;
	size_t errlen;
	/* the current line, NUL-terminated copy, and its decoded labels */
	char *ln;
	size_t lncap;
	struct prom_label lab[MAX_LABELS];
	size_t nlab;
};

bool
prom_utf8_ok(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *e = p + len;
	unsigned c, need, min;

	while (p < e) {
		c = *p++;
		if (c < 0x80)
			continue;
		if (c >= 0xc2 && c <= 0xdf)
			need = 1, min = 0x80, c &= 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			need = 2, min = 0x800, c &= 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			need = 3, min = 0x10000, c &= 0x07;
		else
			return false;
		if ((size_t)(e - p) < need)
			return false;
		for (; need > 0; need--, p++) {
			if ((*p & 0xc0) != 0x80)
				return false;
			c = c << 6 | (*p & 0x3f);
		}
		if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			return false;
	}
	return true;
}

static int
fail(struct parser *p, const char *msg)
{
	snprintf(p->err, p->errlen, "%s", msg);
	return -1;
}

static void
skip_blank(char **s)
{
	while (**s == ' ' || **s == '\t')
		(*s)++;
}

static bool
name_start(int c, bool colon)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	    (colon && c == ':');
}

/* Cut a metric (colon true) or label name at *s; NULL if none. */
static char *
take_name(char **s, bool colon)
{
	char *start = *s;

	if (!name_start(**s, colon))
		return NULL;
	while (name_start(**s, colon) || (**s >= '0' && **s <= '9'))
		(*s)++;
	return start;
}

static struct family *
find(struct parser *p, const char *name)
{
	size_t i;

	for (i = p->nfam; i > 0; i--)
		if (strcmp(p->fam[i - 1].name, name) == 0)
			return &p->fam[i - 1];
	return NULL;
}

static struct family *
add(struct parser *p, const char *name)
{
	struct family *f;

	if (p->nfam == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;
		if ((f = realloc(p->fam, cap * sizeof(*f))) == NULL)
			return NULL;
		p->fam = f;
		p->cap = cap;
	}
	f = &p->fam[p->nfam];
	memset(f, 0, sizeof(*f));
	if ((f->name = strdup(name)) == NULL)
		return NULL;
	p->nfam++;
	return f;
}

/* The family a series belongs to: itself, or a histogram/summary base. */
static struct family *
family_of(struct parser *p, const char *name)
{
	static const char *const suf[] = { "_bucket", "_sum", "_count" };
	struct family *f = find(p, name);
	char base[512];
	size_t n = strlen(name), k, i;

	if (f && f->type)
		return f;
	for (i = 0; i < 3; i++) {
		k = strlen(suf[i]);
		if (n <= k || n - k >= sizeof(base) ||
		    strcmp(name + n - k, suf[i]) != 0)
			continue;
		memcpy(base, name, n - k);
		base[n - k] = '\0';
		struct family *b = find(p, base);
		if (b && b->type && (strcmp(b->type, "histogram") == 0 ||
		    (i > 0 && strcmp(b->type, "summary") == 0)))
			return b;
	}
	return f ? f : add(p, name);
}

/* Unescape a HELP docstring in place (\\ and \n). */
static void
unescape_help(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (*s == '\\' && (s[1] == '\\' || s[1] == 'n')) {
			*w++ = s[1] == 'n' ? '\n' : '\\';
			s++;
		} else
			*w++ = *s;
	}
	*w = '\0';
}

/* "# HELP name doc", "# TYPE name type", or any other comment. */
static int
comment(struct parser *p, char *s)
{
	static const char *const types[] = { "counter", "gauge", "histogram",
	    "summary", "untyped" };
	char *kw, *name, *end;
	struct family *f;
	size_t i;
	bool help;

	s++;
	skip_blank(&s);
	kw = s;
	while (*s && *s != ' ' && *s != '\t')
		s++;
	help = (size_t)(s - kw) == 4 && strncmp(kw, "HELP", 4) == 0;
	if (!help && !((size_t)(s - kw) == 4 && strncmp(kw, "TYPE", 4) == 0))
		return 0;
	skip_blank(&s);
	if ((name = take_name(&s, true)) == NULL)
		return fail(p, help ? "HELP without a metric name" :
		    "TYPE without a metric name");
	if (*s != '\0' && *s != ' ' && *s != '\t')
		return fail(p, "invalid character in a metric name");
	end = s;
	skip_blank(&s);
	*end = '\0';
	if ((f = find(p, name)) == NULL && (f = add(p, name)) == NULL)
		return fail(p, "out of memory");
	if (help) {
		if (f->help)
			return fail(p, "second HELP line for a metric");
		unescape_help(s);
		if ((f->help = strdup(s)) == NULL)
			return fail(p, "out of memory");
		return 0;
	}
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	if (f->type)
		return fail(p, "second TYPE line for a metric");
	if (f->has_samples)
		return fail(p, "TYPE line after the metric's samples");
	for (i = 0; i < 5; i++)
		if (strcmp(s, types[i]) == 0)
			break;
	if (i == 5)
		return fail(p, "unknown metric type (counter, gauge, histogram, "
		    "summary or untyped)");
	f->type = (char *)types[i];
	return 0;
}

/* Decode a quoted label value in place; *s is just past the opening ". */
static char *
label_value(struct parser *p, char **s)
{
	char *r = *s, *w = *s, *start = *s;

	for (;;) {
		if (*r == '\0') {
			fail(p, "unterminated label value");
			return NULL;
		}
		if (*r == '"')
			break;
		if (*r == '\\') {
			r++;
			if (*r == '\\' || *r == '"')
				*w++ = *r++;
			else if (*r == 'n')
				*w++ = '\n', r++;
			else {
				fail(p, "invalid escape in a label value "
				    "(only \\\\, \\\" and \\n)");
				return NULL;
			}
		} else
			*w++ = *r++;
	}
	*w = '\0';
	*s = r + 1;
	return start;
}

/* Parse {name="value",...}; *s is at the '{'. */
static int
labels(struct parser *p, char **s)
{
	char *name, *end, *val;
	size_t i;

	(*s)++;
	for (;;) {
		skip_blank(s);
		if (**s == '}') {
			(*s)++;
			return 0;
		}
		if ((name = take_name(s, false)) == NULL)
			return fail(p, "expected a label name");
		end = *s;
		skip_blank(s);
		if (**s != '=')
			return fail(p, "expected '=' after a label name");
		(*s)++;
		skip_blank(s);
		if (**s != '"')
			return fail(p, "expected a quoted label value");
		(*s)++;
		*end = '\0';
		if ((val = label_value(p, s)) == NULL)
			return -1;
		if (p->nlab == MAX_LABELS)
			return fail(p, "more than 128 labels");
		for (i = 0; i < p->nlab; i++)
			if (strcmp(p->lab[i].name, name) == 0)
				return fail(p, "duplicate label name");
		p->lab[p->nlab].name = name;
		p->lab[p->nlab++].value = val;
		skip_blank(s);
		if (**s == ',')
			(*s)++;
		else if (**s != '}')
			return fail(p, "expected ',' or '}' in the label set");
	}
}

/* The next blank-separated token, NUL-terminated in place; NULL at end. */
static char *
token(char **s)
{
	char *t;

	skip_blank(s);
	if (**s == '\0')
		return NULL;
	t = *s;
	while (**s && **s != ' ' && **s != '\t')
		(*s)++;
	if (**s)
		*(*s)++ = '\0';
	return t;
}

static int
parse_value(const char *t, double *v)
{
	char *end;

	if (strcasecmp(t, "nan") == 0)
		*v = NAN;
	else if (strcasecmp(t, "+inf") == 0 || strcasecmp(t, "inf") == 0)
		*v = INFINITY;
	else if (strcasecmp(t, "-inf") == 0)
		*v = -INFINITY;
	else {
		errno = 0;
		*v = strtod(t, &end);
		if (end == t || *end != '\0' || (errno == ERANGE &&
		    fabs(*v) > 1)) 
			return -1;
	}
	return 0;
}

static int
sample(struct parser *p, char *s, size_t line, prom_fn fn, void *ctx)
{
	struct prom_sample smp = { .line = line };
	char *name, *end, *t, *e;
	struct family *f;
	long long ts;

	if ((name = take_name(&s, true)) == NULL)
		return fail(p, "expected a metric name");
	end = s;
	skip_blank(&s);
	p->nlab = 0;
	if (*s == '{' && labels(p, &s) != 0)
		return -1;
	if (end == s && *s != '\0' && *s != ' ' && *s != '\t')
		return fail(p, "invalid character after the metric name");
	if (*end == '{' || end != s)
		*end = '\0';
	if ((t = token(&s)) == NULL)
		return fail(p, "sample without a value");
	if (parse_value(t, &smp.value) != 0)
		return fail(p, "invalid sample value");
	if ((t = token(&s)) != NULL) {
		errno = 0;
		ts = strtoll(t, &e, 10);
		if (e == t || *e != '\0' || errno == ERANGE)
			return fail(p, "invalid timestamp (integer milliseconds)");
		smp.has_ts = true;
		smp.ts_ms = ts;
		if (token(&s) != NULL)
			return fail(p, "unexpected text after the timestamp");
	}
	if ((f = family_of(p, name)) == NULL)
		return fail(p, "out of memory");
	f->has_samples = true;
	smp.name = name;
	smp.family = f->name;
	smp.type = f->type ? f->type : "untyped";
	smp.help = f->help;
	smp.labels = p->lab;
	smp.nlabels = p->nlab;
	return fn(&smp, ctx);
}

static void
parser_free(struct parser *p)
{
	size_t i;

	for (i = 0; i < p->nfam; i++) {
		free(p->fam[i].name);
		free(p->fam[i].help);
	}
	free(p->fam);
	free(p->ln);
}

int
prom_parse(const char *buf, size_t len, prom_fn fn, void *ctx, size_t *line,
    char *err, size_t errlen)
{
	struct parser p = { .err = err, .errlen = errlen };
	const char *nl, *end = buf + len;
	size_t n;
	char *s;
	int rc = 0;

	*line = 0;
	while (buf < end && rc == 0) {
		++*line;
		nl = memchr(buf, '\n', (size_t)(end - buf));
		n = (size_t)((nl ? nl : end) - buf);
		if (n + 1 > p.lncap) {
			free(p.ln);
			p.lncap = n + 1;
			if ((p.ln = malloc(p.lncap)) == NULL) {
				rc = fail(&p, "out of memory");
				break;
			}
		}
		memcpy(p.ln, buf, n);
		p.ln[n] = '\0';
		buf += n + (nl != NULL);
		if (memchr(p.ln, '\0', n) != NULL)
			rc = fail(&p, "NUL byte in the input");
		else if (!prom_utf8_ok(p.ln, n))
			rc = fail(&p, "invalid UTF-8");
		if (rc != 0)
			break;
		if (n > 0 && p.ln[n - 1] == '\r')
			p.ln[--n] = '\0';
		s = p.ln;
		skip_blank(&s);
		if (*s == '\0')
			continue;
		rc = *s == '#' ? comment(&p, s) : sample(&p, s, *line, fn, ctx);
	}
	parser_free(&p);
	return rc;
}
