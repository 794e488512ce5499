/* SPDX-License-Identifier: MIT */
/* req-stream: open-loop streaming requests to an OpenAI-compatible server. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <curl/curl.h>

#include "clock.h"
#include "err.h"
#include "jsonl.h"
#include "oai.h"
#include "reqfeed.h"
#include "stats.h"
#include "opt.h"
#include "units.h"

#define ERRBODY_MAX 200
#define POOL_MAX 1024		/* idle easy handles kept */

struct opts {
	const char *url, *model, *key_env;
	char *endpoint;
	bool chat, fail_on_error, keep_prompt, have_ct;
	long long max_conc, warmup;
	double timeout, connect_timeout;
};

struct req {
	struct rf_item it;
	struct req *next;	/* waiting for a slot */
	CURL *h;
	struct oai_stream st;
	double due, slot, sent;
	long conc;
	bool ctype_seen;	/* Content-Type checked */
	char errbody[ERRBODY_MAX + 1];
	size_t errlen;
	char cerr[CURL_ERROR_SIZE];
};

struct loop {
	const struct opts *o;
	struct reqfeed *q;
	CURLM *m;
	int ep, tsend, tcurl;
	double tsend_at, tcurl_at;	/* armed deadlines, -1 when off */
	struct curl_slist *hdrs;
	struct req *whead, *wtail;
	CURL **pool;		/* finished easy handles, reset for reuse */
	size_t npool, cpool;
	long active, queued;
	size_t sent, done, failed;
	double t0, last_progress;
	bool tty, bad, ioerr;
};

static noreturn void
usage(int status)
{
	fprintf(status ? stderr : stdout,
	    "usage: req-stream --url URL --model NAME [--api-key-env VAR] [--chat]\n"
	    "                  [--connect-timeout DURATION] [--fail-on-error]\n"
	    "                  [--keep-prompt] [--max-concurrency C]\n"
	    "                  [--timeout DURATION] [--warmup N]\n");
	exit(status);
}

static double
now_s(const struct loop *L)
{
	return kv_mono() - L->t0;
}

/* ---- libcurl's socket and timer callbacks ---- */

static int
on_socket(CURL *e, curl_socket_t s, int what, void *userp, void *sockp)
{
	struct loop *L = userp;
	struct epoll_event ev = { 0 };
	int op = sockp ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;

	if (what == CURL_POLL_REMOVE) {
		if (sockp)
			epoll_ctl(L->ep, EPOLL_CTL_DEL, s, NULL);
		curl_multi_assign(L->m, s, NULL);
		return 0;
	}
	ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0) |
	    (what & CURL_POLL_OUT ? EPOLLOUT : 0);
	ev.data.fd = s;
	if (epoll_ctl(L->ep, op, s, &ev) != 0)
		kv_die(KV_SOFTWARE, "epoll_ctl:");
	curl_multi_assign(L->m, s, L);
	return 0;
}

/*
 * Arm timer fd tfd (whose current deadline is *armed, -1 when off) to
 * fire at absolute monotonic time at, or disarm it when off; a timer
 * already set that way is left alone (one syscall fewer per pass).
 */
static void
arm(int tfd, double *armed, double at, bool off)
{
	struct itimerspec ts = { 0 };

	if (off ? *armed < 0 : *armed == at)
		return;
	if (!off) {
		ts.it_value.tv_sec = (time_t)at;
		ts.it_value.tv_nsec = (long)((at - (double)ts.it_value.tv_sec)
		    * 1e9);
		if (ts.it_value.tv_sec == 0 && ts.it_value.tv_nsec == 0)
			ts.it_value.tv_nsec = 1;
	}
	if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &ts, NULL) != 0)
		kv_die(KV_SOFTWARE, "timerfd_settime:");
	*armed = off ? -1 : at;
}

static int
on_timer(CURLM *m, long ms, void *userp)
{
	struct loop *L = userp;

	/* 0 means now: an absolute time in the past fires at once */
	arm(L->tcurl, &L->tcurl_at, kv_mono() + (double)ms / 1e3, ms < 0);
	return 0;
}

