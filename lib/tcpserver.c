/* SPDX-License-Identifier: MIT */
/*
 * tcp-probe server: one thread per connection.  A control connection
 * becomes the session (one at a time); data connections attach to it by
 * run id and stream number, and each verifies its frames on its own
 * thread, so streams scale across cores.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "jsonl.h"
#include "net.h"
#include "sha.h"
#include "tcpprobe.h"
#include "tcpproto.h"

#define MAX_CONNS 1024
#define CHUNK (256u << 10)	/* a stream's buffer: payloads pass through it */

struct slot {
	int fd;
	bool attached, done;
	struct tp_seq seq;
	_Atomic uint64_t verified;
	double t_first, t_last;
};

struct session {
	struct tp_hello h;
	char peer[80];
	struct slot *s;
	int refs, ndone;
	bool closing;
	pthread_cond_t cv;
};

struct conn {
	int fd;
	char peer[80];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t outlock = PTHREAD_MUTEX_INITIALIZER;
static struct session *active;
static FILE *out;
static const struct tps_opts *opts;
static int nconns;
static atomic_int stop;
static atomic_int once_status;

/* Write rec (consumed) as one flushed line; stdout errors end the server. */
static void
emit(json_t *rec)
{
	int bad;

	pthread_mutex_lock(&outlock);
	bad = jsonl_write(out, rec, true) != 0;
	pthread_mutex_unlock(&outlock);
	json_decref(rec);
	if (bad)
		atomic_store(&stop, KV_IOERR + 1);
}

/* An error record on out and the same message on stderr. */
static void
report(const char *peer, const char *msg)
{
	json_t *rec = json_object();

	jset_str(rec, "kind", "error");
	jset_str(rec, "role", "server");
	jset_str(rec, "peer", peer);
	jset_str(rec, "error", msg);
	pthread_mutex_lock(&outlock);
	kv_warn("client %s: %s", peer, msg);
	pthread_mutex_unlock(&outlock);
	emit(rec);
}

int
tp_send_ctl(int fd, int type, const uint8_t *body, uint32_t len)
{
	uint8_t m[TP_CTL_HDR + TP_MAX_BODY];

	tp_ctl_header(m, (enum tp_type)type, len);
	if (len)
		memcpy(m + TP_CTL_HDR, body, len);
	return kv_write_full(fd, m, TP_CTL_HDR + len);
}

/* Read one control message after its 4-byte magic is already in h. */
static int
read_ctl(int fd, uint8_t h[TP_CTL_HDR], bool have_magic, uint8_t *type,
    uint8_t *body, uint32_t *len, char *err, size_t errlen)
{
	size_t off = have_magic ? 4 : 0;
	ssize_t n = kv_read_full(fd, h + off, TP_CTL_HDR - off);

	if (n <= 0) {
		snprintf(err, errlen, "%s", n == 0 ? "client closed the "
		    "control connection" : "control connection: read failed "
		    "or timed out");
		return -1;
	}
	if (tp_ctl_parse(h, type, len, err, errlen) != 0)
		return -1;
	if (*len && kv_read_full(fd, body, *len) != (ssize_t)*len) {
		snprintf(err, errlen, "truncated control message");
		return -1;
	}
	return 0;
}

/*
 * Fill hb with the next frame header, sliding byte by byte past
 * anything that is not one (counted as one bad frame per episode).
 * Returns 1 with *f set, 0 at a clean end of stream, -1 on a read error
 * or a stream that ends inside a header.
 */
static int
next_header(struct slot *sl, const char *peer, int fd, uint8_t hb[TP_FRAME_HDR],
    uint32_t max, struct tp_frame *f)
{
	static const uint8_t magic[4] = { 'K', 'V', 'G', 'F' };
	char err[160];
	size_t have = 0, k;
	ssize_t n;
	bool bad = false;

	for (;;) {
		n = kv_read_full(fd, hb + have, TP_FRAME_HDR - have);
		if (n == 0 && have == 0)
			return bad ? -1 : 0;
		if (n <= 0)
			return -1;
		if (sl->t_first == 0)
			sl->t_first = kv_mono();
		if (tp_frame_decode(hb, max, f, err, sizeof(err)) == 0)
			return 1;
		if (!bad) {
			sl->seq.r.frames_bad++;
			report(peer, err);
			bad = true;
		}
		for (k = 1; k < TP_FRAME_HDR; k++)
			if (memcmp(hb + k, magic, TP_FRAME_HDR - k < 4 ?
			    TP_FRAME_HDR - k : 4) == 0)
				break;
		have = TP_FRAME_HDR - k;
		memmove(hb, hb + k, have);
	}
}

/*
 * Read a payload of len bytes through buf (CHUNK bytes, reused: the
 * payload is never needed whole), hashing each piece as it arrives when
 * ctx is given (*dig_ok false if OpenSSL failed).  0, or -1 when the
 * stream ends or fails first.
 */
static int
read_payload(int fd, uint8_t *buf, uint32_t len, void *ctx, bool *dig_ok)
{
	size_t got = 0;
	ssize_t n;

	*dig_ok = ctx == NULL || tp_digest_begin(ctx) == 0;
	while (got < len) {
		n = read(fd, buf, len - got < CHUNK ? len - got : CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		if (ctx && *dig_ok && tp_digest_update(ctx, buf,
		    (size_t)n) != 0)
			*dig_ok = false;
		got += (size_t)n;
	}
	return 0;
}

/* Verify frames on one attached stream until it ends. */
static void
serve_stream(struct session *se, uint32_t id, int fd, const char *peer)
{
	struct slot *sl = &se->s[id];
	uint8_t hb[TP_FRAME_HDR], md[32];
	uint32_t max = se->h.frame_bytes;
	uint8_t *buf = malloc(CHUNK);
	void *ctx = tp_ctx_new();
	struct tp_frame f;
	char msg[160];
	bool ok, dig_ok;
	int rc;

	if (buf == NULL || ctx == NULL) {
		report(peer, "out of memory for a stream buffer");
		goto out;
	}
	while ((rc = next_header(sl, peer, fd, hb, max, &f)) == 1) {
		if (read_payload(fd, buf, f.len, se->h.verify ? ctx : NULL,
		    &dig_ok) != 0) {
			sl->seq.r.frames_bad++;
			snprintf(msg, sizeof(msg), "stream %u: truncated frame "
			    "(seq %llu, %u bytes announced)", (unsigned)id,
			    (unsigned long long)f.seq, (unsigned)f.len);
			report(peer, msg);
			break;
		}
		ok = f.stream == id;
		if (ok && se->h.verify == TP_VERIFY_SHA256)
			ok = dig_ok && tp_digest_end(ctx, hb, md) == 0 &&
			    memcmp(md, f.sha, 32) == 0;
		if (tp_seq_feed(&sl->seq, f.seq, ok, f.len))
			atomic_store(&sl->verified, sl->seq.r.verified_bytes);
		sl->t_last = kv_mono();
	}
	if (rc < 0 && !se->closing) {
		snprintf(msg, sizeof(msg), "stream %u: %s", (unsigned)id,
		    errno == EAGAIN || errno == EWOULDBLOCK ? "timed out" :
		    "connection lost or ended inside a frame header");
		report(peer, msg);
	}
out:
	free(buf);
	tp_ctx_free(ctx);
}

/* Attach a data connection to the active session and serve it. */
static void
data_conn(struct conn *c)
{
	uint8_t b[TP_ATTACH_LEN], run[TP_RUNID_LEN];
	struct session *se;
	uint32_t id;
	char err[160];

	if (kv_read_full(c->fd, b + 4, TP_ATTACH_LEN - 4) != TP_ATTACH_LEN - 4) {
		report(c->peer, "truncated attach message");
		return;
	}
	tp_put32(b, TP_MAGIC_ATTACH);
	if (tp_attach_decode(b, run, &id, err, sizeof(err)) != 0) {
		report(c->peer, err);
		return;
	}
	pthread_mutex_lock(&lock);
	se = active;
	if (se == NULL || se->closing || memcmp(run, se->h.run_id,
	    TP_RUNID_LEN) != 0 || id >= se->h.streams || se->s[id].attached) {
		pthread_mutex_unlock(&lock);
		snprintf(err, sizeof(err), "attach for stream %u of no "
		    "running session", (unsigned)id);
		report(c->peer, err);
		return;
	}
	se->s[id].attached = true;
	se->s[id].fd = c->fd;
	se->refs++;
	pthread_mutex_unlock(&lock);

	serve_stream(se, id, c->fd, c->peer);

	pthread_mutex_lock(&lock);
	se->s[id].done = true;
	se->ndone++;
	se->refs--;
	pthread_cond_broadcast(&se->cv);
	pthread_mutex_unlock(&lock);
}

/* Reply to STATS with each stream's verified bytes so far. */
static int
send_stats(int fd, struct session *se)
{
	uint8_t b[4 + 8 * TP_MAX_STREAMS];
	uint32_t i;

	tp_put32(b, se->h.streams);
	for (i = 0; i < se->h.streams; i++)
		tp_put64(b + 4 + 8 * i, atomic_load(&se->s[i].verified));
	return tp_send_ctl(fd, TP_STATS_REPLY, b, 4 + 8 * se->h.streams);
}

/*
 * DONE: wait (bounded) for every stream to end and close the books with
 * the client's frame counts: the summed result, and the RESULT body in
 * b (its length returned, or -1 for a bad DONE).
 */
static int
finish(struct session *se, const uint8_t *body, uint32_t len,
    struct tp_result *sum, double *elapsed, uint8_t *b)
{
	double t0 = 0, t1 = 0, limit = kv_mono() + opts->idle_s;
	struct timespec ts;
	uint32_t i, n = se->h.streams;
	struct tp_result *r;

	if (len != 4 + 16 * n || tp_get32(body) != n)
		return -1;
	pthread_mutex_lock(&lock);
	while (se->ndone < (int)n && kv_mono() < limit) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&se->cv, &lock, &ts);
	}
	/* no late attach from here on; streams still open are cut */
	se->closing = true;
	for (i = 0; i < n; i++)
		if (se->s[i].attached && !se->s[i].done)
			shutdown(se->s[i].fd, SHUT_RDWR);
	while (se->refs > 0)
		pthread_cond_wait(&se->cv, &lock);
	pthread_mutex_unlock(&lock);
	memset(sum, 0, sizeof(*sum));
	tp_put32(b, n);
	for (i = 0; i < n; i++) {
		tp_seq_finish(&se->s[i].seq, tp_get64(body + 4 + 16 * i));
		r = &se->s[i].seq.r;
		tp_put64(b + 12 + 32 * i, r->verified_bytes);
		tp_put64(b + 20 + 32 * i, r->frames_ok);
		tp_put64(b + 28 + 32 * i, r->frames_bad);
		tp_put64(b + 36 + 32 * i, r->seq_gaps);
		sum->verified_bytes += r->verified_bytes;
		sum->frames_ok += r->frames_ok;
		sum->frames_bad += r->frames_bad;
		sum->seq_gaps += r->seq_gaps;
		if (se->s[i].t_first && (t0 == 0 || se->s[i].t_first < t0))
			t0 = se->s[i].t_first;
		if (se->s[i].t_last > t1)
			t1 = se->s[i].t_last;
	}
	*elapsed = t1 > t0 ? t1 - t0 : 0;
	tp_put64(b + 4, (uint64_t)(*elapsed * 1e9));
	return (int)(12 + 32 * n);
}

