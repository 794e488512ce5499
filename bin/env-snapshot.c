/* SPDX-License-Identifier: MIT */
/* env-snapshot: a redacted snapshot of an environment, as one record. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "file.h"
#include "jsonl.h"
#include "redact.h"
#include "units.h"

extern char **environ;

struct options {
	const char *role;
	long long pid;		/* 0: our own environment */
	bool null_stdin;
	regex_t allow, deny;
	bool has_allow, has_deny;
};

/* One NAME=VALUE entry; pointers into the input buffer. */
struct var {
	char *name, *value;
};

static noreturn void usage(int status);

static int
cmp_var(const void *a, const void *b)
{
	return strcmp(((const struct var *)a)->name,
	    ((const struct var *)b)->name);
}

/* Read all of fd (a NUL-separated environment, at most 256 MiB). */
static char *
slurp(int fd, const char *what, size_t *len)
{
	char *buf = kv_read_all(fd, 256u << 20, len);

	if (buf == NULL && errno == EFBIG)
		kv_die(KV_DATAERR, "%s: environment over 256 MiB", what);
	if (buf == NULL && errno == ENOMEM)
		kv_die(KV_SOFTWARE, "out of memory");
	if (buf == NULL)
		kv_die(KV_IOERR, "reading %s:", what);
	return buf;
}

/* Split a NUL-separated buffer into entries (the buffer is kept). */
static size_t
split(char *buf, size_t len, char ***out)
{
	size_t n = 0;
	char **v;

	for (size_t i = 0; i < len; i++)
		if (buf[i] == '\0' || i == len - 1)
			n++;
	if ((v = calloc(n + 1, sizeof(*v))) == NULL)
		kv_die(KV_SOFTWARE, "out of memory");
	n = 0;
	for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
		v[n++] = buf + i;
	*out = v;
	return n;
}

static bool
utf8(const char *s)
{
	json_t *j = json_string(s);

	json_decref(j);
	return j != NULL;
}

/*
 * Decide and store one variable.  The value is never printed: messages
 * name the variable or the entry number only.
 */
static int
add(const struct options *o, json_t *vars, json_t *red, const struct var *v)
{
	const char *val = v->value;
	char *partial = NULL;
	bool hide = redact_name(v->name) ||
	    (o->has_deny && regexec(&o->deny, v->name, 0, NULL, 0) == 0) ||
	    !utf8(val) || redact_value_shape(val) != NULL ||
	    redact_hex_secret(v->name, val) != NULL;
	int rc;

	if (!hide && (partial = redact_url_passwords(val)) != NULL)
		val = partial;
	if (hide)
		val = REDACTED;
	rc = json_object_set_new(vars, v->name, json_string(val));
	if (rc == 0 && (hide || partial))
		rc = json_array_append_new(red, json_string(v->name));
	free(partial);
	return rc;
}

static int
snapshot(const struct options *o, char **entries, size_t n, const char *src)
{
	struct var *v = calloc(n + 1, sizeof(*v));
	json_t *rec, *vars = json_object(), *red = json_array();
	char host[256] = "", at[32];
	size_t nv = 0, omitted = 0;
	int status = KV_OK;

	if (v == NULL || vars == NULL || red == NULL)
		kv_die(KV_SOFTWARE, "out of memory");
	if (n == 0 && strcmp(src, "self") != 0) {
		kv_warn("%s: no entries", src);
		status = KV_DATAERR;
	}
	for (size_t i = 0; i < n; i++) {
		char *eq = strchr(entries[i], '=');

		if (eq == NULL || eq == entries[i]) {
			kv_warn("%s:%zu: entry %s; left out", src, i + 1,
			    eq ? "with an empty name" : "without '='");
			status = KV_DATAERR;
			continue;
		}
		*eq = '\0';
		if (!utf8(entries[i])) {
			kv_warn("%s:%zu: name is not valid UTF-8; left out", src,
			    i + 1);
			status = KV_DATAERR;
			continue;
		}
		if (redact_value_shape(entries[i]) != NULL) {
			kv_warn("%s:%zu: name looks like a secret; left out", src,
			    i + 1);
			status = KV_DATAERR;
			continue;
		}
		if (o->has_allow && regexec(&o->allow, entries[i], 0, NULL, 0)) {
			omitted++;
			continue;
		}
		v[nv++] = (struct var){ entries[i], eq + 1 };
	}
	qsort(v, nv, sizeof(*v), cmp_var);
	for (size_t i = 0; i < nv; i++) {
		if (i > 0 && strcmp(v[i].name, v[i - 1].name) == 0) {
			kv_warn("%s: %s appears again; the first is kept", src,
			    v[i].name);
			continue;
		}
		if (add(o, vars, red, &v[i]) < 0)
			kv_die(KV_SOFTWARE, "out of memory");
	}
	gethostname(host, sizeof(host) - 1);
	kv_rfc3339(kv_unix(), at);
	rec = json_pack("{s:s?, s:s, s:s, s:s, s:o, s:o, s:I}", "role", o->role,
	    "captured_at", at, "host", utf8(host) ? host : "?", "source", src,
	    "vars", vars, "redacted", red, "omitted", (json_int_t)omitted);
	if (rec && o->pid)
		json_object_set_new(rec, "pid", json_integer(o->pid));
	if (rec == NULL || jsonl_write(stdout, rec, true) < 0)
		kv_die(KV_IOERR, "write error on stdout:");
	json_decref(rec);
	free(v);
	return status;
}