/* Once per response: a 2xx body must be an event stream. */
static void
check_ctype(struct req *r)
{
	char *ct = NULL;

	if (r->ctype_seen)
		return;
	r->ctype_seen = true;
	curl_easy_getinfo(r->h, CURLINFO_CONTENT_TYPE, &ct);
	oai_content_type(&r->st, ct);
}

static size_t
on_data(char *p, size_t size, size_t n, void *arg)
{
	struct req *r = arg;
	long code = 0;
	size_t len = size * n, k;

	curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &code);
	if (code >= 300 || code < 200) {
		k = ERRBODY_MAX - r->errlen;
		k = len < k ? len : k;
		memcpy(r->errbody + r->errlen, p, k);
		r->errlen += k;
		r->errbody[r->errlen] = '\0';
		return len;
	}
	check_ctype(r);
	oai_feed(&r->st, p, len, kv_mono());
	return len;
}

/* ---- one request ---- */

static void
start(struct loop *L, struct req *r)
{
	const struct opts *o = L->o;
	CURL *h;

	if (L->npool > 0)
		h = L->pool[--L->npool];
	else if ((h = curl_easy_init()) == NULL)
		kv_die(KV_SOFTWARE, "curl_easy_init failed");
	r->h = h;
	curl_easy_setopt(h, CURLOPT_URL, o->endpoint);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->it.body);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
	    (curl_off_t)r->it.size);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, L->hdrs);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(h, CURLOPT_PRIVATE, r);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, r->cerr);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 8192L);
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(o->timeout * 1e3));
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
	    (long)(o->connect_timeout * 1e3));
	if (r->slot == 0)
		r->slot = r->due;
	r->conc = ++L->active;
	r->sent = now_s(L);
	L->sent++;
	if (curl_multi_add_handle(L->m, h) != CURLM_OK)
		kv_die(KV_SOFTWARE, "curl_multi_add_handle failed");
}

/*
 * The error class of a finished request, or NULL when it succeeded.  A
 * timeout is "connect" only when no byte of the request was sent: on a
 * reused keep-alive connection the connect time is 0 even though the
 * server got the request and then stalled.
 */
static const char *
classify(struct req *r, CURLcode rc, long code, char *detail, size_t dlen)
{
	long reqsize = 0;
	enum oai_end end;

	curl_easy_getinfo(r->h, CURLINFO_REQUEST_SIZE, &reqsize);
	if (code >= 200 && code < 300)
		check_ctype(r);
	if (rc == CURLE_OK)
		end = OAI_END_OK;
	else if (rc == CURLE_COULDNT_CONNECT ||
	    rc == CURLE_COULDNT_RESOLVE_HOST ||
	    (rc == CURLE_OPERATION_TIMEDOUT && reqsize == 0 && code == 0))
		end = OAI_END_NOCONNECT;
	else if (rc == CURLE_OPERATION_TIMEDOUT)
		end = OAI_END_TIMEOUT;
	else
		end = OAI_END_TRANSFER;
	return oai_classify(&r->st, end, code, r->cerr[0] ? r->cerr :
	    curl_easy_strerror(rc), r->errbody, detail, dlen);
}

static int
set_opt_ll(json_t *o, const char *key, long long v)
{
	return v < 0 ? jset_null(o, key) : jset_u64(o, key, (uint64_t)v);
}

static int
set_itl(json_t *rec, struct oai_stream *st)
{
	double p50 = NAN, p99 = NAN, max = NAN;

	if (st->nitl > 0) {
		kv_sort(st->itl, st->nitl);
		p50 = kv_percentile(st->itl, st->nitl, 50);
		p99 = kv_percentile(st->itl, st->nitl, 99);
		max = st->itl[st->nitl - 1];
	}
	return jset_num(rec, "itl_p50_s", p50) | jset_num(rec, "itl_p99_s", p99)
	    | jset_num(rec, "itl_max_s", max) |
	    jset_u64(rec, "itl_count", st->nitl);
}