static void
session_record(struct session *se, const struct tp_result *r, double el,
    const char *state)
{
	json_t *rec = json_object();
	char hex[2 * TP_RUNID_LEN + 1];

	kv_hex(se->h.run_id, TP_RUNID_LEN, hex);
	jset_str(rec, "kind", "session");
	jset_str(rec, "role", "server");
	jset_str(rec, "peer", se->peer);
	jset_str(rec, "run_id", hex);
	jset_u64(rec, "streams", se->h.streams);
	jset_u64(rec, "frame_bytes", se->h.frame_bytes);
	jset_str(rec, "verify", se->h.verify ? "sha256" : "none");
	jset_u64(rec, "verified_bytes", r->verified_bytes);
	jset_u64(rec, "frames_ok", r->frames_ok);
	jset_u64(rec, "frames_bad", r->frames_bad);
	jset_u64(rec, "seq_gaps", r->seq_gaps);
	jset_num(rec, "elapsed_s", el);
	if (el > 0)
		jset_num(rec, "goodput_bytes_per_s", (double)r->verified_bytes / el);
	else
		jset_null(rec, "goodput_bytes_per_s");
	jset_str(rec, "state", state);
	emit(rec);
}

/* Run the control loop of a session until DONE or the client is gone. */
static int
control_loop(int fd, struct session *se)
{
	uint8_t h[TP_CTL_HDR], body[TP_MAX_BODY], type;
	uint8_t res[12 + 32 * TP_MAX_STREAMS];
	uint32_t len;
	char err[160];
	struct tp_result sum = { 0 };
	double el = 0;
	bool bad;
	int n;

	for (;;) {
		if (read_ctl(fd, h, false, &type, body, &len, err,
		    sizeof(err)) != 0)
			break;
		if (type == TP_PING && len == 8) {
			if (tp_send_ctl(fd, TP_PONG, body, 8) != 0)
				break;
		} else if (type == TP_STATS && len == 0) {
			if (send_stats(fd, se) != 0)
				break;
		} else if (type == TP_DONE) {
			if ((n = finish(se, body, len, &sum, &el, res)) < 0) {
				snprintf(err, sizeof(err), "bad DONE message");
				break;
			}
			/* the record first: once RESULT is out, it is there */
			bad = sum.frames_bad || sum.seq_gaps;
			session_record(se, &sum, el, bad ?
			    "verification_failed" : "ok");
			if (tp_send_ctl(fd, TP_RESULT, res, (uint32_t)n) != 0)
				report(se->peer, "the client left before RESULT");
			return bad ? KV_FAIL : KV_OK;
		} else {
			snprintf(err, sizeof(err), "unexpected control message "
			    "type %u (%u bytes)", (unsigned)type, (unsigned)len);
			break;
		}
	}
	report(se->peer, err);
	session_record(se, &sum, el, "aborted");
	return KV_FAIL;
}

