/* SPDX-License-Identifier: MIT */
#ifndef KV_REQFEED_H
#define KV_REQFEED_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#define RF_CAP 1024		/* records read ahead of their send time */
#define RF_MAX_ARRIVAL 1e7	/* seconds: latest arrival_s (~116 days) */
#define RF_MAX_BYTES (64u << 20) /* request body bytes read ahead */

/* A record read ahead: a request to send (rec, body) or a bad line (err). */
struct rf_item {
	json_t *rec;		/* the record, without "prompt" unless kept */
	char *body;		/* the request body (oai_body) */
	char *err;		/* why the line is unusable */
	size_t line;
	size_t size;		/* strlen(body), 0 for a bad line */
	double sched;		/* arrival_s, 0 when absent */
};

/*
 * A thread that reads request records from a stream, checks them and
 * builds their bodies ahead of their send time, into a bounded queue.
 * The event loop polls fd (an eventfd), which becomes readable when the
 * queue goes from empty to non-empty and at the end of the input.
 */
struct reqfeed {
	pthread_mutex_t mu;
	pthread_cond_t notfull;
	pthread_t th;
	struct rf_item ring[RF_CAP];
	size_t head, n;
	size_t bytes;		/* body bytes queued */
	size_t max_bytes;	/* RF_MAX_BYTES */
	bool eof, ioerr;
	int fd;
	FILE *in;
	const char *model;
	bool chat, keep_prompt;
};

/*
 * Whether an item of size body bytes may join the queue now: fewer than
 * RF_CAP items, and the queued bytes stay within max_bytes (an item
 * always fits an empty queue, however large).  Caller holds q->mu.
 */
bool rf_fits(const struct reqfeed *q, size_t size);
/* Append *it, waiting while it does not fit; wakes the loop. */
void rf_push(struct reqfeed *q, struct rf_item *it);

/* Start reading in; 0, or -1 with errno. */
int rf_start(struct reqfeed *q, FILE *in, const char *model, bool chat,
    bool keep_prompt);
/* Copy the head to *it: 1, or 0 when the queue is empty. */
int rf_peek(struct reqfeed *q, struct rf_item *it);
/* Drop the head (its contents now belong to the caller). */
void rf_pop(struct reqfeed *q);
/* True when the input has ended and the queue is empty. */
bool rf_done(struct reqfeed *q);
/* Wait for the thread; true when reading failed (an I/O error). */
bool rf_stop(struct reqfeed *q);

#endif