/* Fill the result fields of r's record. */
static int
result(struct loop *L, struct req *r, CURLcode rc)
{
	struct oai_stream *st = &r->st;
	json_t *o = r->it.rec;
	char detail[256], hex[KV_SHA256_HEX] = "";
	const char *cls;
	long code = 0;
	double done = now_s(L), first = st->first_s < 0 ? NAN :
	    st->first_s - L->t0;
	long long out = st->completion_tokens >= 0 ? st->completion_tokens :
	    (long long)st->chunks;

	curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &code);
	cls = classify(r, rc, code, detail, sizeof(detail));
	if (oai_digest(st, hex) != 0)
		return -1;
	return jset_str(o, "kind", "result") | jset_bool(o, "ok", !cls) |
	    (code ? jset_u64(o, "http_status", (uint64_t)code) :
	    jset_null(o, "http_status")) |
	    (cls ? jset_str(o, "error", cls) : jset_null(o, "error")) |
	    (cls ? jset_str(o, "error_detail", detail) : 0) |
	    jset_num(o, "scheduled_s", r->it.sched) |
	    jset_num(o, "sent_s", r->sent) |
	    jset_num(o, "first_token_s", first) |
	    jset_num(o, "done_s", done) |
	    jset_num(o, "ttft_s", first - r->sent) |
	    jset_num(o, "e2e_s", done - r->sent) |
	    jset_num(o, "queue_s", r->slot - r->due) |
	    jset_num(o, "lag_s", r->sent - r->it.sched - (r->slot - r->due)) |
	    set_itl(o, st) |
	    set_opt_ll(o, "prompt_tokens", st->prompt_tokens) |
	    set_opt_ll(o, "cached_tokens", st->cached_tokens) |
	    jset_u64(o, "output_tokens", (uint64_t)out) |
	    jset_str(o, "output_sha256", hex) |
	    (st->finish_reason[0] ? jset_str(o, "finish_reason",
	    st->finish_reason) : jset_null(o, "finish_reason")) |
	    jset_u64(o, "concurrency_at_send", (uint64_t)r->conc);
}

static int
putbuf(const char *buf, size_t len, void *data)
{
	return fwrite(buf, 1, len, data) == len ? 0 : -1;
}

/* One compact line, reals to 12 significant digits (ns below 1000 s). */
static int
put_record(FILE *out, const json_t *rec)
{
	if (json_dump_callback(rec, putbuf, out, JSON_COMPACT |
	    JSON_REAL_PRECISION(12)) != 0 || putc('\n', out) == EOF ||
	    fflush(out) != 0)
		return -1;
	return 0;
}

/* Keep a finished easy handle for the next request (cheaper than anew). */
static void
recycle(struct loop *L, CURL *h)
{
	CURL **p;

	if (L->npool == POOL_MAX) {
		curl_easy_cleanup(h);
		return;
	}
	if (L->npool == L->cpool) {
		L->cpool = L->cpool ? 2 * L->cpool : 64;
		if ((p = realloc(L->pool, L->cpool * sizeof(*p))) == NULL) {
			curl_easy_cleanup(h);
			return;
		}
		L->pool = p;
	}
	curl_easy_reset(h);
	L->pool[L->npool++] = h;
}

static void
free_req(struct req *r)
{
	oai_free(&r->st);
	json_decref(r->it.rec);
	free(r->it.body);
	free(r->it.err);
	free(r);
}

static void
finish(struct loop *L, struct req *r, CURLcode rc)
{
	curl_multi_remove_handle(L->m, r->h);
	L->active--;
	L->done++;
	if (result(L, r, rc) != 0)
		kv_die(KV_SOFTWARE, "out of memory writing a result");
	if (!json_is_true(json_object_get(r->it.rec, "ok")))
		L->failed++;
	if (put_record(stdout, r->it.rec) != 0)
		L->ioerr = true;
	recycle(L, r->h);
	free_req(r);
	while (L->whead && (L->o->max_conc == 0 ||
	    L->active < L->o->max_conc)) {
		r = L->whead;
		L->whead = r->next;
		if (L->whead == NULL)
			L->wtail = NULL;
		L->queued--;
		r->slot = now_s(L);
		start(L, r);
	}
}

