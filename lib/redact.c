/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "redact.h"

static const char *const secret_words[] = {
	"TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWORDS",
	"PASSWD", "PASS", "PASSPHRASE", "KEY", "KEYS", "CREDENTIAL",
	"CREDENTIALS", "CREDS", "AUTH", "COOKIE", "COOKIES", "SESSION",
	"SESSIONS", "PRIVATE", "CERT", "CERTS", "APIKEY", "ACCESSKEY",
	"SECRETKEY", "PRIVATEKEY", "AUTHTOKEN", "ACCESSTOKEN", "DSN", NULL
};

/* Words that say a variable holds a digest, not a secret. */
static const char *const digest_words[] = {
	"SHA", "COMMIT", "DIGEST", "HASH", "REV", "CHECKSUM", NULL
};

static bool
in_words(const char *const *words, const char *w, size_t n)
{
	for (const char *const *s = words; *s; s++)
		if (strlen(*s) == n && strncasecmp(w, *s, n) == 0)
			return true;
	return false;
}

/* Does a new word start at name[i] (i > 0)? */
static bool
boundary(const char *name, size_t i)
{
	unsigned char p = (unsigned char)name[i - 1], c = (unsigned char)name[i],
	    n = (unsigned char)name[i + 1];

	if (!isalnum(p) || !isalnum(c))
		return true;
	if (isdigit(p) != isdigit(c))
		return true;
	if (islower(p) && isupper(c))
		return true;	/* apiKey */
	return isupper(p) && isupper(c) && islower(n);	/* HFToken */
}

/* Is one of the name's words (see redact_name) in words? */
static bool
has_word(const char *name, const char *const *words)
{
	size_t start = 0, len = strlen(name);

	for (size_t i = 1; i <= len; i++) {
		if (i < len && !boundary(name, i))
			continue;
		if (isalnum((unsigned char)name[start]) &&
		    in_words(words, name + start, i - start))
			return true;
		start = i;
		while (start < len && !isalnum((unsigned char)name[start]))
			start++;
		i = start;
	}
	return false;
}

bool
redact_name(const char *name)
{
	return has_word(name, secret_words);
}

bool
redact_digest_name(const char *name)
{
	return has_word(name, digest_words);
}

/* Is s[0..) a whole word (optionally 0x-prefixed) of 32+ hex digits with
 * both digits and letters? */
static bool
hex_word(const char *s)
{
	size_t n = 0;
	bool dg = false, al = false;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; isxdigit((unsigned char)s[n]); n++) {
		dg |= isdigit((unsigned char)s[n]) != 0;
		al |= isalpha((unsigned char)s[n]) != 0;
	}
	return n >= 32 && dg && al && !isalnum((unsigned char)s[n]);
}

const char *
redact_hex_secret(const char *name, const char *value)
{
	if (redact_digest_name(name))
		return NULL;
	for (size_t i = 0; value[i]; i++)
		if ((i == 0 || !isalnum((unsigned char)value[i - 1])) &&
		    hex_word(value + i))
			return "long hex string";
	return NULL;
}

static size_t
span(const char *s, const char *set_extra)
{
	size_t n = 0;

	while (s[n] && (isalnum((unsigned char)s[n]) ||
	    (set_extra && strchr(set_extra, s[n]))))
		n++;
	return n;
}

static bool
all_upper_digit(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isupper((unsigned char)s[i]) && !isdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* Known token prefixes: the prefix, the characters after it, how many. */
static const struct {
	const char *prefix, *extra, *why;
	size_t min;
} shapes[] = {
	{ "hf_", NULL, "Hugging Face token", 20 },
	{ "sk-", "-_", "API secret key (sk-)", 20 },
	{ "sk_live_", NULL, "Stripe secret key", 16 },
	{ "rk_live_", NULL, "Stripe restricted key", 16 },
	{ "ghp_", NULL, "GitHub token", 30 },
	{ "gho_", NULL, "GitHub token", 30 },
	{ "ghu_", NULL, "GitHub token", 30 },
	{ "ghs_", NULL, "GitHub token", 30 },
	{ "ghr_", NULL, "GitHub token", 30 },
	{ "github_pat_", "_", "GitHub fine-grained token", 20 },
	{ "glpat-", "-_", "GitLab token", 20 },
	{ "xoxb-", "-", "Slack token", 10 },
	{ "xoxp-", "-", "Slack token", 10 },
	{ "xoxa-", "-", "Slack token", 10 },
	{ "xoxs-", "-", "Slack token", 10 },
	{ "xoxr-", "-", "Slack token", 10 },
	{ "npm_", NULL, "npm token", 30 },
	{ "AIza", "-_", "Google API key", 30 },
	{ "SG.", "-_.", "SendGrid key", 40 },
};

static bool
jwt_at(const char *s)
{
	size_t a, b, c;

	if (strncmp(s, "eyJ", 3) != 0)
		return false;
	a = span(s, "-_");
	if (s[a] != '.' || strncmp(s + a + 1, "eyJ", 3) != 0)
		return false;
	b = span(s + a + 1, "-_");
	if (s[a + 1 + b] != '.')
		return false;
	c = span(s + a + 2 + b, "-_");
	return a >= 10 && b >= 10 && c >= 10;
}

double
redact_entropy(const char *s, size_t len)
{
	size_t count[256] = { 0 };
	double h = 0;

	if (len == 0)
		return 0;
	for (size_t i = 0; i < len; i++)
		count[(unsigned char)s[i]]++;
	for (int c = 0; c < 256; c++) {
		if (count[c]) {
			double p = (double)count[c] / (double)len;

			h -= p * log2(p);
		}
	}
	return h;
}

static int
char_class(unsigned char c)
{
	return isupper(c) ? 0 : islower(c) ? 1 : isdigit(c) ? 2 : 3;
}

/*
 * A long random-looking run: at least 24 characters with digits, and
 * upper and lower case letters beyond the hex digits (so hex digests and
 * UUIDs, even "GPU-" prefixed, are not taken for secrets), an entropy of
 * at least 4 bits per character, and the character class changing at
 * 40 % or more of the steps (random base62 changes at 62 %, CamelCase
 * words at about 20 %).
 */
static bool
high_entropy(const char *s, size_t n)
{
	bool up = false, lo = false, dg = false;
	size_t changes = 0;

	if (n < 24)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		up |= isupper(c) && c > 'F';
		lo |= islower(c) && c > 'f';
		dg |= isdigit(c) != 0;
		if (i > 0 && char_class(c) != char_class((unsigned char)s[i - 1]))
			changes++;
	}
	return up && lo && dg && 10 * changes >= 4 * (n - 1) &&
	    redact_entropy(s, n) >= 4.0;
}

