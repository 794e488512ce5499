/* SPDX-License-Identifier: MIT */
/*
 * tcp-probe client: a control connection for the handshake, RTT pings,
 * per-interval server statistics and the final result; one sender
 * thread per data stream.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "jsonl.h"
#include "net.h"
#include "sha.h"
#include "stats.h"
#include "tcpprobe.h"
#include "tcpproto.h"

#define VARIANTS 4	/* distinct payloads, cycled by sequence number */

struct sender {
	pthread_t t;
	uint32_t id;
	int fd;
	uint64_t quota;		/* bytes to send; 0 with a deadline */
	_Atomic uint64_t sent, frames;
	int err;		/* errno of a failed write, 0 */
	void *mid[VARIANTS], *tmp;
	/* interval bookkeeping (main thread only) */
	uint64_t last_sent, last_verified, last_retrans, verified;
	struct tp_result res;
};

struct client {
	const struct tpc_opts *o;
	FILE *out;
	int ctl;
	uint8_t run_id[TP_RUNID_LEN];
	uint8_t *payload[VARIANTS];
	struct sender *s;
	double t0, deadline;
	atomic_int stop, running;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	double *rtt;
	unsigned nrtt;
	bool lost;
	char why[256];
};

/* Read a control message of the given type; -1 with c->why on failure. */
static int
recv_ctl(struct client *c, enum tp_type want, uint8_t *body, uint32_t *len)
{
	uint8_t h[TP_CTL_HDR], type;
	char err[160];
	ssize_t n = kv_read_full(c->ctl, h, sizeof(h));

	if (n != (ssize_t)sizeof(h)) {
		snprintf(c->why, sizeof(c->why), "server %s:%s: control "
		    "connection %s", c->o->host, c->o->port, n == 0 ?
		    "closed" : errno == EAGAIN ? "timed out" : "lost");
		return -1;
	}
	if (tp_ctl_parse(h, &type, len, err, sizeof(err)) != 0 ||
	    type != want || (*len && kv_read_full(c->ctl, body, *len) !=
	    (ssize_t)*len)) {
		snprintf(c->why, sizeof(c->why), "server %s:%s: bad control "
		    "reply (%s)", c->o->host, c->o->port, type != want ?
		    "unexpected message" : err);
		return -1;
	}
	return 0;
}

static void
error_record(struct client *c, const char *msg)
{
	json_t *rec = json_object();

	jset_str(rec, "kind", "error");
	jset_str(rec, "role", "client");
	jset_str(rec, "error", msg);
	jsonl_write(c->out, rec, true);
	json_decref(rec);
	kv_warn("%s", msg);
}

/* Connect, HELLO, WELCOME.  Returns an exit status. */
static int
handshake(struct client *c)
{
	const struct tpc_opts *o = c->o;
	struct tp_hello h = { .streams = o->streams,
	    .frame_bytes = o->frame_bytes, .verify = (uint8_t)o->verify };
	uint8_t b[TP_HELLO_LEN], hdr[TP_CTL_HDR], st[4];
	static const char *const why[] = { "ok", "busy with another run",
	    "speaks another protocol version", "refused the parameters" };
	char err[256];
	ssize_t n;
	uint32_t code;

	c->ctl = kv_connect(o->host, o->port, o->timeout_s, err, sizeof(err));
	if (c->ctl < 0) {
		snprintf(c->why, sizeof(c->why), "%s", err);
		return KV_UNAVAILABLE;
	}
	kv_set_timeouts(c->ctl, o->timeout_s);
	memcpy(h.run_id, c->run_id, TP_RUNID_LEN);
	tp_hello_encode(b, &h);
	if (tp_send_ctl(c->ctl, TP_HELLO, b, sizeof(b)) != 0)
		goto notprobe;
	n = kv_read_full(c->ctl, hdr, sizeof(hdr));
	if (n != (ssize_t)sizeof(hdr) || tp_get32(hdr) != TP_MAGIC_CTL ||
	    hdr[5] != TP_WELCOME || tp_get32(hdr + 8) != 4 ||
	    kv_read_full(c->ctl, st, 4) != 4)
		goto notprobe;
	code = tp_get32(st);
	if (code != TP_OK) {
		snprintf(c->why, sizeof(c->why), "server %s:%s %s", o->host,
		    o->port, code < 4 ? why[code] : "refused the run");
		return KV_UNAVAILABLE;
	}
	return KV_OK;
notprobe:
	snprintf(c->why, sizeof(c->why), "%s:%s is not a tcp-probe server "
	    "(no valid WELCOME within %gs)", o->host, o->port, o->timeout_s);
	return KV_UNAVAILABLE;
}