static void
reap(struct loop *L)
{
	CURLMsg *msg;
	struct req *r;
	int left;

	while ((msg = curl_multi_info_read(L->m, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &r);
		finish(L, r, msg->data.result);
	}
}

/* Send (or queue) every record that is due; report bad ones. */
static void
dispatch(struct loop *L)
{
	struct rf_item it;
	struct req *r;
	double t;

	while (rf_peek(L->q, &it)) {
		t = now_s(L);
		if (it.err == NULL && it.sched > t) {
			arm(L->tsend, &L->tsend_at, L->t0 + it.sched, false);
			return;
		}
		rf_pop(L->q);
		if (it.err) {
			L->bad = true;
			if (jsonl_error(stdout, "stdin", it.line, it.err) != 0)
				L->ioerr = true;
			free(it.err);
			continue;
		}
		if ((r = calloc(1, sizeof(*r))) == NULL ||
		    oai_init(&r->st, L->o->chat) != 0)
			kv_die(KV_SOFTWARE, "out of memory:");
		r->it = it;
		r->due = t;
		if (L->o->max_conc == 0 || L->active < L->o->max_conc) {
			start(L, r);
			continue;
		}
		if (L->wtail)
			L->wtail->next = r;
		else
			L->whead = r;
		L->wtail = r;
		L->queued++;
	}
	arm(L->tsend, &L->tsend_at, 0, true);
}

/* ---- the event loop ---- */

static bool
finished(struct loop *L)
{
	return L->active == 0 && L->whead == NULL && rf_done(L->q);
}

static void
progress(struct loop *L, bool last)
{
	double t = now_s(L);

	if (!L->tty || (!last && t - L->last_progress < 0.5))
		return;
	L->last_progress = t;
	fprintf(stderr, "\r%s: %zu sent, %zu done, %zu failed, %ld in flight, "
	    "%ld queued, %.1f req/s\033[K%s", kv_progname, L->sent, L->done,
	    L->failed, L->active, L->queued, t > 0 ? (double)L->done / t : 0,
	    last ? "\n" : "");
}

static void
on_events(struct loop *L, const struct epoll_event *ev, int n)
{
	uint64_t x;
	int i, fd, flags, running;

	for (i = 0; i < n; i++) {
		fd = ev[i].data.fd;
		if (fd == L->tsend || fd == L->q->fd) {
			if (read(fd, &x, sizeof(x)) < 0 && errno != EAGAIN)
				kv_die(KV_SOFTWARE, "read timer:");
			if (fd == L->tsend)
				L->tsend_at = -1;
			continue;
		}
		if (fd == L->tcurl) {
			if (read(fd, &x, sizeof(x)) < 0 && errno != EAGAIN)
				kv_die(KV_SOFTWARE, "read timer:");
			L->tcurl_at = -1;
			curl_multi_socket_action(L->m, CURL_SOCKET_TIMEOUT, 0,
			    &running);
			continue;
		}
		flags = (ev[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
		    (ev[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
		    (ev[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR :
		    0);
		curl_multi_socket_action(L->m, fd, flags, &running);
	}
}

static void
run(struct loop *L)
{
	struct epoll_event ev[256];
	int n;

	for (;;) {
		dispatch(L);
		if (L->ioerr)
			kv_die(KV_IOERR, "stdout: write error");
		if (finished(L))
			break;
		n = epoll_wait(L->ep, ev, 256, L->tty ? 250 : -1);
		if (n < 0 && errno != EINTR)
			kv_die(KV_SOFTWARE, "epoll_wait:");
		if (n > 0)
			on_events(L, ev, n);
		reap(L);
		progress(L, false);
	}
	progress(L, true);
}

/* ---- set-up ---- */

static size_t
discard(char *p, size_t size, size_t n, void *arg)
{
	return size * n;
}

/* Send n small requests one after another; die 69 if the server fails. */
static void
warmup(const struct opts *o, struct curl_slist *hdrs)
{
	char cerr[CURL_ERROR_SIZE] = "", *body;
	json_t *js;
	long code = 0;
	CURLcode rc;
	CURL *h;
	long long i;

	js = o->chat ? json_pack("{s:[{s:s,s:s}],s:i,s:b,s:s}", "messages",
	    "role", "user", "content", "warm up", "max_tokens", 1, "stream", 1,
	    "model", o->model) : json_pack("{s:s,s:i,s:b,s:s}", "prompt",
	    "warm up", "max_tokens", 1, "stream", 1, "model", o->model);
	body = js ? json_dumps(js, JSON_COMPACT) : NULL;
	json_decref(js);
	if (body == NULL)
		kv_die(KV_USAGE, "--model: cannot build a request (is the name "
		    "valid UTF-8?)");
	for (i = 0; i < o->warmup; i++) {
		if ((h = curl_easy_init()) == NULL)
			kv_die(KV_SOFTWARE, "curl_easy_init failed");
		curl_easy_setopt(h, CURLOPT_URL, o->endpoint);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
		curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
		curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(o->timeout * 1e3));
		curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
		    (long)(o->connect_timeout * 1e3));
		rc = curl_easy_perform(h);
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
		curl_easy_cleanup(h);
		if (rc != CURLE_OK || code != 200)
			kv_die(KV_UNAVAILABLE, "warm-up request to %s failed: "
			    "%s (is the server up? check --url)", o->endpoint,
			    rc != CURLE_OK ? (cerr[0] ? cerr :
			    curl_easy_strerror(rc)) : "HTTP status not 200");
	}
	free(body);
}



/* The endpoint: URL as given when it names a /v1/ path, else completed. */
static char *
endpoint(const char *url, bool chat)
{
	const char *tail = chat ? "chat/completions" : "completions";
	size_t n = strlen(url);
	char *s;
	int rc;

	if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8))
		kv_die(KV_USAGE, "--url: '%s' is not an http:// or https:// URL",
		    url);
	if (strstr(url, "/v1/"))
		return strdup(url);
	while (n > 0 && url[n - 1] == '/')
		n--;
	if (n >= 3 && memcmp(url + n - 3, "/v1", 3) == 0)
		rc = asprintf(&s, "%.*s/%s", (int)n, url, tail);
	else
		rc = asprintf(&s, "%.*s/v1/%s", (int)n, url, tail);
	return rc < 0 ? NULL : s;
}

static void
parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"api-key-env", required_argument, NULL, 'k'},
		{"chat", no_argument, NULL, 'c'},
		{"connect-timeout", required_argument, NULL, 'C'},
		{"fail-on-error", no_argument, NULL, 'F'},
		{"keep-prompt", no_argument, NULL, 'P'},
		{"max-concurrency", required_argument, NULL, 'j'},
		{"model", required_argument, NULL, 'm'},
		{"timeout", required_argument, NULL, 't'},
		{"url", required_argument, NULL, 'u'},
		{"warmup", required_argument, NULL, 'w'},
		{"help", no_argument, NULL, 'H'},
		{"version", no_argument, NULL, 'v'},
		{NULL, 0, NULL, 0}
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->timeout = 60;
	o->connect_timeout = 5;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'k': o->key_env = optarg; break;
		case 'c': o->chat = true; break;
		case 'C': o->connect_timeout = kv_opt_duration(
		    "--connect-timeout", optarg, 1e-3, 86400 * 7);
			o->have_ct = true; break;
		case 'F': o->fail_on_error = true; break;
		case 'P': o->keep_prompt = true; break;
		case 'j': o->max_conc = kv_opt_int("--max-concurrency", optarg, 1,
		    1000000); break;
		case 'm': o->model = optarg; break;
		case 't': o->timeout = kv_opt_duration("--timeout", optarg,
		    1e-3, 86400 * 7); break;
		case 'u': o->url = optarg; break;
		case 'w': o->warmup = kv_opt_int("--warmup", optarg, 0, 10000);
			break;
		case 'H': usage(0);
		case 'v': kv_version();
		default: usage(KV_USAGE);
		}
	}
	if (optind != argc)
		usage(KV_USAGE);
	if (o->url == NULL)
		kv_die(KV_USAGE, "--url is required (e.g. http://127.0.0.1:8000)");
	if (o->model == NULL)
		kv_die(KV_USAGE, "--model is required (the served model name)");
	if (!o->have_ct && o->connect_timeout > o->timeout)
		o->connect_timeout = o->timeout;
	if (o->connect_timeout > o->timeout)
		kv_die(KV_USAGE, "--connect-timeout must not exceed --timeout");
	if ((o->endpoint = endpoint(o->url, o->chat)) == NULL)
		kv_die(KV_SOFTWARE, "out of memory:");
}