/* The run itself (unless it starts like a path) or one of its '/' parts. */
static bool
high_entropy_run(const char *s, size_t n)
{
	size_t i = 0;

	if (s[0] != '/' && high_entropy(s, n))
		return true;
	while (i < n) {
		size_t j = i;

		while (j < n && s[j] != '/')
			j++;
		if (high_entropy(s + i, j - i))
			return true;
		i = j + 1;
	}
	return false;
}

const char *
redact_value_shape(const char *v)
{
	if (strstr(v, "-----BEGIN ") != NULL)
		return "PEM block";
	for (size_t i = 0, run_end = 0; v[i]; i++) {
		const char *s = v + i;
		size_t run;

		if (i > 0 && isalnum((unsigned char)v[i - 1]))
			continue;
		for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
			size_t pl = strlen(shapes[k].prefix);

			if (strncmp(s, shapes[k].prefix, pl) == 0 &&
			    span(s + pl, shapes[k].extra) >= shapes[k].min)
				return shapes[k].why;
		}
		if ((strncmp(s, "AKIA", 4) == 0 || strncmp(s, "ASIA", 4) == 0) &&
		    span(s, NULL) >= 20 && all_upper_digit(s, 20))
			return "AWS access key id";
		if (jwt_at(s))
			return "JSON web token";
		if ((strncasecmp(s, "Bearer ", 7) == 0 ||
		    strncasecmp(s, "Basic ", 6) == 0) &&
		    span(s + (s[1] == 'e' || s[1] == 'E' ? 7 : 6), "+/=-_.~") >= 12)
			return "Authorization credentials";
		if (i < run_end)
			continue;	/* inside a run already judged */
		run = span(s, "+/=_-");
		if (high_entropy_run(s, run))
			return "long high-entropy string";
		run_end = i + run;
	}
	return NULL;
}

/*
 * In each "scheme://" the userinfo runs to the last '@' before the end of
 * the word (white space or a quote), so a password holding '@', '/' or
 * '#' is still hidden whole; erring this way hides a little more than the
 * password, never less.
 */
char *
redact_url_passwords(const char *v)
{
	size_t len = strlen(v), o = 0;
	char *out = malloc(len + 1 + 16 * (len / 4 + 1));
	bool changed = false;
	const char *p = v;

	if (out == NULL)
		return NULL;
	while (*p) {
		const char *sch = strstr(p, "://"), *auth, *end, *at = NULL,
		    *colon;

		if (sch == NULL)
			break;
		auth = sch + 3;
		for (end = auth; *end && !strchr(" \t\r\n\"'<>", *end); end++)
			if (*end == '@')
				at = end;
		colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
		if (colon && memchr(auth, '/', (size_t)(colon - auth)))
			colon = NULL;	/* "host/path:x@y": no userinfo */
		if (colon && colon + 1 < at) {
			memcpy(out + o, p, (size_t)(colon + 1 - p));
			o += (size_t)(colon + 1 - p);
			memcpy(out + o, REDACTED, strlen(REDACTED));
			o += strlen(REDACTED);
			p = at;
			changed = true;
		} else {
			memcpy(out + o, p, (size_t)(auth - p));
			o += (size_t)(auth - p);
			p = auth;
		}
	}
	memcpy(out + o, p, strlen(p) + 1);
	if (!changed) {
		free(out);
		return NULL;
	}
	return out;
}