/* Tear a session down: wake its streams, wait until none refers to it. */
static void
session_end(struct session *se)
{
	uint32_t i;

	pthread_mutex_lock(&lock);
	se->closing = true;
	for (i = 0; i < se->h.streams; i++)
		if (se->s[i].attached && !se->s[i].done)
			shutdown(se->s[i].fd, SHUT_RDWR);
	while (se->refs > 0)
		pthread_cond_wait(&se->cv, &lock);
	active = NULL;
	pthread_mutex_unlock(&lock);
	pthread_cond_destroy(&se->cv);
	free(se->s);
	free(se);
}

/* A control connection: HELLO, WELCOME, then the session. */
static void
control_conn(struct conn *c)
{
	uint8_t h[TP_CTL_HDR], body[TP_MAX_BODY], type, st[4];
	uint32_t len;
	struct tp_hello hello;
	struct session *se;
	char err[160];
	int status;

	tp_put32(h, TP_MAGIC_CTL);
	if (read_ctl(c->fd, h, true, &type, body, &len, err, sizeof(err))) {
		if (h[4] != TP_VERSION) {
			tp_put32(st, TP_BAD_VERSION);
			tp_send_ctl(c->fd, TP_WELCOME, st, 4);
		}
		report(c->peer, err);
		return;
	}
	if (type != TP_HELLO || tp_hello_decode(body, len, &hello, err,
	    sizeof(err)) != 0) {
		if (type != TP_HELLO)
			snprintf(err, sizeof(err), "expected HELLO, got "
			    "message type %u", (unsigned)type);
		tp_put32(st, TP_BAD_PARAMS);
		tp_send_ctl(c->fd, TP_WELCOME, st, 4);
		report(c->peer, err);
		return;
	}
	se = calloc(1, sizeof(*se));
	if (se == NULL || (se->s = calloc(hello.streams, sizeof(*se->s))) ==
	    NULL) {
		free(se);
		report(c->peer, "out of memory for a session");
		return;
	}
	se->h = hello;
	snprintf(se->peer, sizeof(se->peer), "%s", c->peer);
	pthread_cond_init(&se->cv, NULL);
	pthread_mutex_lock(&lock);
	if (active != NULL) {
		pthread_mutex_unlock(&lock);
		pthread_cond_destroy(&se->cv);
		free(se->s);
		free(se);
		tp_put32(st, TP_BUSY);
		tp_send_ctl(c->fd, TP_WELCOME, st, 4);
		report(c->peer, "refused: another client's run is in progress");
		return;
	}
	active = se;
	pthread_mutex_unlock(&lock);
	tp_put32(st, TP_OK);
	status = tp_send_ctl(c->fd, TP_WELCOME, st, 4) == 0 ?
	    control_loop(c->fd, se) : KV_FAIL;
	session_end(se);
	if (opts->once) {
		atomic_store(&once_status, status);
		atomic_store(&stop, 1);
	}
}