/* Headers, the API key among them; the key is never printed. */
static struct curl_slist *
headers(const struct opts *o)
{
	struct curl_slist *h = NULL, *t;
	const char *key;
	char *auth;

	h = curl_slist_append(h, "Content-Type: application/json");
	h = h ? curl_slist_append(h, "Accept: text/event-stream") : NULL;
	h = h ? curl_slist_append(h, "Expect:") : NULL;
	if (h == NULL)
		kv_die(KV_SOFTWARE, "out of memory:");
	if (o->key_env == NULL)
		return h;
	key = getenv(o->key_env);
	if (key == NULL || key[0] == '\0')
		kv_die(KV_USAGE, "--api-key-env: the environment variable %s "
		    "is not set or empty", o->key_env);
	if (asprintf(&auth, "Authorization: Bearer %s", key) < 0)
		kv_die(KV_SOFTWARE, "out of memory:");
	t = curl_slist_append(h, auth);
	explicit_bzero(auth, strlen(auth));
	free(auth);
	if (t == NULL)
		kv_die(KV_SOFTWARE, "out of memory:");
	return t;
}

static void
setup(struct loop *L, struct reqfeed *q, const struct opts *o)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct rlimit rl;
	long maxc = o->max_conc ? (long)o->max_conc : 10000;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	signal(SIGPIPE, SIG_IGN);
	memset(L, 0, sizeof(*L));
	L->o = o;
	L->q = q;
	L->tty = isatty(STDERR_FILENO);
	L->tsend_at = L->tcurl_at = -1;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK ||
	    (L->m = curl_multi_init()) == NULL)
		kv_die(KV_SOFTWARE, "libcurl initialisation failed");
	L->hdrs = headers(o);
	curl_multi_setopt(L->m, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(L->m, CURLMOPT_SOCKETDATA, L);
	curl_multi_setopt(L->m, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(L->m, CURLMOPT_TIMERDATA, L);
	curl_multi_setopt(L->m, CURLMOPT_MAXCONNECTS, maxc);
	if ((L->ep = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	    (L->tsend = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK)) < 0 ||
	    (L->tcurl = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK)) < 0)
		kv_die(KV_SOFTWARE, "event loop set-up:");
	ev.data.fd = L->tsend;
	if (epoll_ctl(L->ep, EPOLL_CTL_ADD, L->tsend, &ev) != 0)
		kv_die(KV_SOFTWARE, "epoll_ctl:");
	ev.data.fd = L->tcurl;
	if (epoll_ctl(L->ep, EPOLL_CTL_ADD, L->tcurl, &ev) != 0)
		kv_die(KV_SOFTWARE, "epoll_ctl:");
}

