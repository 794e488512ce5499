/* SPDX-License-Identifier: MIT */
/*
 * counter-snap: one record per counter from Prometheus endpoints, RDMA
 * ports and network interfaces; --diff turns two snapshots into deltas.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "clock.h"
#include "ctrsnap.h"
#include "err.h"
#include "jsonl.h"
#include "promtext.h"
#include "units.h"

#define MAX_BODY (64u << 20)

static const char synopsis[] =
    "usage: counter-snap [--label KEY=VALUE]... [--sysfs-root DIR]\n"
    "                    [--timeout DURATION] SOURCE...\n"
    "       counter-snap --diff [--strict] BEFORE AFTER\n";

struct opts {
	json_t *labels;		/* --label pairs added to every record */
	const char *root;
	double timeout_s;
	bool diff, strict;
};

/* What the record callbacks share. */
struct run {
	const struct opts *o;
	const char *source;
	double t;
	int status;
};

static void
usage(void)
{
	fputs(synopsis, stderr);
	exit(KV_USAGE);
}

/* An error record naming the source, the message on stderr. */
static void
source_error(struct run *r, const char *source, const char *msg, int status)
{
	json_t *rec = json_object();

	jset_str(rec, "kind", "error");
	jset_str(rec, "source", source);
	jset_str(rec, "error", msg);
	if (jsonl_write(stdout, rec, false) != 0)
		status = KV_IOERR;
	json_decref(rec);
	kv_warn("%s: %s", source, msg);
	if (r->status == KV_OK || status == KV_IOERR)
		r->status = status;
}

/* Add the --label pairs and write the record (consumed). */
static int
emit(json_t *rec, void *ctx)
{
	struct run *r = ctx;
	json_t *l = json_object_get(rec, "labels");
	int bad;

	if (l && json_object_size(r->o->labels))
		json_object_update(l, r->o->labels);
	bad = jsonl_write(stdout, rec, false) != 0;
	json_decref(rec);
	if (bad)
		r->status = KV_IOERR;
	return bad;
}

static int
on_sample(const struct prom_sample *s, void *ctx)
{
	struct run *r = ctx;
	json_t *rec = ctr_from_prom(r->source, s, r->t);

	return rec ? emit(rec, r) : -2;
}

struct body {
	char *p;
	size_t len;
};

static size_t
on_data(char *p, size_t size, size_t n, void *ctx)
{
	struct body *b = ctx;
	size_t add = size * n;
	char *q;

	if (b->len + add > MAX_BODY || (q = realloc(b->p, b->len + add + 1))
	    == NULL)
		return 0;
	memcpy(q + b->len, p, add);
	b->p = q;
	b->len += add;
	return add;
}

/* Scrape url and print a record per sample. */
static void
scrape(struct run *r, CURL *c, const char *source, const char *url)
{
	struct body b = { NULL, 0 };
	char err[CURL_ERROR_SIZE + 64] = "", perr[200];
	long code = 0;
	size_t line;
	CURLcode rc;

	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https,file");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
	    (long)(r->o->timeout_s * 1000));
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(r->o->timeout_s * 1000));
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "counter-snap (kvgate)");
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (rc != CURLE_OK) {
		if (err[0] == '\0')
			snprintf(err, sizeof(err), "%s", curl_easy_strerror(rc));
		source_error(r, source, err, KV_UNAVAILABLE);
	} else if (code != 0 && code != 200) {
		snprintf(err, sizeof(err), "HTTP status %ld (expected 200)",
		    code);
		source_error(r, source, err, KV_UNAVAILABLE);
	} else {
		r->source = source;
		r->t = kv_unix();
		if (prom_parse(b.p ? b.p : "", b.len, on_sample, r, &line,
		    perr, sizeof(perr)) == -1) {
			snprintf(err, sizeof(err), "line %zu: %s", line, perr);
			source_error(r, source, err, KV_DATAERR);
		}
	}
	free(b.p);
}