static void *
conn_main(void *arg)
{
	struct conn *c = arg;
	uint8_t m[4];
	ssize_t n;
	char err[96];

	kv_set_timeouts(c->fd, opts->idle_s);
	n = kv_read_full(c->fd, m, 4);
	if (n != 4)
		report(c->peer, n == 0 ? "connected and closed without a "
		    "word" : "vanished or timed out before its first message");
	else if (tp_get32(m) == TP_MAGIC_CTL)
		control_conn(c);
	else if (tp_get32(m) == TP_MAGIC_ATTACH)
		data_conn(c);
	else {
		snprintf(err, sizeof(err), "not a tcp-probe client (first "
		    "bytes %02x %02x %02x %02x)", m[0], m[1], m[2], m[3]);
		report(c->peer, err);
	}
	close(c->fd);
	free(c);
	pthread_mutex_lock(&lock);
	nconns--;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static void
peer_name(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[64] = "?";
	int port = 0;

	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
			port = ntohs(a->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
			port = ntohs(a->sin6_port);
		}
	}
	snprintf(buf, len, "%s:%d", host, port);
}

/* Accept one connection and hand it to its own detached thread. */
static void
accept_one(int lfd)
{
	pthread_attr_t at;
	pthread_t t;
	struct conn *c;
	int one = 1;
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return;
	pthread_mutex_lock(&lock);
	if (nconns >= MAX_CONNS || (c = malloc(sizeof(*c))) == NULL) {
		pthread_mutex_unlock(&lock);
		close(fd);
		return;
	}
	nconns++;
	pthread_mutex_unlock(&lock);
	c->fd = fd;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	peer_name(fd, c->peer, sizeof(c->peer));
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 256 << 10);
	if (pthread_create(&t, &at, conn_main, c) != 0) {
		report(c->peer, "cannot start a thread for this connection");
		close(fd);
		free(c);
		pthread_mutex_lock(&lock);
		nconns--;
		pthread_mutex_unlock(&lock);
	}
	pthread_attr_destroy(&at);
}

