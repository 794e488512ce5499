/* SPDX-License-Identifier: MIT */
/*
 * rdma-probe: RDMA WRITE bandwidth over RC QPs with rdma-core verbs, host
 * or GPU memory, set up by an out-of-band TCP handshake as perftest does.
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "jsonl.h"
#include "net.h"
#include "preflight.h"
#include "rdmahs.h"
#include "opt.h"
#include "units.h"
#include "verbs.h"

#define SYNOPSIS \
	"usage: rdma-probe server [--dev NAME] [--gid-index N] [--ib-port N] " \
	"[--max-mem SIZE]\n" \
	"                         [--mtu BYTES] [--oob-port PORT] [-q QPS] " \
	"[-s SIZE | --sizes MIN..MAX]\n" \
	"                         [--timeout DURATION]\n" \
	"       rdma-probe client HOST [--dev NAME] [--duration DURATION | " \
	"--iters N]\n" \
	"                         [--gid-index N] [--ib-port N] [--interval " \
	"DURATION]\n" \
	"                         [--mem host|cuda:N] [--mtu BYTES] " \
	"[--oob-port PORT] [-q QPS]\n" \
	"                         [--registration dmabuf|peermem] [-s SIZE | " \
	"--sizes MIN..MAX]\n" \
	"                         [--timeout DURATION] [--tx-depth N]\n"

#define FILL 0xa5	/* what the client's buffer holds and the server checks */

struct opts {
	int server;
	const char *host, *dev, *oob_port, *reg;
	int ib_port, gid_index, qps, qps_set, cuda_dev;
	uint32_t mtu;
	uint64_t size_min, size_max, iters, max_mem;
	int size_set;
	double duration, interval, timeout;
	unsigned tx_depth;
	enum vb_mem_kind mem;
	const char *client_only;	/* a client option given to the server */
	const char *server_only;	/* a server option given to the client */
};

static void
usage(void)
{
	fputs(SYNOPSIS, stderr);
	exit(KV_USAGE);
}




/* --sizes MIN..MAX */
static void
sizes_opt(struct opts *o, const char *s)
{
	const char *dots = strstr(s, "..");
	char lo[64];

	if (dots == NULL || dots == s || (size_t)(dots - s) >= sizeof(lo))
		kv_die(KV_USAGE, "--sizes %s: want MIN..MAX (e.g. 4KiB..8MiB)", s);
	snprintf(lo, sizeof(lo), "%.*s", (int)(dots - s), s);
	o->size_min = kv_opt_size("--sizes", lo, 1, 1ULL << 30);
	o->size_max = kv_opt_size("--sizes", dots + 2, 1, 1ULL << 30);
	if (o->size_min > o->size_max)
		kv_die(KV_USAGE, "--sizes %s: the smallest size comes first", s);
}

static void
mem_opt(struct opts *o, const char *s)
{
	if (strcmp(s, "host") == 0) {
		o->mem = VB_MEM_HOST;
	} else if (strncmp(s, "cuda:", 5) == 0) {
		o->cuda_dev = (int)kv_opt_int("--mem cuda:N", s + 5, 0, 1023);
		o->mem = VB_MEM_CUDA_DMABUF;	/* or peermem: --registration */
	} else {
		kv_die(KV_USAGE, "--mem %s: must be host or cuda:N", s);
	}
}

