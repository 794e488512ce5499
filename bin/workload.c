/* SPDX-License-Identifier: MIT */
/* workload: deterministic token workloads with block-aligned prefix hits. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "jsonl.h"
#include "opt.h"
#include "units.h"
#include "workload.h"

#define MAX_TOKENS (16u << 20)	/* 16M tokens per prompt */

struct opts {
	struct wl_opts wl;
	bool text;
	bool have_requests;
};

static noreturn void
usage(int status)
{
	fprintf(status ? stderr : stdout,
	    "usage: workload --requests N --tokens N [--hit-rate H] [--block N]\n"
	    "                [--seed S] [--vocab N] [--output-tokens N]\n"
	    "                [--rate R/s [--arrival poisson|gamma:B|constant]]\n"
	    "                [--prefixes K | --ring R [--probe]]\n"
	    "                [--format token-ids|text]\n");
	exit(status);
}


/* "2/s", "2", "120/min" as requests per second. */
static double
rate_arg(const char *s)
{
	char buf[64], err[128];
	double per = 1, v;
	char *slash;

	snprintf(buf, sizeof(buf), "%s", s);
	if ((slash = strchr(buf, '/')) != NULL) {
		if (strcmp(slash, "/s") == 0)
			per = 1;
		else if (strcmp(slash, "/min") == 0)
			per = 60;
		else if (strcmp(slash, "/h") == 0)
			per = 3600;
		else
			kv_die(KV_USAGE, "--rate: unknown unit '%s' (/s, /min "
			    "or /h)", slash);
		*slash = '\0';
	}
	if (kv_parse_real(buf, 1e-9, 1e9, &v, err, sizeof(err)) != 0)
		kv_die(KV_USAGE, "--rate: %s", err);
	return v / per;
}

static void
parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"requests", required_argument, NULL, 'n'},
		{"tokens", required_argument, NULL, 't'},
		{"hit-rate", required_argument, NULL, 'h'},
		{"block", required_argument, NULL, 'b'},
		{"seed", required_argument, NULL, 's'},
		{"vocab", required_argument, NULL, 'V'},
		{"output-tokens", required_argument, NULL, 'o'},
		{"rate", required_argument, NULL, 'r'},
		{"arrival", required_argument, NULL, 'a'},
		{"prefixes", required_argument, NULL, 'k'},
		{"ring", required_argument, NULL, 'R'},
		{"probe", no_argument, NULL, 'p'},
		{"format", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'H'},
		{"version", no_argument, NULL, 'v'},
		{NULL, 0, NULL, 0}
	};
	char err[160];
	const char *arrival = NULL;
	long long seed;
	int c;

	memset(o, 0, sizeof(*o));
	o->wl.block = 16;
	o->wl.vocab = 32000;
	o->wl.output_tokens = 64;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'n': o->wl.requests = kv_opt_count("--requests", optarg,
		    0, UINT64_C(1) << 40); o->have_requests = true; break;
		case 't': o->wl.tokens = kv_opt_count("--tokens", optarg, 0,
		    MAX_TOKENS); break;
		case 'b': o->wl.block = kv_opt_count("--block", optarg, 0,
		    1u << 20);
			break;
		case 'V': o->wl.vocab = kv_opt_count("--vocab", optarg, 0,
		    UINT32_MAX); break;
		case 'o': o->wl.output_tokens = kv_opt_count("--output-tokens",
		    optarg, 0, MAX_TOKENS); break;
		case 'k': o->wl.prefixes = kv_opt_count("--prefixes", optarg,
		    0, UINT64_C(1) << 40); break;
		case 'R': o->wl.ring = kv_opt_count("--ring", optarg, 0,
		    UINT64_C(1) << 40); break;
		case 'p': o->wl.probe = true; break;
		case 'r': o->wl.rate = rate_arg(optarg); break;
		case 'a': arrival = optarg; break;
		case 'h':
			if (kv_parse_real(optarg, 0, 1, &o->wl.hit_rate, err,
			    sizeof(err)) != 0)
				kv_die(KV_USAGE, "--hit-rate: %s", err);
			break;
		case 's':
			if (kv_parse_int(optarg, 0, INT64_MAX, &seed, err,
			    sizeof(err)) != 0)
				kv_die(KV_USAGE, "--seed: %s", err);
			o->wl.seed = (uint64_t)seed;
			break;
		case 'f':
			if (strcmp(optarg, "text") == 0)
				o->text = true;
			else if (strcmp(optarg, "token-ids") != 0)
				kv_die(KV_USAGE, "--format: '%s' is neither "
				    "token-ids nor text", optarg);
			break;
		case 'H': usage(0);
		case 'v': kv_version();
		default: usage(KV_USAGE);
		}
	}
	if (optind != argc)
		usage(KV_USAGE);
	if (arrival && wl_parse_arrival(arrival, &o->wl, err, sizeof(err)))
		kv_die(KV_USAGE, "--arrival: %s", err);
	if (o->wl.rate > 0 && !arrival)
		o->wl.arrival = WL_POISSON;
	if (o->have_requests && o->wl.requests == 0)
		kv_die(KV_USAGE, "--requests must be at least 1");
	if (wl_check(&o->wl, err, sizeof(err)) != 0)
		kv_die(KV_USAGE, "%s", err);
}

