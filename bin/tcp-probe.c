/* SPDX-License-Identifier: MIT */
/*
 * tcp-probe: multi-stream TCP goodput with sequence-numbered, SHA-256
 * verified frames; the server counts only the bytes it verified.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "tcpprobe.h"
#include "tcpproto.h"
#include "units.h"

static const char synopsis[] =
    "usage: tcp-probe server [--bind ADDR] [--port PORT] [--once]\n"
    "                        [--idle-timeout DURATION]\n"
    "       tcp-probe client HOST [--port PORT] [-P STREAMS]\n"
    "                        [--duration DURATION | --bytes SIZE]\n"
    "                        [--frame SIZE] [--verify sha256|none]\n"
    "                        [--interval DURATION] [--rate BW]\n"
    "                        [--rtt-samples N] [--timeout DURATION]\n";

static void
usage(void)
{
	fputs(synopsis, stderr);
	exit(KV_USAGE);
}

enum { O_BIND = 256, O_PORT, O_ONCE, O_DURATION, O_BYTES, O_FRAME,
    O_VERIFY, O_INTERVAL, O_RATE, O_RTT, O_TIMEOUT, O_IDLE, O_HELP,
    O_VERSION };

static const struct option longopts[] = {
	{ "bind", required_argument, NULL, O_BIND },
	{ "port", required_argument, NULL, O_PORT },
	{ "once", no_argument, NULL, O_ONCE },
	{ "idle-timeout", required_argument, NULL, O_IDLE },
	{ "parallel", required_argument, NULL, 'P' },
	{ "duration", required_argument, NULL, O_DURATION },
	{ "bytes", required_argument, NULL, O_BYTES },
	{ "frame", required_argument, NULL, O_FRAME },
	{ "verify", required_argument, NULL, O_VERIFY },
	{ "interval", required_argument, NULL, O_INTERVAL },
	{ "rate", required_argument, NULL, O_RATE },
	{ "rtt-samples", required_argument, NULL, O_RTT },
	{ "timeout", required_argument, NULL, O_TIMEOUT },
	{ "help", no_argument, NULL, O_HELP },
	{ "version", no_argument, NULL, O_VERSION },
	{ NULL, 0, NULL, 0 }
};

struct opts {
	struct tps_opts srv;
	struct tpc_opts cli;
	char port[8];
	unsigned seen;		/* bit per option given, for the rules */
};

#define SEEN(o) (1u << ((o) - O_BIND))

/* Die with a usage status naming the option and the parser's reason. */
static void
bad(const char *opt, const char *err)
{
	kv_warn("--%s: %s", opt, err);
	usage();
}

static void
parse_one(struct opts *o, int ch, const char *arg)
{
	char err[128];
	long long n;
	uint64_t u;
	double d;

	switch (ch) {
	case O_BIND: o->srv.bind = arg; break;
	case O_PORT:
		if (kv_parse_int(arg, 0, 65535, &n, err, sizeof(err)))
			bad("port", err);
		snprintf(o->port, sizeof(o->port), "%lld", n);
		break;
	case O_ONCE: o->srv.once = true; break;
	case O_IDLE:
		if (kv_parse_duration(arg, &d, err, sizeof(err)) || d < 0.01)
			bad("idle-timeout", d < 0.01 ? "must be at least 10ms" : err);
		o->srv.idle_s = d;
		break;
	case 'P':
		if (kv_parse_int(arg, 1, TP_MAX_STREAMS, &n, err, sizeof(err)))
			bad("parallel", err);
		o->cli.streams = (uint32_t)n;
		break;
	case O_DURATION:
		if (kv_parse_duration(arg, &d, err, sizeof(err)) || d <= 0)
			bad("duration", d <= 0 ? "must be positive" : err);
		o->cli.duration_s = d;
		break;
	case O_BYTES:
		if (kv_parse_size(arg, &u, err, sizeof(err)) || u == 0)
			bad("bytes", u == 0 ? "must be positive" : err);
		o->cli.bytes = u;
		break;
	case O_FRAME:
		if (kv_parse_size(arg, &u, err, sizeof(err)))
			bad("frame", err);
		if (u < TP_MIN_FRAME || u > TP_MAX_FRAME)
			bad("frame", "must be within 64B..64MiB");
		o->cli.frame_bytes = (uint32_t)u;
		break;
	case O_VERIFY:
		if (strcmp(arg, "sha256") == 0)
			o->cli.verify = TP_VERIFY_SHA256;
		else if (strcmp(arg, "none") == 0)
			o->cli.verify = TP_VERIFY_NONE;
		else
			bad("verify", "must be sha256 or none");
		break;
	case O_INTERVAL:
		if (kv_parse_duration(arg, &d, err, sizeof(err)))
			bad("interval", err);
		if (d != 0 && d < 0.01)
			bad("interval", "must be 0 (off) or at least 10ms");
		o->cli.interval_s = d;
		break;
	case O_RATE:
		if (kv_parse_bw(arg, &d, err, sizeof(err)) || d <= 0)
			bad("rate", d <= 0 ? "must be positive" : err);
		o->cli.rate = d;
		break;
	case O_RTT:
		if (kv_parse_int(arg, 0, 100000, &n, err, sizeof(err)))
			bad("rtt-samples", err);
		o->cli.rtt_samples = (unsigned)n;
		break;
	case O_TIMEOUT:
		if (kv_parse_duration(arg, &d, err, sizeof(err)) || d < 0.01)
			bad("timeout", d < 0.01 ? "must be at least 10ms" : err);
		o->cli.timeout_s = d;
		break;
	case O_HELP:
		fputs(synopsis, stdout);
		exit(kv_fshut(KV_OK));
	case O_VERSION:
		kv_version();
	default:
		usage();
	}
	if (ch >= O_BIND && ch <= O_VERSION)
		o->seen |= SEEN(ch);
	else if (ch == 'P')
		o->seen |= SEEN(O_VERSION + 1);
}