/* Reject what does not go together, one rule at a time. */
static void
check_opts(struct opts *o, int mem_set, int dur_set, int iters_set)
{
	enum pf_path path;

	if (o->server && o->client_only)
		kv_die(KV_USAGE, "%s is a client option", o->client_only);
	if (!o->server && o->server_only)
		kv_die(KV_USAGE, "%s is a server option", o->server_only);
	if (o->server && o->size_max * (uint64_t)o->qps > o->max_mem)
		kv_die(KV_USAGE, "--sizes/-q: %d QPs x %llu bytes is more than "
		    "--max-mem %llu bytes", o->qps,
		    (unsigned long long)o->size_max,
		    (unsigned long long)o->max_mem);
	if (dur_set && iters_set)
		kv_die(KV_USAGE, "--duration and --iters exclude each other");
	if (o->interval > 0 && iters_set)
		kv_die(KV_USAGE, "--interval needs --duration, not --iters");
	if (mem_set && o->mem == VB_MEM_HOST && o->reg)
		kv_die(KV_USAGE, "--registration applies to --mem cuda:N only");
	if (o->mem == VB_MEM_HOST)
		return;
	if (o->reg == NULL && (o->reg = getenv("KVGATE_GPU_REGISTRATION")) &&
	    *o->reg == '\0')
		o->reg = NULL;
	if (o->reg == NULL)
		kv_die(KV_USAGE, "--mem cuda:%d needs a registration path: give "
		    "--registration dmabuf or --registration peermem (or set "
		    "KVGATE_GPU_REGISTRATION)", o->cuda_dev);
	if (pf_parse_path(o->reg, &path) != 0)
		kv_die(KV_USAGE, "registration \"%s\": must be dmabuf or peermem",
		    o->reg);
	o->mem = path == PF_DMABUF ? VB_MEM_CUDA_DMABUF : VB_MEM_CUDA_PEERMEM;
}

