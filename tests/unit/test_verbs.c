/* SPDX-License-Identifier: MIT */
/*
 * rdma-probe's posting rule (vb_plan/vb_retire), the part of the verbs
 * code that needs no device: a simulated completion queue retires the
 * signalled writes in order, per QP, and every run must end with every
 * posted write retired, none left unsignalled, and no lane stuck.
 */
#include <stdint.h>
#include <stdlib.h>

#include "verbs.h"
#include "unit.h"

#define LANES 3
#define FIFO 8192

struct sim {
	struct vb_lane lane[LANES];
	unsigned fifo[LANES][FIFO];	/* signalled writes in flight */
	unsigned head[LANES], tail[LANES];
};

/* Post on every lane what the rule allows; returns the count posted. */
static unsigned
post_all(struct sim *s, unsigned tx, unsigned sig, uint64_t iters, int stop)
{
	unsigned retire[16], k, j, i, n = 0;

	for (i = 0; i < LANES; i++) {
		k = vb_plan(&s->lane[i], tx, sig, iters, stop, 16, retire);
		for (j = 0; j < k; j++)
			if (retire[j])
				s->fifo[i][s->tail[i]++ % FIFO] = retire[j];
		n += k;
	}
	return n;
}

/* Complete one signalled write somewhere; 0 if none is in flight. */
static int
complete_one(struct sim *s, unsigned seed, int *bad)
{
	unsigned i, l;

	for (i = 0; i < LANES; i++) {
		l = (seed + i) % LANES;
		if (s->head[l] != s->tail[l]) {
			if (vb_retire(&s->lane[l], s->fifo[l][s->head[l]++ % FIFO]))
				(*bad)++;
			return 1;
		}
	}
	return 0;
}

/* A fixed-count run: every lane posts and retires exactly iters. */
static int
run_iters(unsigned tx, uint64_t iters)
{
	struct sim *s = calloc(1, sizeof(*s));
	unsigned sig = vb_signal_every(tx), step = 0, i;
	int bad = 0, ok = 1;

	/* As vb_write_run: until nothing can be posted or completed. */
	for (step = 0; step < 10000000; step++) {
		unsigned n = post_all(s, tx, sig, iters, 0);

		for (i = 0; i < LANES; i++)
			if (s->lane[i].outstanding > tx)
				bad++;
		if (!complete_one(s, step * 7919u, &bad) && n == 0)
			break;
	}
	for (i = 0; i < LANES; i++)
		ok &= s->lane[i].posted == iters && s->lane[i].done == iters &&
		    s->lane[i].outstanding == 0;
	free(s);
	return ok && bad == 0;
}

/* A duration run: post freely for a while, then stop and drain. */
static int
run_duration(unsigned tx, unsigned steps)
{
	struct sim *s = calloc(1, sizeof(*s));
	unsigned sig = vb_signal_every(tx), step = 0, i;
	int bad = 0, ok = 1;

	for (step = 0; step < steps; step++) {
		unsigned n = post_all(s, tx, sig, 0, 0);

		/* a lane full of unsignalled writes would be stuck */
		if (!complete_one(s, step * 31u, &bad) && n == 0)
			bad++;
	}
	for (; step < 10000000; step++) {
		unsigned n = post_all(s, tx, sig, 0, 1);

		if (!complete_one(s, step, &bad) && n == 0)
			break;
	}
	for (i = 0; i < LANES; i++)
		ok &= s->lane[i].posted == s->lane[i].done &&
		    s->lane[i].outstanding == 0 && s->lane[i].since_signal == 0 &&
		    s->lane[i].posted > 0;
	free(s);
	return ok && bad == 0;
}

int
main(void)
{
	static const unsigned tx[] = { 1, 2, 3, 7, 8, 9, 64, 128, 255, 1000, 4096 };
	static const uint64_t iters[] = { 1, 2, 5, 63, 127, 1000, 20001 };
	struct vb_lane l = { 0 };
	unsigned retire[16], k;
	size_t a, b;

	CHECK(vb_signal_every(1) == 1 && vb_signal_every(7) == 1);
	CHECK(vb_signal_every(8) == 2 && vb_signal_every(128) == 32);
	CHECK(vb_signal_every(4096) == 64);
	/* The completion loop's bound: only outstanding writes can stall,
	 * strictly after stall_s, and 0 means the default, never "forever". */
	CHECK(!vb_stalled(100.0, 50.0, 10.0, 0));
	CHECK(!vb_stalled(60.0, 50.0, 10.0, 4));
	CHECK(vb_stalled(60.5, 50.0, 10.0, 4));
	CHECK(!vb_stalled(50.0 + VB_STALL_S, 50.0, 0, 1));
	CHECK(vb_stalled(50.5 + VB_STALL_S, 50.0, 0, 1));
	CHECK(vb_stalled(1e9, 0.0, -1, 1));
	for (a = 0; a < sizeof(tx) / sizeof(tx[0]); a++) {
		for (b = 0; b < sizeof(iters) / sizeof(iters[0]); b++) {
			int ok = run_iters(tx[a], iters[b]);

			if (!ok)
				fprintf(stderr, "tx %u, %llu iterations\n", tx[a],
				    (unsigned long long)iters[b]);
			CHECK(ok);
		}
		if (!run_duration(tx[a], 1000))
			fprintf(stderr, "tx %u, duration run\n", tx[a]);
		CHECK(run_duration(tx[a], 1000));
		CHECK(run_duration(tx[a], 1));
	}

	/* tx 128: 16 per call, the 32nd closes a chunk retiring 32. */
	k = vb_plan(&l, 128, 32, 0, 0, 16, retire);
	CHECK(k == 16 && retire[15] == 0 && l.outstanding == 16);
	k = vb_plan(&l, 128, 32, 0, 0, 16, retire);
	CHECK(k == 16 && retire[15] == 32 && retire[14] == 0);
	k = vb_plan(&l, 128, 32, 0, 1, 16, retire);	/* stop: chunk closed */
	CHECK(k == 0);
	CHECK(vb_retire(&l, 33) == -1 && vb_retire(&l, 0) == -1);
	CHECK(vb_retire(&l, 32) == 0 && l.outstanding == 0 && l.done == 32);
	/* the last of iters is signalled whatever the chunk */
	memset(&l, 0, sizeof(l));
	k = vb_plan(&l, 128, 32, 5, 0, 16, retire);
	CHECK(k == 5 && retire[4] == 5 && retire[3] == 0);
	/* tx depth is a hard bound */
	memset(&l, 0, sizeof(l));
	k = vb_plan(&l, 4, 1, 0, 0, 16, retire);
	CHECK(k == 4 && retire[0] == 1 && retire[3] == 1);
	CHECK(vb_plan(&l, 4, 1, 0, 0, 16, retire) == 0);

	CHECK(vb_mtu_bytes(vb_mtu_enum(4096)) == 4096);
	CHECK(vb_mtu_bytes(vb_mtu_enum(256)) == 256);
	CHECK(vb_mtu_enum(1500) == 0);
	return DONE("test_verbs");
}
