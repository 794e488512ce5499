/* SPDX-License-Identifier: MIT */
#ifndef KV_CTRSNAP_H
#define KV_CTRSNAP_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "promtext.h"

/*
 * counter-snap's parts (man/counter-snap.1): counter records from
 * Prometheus samples and sysfs files, and the delta between two
 * snapshots.  A counter record is
 *   {"kind":"counter","source":S,"name":N,"labels":{..},"value":V,
 *    "type":T,"t_unix_s":T}
 * with value null and "value_state" nan/+inf/-inf when not finite.
 */

/* Called with each new record (the callee owns it); non-zero stops. */
typedef int (*ctr_emit)(json_t *rec, void *ctx);

/* A counter record for a Prometheus sample. */
json_t *ctr_from_prom(const char *source, const struct prom_sample *s,
    double t_unix_s);

/*
 * Read the counters of an RDMA port (ports/PORT/counters/ and
 * hw_counters/) or of every port when port is NULL, under root (normally
 * "/sys").  port_xmit_data and port_rcv_data, which count 4-byte words,
 * are reported in bytes as port_xmit_data_bytes / port_rcv_data_bytes
 * with raw_name, raw_value and scale.  Returns 0, or -1 with err set when
 * the device or port does not exist or its name is not one directory
 * entry (empty, a '/', a leading '.') (*missing true both), or a file
 * cannot be read.
 */
int ctr_ib(const char *root, const char *dev, const char *port,
    double t_unix_s, ctr_emit emit, void *ctx, bool *missing, char *err,
    size_t errlen);

/* The same for /sys/class/net/IFACE/statistics/. */
int ctr_netdev(const char *root, const char *iface, double t_unix_s,
    ctr_emit emit, void *ctx, bool *missing, char *err, size_t errlen);

/*
 * The identity of a counter record (source, name, sorted labels) as a
 * string the caller frees; NULL with err set when a field is missing or
 * of the wrong type.
 */
char *ctr_key(const json_t *rec, char *err, size_t errlen);

/*
 * The delta record between before and after (either may be NULL for a
 * counter present in one snapshot only, state absent_before or
 * absent_after).  A counter whose value went down is a reset: reset
 * true and delta = the after value (it restarted from zero; null with
 * state negative_counter if that is negative); gauges and untyped
 * samples may go down without a reset.  NULL with err set on a bad record.
 */
json_t *ctr_delta(const json_t *before, const json_t *after, char *err,
    size_t errlen);

#endif
