/* SPDX-License-Identifier: MIT */
#ifndef KV_TCPPROBE_H
#define KV_TCPPROBE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* tcp-probe's two roles (man/tcp-probe.1).  Each writes JSON lines to out. */

struct tps_opts {
	const char *bind;	/* NULL: every address */
	const char *port;
	bool once;		/* serve one client, then exit */
	double idle_s;		/* a silent client is dropped after this */
};

/*
 * Serve clients one after another until killed (or, with once, until the
 * first control session ends).  A bad client is an error record and the
 * server carries on.  Returns an exit status.
 */
int tps_run(const struct tps_opts *o, FILE *out);

struct tpc_opts {
	const char *host, *port;
	uint32_t streams;
	uint32_t frame_bytes;
	int verify;		/* enum tp_verify */
	double duration_s;	/* used when bytes is 0 */
	uint64_t bytes;		/* total payload bytes over all streams */
	double interval_s;	/* 0: no interval records */
	double rate;		/* bytes/s over all streams, 0: unpaced */
	unsigned rtt_samples;
	double timeout_s;	/* connect and reply timeout */
};

/* Send one control message (header and body in one write): 0 or -1. */
int tp_send_ctl(int fd, int type, const uint8_t *body, uint32_t len);

/* Run one client measurement; returns an exit status. */
int tpc_run(const struct tpc_opts *o, FILE *out);

#endif