static int
ping(struct client *c)
{
	uint8_t b[8], r[8];
	uint32_t len;
	unsigned i;
	double t;

	c->rtt = calloc(c->o->rtt_samples + 1, sizeof(double));
	if (c->rtt == NULL)
		return -1;
	for (i = 0; i < c->o->rtt_samples; i++) {
		tp_put64(b, i);
		t = kv_mono();
		if (tp_send_ctl(c->ctl, TP_PING, b, 8) != 0 ||
		    recv_ctl(c, TP_PONG, r, &len) != 0 || len != 8 ||
		    tp_get64(r) != i)
			return -1;
		c->rtt[c->nrtt++] = kv_mono() - t;
	}
	kv_sort(c->rtt, c->nrtt);
	return 0;
}

/* Write all of a frame (header and payload) with sendmsg. */
static int
send_frame(int fd, uint8_t *hdr, const uint8_t *payload, uint32_t len)
{
	struct iovec iov[2] = { { hdr, TP_FRAME_HDR },
	    { (void *)payload, len } };
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
	ssize_t n;

	while (m.msg_iovlen > 0) {
		n = sendmsg(fd, &m, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		while (m.msg_iovlen > 0 && (size_t)n >= m.msg_iov->iov_len) {
			n -= (ssize_t)m.msg_iov->iov_len;
			m.msg_iov++;
			m.msg_iovlen--;
		}
		if (m.msg_iovlen > 0) {
			m.msg_iov->iov_base = (char *)m.msg_iov->iov_base + n;
			m.msg_iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

static void
pace(double t0, uint64_t sent, double rate)
{
	double ahead = (double)sent / rate - (kv_mono() - t0);
	struct timespec ts;

	if (ahead <= 0)
		return;
	ts.tv_sec = (time_t)ahead;
	ts.tv_nsec = (long)((ahead - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
}

/* The body of a sender thread, given its client. */
static void
send_stream(struct client *c, struct sender *s)
{
	const struct tpc_opts *o = c->o;
	struct tp_frame f = { .version = TP_VERSION, .stream = s->id };
	uint8_t hdr[TP_FRAME_HDR];
	double rate = o->rate > 0 ? o->rate / o->streams : 0;
	uint64_t sent = 0;
	unsigned v;

	for (f.seq = 0; !atomic_load(&c->stop); f.seq++) {
		if (o->bytes) {
			if (sent >= s->quota)
				break;
			f.len = s->quota - sent < o->frame_bytes ?
			    (uint32_t)(s->quota - sent) : o->frame_bytes;
		} else {
			if (kv_mono() >= c->deadline)
				break;
			f.len = o->frame_bytes;
		}
		v = (unsigned)(f.seq % VARIANTS);
		tp_frame_encode(hdr, &f);
		if (o->verify == TP_VERIFY_SHA256) {
			if ((f.len == o->frame_bytes ?
			    tp_digest_from(s->tmp, s->mid[v], hdr, hdr + 32) :
			    tp_digest(s->tmp, c->payload[v], f.len, hdr,
			    hdr + 32)) != 0) {
				s->err = EIO;
				break;
			}
		}
		if (send_frame(s->fd, hdr, c->payload[v], f.len) != 0) {
			s->err = errno;
			break;
		}
		sent += f.len;
		atomic_store(&s->sent, sent);
		atomic_store(&s->frames, f.seq + 1);
		if (rate > 0)
			pace(c->t0, sent, rate);
	}
	shutdown(s->fd, SHUT_WR);
}

struct targ {
	struct client *c;
	struct sender *s;
};

static void *
thread_main(void *arg)
{
	struct targ *a = arg;

	send_stream(a->c, a->s);
	pthread_mutex_lock(&a->c->mu);
	a->c->running--;
	pthread_cond_broadcast(&a->c->cv);
	pthread_mutex_unlock(&a->c->mu);
	free(a);
	return NULL;
}

/* Random payloads and their SHA-256 midstates. */
static int
make_payloads(struct client *c)
{
	unsigned v;
	uint32_t i;

	if (getrandom(c->run_id, TP_RUNID_LEN, 0) != TP_RUNID_LEN)
		return -1;
	for (v = 0; v < VARIANTS; v++) {
		if ((c->payload[v] = malloc(c->o->frame_bytes)) == NULL)
			return -1;
		for (i = 0; i < c->o->frame_bytes; i += 256)
			if (getrandom(c->payload[v] + i, c->o->frame_bytes - i
			    < 256 ? c->o->frame_bytes - i : 256, 0) < 0)
				return -1;
	}
	return 0;
}

/* Connect and attach every data stream with its own digest contexts. */
static int
open_streams(struct client *c)
{
	const struct tpc_opts *o = c->o;
	uint8_t b[TP_ATTACH_LEN];
	void *mid[VARIANTS] = { 0 };
	struct sender *s;
	unsigned v;
	uint32_t i;
	int rc = 0;

	for (v = 0; v < VARIANTS && rc == 0; v++)
		if ((mid[v] = tp_ctx_new()) == NULL ||
		    tp_midstate(mid[v], c->payload[v], o->frame_bytes) != 0)
			rc = -1;
	for (i = 0; i < o->streams && rc == 0; i++) {
		s = &c->s[i];
		s->id = i;
		s->quota = o->bytes / o->streams + (i < o->bytes % o->streams);
		if ((s->tmp = tp_ctx_new()) == NULL)
			rc = -1;
		for (v = 0; v < VARIANTS && rc == 0; v++)
			if ((s->mid[v] = tp_ctx_new()) == NULL ||
			    tp_ctx_copy(s->mid[v], mid[v]) != 0)
				rc = -1;
		if (rc != 0)
			snprintf(c->why, sizeof(c->why), "cannot set up "
			    "SHA-256 contexts");
		else if ((s->fd = kv_connect(o->host, o->port, o->timeout_s,
		    c->why, sizeof(c->why))) < 0)
			rc = -1;
		if (rc != 0)
			break;
		kv_set_timeouts(s->fd, 30);
		tp_attach_encode(b, c->run_id, i);
		if (kv_write_full(s->fd, b, sizeof(b)) != 0) {
			snprintf(c->why, sizeof(c->why), "stream %u: attach "
			    "failed: %s", (unsigned)i, strerror(errno));
			rc = -1;
		}
	}
	for (v = 0; v < VARIANTS; v++)
		tp_ctx_free(mid[v]);
	return rc;
}

/* Start one sender thread per stream; returns how many started. */
static uint32_t
start_senders(struct client *c)
{
	struct targ *a;
	uint32_t i;

	c->t0 = kv_mono();
	c->deadline = c->t0 + c->o->duration_s;
	for (i = 0; i < c->o->streams; i++) {
		if ((a = malloc(sizeof(*a))) == NULL)
			break;
		a->c = c;
		a->s = &c->s[i];
		pthread_mutex_lock(&c->mu);
		c->running++;
		pthread_mutex_unlock(&c->mu);
		if (pthread_create(&c->s[i].t, NULL, thread_main, a) != 0) {
			pthread_mutex_lock(&c->mu);
			c->running--;
			pthread_mutex_unlock(&c->mu);
			free(a);
			break;
		}
	}
	return i;
}

/* STATS round trip: each stream's server-verified bytes so far. */
static int
poll_stats(struct client *c)
{
	uint8_t b[TP_MAX_BODY];
	uint32_t len, i, n = c->o->streams;

	if (tp_send_ctl(c->ctl, TP_STATS, NULL, 0) != 0) {
		snprintf(c->why, sizeof(c->why), "server %s:%s: control "
		    "connection lost", c->o->host, c->o->port);
		return -1;
	}
	if (recv_ctl(c, TP_STATS_REPLY, b, &len) != 0)
		return -1;
	if (len != 4 + 8 * n || tp_get32(b) != n) {
		snprintf(c->why, sizeof(c->why), "bad STATS reply");
		return -1;
	}
	for (i = 0; i < n; i++)
		c->s[i].verified = tp_get64(b + 4 + 8 * i);
	return 0;
}

struct tinfo {
	uint64_t retrans;
	double rtt_s, cwnd_bytes;
};

static void
tcp_info(int fd, struct tinfo *t)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(t, 0, sizeof(*t));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) {
		t->rtt_s = NAN;
		t->cwnd_bytes = NAN;
		return;
	}
	t->retrans = ti.tcpi_total_retrans;
	t->rtt_s = ti.tcpi_rtt / 1e6;
	t->cwnd_bytes = (double)ti.tcpi_snd_cwnd * ti.tcpi_snd_mss;
}

static json_t *
interval_rec(const char *scope, double ta, double tb, uint64_t sent,
    uint64_t ver, uint64_t retrans, double rtt, double cwnd)
{
	json_t *r = json_object();
	double dt = tb - ta;

	jset_str(r, "kind", "interval");
	jset_str(r, "scope", scope);
	jset_num(r, "t_start_s", ta);
	jset_num(r, "t_end_s", tb);
	jset_u64(r, "sent_bytes", sent);
	jset_u64(r, "verified_bytes", ver);
	jset_num(r, "sent_bytes_per_s", dt > 0 ? (double)sent / dt : NAN);
	jset_num(r, "verified_bytes_per_s", dt > 0 ? (double)ver / dt : NAN);
	jset_u64(r, "retransmits", retrans);
	jset_num(r, "rtt_s", rtt);
	jset_num(r, "cwnd_bytes", cwnd);
	return r;
}

/* Interval records (one per stream, then the sum) for [ta, tb). */
static int
print_interval(struct client *c, double ta, double tb)
{
	uint64_t ss = 0, sv = 0, sr = 0, sent, ver, re;
	double rtt = 0, cwnd = 0;
	struct tinfo ti;
	struct sender *s;
	json_t *r;
	uint32_t i;
	int rc = 0;

	for (i = 0; i < c->o->streams; i++) {
		s = &c->s[i];
		tcp_info(s->fd, &ti);
		sent = atomic_load(&s->sent) - s->last_sent;
		ver = s->verified - s->last_verified;
		re = ti.retrans - s->last_retrans;
		s->last_sent += sent;
		s->last_verified += ver;
		s->last_retrans = ti.retrans;
		r = interval_rec("stream", ta, tb, sent, ver, re, ti.rtt_s,
		    ti.cwnd_bytes);
		jset_u64(r, "stream", i);
		rc |= jsonl_write(c->out, r, false);
		json_decref(r);
		ss += sent;
		sv += ver;
		sr += re;
		rtt += ti.rtt_s;
		cwnd += ti.cwnd_bytes;
	}
	r = interval_rec("sum", ta, tb, ss, sv, sr, rtt / c->o->streams, cwnd);
	rc |= jsonl_write(c->out, r, true);
	json_decref(r);
	return rc;
}

/* Wait for the senders, printing interval records; -1 if the server went. */
static int
run_intervals(struct client *c)
{
	double iv = c->o->interval_s, last = c->t0, next = c->t0 + iv, now;
	struct timespec ts;
	int running;

	for (;;) {
		pthread_mutex_lock(&c->mu);
		running = c->running;
		if (running > 0) {
			now = kv_mono();
			clock_gettime(CLOCK_REALTIME, &ts);
			now = iv > 0 && next - now < 0.1 ? next - now : 0.1;
			ts.tv_nsec += (long)(now > 0 ? now * 1e9 : 0);
			while (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&c->cv, &c->mu, &ts);
			running = c->running;
		}
		pthread_mutex_unlock(&c->mu);
		now = kv_mono();
		if (iv > 0 && (now >= next || running == 0) && now - last > 1e-3) {
			if (poll_stats(c) != 0)
				return -1;
			print_interval(c, last - c->t0, now - c->t0);
			last = now;
			while (next <= now)
				next += iv;
		}
		if (running == 0)
			return 0;
	}
}

/* DONE and RESULT; fills each sender's res, *elapsed from the server. */
static int
collect(struct client *c, double *elapsed)
{
	uint8_t b[TP_MAX_BODY];
	uint32_t len, i, n = c->o->streams;
	struct tp_result *r;

	tp_put32(b, n);
	for (i = 0; i < n; i++) {
		tp_put64(b + 4 + 16 * i, atomic_load(&c->s[i].frames));
		tp_put64(b + 12 + 16 * i, atomic_load(&c->s[i].sent));
	}
	kv_set_timeouts(c->ctl, c->o->timeout_s + 60);
	if (tp_send_ctl(c->ctl, TP_DONE, b, 4 + 16 * n) != 0) {
		snprintf(c->why, sizeof(c->why), "server %s:%s: control "
		    "connection lost before DONE", c->o->host, c->o->port);
		return -1;
	}
	if (recv_ctl(c, TP_RESULT, b, &len) != 0)
		return -1;
	if (len != 12 + 32 * n || tp_get32(b) != n) {
		snprintf(c->why, sizeof(c->why), "bad RESULT reply");
		return -1;
	}
	*elapsed = (double)tp_get64(b + 4) / 1e9;
	for (i = 0; i < n; i++) {
		r = &c->s[i].res;
		r->verified_bytes = tp_get64(b + 12 + 32 * i);
		r->frames_ok = tp_get64(b + 20 + 32 * i);
		r->frames_bad = tp_get64(b + 28 + 32 * i);
		r->seq_gaps = tp_get64(b + 36 + 32 * i);
	}
	return 0;
}

static void
options_into(json_t *r, const struct tpc_opts *o)
{
	jset_str(r, "host", o->host);
	jset_num(r, "port", atof(o->port));
	jset_u64(r, "streams", o->streams);
	jset_u64(r, "frame_bytes", o->frame_bytes);
	jset_str(r, "verify", o->verify ? "sha256" : "none");
	if (o->bytes) {
		jset_null(r, "duration_s");
		jset_u64(r, "bytes", o->bytes);
	} else {
		jset_num(r, "duration_s", o->duration_s);
		jset_null(r, "bytes");
	}
	jset_num(r, "interval_s", o->interval_s);
	if (o->rate > 0)
		jset_num(r, "rate_bytes_per_s", o->rate);
	else
		jset_null(r, "rate_bytes_per_s");
	jset_u64(r, "rtt_samples", o->rtt_samples);
	jset_num(r, "timeout_s", o->timeout_s);
}

/* The summary record; returns the exit status it implies. */
static int
summary(struct client *c, double elapsed, bool have_result)
{
	struct tp_result t = { 0 };
	uint64_t sent = 0, frames = 0, retrans = 0;
	char hex[2 * TP_RUNID_LEN + 1];
	json_t *r = json_object(), *per = json_array(), *p;
	struct tinfo ti;
	struct sender *s;
	bool ok;
	uint32_t i;

	for (i = 0; i < c->o->streams; i++) {
		s = &c->s[i];
		if (!have_result)
			s->res.verified_bytes = s->verified;
		sent += atomic_load(&s->sent);
		frames += atomic_load(&s->frames);
		t.verified_bytes += s->res.verified_bytes;
		t.frames_ok += s->res.frames_ok;
		t.frames_bad += s->res.frames_bad;
		t.seq_gaps += s->res.seq_gaps;
		tcp_info(s->fd, &ti);
		retrans += ti.retrans;
		p = json_object();
		jset_u64(p, "stream", i);
		jset_u64(p, "sent_bytes", atomic_load(&s->sent));
		jset_u64(p, "sent_frames", atomic_load(&s->frames));
		jset_u64(p, "verified_bytes", s->res.verified_bytes);
		jset_u64(p, "frames_ok", s->res.frames_ok);
		jset_u64(p, "frames_bad", s->res.frames_bad);
		jset_u64(p, "seq_gaps", s->res.seq_gaps);
		json_array_append_new(per, p);
	}
	ok = have_result && t.frames_bad == 0 && t.seq_gaps == 0 &&
	    t.frames_ok == frames && t.verified_bytes == sent;
	kv_hex(c->run_id, TP_RUNID_LEN, hex);
	jset_str(r, "kind", "summary");
	jset_str(r, "role", "client");
	jset_str(r, "run_id", hex);
	options_into(r, c->o);
	jset_u64(r, "sent_bytes", sent);
	jset_u64(r, "sent_frames", frames);
	jset_u64(r, "verified_bytes", t.verified_bytes);
	if (have_result) {
		jset_u64(r, "frames_ok", t.frames_ok);
		jset_u64(r, "frames_bad", t.frames_bad);
		jset_u64(r, "seq_gaps", t.seq_gaps);
		jset_num(r, "elapsed_s", elapsed);
		jset_num(r, "goodput_bytes_per_s", elapsed > 0 ?
		    (double)t.verified_bytes / elapsed : NAN);
	} else {
		jset_null(r, "frames_ok");
		jset_null(r, "frames_bad");
		jset_null(r, "seq_gaps");
		jset_null(r, "elapsed_s");
		jset_null(r, "goodput_bytes_per_s");
	}
	jset_num(r, "client_elapsed_s", kv_mono() - c->t0);
	jset_u64(r, "retransmits", retrans);
	jset_num(r, "rtt_min_s", c->nrtt ? c->rtt[0] : NAN);
	jset_num(r, "rtt_p50_s", kv_percentile(c->rtt, c->nrtt, 50));
	jset_num(r, "rtt_p99_s", kv_percentile(c->rtt, c->nrtt, 99));
	jset_bool(r, "verified", ok);
	jset_str(r, "state", !have_result ? "server_lost" : ok ? "ok" :
	    "verification_failed");
	json_object_set_new(r, "per_stream", per);
	if (jsonl_write(c->out, r, true) != 0)
		ok = false;
	json_decref(r);
	return !have_result ? KV_UNAVAILABLE : ok ? KV_OK : KV_FAIL;
}

static void
client_free(struct client *c)
{
	uint32_t i;
	unsigned v;

	for (i = 0; c->s && i < c->o->streams; i++) {
		if (c->s[i].fd > 0)
			close(c->s[i].fd);
		tp_ctx_free(c->s[i].tmp);
		for (v = 0; v < VARIANTS; v++)
			tp_ctx_free(c->s[i].mid[v]);
	}
	for (v = 0; v < VARIANTS; v++)
		free(c->payload[v]);
	if (c->ctl >= 0)
		close(c->ctl);
	free(c->s);
	free(c->rtt);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
}

int
tpc_run(const struct tpc_opts *o, FILE *out)
{
	struct client c = { .o = o, .out = out, .ctl = -1 };
	double elapsed = 0;
	uint32_t started = 0, i;
	int status = KV_OK, lost = 0;

	signal(SIGPIPE, SIG_IGN);
	pthread_mutex_init(&c.mu, NULL);
	pthread_cond_init(&c.cv, NULL);
	if ((c.s = calloc(o->streams, sizeof(*c.s))) == NULL ||
	    make_payloads(&c) != 0) {
		kv_warn("out of memory or entropy for the payloads");
		client_free(&c);
		return KV_SOFTWARE;
	}
	status = handshake(&c);
	if (status == KV_OK && ping(&c) != 0)
		status = KV_UNAVAILABLE;
	if (status == KV_OK && open_streams(&c) != 0)
		status = KV_UNAVAILABLE;
	if (status != KV_OK) {
		error_record(&c, c.why);
		client_free(&c);
		return status;
	}
	started = start_senders(&c);
	if (started < o->streams)
		atomic_store(&c.stop, 1);
	if (run_intervals(&c) != 0) {
		lost = 1;
		atomic_store(&c.stop, 1);
		for (i = 0; i < o->streams; i++)
			shutdown(c.s[i].fd, SHUT_RDWR);
	}
	for (i = 0; i < started; i++)
		pthread_join(c.s[i].t, NULL);
	if (!lost && collect(&c, &elapsed) != 0)
		lost = 1;
	status = summary(&c, elapsed, !lost);
	if (lost)
		error_record(&c, c.why);
	else if (started < o->streams) {
		error_record(&c, "cannot start a sender thread per stream");
		status = KV_SOFTWARE;
	}
	client_free(&c);
	return status;
}