/* One SOURCE argument: prom:URL, ib:DEV[:PORT] or netdev:IFACE. */
static void
snapshot(struct run *r, CURL *c, const char *src)
{
	char err[4400], dev[256], *colon;
	bool missing = false;
	int rc;

	r->source = src;
	r->t = kv_unix();
	if (strncmp(src, "prom:", 5) == 0) {
		scrape(r, c, src, src + 5);
		return;
	}
	if (strncmp(src, "ib:", 3) == 0 && src[3] != '\0' &&
	    strlen(src + 3) < sizeof(dev)) {
		snprintf(dev, sizeof(dev), "%s", src + 3);
		if ((colon = strchr(dev, ':')) != NULL)
			*colon++ = '\0';
		rc = ctr_ib(r->o->root, dev, colon, r->t, emit, r, &missing,
		    err, sizeof(err));
	} else if (strncmp(src, "netdev:", 7) == 0 && src[7] != '\0') {
		rc = ctr_netdev(r->o->root, src + 7, r->t, emit, r, &missing,
		    err, sizeof(err));
	} else {
		source_error(r, src, "unknown source (prom:URL, ib:DEVICE"
		    "[:PORT] or netdev:IFACE)", KV_USAGE);
		return;
	}
	if (rc < 0)
		source_error(r, src, err, missing ? KV_UNAVAILABLE : KV_IOERR);
}

/* Read a whole snapshot into key -> record; bad lines are error records. */
static int
load(const char *path, json_t *map, json_t *order, const struct opts *o)
{
	FILE *fp = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	const char *name = fp == stdin ? "stdin" : path;
	struct jsonl_reader rd;
	enum jsonl_status st;
	json_t *rec;
	char err[256] = "", *key;
	int status = KV_OK;
	size_t nread = 0;

	if (fp == NULL)
		kv_die(KV_IOERR, "%s:", path);
	jsonl_init(&rd, fp, name, 0);
	while ((st = jsonl_next(&rd, &rec)) != JSONL_EOF) {
		nread++;
		key = NULL;
		err[0] = '\0';
		if (st == JSONL_OK && json_is_string(json_object_get(rec,
		    "kind")) && strcmp(json_string_value(json_object_get(rec,
		    "kind")), "counter") != 0) {
			snprintf(err, sizeof(err), "not a counter record "
			    "(kind %s)", json_string_value(json_object_get(rec,
			    "kind")));
		} else if (st == JSONL_OK) {
			/* a value and a time the delta can use, or an error now */
			json_t *probe = ctr_delta(NULL, rec, err, sizeof(err));

			if (probe != NULL)
				key = ctr_key(rec, err, sizeof(err));
			json_decref(probe);
		}
		if (st == JSONL_OK && key) {
			if (order)
				json_array_append(order, rec);
			json_object_set(map, key, rec);
		} else {
			jsonl_error(stdout, name, rd.lineno, st == JSONL_BAD ?
			    rd.err : err);
			status = KV_DATAERR;
		}
		free(key);
		json_decref(rec);
		if (status != KV_OK && o->strict)
			break;
	}
	if (ferror(fp))
		status = KV_IOERR;
	else if (nread == 0) {
		jsonl_error(stdout, name, 0, "empty snapshot (no counter "
		    "records)");
		status = KV_DATAERR;
	}
	jsonl_free(&rd);
	if (fp != stdin)
		fclose(fp);
	return status;
}

/* --diff: a delta record per counter in AFTER's order, then BEFORE's rest. */
static int
diff(const char *bpath, const char *apath, const struct opts *o)
{
	json_t *before = json_object(), *after = json_object(), *order =
	    json_array(), *rec, *b, *d;
	char err[256] = "", *key;
	const char *k;
	size_t i;
	int status, s2;

	status = load(bpath, before, NULL, o);
	if (status != KV_OK && o->strict)
		goto out;
	s2 = load(apath, after, order, o);
	if (s2 != KV_OK)
		status = s2;
	if (status != KV_OK && o->strict)
		goto out;
	json_array_foreach(order, i, rec) {
		key = ctr_key(rec, err, sizeof(err));
		b = key ? json_object_get(before, key) : NULL;
		d = ctr_delta(b, rec, err, sizeof(err));
		if (d == NULL || jsonl_write(stdout, d, false) != 0)
			status = d ? KV_IOERR : KV_DATAERR;
		json_decref(d);
		if (b)
			json_object_del(before, key);
		free(key);
	}
	json_object_foreach(before, k, b) {
		d = ctr_delta(b, NULL, err, sizeof(err));
		if (d == NULL || jsonl_write(stdout, d, false) != 0)
			status = d ? KV_IOERR : KV_DATAERR;
		json_decref(d);
	}
out:
	json_decref(before);
	json_decref(after);
	json_decref(order);
	return status;
}

