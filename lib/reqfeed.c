/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "err.h"
#include "jsonl.h"
#include "oai.h"
#include "reqfeed.h"

static void
wake(struct reqfeed *q)
{
	uint64_t one = 1;

	if (write(q->fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		kv_warn("eventfd:");
}

bool
rf_fits(const struct reqfeed *q, size_t size)
{
	return q->n == 0 || (q->n < RF_CAP && size <= q->max_bytes &&
	    q->bytes <= q->max_bytes - size);
}

void
rf_push(struct reqfeed *q, struct rf_item *it)
{
	bool was_empty;

	pthread_mutex_lock(&q->mu);
	while (!rf_fits(q, it->size))
		pthread_cond_wait(&q->notfull, &q->mu);
	was_empty = q->n == 0;
	q->bytes += it->size;
	q->ring[(q->head + q->n++) % RF_CAP] = *it;
	pthread_mutex_unlock(&q->mu);
	/* the loop has a timer armed for a non-empty queue's head */
	if (was_empty)
		wake(q);
}

/* Check rec and build its body into it; on failure set it->err. */
static void
make_item(struct reqfeed *q, json_t *rec, struct rf_item *it)
{
	char err[256];
	double t = 0;

	if (jf_num(rec, "arrival_s", &t, err, sizeof(err)) == JF_BAD)
		it->err = strdup(err);
	else if (t < 0)
		it->err = strdup("arrival_s must not be negative");
	else if (!isfinite(t) || t > RF_MAX_ARRIVAL)
		it->err = strdup("arrival_s out of range (0 to 1e7 s)");
	else if ((it->body = oai_body(rec, q->model, q->chat, err,
	    sizeof(err))) == NULL)
		it->err = strdup(err);
	if (it->body == NULL) {
		json_decref(rec);
		if (it->err == NULL)
			it->err = strdup("out of memory");
		return;
	}
	if (!q->keep_prompt)
		json_object_del(rec, "prompt");
	it->rec = rec;
	it->size = strlen(it->body);
	it->sched = t;
}

static void *
reader(void *arg)
{
	struct reqfeed *q = arg;
	struct jsonl_reader r;
	struct rf_item it;
	enum jsonl_status st;
	json_t *rec;

	jsonl_init(&r, q->in, "stdin", 0);
	while ((st = jsonl_next(&r, &rec)) != JSONL_EOF) {
		memset(&it, 0, sizeof(it));
		it.line = r.lineno;
		if (st == JSONL_BAD && ferror(q->in)) {
			kv_warn("stdin: %s", r.err);
			q->ioerr = true;
			break;
		}
		if (st == JSONL_BAD)
			it.err = strdup(r.err);
		else
			make_item(q, rec, &it);
		if (it.err == NULL && it.rec == NULL)
			kv_die(KV_SOFTWARE, "out of memory");
		rf_push(q, &it);
	}
	jsonl_free(&r);
	pthread_mutex_lock(&q->mu);
	q->eof = true;
	pthread_mutex_unlock(&q->mu);
	wake(q);
	return NULL;
}

int
rf_start(struct reqfeed *q, FILE *in, const char *model, bool chat,
    bool keep_prompt)
{
	memset(q, 0, sizeof(*q));
	q->in = in;
	q->model = model;
	q->chat = chat;
	q->keep_prompt = keep_prompt;
	q->max_bytes = RF_MAX_BYTES;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->notfull, NULL);
	if ((q->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
		return -1;
	if ((errno = pthread_create(&q->th, NULL, reader, q)) != 0) {
		close(q->fd);
		return -1;
	}
	return 0;
}

int
rf_peek(struct reqfeed *q, struct rf_item *it)
{
	int have;

	pthread_mutex_lock(&q->mu);
	if ((have = q->n > 0))
		*it = q->ring[q->head];
	pthread_mutex_unlock(&q->mu);
	return have;
}

void
rf_pop(struct reqfeed *q)
{
	pthread_mutex_lock(&q->mu);
	if (q->n > 0) {
		q->bytes -= q->ring[q->head].size;
		q->head = (q->head + 1) % RF_CAP;
		q->n--;
		pthread_cond_signal(&q->notfull);
	}
	pthread_mutex_unlock(&q->mu);
}

bool
rf_done(struct reqfeed *q)
{
	bool done;

	pthread_mutex_lock(&q->mu);
	done = q->eof && q->n == 0;
	pthread_mutex_unlock(&q->mu);
	return done;
}

bool
rf_stop(struct reqfeed *q)
{
	pthread_join(q->th, NULL);
	close(q->fd);
	pthread_mutex_destroy(&q->mu);
	pthread_cond_destroy(&q->notfull);
	return q->ioerr;
}
