/* SPDX-License-Identifier: MIT */
/* kv-bytes: KV-cache bytes and prefill FLOPs of a model, per record. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "err.h"
#include "jsonl.h"
#include "kvcfg.h"
#include "kvrec.h"
#include "units.h"

struct options {
	const char *config;
	const char *kv_dtype;
	uint64_t block;
	bool strict;
};

static const struct option longopts[] = {
	{ "block", required_argument, NULL, 'b' },
	{ "config", required_argument, NULL, 'c' },
	{ "help", no_argument, NULL, 'h' },
	{ "kv-dtype", required_argument, NULL, 'd' },
	{ "strict", no_argument, NULL, 's' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 }
};

static void
synopsis(FILE *fp)
{
	fprintf(fp, "usage: %s [--strict] [--block N] [--config FILE] "
	    "[--kv-dtype TYPE]\n       %s --help | --version\n", kv_progname,
	    kv_progname);
}

static noreturn void
usage(void)
{
	synopsis(stderr);
	exit(KV_USAGE);
}

/* The filter's context: the options, or the reason the config is unusable. */
struct ctx {
	const struct kvrec_opt *ro;
	const char *cfgerr;	/* set: every record is an error saying so */
};

static int
filter(json_t *rec, void *arg, char *err, size_t errlen)
{
	const struct ctx *c = arg;

	if (c->cfgerr) {
		snprintf(err, errlen, "%s", c->cfgerr);
		return -1;
	}
	return kvrec_bytes(rec, c->ro, err, errlen);
}

/*
 * With --config and no records: the one record of the config, or, when
 * the config is unusable, one error record (no input line to name) and
 * the reason on stderr.  Returns the exit status.
 */
static int
one_record(const struct ctx *c)
{
	char err[512];
	json_t *rec = json_object();
	int rc, status = KV_OK;

	if (rec == NULL)
		kv_die(KV_SOFTWARE, "out of memory");
	if (c->cfgerr) {
		kv_warn("%s", c->cfgerr);
		/* a file name that is not UTF-8 cannot go into JSON as is */
		if (jset_str(rec, "kind", "error") ||
		    (jset_str(rec, "error", c->cfgerr) &&
		    jset_str(rec, "error", "the --config file is unusable "
		    "(its name is not UTF-8; see standard error)")))
			kv_die(KV_SOFTWARE, "out of memory");
		status = KV_DATAERR;
	} else if (kvrec_bytes(rec, c->ro, err, sizeof(err)) != 0) {
		kv_die(KV_SOFTWARE, "%s", err);
	}
	rc = jsonl_write(stdout, rec, true);
	json_decref(rec);
	return rc == 0 ? status : KV_IOERR;
}

static void
parse_args(int argc, char *argv[], struct options *o)
{
	char err[256];
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (kv_parse_count(optarg, &o->block, err,
			    sizeof(err)) != 0)
				kv_die(KV_USAGE, "--block: %s", err);
			if (o->block == 0 || o->block > (1u << 24))
				kv_die(KV_USAGE, "--block: must be in "
				    "1..16777216 tokens");
			break;
		case 'c':
			o->config = optarg;
			break;
		case 'd':
			if (kvm_dtype_bytes(optarg) == 0)
				kv_die(KV_USAGE, "--kv-dtype: '%s' unknown (use "
				    "fp32, bf16, fp16, fp8 or int8)", optarg);
			o->kv_dtype = optarg;
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
}

int
main(int argc, char *argv[])
{
	struct options o = { .block = 16 };
	struct jsonl_filter jf = { 0 };
	struct kvrec_opt ro = { 0 };
	struct ctx c = { .ro = &ro };
	struct kv_model model;
	char err[600];
	size_t nrec = 0;
	int status, rc;

	kv_setprogname(argv[0]);
	parse_args(argc, argv, &o);
	ro.kv_dtype = o.kv_dtype;
	ro.block = o.block;
	if (o.config) {
		/* unreadable: a set-up error; unusable: error records */
		rc = kvcfg_load(o.config, o.kv_dtype, &model, err, sizeof(err));
		if (rc == KV_DATAERR)
			c.cfgerr = err;
		else if (rc != 0)
			kv_die(rc, "%s", err);
		else
			ro.model = &model;
		if (isatty(STDIN_FILENO))
			return kv_fshut(one_record(&c));
	}
	jf.strict = o.strict;
	jf.flush = isatty(STDOUT_FILENO);
	status = jsonl_filter(stdin, "stdin", stdout, filter, &c, &jf, &nrec);
	if (o.config && nrec == 0 && status == KV_OK)
		status = one_record(&c);
	return kv_fshut(status);
}