static void
add_label(struct opts *o, const char *arg)
{
	const char *eq = strchr(arg, '=');
	char key[256];

	if (eq == NULL || eq == arg || (size_t)(eq - arg) >= sizeof(key)) {
		kv_warn("--label: expected KEY=VALUE, got '%s'", arg);
		usage();
	}
	memcpy(key, arg, (size_t)(eq - arg));
	key[eq - arg] = '\0';
	if (jset_str(o->labels, key, eq + 1) != 0) {
		kv_warn("--label: '%s' is not valid UTF-8", arg);
		usage();
	}
}

int
main(int argc, char *argv[])
{
	enum { O_LABEL = 256, O_ROOT, O_TIMEOUT, O_DIFF, O_STRICT, O_HELP,
	    O_VERSION };
	static const struct option lo[] = {
		{ "label", required_argument, NULL, O_LABEL },
		{ "sysfs-root", required_argument, NULL, O_ROOT },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "diff", no_argument, NULL, O_DIFF },
		{ "strict", no_argument, NULL, O_STRICT },
		{ "help", no_argument, NULL, O_HELP },
		{ "version", no_argument, NULL, O_VERSION },
		{ NULL, 0, NULL, 0 }
	};
	/* static: reachable until exit, whichever way main leaves */
	static struct opts o = { .root = "/sys", .timeout_s = 10 };
	struct run r = { .o = &o };
	char err[128];
	CURL *c;
	int ch, i;

	kv_setprogname(argv[0]);
	o.labels = json_object();
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case O_LABEL: add_label(&o, optarg); break;
		case O_ROOT: o.root = optarg; break;
		case O_TIMEOUT:
			if (kv_parse_duration(optarg, &o.timeout_s, err,
			    sizeof(err)) != 0 || o.timeout_s < 0.001) {
				kv_warn("--timeout: %s", o.timeout_s < 0.001 ?
				    "must be at least 1ms" : err);
				usage();
			}
			break;
		case O_DIFF: o.diff = true; break;
		case O_STRICT: o.strict = true; break;
		case O_HELP:
			fputs(synopsis, stdout);
			return kv_fshut(KV_OK);
		case O_VERSION: kv_version();
		default: usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (o.diff && argc != 2) {
		kv_warn("--diff needs exactly two snapshots, BEFORE and AFTER");
		usage();
	}
	if (o.diff && (json_object_size(o.labels) || strcmp(o.root, "/sys"))) {
		kv_warn("--label and --sysfs-root apply to snapshots, not --diff");
		usage();
	}
	if (!o.diff && o.strict) {
		kv_warn("--strict applies to --diff only");
		usage();
	}
	if (!o.diff && argc == 0) {
		kv_warn("no SOURCE given (prom:URL, ib:DEVICE[:PORT], "
		    "netdev:IFACE)");
		usage();
	}
	for (i = 0; !o.diff && i < argc; i++)
		if (strncmp(argv[i], "prom:", 5) && strncmp(argv[i], "ib:", 3)
		    && strncmp(argv[i], "netdev:", 7)) {
			kv_warn("unknown source '%s' (prom:URL, ib:DEVICE[:PORT]"
			    " or netdev:IFACE)", argv[i]);
			usage();
		}
	if (o.diff) {
		r.status = diff(argv[0], argv[1], &o);
		json_decref(o.labels);
		return kv_fshut(r.status);
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0 ||
	    (c = curl_easy_init()) == NULL)
		kv_die(KV_SOFTWARE, "cannot initialise libcurl");
	for (i = 0; i < argc && r.status != KV_IOERR; i++)
		snapshot(&r, c, argv[i]);
	curl_easy_cleanup(c);
	curl_global_cleanup();
	json_decref(o.labels);
	return kv_fshut(r.status);
}