int
tps_run(const struct tps_opts *o, FILE *fp)
{
	struct pollfd p;
	char err[256];
	json_t *rec;
	int lfd, busy;

	out = fp;
	opts = o;
	signal(SIGPIPE, SIG_IGN);
	lfd = kv_listen(o->bind, o->port, 128, err, sizeof(err));
	if (lfd < 0) {
		kv_warn("%s", err);
		return KV_UNAVAILABLE;
	}
	rec = json_object();
	jset_str(rec, "kind", "listening");
	jset_str(rec, "role", "server");
	jset_str(rec, "bind", o->bind ? o->bind : "*");
	jset_num(rec, "port", kv_local_port(lfd));
	emit(rec);
	p.fd = lfd;
	p.events = POLLIN;
	while (atomic_load(&stop) == 0) {
		if (poll(&p, 1, 200) > 0)
			accept_one(lfd);
	}
	close(lfd);
	/* let connection threads still talking to refused clients finish */
	for (busy = 50; busy > 0; busy--) {
		pthread_mutex_lock(&lock);
		if (nconns == 0)
			busy = 1;
		pthread_mutex_unlock(&lock);
		if (busy > 1)
			usleep(20000);
	}
	if (atomic_load(&stop) > 1)
		return KV_IOERR;
	return atomic_load(&once_status);
}