/*
 * The request record, built once and refilled for each request so the
 * N prompt integers are allocated once: fields in a fixed order (jansson
 * keeps insertion order and replaces values in place), written by
 * jsonl_write.
 */
struct out {
	json_t *rec, *prompt;	/* prompt: token-id array, or NULL (text) */
	json_t **elem;		/* prompt's integers, for json_integer_set */
	char *text;		/* "t<id> t<id> ...", for --format text */
};

static void
out_init(struct out *w, const struct opts *o)
{
	uint64_t i;

	memset(w, 0, sizeof(*w));
	if ((w->rec = json_object()) == NULL ||
	    jset_str(w->rec, "kind", "request") != 0 ||
	    jset_u64(w->rec, "id", 0) != 0 ||
	    jset_u64(w->rec, "arrival_s", 0) != 0)
		kv_die(KV_SOFTWARE, "out of memory");
	if (o->text) {
		/* at most 10 digits, a 't' and a space per token */
		if ((w->text = malloc(o->wl.tokens * 12 + 1)) == NULL)
			kv_die(KV_SOFTWARE, "out of memory:");
		if (jset_str(w->rec, "prompt", "") != 0)
			kv_die(KV_SOFTWARE, "out of memory");
	} else {
		if ((w->prompt = json_array()) == NULL ||
		    json_object_set(w->rec, "prompt", w->prompt) != 0)
			kv_die(KV_SOFTWARE, "out of memory");
		if ((w->elem = calloc(o->wl.tokens, sizeof(*w->elem))) ==
		    NULL)
			kv_die(KV_SOFTWARE, "out of memory:");
		for (i = 0; i < o->wl.tokens; i++)
			if ((w->elem[i] = json_integer(0)) == NULL ||
			    json_array_append_new(w->prompt, w->elem[i]) != 0)
				kv_die(KV_SOFTWARE, "out of memory");
	}
	if (jset_u64(w->rec, "tokens", o->wl.tokens) != 0 ||
	    jset_null(w->rec, "prefix_id") != 0 ||
	    jset_u64(w->rec, "expected_hit_tokens", 0) != 0 ||
	    jset_u64(w->rec, "max_tokens", o->wl.output_tokens) != 0)
		kv_die(KV_SOFTWARE, "out of memory");
}

static void
out_free(struct out *w)
{
	json_decref(w->prompt);
	json_decref(w->rec);
	free(w->elem);
	free(w->text);
}

/* Set the prompt field to the n tokens in tok. */
static int
set_prompt(struct out *w, const uint32_t *tok, uint64_t n)
{
	uint64_t i;
	char *p;

	if (w->prompt) {
		for (i = 0; i < n; i++)
			json_integer_set(w->elem[i], tok[i]);
		return 0;
	}
	p = w->text;
	for (i = 0; i < n; i++)
		p += sprintf(p, i ? " t%" PRIu32 : "t%" PRIu32, tok[i]);
	return json_object_set_new(w->rec, "prompt",
	    json_stringn_nocheck(w->text, (size_t)(p - w->text)));
}

/*
 * One request record.  arrival_s keeps the microsecond rounding of the
 * schedule: it is the double nearest its %.6f text, which jansson then
 * writes in full (or as an integer when whole).
 */
static int
put_request(FILE *out, struct out *w, const struct opts *o,
    const struct wl_req *r, const uint32_t *tok)
{
	char t[64];
	json_t *rec = w->rec;

	snprintf(t, sizeof(t), "%.6f", r->arrival_s);
	if (jset_u64(rec, "id", r->id) != 0 ||
	    jset_num(rec, "arrival_s", strtod(t, NULL)) != 0 ||
	    set_prompt(w, tok, o->wl.tokens) != 0 ||
	    (r->has_prefix ? jset_u64(rec, "prefix_id", r->prefix_id) :
	    jset_null(rec, "prefix_id")) != 0 ||
	    jset_u64(rec, "expected_hit_tokens", r->expected_hit_tokens) != 0 ||
	    (r->probe ? jset_str(rec, "probe", r->probe) :
	    (json_object_del(rec, "probe"), 0)) != 0)
		kv_die(KV_SOFTWARE, "out of memory");
	return jsonl_write(out, rec, false);
}

int
main(int argc, char **argv)
{
	struct opts o;
	struct wl_gen g;
	struct wl_req r;
	struct out w;
	uint32_t *tok;

	kv_setprogname(argv[0]);
	parse(argc, argv, &o);
	if ((tok = calloc(o.wl.tokens, sizeof(*tok))) == NULL)
		kv_die(KV_SOFTWARE, "out of memory for %" PRIu64 " tokens:",
		    o.wl.tokens);
	out_init(&w, &o);
	wl_init(&g, &o.wl);
	while (wl_next(&g, &r, tok))
		if (put_request(stdout, &w, &o, &r, tok) != 0) {
			if (!ferror(stdout))
				kv_die(KV_SOFTWARE, "out of memory writing a "
				    "record");
			break;
		}
	out_free(&w);
	free(tok);
	return kv_fshut(KV_OK);
}