static noreturn void
usage(int status)
{
	fprintf(status ? stderr : stdout,
	    "usage: env-snapshot [-0 | --pid PID] [--allow REGEX] "
	    "[--deny REGEX] [--role NAME]\n");
	if (status == 0)
		exit(kv_fshut(0));
	exit(status);
}

static void
compile(regex_t *re, const char *s, const char *opt)
{
	char err[256];
	int rc = regcomp(re, s, REG_EXTENDED | REG_NOSUB);

	if (rc != 0) {
		regerror(rc, re, err, sizeof(err));
		kv_die(KV_USAGE, "%s: %s", opt, err);
	}
}

static void
parse(int argc, char **argv, struct options *o)
{
	static const struct option lo[] = {
		{ "role", required_argument, NULL, 'r' },
		{ "pid", required_argument, NULL, 'p' },
		{ "null", no_argument, NULL, '0' },
		{ "allow", required_argument, NULL, 'a' },
		{ "deny", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	char err[256];
	int c;

	while ((c = getopt_long(argc, argv, "0", lo, NULL)) != -1) {
		switch (c) {
		case 'r': o->role = optarg; break;
		case 'p':
			if (kv_parse_int(optarg, 1, 0x7fffffff, &o->pid, err,
			    sizeof(err)) < 0)
				kv_die(KV_USAGE, "--pid: %s", err);
			break;
		case '0': o->null_stdin = true; break;
		case 'a':
			if (o->has_allow)
				regfree(&o->allow);
			compile(&o->allow, optarg, "--allow");
			o->has_allow = true;
			break;
		case 'd':
			if (o->has_deny)
				regfree(&o->deny);
			compile(&o->deny, optarg, "--deny");
			o->has_deny = true;
			break;
		case 'h': usage(0);
		case 'V': kv_version();
		default: usage(KV_USAGE);
		}
	}
	if (optind != argc)
		kv_die(KV_USAGE, "unexpected argument '%s'", argv[optind]);
	if (o->pid && o->null_stdin)
		kv_die(KV_USAGE, "--pid and -0 exclude each other");
	if (o->role && !utf8(o->role))
		kv_die(KV_USAGE, "--role is not valid UTF-8");
}

int
main(int argc, char **argv)
{
	struct options o = { 0 };
	char *buf = NULL, **entries = NULL, path[64];
	size_t len, n;
	int rc, fd;

	kv_setprogname(argv[0]);
	parse(argc, argv, &o);
	if (o.null_stdin) {
		buf = slurp(STDIN_FILENO, "stdin", &len);
		n = split(buf, len, &entries);
		rc = snapshot(&o, entries, n, "stdin");
	} else if (o.pid) {
		snprintf(path, sizeof(path), "/proc/%lld/environ", o.pid);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			kv_die(errno == ENOENT ? KV_UNAVAILABLE : KV_IOERR,
			    "--pid %lld: cannot read its environment:", o.pid);
		buf = slurp(fd, path, &len);
		close(fd);
		n = split(buf, len, &entries);
		rc = snapshot(&o, entries, n, "pid");
	} else {
		for (n = 0; environ[n]; n++)
			;
		if ((entries = calloc(n + 1, sizeof(*entries))) == NULL)
			kv_die(KV_SOFTWARE, "out of memory");
		for (size_t i = 0; i < n; i++)
			if ((entries[i] = strdup(environ[i])) == NULL)
				kv_die(KV_SOFTWARE, "out of memory");
		rc = snapshot(&o, entries, n, "self");
		for (size_t i = 0; i < n; i++)
			free(entries[i]);
	}
	free(entries);
	free(buf);
	if (o.has_allow)
		regfree(&o.allow);
	if (o.has_deny)
		regfree(&o.deny);
	return kv_fshut(rc);
}
