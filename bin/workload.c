/* SPDX-License-Identifier: MIT */
/* workload: deterministic token workloads with block-aligned prefix hits. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
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

static uint64_t
count_arg(const char *name, const char *s, uint64_t max)
{
	char err[128];
	uint64_t v;

	if (kv_parse_count(s, &v, err, sizeof(err)) != 0)
		kv_die(KV_USAGE, "--%s: %s", name, err);
	if (v > max)
		kv_die(KV_USAGE, "--%s: %s exceeds the limit %" PRIu64, name,
		    s, max);
	return v;
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
		case 'n': o->wl.requests = count_arg("requests", optarg,
		    UINT64_C(1) << 40); o->have_requests = true; break;
		case 't': o->wl.tokens = count_arg("tokens", optarg,
		    MAX_TOKENS); break;
		case 'b': o->wl.block = count_arg("block", optarg, 1u << 20);
			break;
		case 'V': o->wl.vocab = count_arg("vocab", optarg,
		    UINT32_MAX); break;
		case 'o': o->wl.output_tokens = count_arg("output-tokens",
		    optarg, MAX_TOKENS); break;
		case 'k': o->wl.prefixes = count_arg("prefixes", optarg,
		    UINT64_C(1) << 40); break;
		case 'R': o->wl.ring = count_arg("ring", optarg,
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

static void
put_prompt(FILE *out, const uint32_t *tok, uint64_t n, bool text)
{
	uint64_t i;

	if (text) {
		putc('"', out);
		for (i = 0; i < n; i++)
			fprintf(out, i ? " t%" PRIu32 : "t%" PRIu32, tok[i]);
		putc('"', out);
		return;
	}
	putc('[', out);
	for (i = 0; i < n; i++)
		fprintf(out, i ? ",%" PRIu32 : "%" PRIu32, tok[i]);
	putc(']', out);
}

/* One request record, fields in a fixed order (byte-identical output). */
static int
put_request(FILE *out, const struct opts *o, const struct wl_req *r,
    const uint32_t *tok)
{
	fprintf(out, "{\"kind\":\"request\",\"id\":%" PRIu64
	    ",\"arrival_s\":%.6f,\"prompt\":", r->id, r->arrival_s);
	put_prompt(out, tok, o->wl.tokens, o->text);
	fprintf(out, ",\"tokens\":%" PRIu64 ",\"prefix_id\":", o->wl.tokens);
	if (r->has_prefix)
		fprintf(out, "%" PRIu64, r->prefix_id);
	else
		fputs("null", out);
	fprintf(out, ",\"expected_hit_tokens\":%" PRIu64 ",\"max_tokens\":%"
	    PRIu64, r->expected_hit_tokens, o->wl.output_tokens);
	if (r->probe)
		fprintf(out, ",\"probe\":\"%s\"", r->probe);
	fputs("}\n", out);
	return ferror(out) ? -1 : 0;
}

int
main(int argc, char **argv)
{
	struct opts o;
	struct wl_gen g;
	struct wl_req r;
	uint32_t *tok;

	kv_setprogname(argv[0]);
	parse(argc, argv, &o);
	if ((tok = calloc(o.wl.tokens, sizeof(*tok))) == NULL)
		kv_die(KV_SOFTWARE, "out of memory for %" PRIu64 " tokens:",
		    o.wl.tokens);
	wl_init(&g, &o.wl);
	while (wl_next(&g, &r, tok))
		if (put_request(stdout, &o, &r, tok) != 0)
			break;
	free(tok);
	return kv_fshut(KV_OK);
}
