/* SPDX-License-Identifier: MIT */
/* bcrit: critical bandwidth for loading the KV cache instead of recomputing. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "jsonl.h"
#include "kvcfg.h"
#include "kvrec.h"
#include "units.h"

struct options {
	const char *config;
	const char *fit;
	bool strict;
	bool have_mfu;
	struct kvrec_opt ro;
};

static const struct option longopts[] = {
	{ "block", required_argument, NULL, 'b' },
	{ "bw", required_argument, NULL, 'w' },
	{ "config", required_argument, NULL, 'c' },
	{ "fit", required_argument, NULL, 'f' },
	{ "flops-per-s", required_argument, NULL, 'F' },
	{ "help", no_argument, NULL, 'h' },
	{ "kv-dtype", required_argument, NULL, 'd' },
	{ "mfu", required_argument, NULL, 'm' },
	{ "strict", no_argument, NULL, 's' },
	{ "t-lookup", required_argument, NULL, 'l' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 }
};

static void
synopsis(FILE *fp)
{
	fprintf(fp, "usage: %s [--strict] [--block N] [--bw NAME=BW ...] "
	    "[--config FILE] [--fit FILE]\n"
	    "             [--flops-per-s RATE] [--kv-dtype TYPE] [--mfu F] "
	    "[--t-lookup DURATION]\n"
	    "       %s --help | --version\n", kv_progname, kv_progname);
}

static noreturn void
usage(void)
{
	synopsis(stderr);
	exit(KV_USAGE);
}

static int
filter(json_t *rec, void *ctx, char *err, size_t errlen)
{
	return kvrec_bcrit(rec, ctx, err, errlen);
}

/* Add one --bw link, rejecting a repeated name. */
static void
add_link(struct kvrec_opt *ro, const char *arg)
{
	struct kvrec_link lk;
	char err[256];

	if (kvrec_parse_link(arg, &lk, err, sizeof(err)) != 0)
		kv_die(KV_USAGE, "--bw: %s", err);
	for (size_t i = 0; i < ro->nlinks; i++)
		if (strcmp(ro->links[i].name, lk.name) == 0)
			kv_die(KV_USAGE, "--bw: link '%s' given twice",
			    lk.name);
	if (ro->nlinks == KVREC_MAX_LINKS)
		kv_die(KV_USAGE, "--bw: at most %d links", KVREC_MAX_LINKS);
	ro->links[ro->nlinks++] = lk;
}

static void
parse_args(int argc, char *argv[], struct options *o)
{
	struct kvrec_opt *ro = &o->ro;
	char err[256];
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (kv_parse_count(optarg, &ro->block, err,
			    sizeof(err)) != 0)
				kv_die(KV_USAGE, "--block: %s", err);
			if (ro->block == 0 || ro->block > (1u << 24))
				kv_die(KV_USAGE, "--block: must be in "
				    "1..16777216 tokens");
			break;
		case 'w':
			add_link(ro, optarg);
			break;
		case 'c':
			o->config = optarg;
			break;
		case 'f':
			o->fit = optarg;
			break;
		case 'F':
			if (kv_parse_real(optarg, 1, 1e21, &ro->flops_per_s,
			    err, sizeof(err)) != 0)
				kv_die(KV_USAGE, "--flops-per-s: %s", err);
			break;
		case 'd':
			if (kvm_dtype_bytes(optarg) == 0)
				kv_die(KV_USAGE, "--kv-dtype: '%s' unknown (use "
				    "fp32, bf16, fp16, fp8 or int8)", optarg);
			ro->kv_dtype = optarg;
			break;
		case 'm':
			if (kv_parse_real(optarg, 1e-6, 1, &ro->mfu, err,
			    sizeof(err)) != 0)
				kv_die(KV_USAGE, "--mfu: %s", err);
			o->have_mfu = true;
			break;
		case 'l':
			if (kv_parse_duration(optarg, &ro->t_lookup, err,
			    sizeof(err)) != 0)
				kv_die(KV_USAGE, "--t-lookup: %s", err);
			break;
		case 's':
			o->strict = true;
			break;
		case 'h':
			synopsis(stdout);
			exit(kv_fshut(KV_OK));
		case 'V':
			kv_version();
		default:
			usage();
		}
	}
	if (optind != argc) {
		kv_warn("unexpected argument '%s'", argv[optind]);
		usage();
	}
	if (o->have_mfu && ro->flops_per_s == 0) {
		kv_warn("--mfu needs --flops-per-s");
		usage();
	}
	if (o->fit && ro->flops_per_s > 0) {
		kv_warn("--fit and --flops-per-s both give T(n): choose one");
		usage();
	}
}

int
main(int argc, char *argv[])
{
	struct options o = { .ro = { .block = 16, .mfu = 1 } };
	struct jsonl_filter jf = { 0 };
	struct kv_model model;
	char err[600];
	int rc;

	kv_setprogname(argv[0]);
	parse_args(argc, argv, &o);
	if (o.config) {
		if ((rc = kvcfg_load(o.config, o.ro.kv_dtype, &model, err,
		    sizeof(err))) != 0)
			kv_die(rc, "%s", err);
		o.ro.model = &model;
	}
	if (o.fit) {
		if ((rc = kvcfg_load_fit(o.fit, &o.ro.fit_a, &o.ro.fit_b,
		    &o.ro.fit_c, err, sizeof(err))) != 0)
			kv_die(rc, "--fit: %s", err);
		o.ro.have_fit = true;
	}
	jf.strict = o.strict;
	jf.flush = isatty(STDOUT_FILENO);
	rc = jsonl_filter(stdin, "stdin", stdout, filter, &o.ro, &jf, NULL);
	return kv_fshut(rc);
}