static void
parse(struct opts *o, int argc, char *argv[])
{
	static const struct option lo[] = {
		{ "dev", required_argument, NULL, 'd' },
		{ "duration", required_argument, NULL, 'D' },
		{ "gid-index", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "interval", required_argument, NULL, 'I' },
		{ "iters", required_argument, NULL, 'n' },
		{ "max-mem", required_argument, NULL, 'X' },
		{ "mem", required_argument, NULL, 'm' },
		{ "mtu", required_argument, NULL, 'M' },
		{ "oob-port", required_argument, NULL, 'p' },
		{ "qps", required_argument, NULL, 'q' },
		{ "registration", required_argument, NULL, 'r' },
		{ "size", required_argument, NULL, 's' },
		{ "sizes", required_argument, NULL, 'S' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "tx-depth", required_argument, NULL, 't' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int c, mem_set = 0, dur_set = 0, iters_set = 0;
	char err[128];
	uint64_t n;

	while ((c = getopt_long(argc, argv, "q:s:", lo, NULL)) != -1) {
		switch (c) {
		case 'd': o->dev = optarg; break;
		case 'D': o->duration = kv_opt_duration("--duration", optarg,
		    0.001, 1e9);
			dur_set = 1; o->client_only = "--duration"; break;
		case 'g': o->gid_index = (int)kv_opt_int("--gid-index", optarg, 0,
			    255); break;
		case 'h': fputs(SYNOPSIS, stdout); exit(kv_fshut(KV_OK));
		case 'i': o->ib_port = (int)kv_opt_int("--ib-port", optarg, 1, 255);
			break;
		case 'I': o->interval = kv_opt_duration("--interval", optarg,
		    0.001, 1e9);
			o->client_only = "--interval"; break;
		case 'm': mem_opt(o, optarg); mem_set = 1;
			o->client_only = "--mem"; break;
		case 'M': o->mtu = (uint32_t)kv_opt_int("--mtu", optarg, 256, 4096);
			if (vb_mtu_enum(o->mtu) == 0)
				kv_die(KV_USAGE, "--mtu %s: must be 256, 512, 1024, "
				    "2048 or 4096", optarg);
			break;
		case 'n':
			if (kv_parse_count(optarg, &n, err, sizeof(err)) != 0 ||
			    n == 0)
				kv_die(KV_USAGE, "--iters %s: %s", optarg, n == 0 ?
				    "must be at least 1" : err);
			o->iters = n; iters_set = 1; o->client_only = "--iters";
			break;
		case 'p': kv_opt_int("--oob-port", optarg, 0, 65535);
			o->oob_port = optarg; break;
		case 'q': o->qps = (int)kv_opt_int("--qps", optarg, 1, HS_MAX_QPS);
			o->qps_set = 1; break;
		case 'r': o->reg = optarg; o->client_only = "--registration"; break;
		case 's':
			if (o->size_set)
				kv_die(KV_USAGE, "--size and --sizes exclude each other");
			o->size_min = o->size_max = kv_opt_size("--size",
			    optarg, 1, 1ULL << 30);
			o->size_set = 1; break;
		case 'S':
			if (o->size_set)
				kv_die(KV_USAGE, "--size and --sizes exclude each other");
			sizes_opt(o, optarg); o->size_set = 1; break;
		case 'T': o->timeout = kv_opt_duration("--timeout", optarg,
		    0.001, 1e9); break;
		case 't': o->tx_depth = (unsigned)kv_opt_int("--tx-depth", optarg, 1,
			    8192); o->client_only = "--tx-depth"; break;
		case 'V': kv_version();
		case 'X':
			if (kv_parse_size(optarg, &n, err, sizeof(err)) != 0)
				kv_die(KV_USAGE, "--max-mem: %s", err);
			if (n == 0 || n > HS_MAX_QPS * HS_MAX_SIZE)
				kv_die(KV_USAGE, "--max-mem %s: must be 1 byte to "
				    "256GiB", optarg);
			o->max_mem = n; o->server_only = "--max-mem"; break;
		default: usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage();
	if (strcmp(argv[0], "server") == 0 && argc == 1) {
		o->server = 1;
	} else if (strcmp(argv[0], "client") == 0 && argc == 2) {
		o->host = argv[1];
	} else if (strcmp(argv[0], "client") == 0) {
		kv_die(KV_USAGE, "client needs exactly one HOST");
	} else {
		kv_die(KV_USAGE, "%s: the first argument is server or client",
		    argv[0]);
	}
	check_opts(o, mem_set, dur_set, iters_set);
}

/* The parameters this side announces. */
static void
local_params(const struct opts *o, const struct vb_dev *d,
    const struct vb_qps *q, const struct vb_mem *m, struct hs_params *p)
{
	int i;

	memset(p, 0, sizeof(*p));
	p->qps = (uint16_t)q->n;
	p->link = d->ethernet ? HS_LINK_ETH : HS_LINK_IB;
	p->mem = (uint8_t)m->kind;
	p->mtu = o->mtu ? o->mtu : d->mtu_bytes;
	p->size_min = o->size_min;
	p->size_max = o->size_max;
	p->rkey = m->mr->rkey;
	p->addr = m->addr;
	p->buf_len = m->len;
	for (i = 0; i < q->n; i++) {
		p->qp[i].qpn = q->qp[i]->qp_num;
		p->qp[i].psn = q->psn[i];
		p->qp[i].lid = d->attr.lid;
		memcpy(p->qp[i].gid, d->gid.raw, 16);
	}
}

static void
remotes(const struct hs_params *p, struct vb_remote *r)
{
	int i;

	for (i = 0; i < p->qps; i++) {
		r[i].qpn = p->qp[i].qpn;
		r[i].psn = p->qp[i].psn;
		r[i].lid = p->qp[i].lid;
		memcpy(r[i].gid, p->qp[i].gid, 16);
	}
}

/* Common fields of every record. */
static json_t *
record(const char *kind, const struct vb_dev *d, const struct opts *o)
{
	return json_pack("{s:s, s:s, s:s, s:i, s:i, s:s, s:i}", "kind", kind,
	    "role", o->server ? "server" : "client", "device", d->name,
	    "port", d->port, "gid_index", d->gid_index, "link_layer",
	    d->ethernet ? "Ethernet" : "InfiniBand", "mtu_bytes",
	    (int)(o->mtu ? o->mtu : d->mtu_bytes));
}

/*
 * Write r and free it; returns an exit status.  bad says a field could
 * not be set (out of memory): KV_SOFTWARE; a failed write: KV_IOERR.
 */
static int
emit(json_t *r, int bad)
{
	int rc = KV_OK;

	if (r == NULL || bad) {
		kv_warn("out of memory building a record");
		rc = KV_SOFTWARE;
	} else if (jsonl_write(stdout, r, true) != 0) {
		rc = KV_IOERR;
	}
	json_decref(r);
	return rc;
}

struct tick_ctx {
	const struct vb_dev *d;
	const struct opts *o;
	uint64_t size;
};

static int
on_tick(void *vctx, double t0, double t1, uint64_t bytes, uint64_t msgs)
{
	struct tick_ctx *c = vctx;
	json_t *r = record("interval", c->d, c->o);
	int bad = 0;

	bad |= jset_u64(r, "size_bytes", c->size);
	bad |= jset_num(r, "start_s", t0);
	bad |= jset_num(r, "end_s", t1);
	bad |= jset_u64(r, "bytes", bytes);
	bad |= jset_u64(r, "messages", msgs);
	bad |= jset_num(r, "bytes_per_s", t1 > t0 ? (double)bytes / (t1 - t0) :
	    0);
	return emit(r, bad);
}

static int
summary(const struct vb_dev *d, const struct opts *o, const struct vb_mem *m,
    uint64_t size, const struct vb_result *r)
{
	json_t *j = record("summary", d, o);
	int bad = 0;

	bad |= jset_num(j, "qps", o->qps);
	bad |= jset_num(j, "tx_depth", o->tx_depth);
	bad |= jset_u64(j, "size_bytes", size);
	bad |= jset_u64(j, "iterations", r->msgs);
	bad |= jset_u64(j, "bytes", r->bytes);
	bad |= jset_num(j, "elapsed_s", r->seconds);
	bad |= jset_num(j, "avg_bytes_per_s", r->seconds > 0 ?
	    (double)r->bytes / r->seconds : 0);
	bad |= jset_num(j, "peak_bytes_per_s", r->peak_bytes_per_s);
	bad |= jset_num(j, "messages_per_s", r->seconds > 0 ?
	    (double)r->msgs / r->seconds : 0);
	bad |= jset_str(j, "memory", hs_mem_name((uint8_t)m->kind));
	return emit(j, bad);
}

/* Run every size of the sweep; returns an exit status. */
static int
sweep(const struct opts *o, struct vb_dev *d, struct vb_qps *q,
    struct vb_mem *m, const struct hs_params *peer, uint64_t *last)
{
	struct tick_ctx tc = { d, o, 0 };
	struct vb_write w;
	struct vb_result r;
	char err[512];
	uint64_t size;
	int rc;

	for (size = o->size_min; ; size = size * 2 > o->size_max &&
	    size < o->size_max ? o->size_max : size * 2) {
		memset(&w, 0, sizeof(w));
		w.size = size;
		w.iters = o->iters;
		w.duration_s = o->duration;
		w.interval_s = o->interval;
		w.remote_addr = peer->addr;
		w.stride = o->size_max;
		w.rkey = peer->rkey;
		w.stall_s = o->timeout;
		tc.size = size;
		err[0] = '\0';	/* a failing tick has said why already */
		if ((rc = vb_write_run(q, m, &w, on_tick, &tc, &r, err,
		    sizeof(err))) != KV_OK) {
			if (err[0] != '\0')
				kv_warn("size %llu: %s", (unsigned long long)size,
				    err);
			return rc;
		}
		if ((rc = summary(d, o, m, size, &r)) != KV_OK)
			return rc;
		*last = size;
		if (size >= o->size_max)
			return KV_OK;
	}
}

/* After the sweep: ask the server to check what landed. */
static int
finish(int fd, const struct opts *o, const struct vb_dev *d, uint64_t last)
{
	uint8_t buf[HS_HDR_LEN + 16];
	enum hs_type type;
	enum hs_status st;
	uint32_t len, ok = 0, regions = 0;
	char err[512];
	json_t *r;
	int bad = 0, rc;

	st = hs_send(fd, buf, hs_encode_done(buf, sizeof(buf), last, FILL),
	    err, sizeof(err));
	if (st == HS_OK)
		st = hs_recv(fd, &type, buf + HS_HDR_LEN, 16, &len, err,
		    sizeof(err));
	if (st == HS_OK && type != HS_DONE_ACK) {
		snprintf(err, sizeof(err), "expected DONE_ACK, got type %u", type);
		st = HS_EMALFORMED;
	}
	if (st == HS_OK)
		st = hs_decode_done_ack(buf + HS_HDR_LEN, len, &ok, &regions, err,
		    sizeof(err));
	/* "0 of 0 matched" must not pass for a check of every QP. */
	if (st == HS_OK && regions != (uint32_t)o->qps) {
		snprintf(err, sizeof(err), "DONE_ACK counts %u regions for %d "
		    "QPs", regions, o->qps);
		st = HS_EMALFORMED;
	}
	if (st != HS_OK)
		kv_warn("%s:%s: %s", o->host, o->oob_port, err);
	r = record("check", d, o);
	bad |= jset_u64(r, "check_bytes", last);
	bad |= jset_num(r, "regions", o->qps);
	bad |= jset_num(r, "regions_ok", st == HS_OK ? ok : 0);
	bad |= jset_bool(r, "ok", st == HS_OK && ok == regions);
	if (st != HS_OK)
		bad |= jset_str(r, "error", err);
	if ((rc = emit(r, bad)) != KV_OK)
		return rc;
	if (st != HS_OK)
		return hs_status_exit(st);
	if (ok != regions)
		kv_warn("the server found %u of %u QP regions not holding what "
		    "was written", regions - ok, regions);
	return ok == regions ? KV_OK : KV_FAIL;
}

/* Release the run's QPs and memory; a failure is only a warning. */
static void
teardown(struct vb_qps *q, struct vb_mem *m)
{
	char err[256];

	if (vb_qps_destroy(q, err, sizeof(err)) != 0)
		kv_warn("releasing the queue pairs: %s", err);
	if (vb_mem_free(m, err, sizeof(err)) != 0)
		kv_warn("releasing the registered memory: %s", err);
}

/* Die with status st unless it is KV_OK. */
static void
must(int st, const char *err)
{
	if (st != KV_OK)
		kv_die(st, "%s", err);
}

static int
client(struct opts *o, struct vb_dev *d, struct kv_cuda *cu)
{
	struct hs_params hello, accept;
	struct vb_remote rem[HS_MAX_QPS];
	struct vb_qps q;
	struct vb_mem m;
	enum hs_status st;
	uint64_t last = 0;
	char err[512];
	int fd, rc;

	must(vb_mem_alloc(d, &m, o->mem, cu, o->cuda_dev, o->size_max, FILL,
	    err, sizeof(err)), err);
	must(vb_qps_create(d, &q, o->qps, o->tx_depth, err, sizeof(err)), err);
	if ((fd = kv_connect(o->host, o->oob_port, o->timeout, err,
	    sizeof(err))) < 0 || kv_set_timeouts(fd, o->timeout) != 0)
		kv_die(KV_UNAVAILABLE, "cannot reach the rdma-probe server: %s",
		    err);
	local_params(o, d, &q, &m, &hello);
	if ((st = hs_client_hello(fd, &hello, &accept, err, sizeof(err))))
		kv_die(hs_status_exit(st), "%s:%s: %s", o->host, o->oob_port, err);
	remotes(&accept, rem);
	o->mtu = hello.mtu;
	must(vb_qps_connect(d, &q, rem, hello.mtu, err, sizeof(err)), err);
	if ((rc = sweep(o, d, &q, &m, &accept, &last)) == KV_OK)
		rc = finish(fd, o, d, last);
	close(fd);
	teardown(&q, &m);
	return rc;
}

/* Unless st is KV_OK, tell the client why in a REJECT, then die. */
static void
refuse_unless(int fd, int st, const char *err)
{
	uint8_t buf[HS_HDR_LEN + HS_MAX_TEXT];
	char e2[128], why[HS_MAX_TEXT + 1];

	if (st == KV_OK)
		return;
	snprintf(why, sizeof(why), "server: %s", err);
	(void)hs_send(fd, buf, hs_encode_text(buf, sizeof(buf), why), e2,
	    sizeof(e2));	/* best effort: dying anyway */
	kv_die(st, "%s", err);
}

/* Probe a silent peer every 5 s after 10 s idle; 3 misses and reads fail. */
static int
keepalive(int fd)
{
	int on = 1, idle = 10, intvl = 5, cnt = 3;

	return setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl,
	    sizeof(intvl)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

/* Count the QP regions whose first len bytes all hold FILL. */
static uint32_t
regions_ok(const struct vb_mem *m, int n, uint64_t stride, uint64_t len)
{
	const uint8_t *b = m->host;
	uint32_t ok = 0;
	uint64_t i;
	int r;

	for (r = 0; r < n; r++) {
		for (i = 0; i < len && b[r * stride + i] == FILL; i++)
			;
		ok += i == len;
	}
	return ok;
}

/*
 * After the ACCEPT, wait for the client's DONE and store the bytes to
 * check.  The run may last long: no read timeout while it does, but TCP
 * keepalive, so a client whose host vanishes is noticed in about 25 s;
 * the socket's --timeout is back in force for the reply.
 */
static enum hs_status
await_done(int fd, const struct opts *o, uint64_t size_max, uint64_t *check,
    char *err, size_t errlen)
{
	enum hs_status st;

	if (kv_set_timeouts(fd, 0) != 0 || keepalive(fd) != 0)
		kv_die(KV_SOFTWARE, "client socket options:");
	st = hs_server_done(fd, size_max, FILL, check, err, errlen);
	if (kv_set_timeouts(fd, o->timeout) != 0)
		kv_die(KV_SOFTWARE, "client socket timeouts:");
	return st;
}

/*
 * Serve one client, then return its session's exit status.  Once the
 * ACCEPT is sent, every failure still ends in a session record, ok
 * false with the error.
 */
static int
serve(struct opts *o, struct vb_dev *d, int fd)
{
	struct hs_expect want = { (uint16_t)(o->qps_set ? o->qps : 0), o->mtu,
		o->size_set ? o->size_min : 0, o->size_set ? o->size_max : 0,
		(uint8_t)(d->ethernet ? HS_LINK_ETH : HS_LINK_IB), d->mtu_bytes,
		o->max_mem };
	static uint8_t buf[HS_HDR_LEN + HS_MAX_BODY];
	struct hs_params hello, accept;
	struct vb_remote rem[HS_MAX_QPS];
	struct vb_qps q;
	struct vb_mem m;
	enum hs_status st;
	uint64_t check = 0;
	uint32_t ok = 0;
	char err[512];
	json_t *r;
	int bad = 0, rc;

	if ((st = hs_server_hello(fd, &want, &hello, err, sizeof(err))))
		kv_die(hs_status_exit(st), "client: %s", err);
	o->qps = hello.qps;
	o->mtu = hello.mtu;
	o->size_min = hello.size_min;
	o->size_max = hello.size_max;
	refuse_unless(fd, vb_mem_alloc(d, &m, VB_MEM_HOST, NULL, 0,
	    hello.size_max * hello.qps, 0, err, sizeof(err)), err);
	refuse_unless(fd, vb_qps_create(d, &q, hello.qps, 1, err, sizeof(err)),
	    err);
	remotes(&hello, rem);
	refuse_unless(fd, vb_qps_connect(d, &q, rem, hello.mtu, err,
	    sizeof(err)), err);
	local_params(o, d, &q, &m, &accept);
	st = hs_send(fd, buf, hs_encode_params(buf, sizeof(buf), HS_ACCEPT,
	    &accept), err, sizeof(err));
	if (st == HS_OK)
		st = await_done(fd, o, hello.size_max, &check, err, sizeof(err));
	if (st == HS_OK) {
		ok = regions_ok(&m, hello.qps, hello.size_max, check);
		/* The client's verdict rests on this ack: one it never got
		 * makes the session not ok, whatever landed in memory. */
		st = hs_send(fd, buf, hs_encode_done_ack(buf, sizeof(buf), ok,
		    hello.qps), err, sizeof(err));
	}
	if (st != HS_OK)
		kv_warn("client: %s", err);
	r = record("session", d, o);
	bad |= jset_num(r, "qps", hello.qps);
	bad |= jset_u64(r, "size_min_bytes", hello.size_min);
	bad |= jset_u64(r, "size_max_bytes", hello.size_max);
	bad |= jset_str(r, "peer_memory", hs_mem_name(hello.mem));
	bad |= jset_u64(r, "check_bytes", check);
	bad |= jset_num(r, "regions_ok", ok);
	bad |= jset_bool(r, "ok", st == HS_OK && ok == hello.qps);
	if (st != HS_OK)
		bad |= jset_str(r, "error", err);
	teardown(&q, &m);
	if ((rc = emit(r, bad)) != KV_OK)
		return rc;
	if (st != HS_OK)
		return hs_status_exit(st);
	return ok == hello.qps ? KV_OK : KV_FAIL;
}

static int
server(struct opts *o, struct vb_dev *d)
{
	char err[256];
	int lfd, fd, rc;
	json_t *r;

	if ((lfd = kv_listen(NULL, o->oob_port, 1, err, sizeof(err))) < 0)
		kv_die(KV_UNAVAILABLE, "%s", err);
	r = record("listening", d, o);
	if ((rc = emit(r, jset_num(r, "oob_port", kv_local_port(lfd)))) !=
	    KV_OK)
		return rc;
	while ((fd = accept(lfd, NULL, NULL)) < 0 && errno == EINTR)
		;
	if (fd < 0)
		kv_die(KV_UNAVAILABLE, "accept:");
	close(lfd);
	if (kv_set_timeouts(fd, o->timeout) != 0)
		kv_die(KV_SOFTWARE, "setting the client socket's timeouts:");
	rc = serve(o, d, fd);
	close(fd);
	return rc;
}

int
main(int argc, char *argv[])
{
	struct opts o = { .oob_port = "18515", .ib_port = 1, .gid_index = -1,
		.qps = 1, .size_min = 65536, .size_max = 65536, .duration = 10,
		.timeout = 30, .tx_depth = 128, .mem = VB_MEM_HOST,
		.max_mem = HS_MEM_MAX };
	struct kv_cuda cu = { 0 };
	struct vb_dev d;
	char err[512];
	int rc;

	kv_setprogname(argv[0]);
	parse(&o, argc, argv);
	/* a vanished peer is an error, not a kill */
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
		kv_die(KV_SOFTWARE, "ignoring SIGPIPE:");
	srand48((long)time(NULL) ^ (long)getpid());
	/* The driver before the device: both are needed, and the driver's
	 * absence is the cheaper thing to learn. */
	if (o.mem != VB_MEM_HOST && kv_cuda_load(&cu, err, sizeof(err)) != 0)
		kv_die(KV_UNAVAILABLE, "--mem cuda:%d: no CUDA driver: %s (is "
		    "the NVIDIA driver installed?)", o.cuda_dev, err);
	if ((rc = vb_open(o.dev, o.ib_port, o.gid_index, &d, err,
	    sizeof(err))) != KV_OK)
		kv_die(rc, "%s", err);
	if (o.mtu && o.mtu > d.mtu_bytes)
		kv_die(KV_USAGE, "--mtu %u: the port's active MTU is %u", o.mtu,
		    d.mtu_bytes);
	rc = o.server ? server(&o, &d) : client(&o, &d, &cu);
	if (vb_close(&d, err, sizeof(err)) != 0)
		kv_warn("closing %s: %s", o.dev ? o.dev : "the device", err);
	if (cu.handle)
		kv_cuda_unload(&cu);
	return kv_fshut(rc);
}
