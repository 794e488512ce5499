/* SPDX-License-Identifier: MIT */
#ifndef KV_READY_H
#define KV_READY_H

#include <stdbool.h>
#include <stddef.h>

/* Readiness probes for a service that was just started (session-run). */
struct ready {
	const char *tcp;	/* HOST:PORT accepts a connection */
	const char *http;	/* a GET of the URL answers 2xx */
	const char *cmd;	/* sh -c CMD exits 0 */
	double timeout_s;
};

/* Split HOST:PORT at the last ':' ("[v6]:port" too); 0 or -1. */
int ready_split_hostport(const char *s, char *host, size_t hlen, char *port,
    size_t plen);

/*
 * Set up what the probe needs (libcurl, loaded only for an HTTP probe, so
 * that it costs nothing to a start without one).  0, or -1 with the
 * reason in err.
 */
int ready_init(const struct ready *r, char *err, size_t errlen);

/*
 * One probe: true when the service answers (always true without one),
 * bounded by the monotonic time end (kv_mono): a TCP or HTTP probe gives
 * up then (or after 0.5 s / 1 s, if sooner); a --ready-cmd probe still
 * running then is killed with its whole process group, reaped, and
 * counts as not ready.
 */
bool ready_probe(const struct ready *r, double end);

/*
 * Probe every 100 ms until ready, the process behind pidfd exits, or the
 * timeout passes.  NULL when ready, else why not.
 */
const char *ready_wait(const struct ready *r, int pidfd);

#endif