/* The options that belong to one role only, rejected for the other. */
static void
check_roles(const struct opts *o, bool server)
{
	static const struct { int opt; const char *name; bool server; }
	    only[] = {
		{ O_BIND, "bind", true }, { O_ONCE, "once", true },
		{ O_IDLE, "idle-timeout", true },
		{ O_DURATION, "duration", false }, { O_BYTES, "bytes", false },
		{ O_FRAME, "frame", false }, { O_VERIFY, "verify", false },
		{ O_INTERVAL, "interval", false }, { O_RATE, "rate", false },
		{ O_RTT, "rtt-samples", false },
		{ O_TIMEOUT, "timeout", false },
		{ O_VERSION + 1, "parallel", false },
	};
	size_t i;

	for (i = 0; i < sizeof(only) / sizeof(only[0]); i++)
		if ((o->seen & SEEN(only[i].opt)) && only[i].server != server) {
			kv_warn("--%s is a %s option", only[i].name,
			    only[i].server ? "server" : "client");
			usage();
		}
}

int
main(int argc, char *argv[])
{
	struct opts o = {
		.srv = { .idle_s = 30 },
		.cli = { .streams = 1, .frame_bytes = 1u << 20,
		    .verify = TP_VERIFY_SHA256, .duration_s = 10,
		    .interval_s = 1, .rtt_samples = 10, .timeout_s = 5 },
		.port = "5201",
	};
	bool server;
	int ch;

	kv_setprogname(argv[0]);
	while ((ch = getopt_long(argc, argv, "+P:", longopts, NULL)) != -1)
		parse_one(&o, ch, optarg);
	if (optind >= argc)
		usage();
	server = strcmp(argv[optind], "server") == 0;
	if (!server && strcmp(argv[optind], "client") != 0) {
		kv_warn("unknown role '%s' (server or client)", argv[optind]);
		usage();
	}
	if (!server) {
		if (++optind >= argc) {
			kv_warn("client needs the server's HOST");
			usage();
		}
		o.cli.host = argv[optind];
	}
	optind++;
	while ((ch = getopt_long(argc, argv, "+P:", longopts, NULL)) != -1)
		parse_one(&o, ch, optarg);
	if (optind < argc) {
		kv_warn("unexpected argument '%s'", argv[optind]);
		usage();
	}
	check_roles(&o, server);
	if ((o.seen & SEEN(O_DURATION)) && (o.seen & SEEN(O_BYTES))) {
		kv_warn("--duration and --bytes are exclusive");
		usage();
	}
	if (o.cli.bytes && o.cli.bytes < o.cli.streams) {
		kv_warn("--bytes must give every stream at least one byte");
		usage();
	}
	if (server) {
		o.srv.port = o.port;
		return kv_fshut(tps_run(&o.srv, stdout));
	}
	if (strcmp(o.port, "0") == 0) {
		kv_warn("--port 0 is for the server only");
		usage();
	}
	o.cli.port = o.port;
	return kv_fshut(tpc_run(&o.cli, stdout));
}
