/* SPDX-License-Identifier: MIT */
#ifndef KV_REDACT_H
#define KV_REDACT_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Redaction rules for environment snapshots (env-snapshot(1)).  Pure
 * functions: no I/O, so unit tests and fuzzers reach them.
 */

#define REDACTED "[REDACTED]"

/*
 * Does the variable name mark a secret?  The name is split into words at
 * '_', '-', '.', digits-to-letters and lower-to-upper case changes; a
 * word (case-insensitive) of TOKEN, SECRET, PASSWORD, PASSWD, KEY,
 * CREDENTIAL, AUTH, COOKIE, SESSION, PRIVATE, CERT (and their plurals and
 * a few joined forms such as APIKEY, ACCESSTOKEN) marks it.
 */
bool redact_name(const char *name);

/*
 * Does the name say it holds a digest: one of its words (split as for
 * redact_name, case-insensitive) is SHA, COMMIT, DIGEST, HASH, REV or
 * CHECKSUM?
 */
bool redact_digest_name(const char *name);

/*
 * Why the value of variable name is a hex secret, or NULL: the value
 * holds a word of 32 or more hex digits (with both digits and letters,
 * "0x" allowed before it) and the name is not a digest's
 * (redact_digest_name).
 */
const char *redact_hex_secret(const char *name, const char *value);

/* Why a value is a secret, or NULL when it does not look like one. */
const char *redact_value_shape(const char *value);

/*
 * If value holds URLs with a password (scheme://user:pass@host), return a
 * malloc'd copy with each password replaced by [REDACTED]; else NULL.
 */
char *redact_url_passwords(const char *value);

/* Shannon entropy of s[0..len) in bits per character. */
double redact_entropy(const char *s, size_t len);

#endif