int
main(int argc, char **argv)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct opts o;
	struct reqfeed q;
	struct loop L;
	int status = KV_OK;
	bool ioerr;

	kv_setprogname(argv[0]);
	parse(argc, argv, &o);
	setup(&L, &q, &o);
	warmup(&o, L.hdrs);
	if (rf_start(&q, stdin, o.model, o.chat, o.keep_prompt) != 0)
		kv_die(KV_SOFTWARE, "starting the input reader:");
	ev.data.fd = q.fd;
	if (epoll_ctl(L.ep, EPOLL_CTL_ADD, q.fd, &ev) != 0)
		kv_die(KV_SOFTWARE, "epoll_ctl:");
	L.t0 = kv_mono();
	run(&L);
	ioerr = rf_stop(&q);
	while (L.npool > 0)
		curl_easy_cleanup(L.pool[--L.npool]);
	free(L.pool);
	curl_multi_cleanup(L.m);
	curl_slist_free_all(L.hdrs);
	curl_global_cleanup();
	close(L.ep);
	close(L.tsend);
	close(L.tcurl);
	free(o.endpoint);
	if (ioerr)
		status = KV_IOERR;
	else if (L.bad)
		status = KV_DATAERR;
	else if (o.fail_on_error && L.failed > 0)
		status = KV_FAIL;
	return kv_fshut(status);
}
