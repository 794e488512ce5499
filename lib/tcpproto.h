/* SPDX-License-Identifier: MIT */
#ifndef KV_TCPPROTO_H
#define KV_TCPPROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * tcp-probe's wire protocol (man/tcp-probe.1, PROTOCOL).  Every integer
 * is big-endian.  Pure encoding and decoding: no I/O here.
 */
#define TP_VERSION	1
#define TP_MAGIC_CTL	0x4b564743u	/* "KVGC" control message */
#define TP_MAGIC_ATTACH	0x4b564753u	/* "KVGS" data stream attach */
#define TP_MAGIC_FRAME	0x4b564746u	/* "KVGF" data frame */

#define TP_CTL_HDR	12	/* magic, version, type, reserved, body length */
#define TP_ATTACH_LEN	32
#define TP_FRAME_HDR	64
#define TP_HASHED_HDR	32	/* header bytes covered by the frame digest */
#define TP_MAX_STREAMS	128
#define TP_MIN_FRAME	64u
#define TP_MAX_FRAME	(64u << 20)
#define TP_RUNID_LEN	16
#define TP_MAX_BODY	(12 + 32 * TP_MAX_STREAMS)

enum tp_type {
	TP_HELLO = 1, TP_WELCOME, TP_PING, TP_PONG, TP_STATS, TP_STATS_REPLY,
	TP_DONE, TP_RESULT
};

enum tp_verify { TP_VERIFY_NONE = 0, TP_VERIFY_SHA256 = 1 };

enum tp_welcome {
	TP_OK = 0, TP_BUSY = 1, TP_BAD_VERSION = 2, TP_BAD_PARAMS = 3
};

struct tp_hello {
	uint8_t run_id[TP_RUNID_LEN];
	uint32_t streams;
	uint32_t frame_bytes;
	uint8_t verify;
};

struct tp_frame {
	uint8_t version;
	uint8_t flags;
	uint32_t stream;
	uint64_t seq;
	uint32_t len;
	uint8_t sha[32];
};

/* Per-stream counters the server returns. */
struct tp_result {
	uint64_t verified_bytes, frames_ok, frames_bad, seq_gaps;
};

/* Big-endian helpers. */
void tp_put16(uint8_t *p, uint16_t v);
void tp_put32(uint8_t *p, uint32_t v);
void tp_put64(uint8_t *p, uint64_t v);
uint16_t tp_get16(const uint8_t *p);
uint32_t tp_get32(const uint8_t *p);
uint64_t tp_get64(const uint8_t *p);

/* A control header for a body of len bytes. */
void tp_ctl_header(uint8_t h[TP_CTL_HDR], enum tp_type type, uint32_t len);
/*
 * Check a received control header: 0 with *type and *len set, or -1 with
 * the reason in err (bad magic, wrong version, body over the bound).
 */
int tp_ctl_parse(const uint8_t h[TP_CTL_HDR], uint8_t *type, uint32_t *len,
    char *err, size_t errlen);

/* HELLO body (28 bytes). */
#define TP_HELLO_LEN 28
void tp_hello_encode(uint8_t b[TP_HELLO_LEN], const struct tp_hello *h);
/* 0, or -1 with the reason (stream count, frame size, verify mode). */
int tp_hello_decode(const uint8_t *b, size_t len, struct tp_hello *h,
    char *err, size_t errlen);

/* ATTACH message (32 bytes). */
void tp_attach_encode(uint8_t b[TP_ATTACH_LEN],
    const uint8_t run_id[TP_RUNID_LEN], uint32_t stream);
int tp_attach_decode(const uint8_t b[TP_ATTACH_LEN],
    uint8_t run_id[TP_RUNID_LEN], uint32_t *stream, char *err,
    size_t errlen);

/* Frame header (64 bytes). */
void tp_frame_encode(uint8_t b[TP_FRAME_HDR], const struct tp_frame *f);
/*
 * Decode and check a frame header against the session's frame bound:
 * magic, version and length.  0, or -1 with the reason.
 */
int tp_frame_decode(const uint8_t b[TP_FRAME_HDR], uint32_t max_len,
    struct tp_frame *f, char *err, size_t errlen);

/*
 * The server's sequence accounting for one stream: feed each frame's
 * sequence number and whether its digest verified.  A verified frame
 * with the expected number counts ok; one past it counts ok and records
 * a gap; one before it (a replay) counts bad.  tp_seq_finish compares
 * the next expected number with the frames the client says it sent.
 */
struct tp_seq {
	uint64_t expect;
	struct tp_result r;
};
/* Returns true when the frame's bytes count as verified. */
bool tp_seq_feed(struct tp_seq *s, uint64_t seq, bool digest_ok,
    uint32_t len);
void tp_seq_finish(struct tp_seq *s, uint64_t frames_sent);

/*
 * A frame's digest: SHA-256 of the payload followed by header bytes
 * 0..31 (magic through length), so a flipped sequence number or length
 * fails as surely as a flipped payload byte.  ctx is an EVP_MD_CTX the
 * caller owns (tp_ctx_new/tp_ctx_free).  0, or -1 on an OpenSSL error.
 */
void *tp_ctx_new(void);
void tp_ctx_free(void *ctx);
/* Copy the state of src into dst: 0 or -1. */
int tp_ctx_copy(void *dst, const void *src);
int tp_digest(void *ctx, const uint8_t *payload, uint32_t len,
    const uint8_t hdr[TP_HASHED_HDR], uint8_t md[32]);
/* The same digest in steps, for a payload that arrives in pieces. */
int tp_digest_begin(void *ctx);
int tp_digest_update(void *ctx, const uint8_t *p, size_t len);
int tp_digest_end(void *ctx, const uint8_t hdr[TP_HASHED_HDR], uint8_t md[32]);
/* Digest the payload only into ctx (a midstate to resume from). */
int tp_midstate(void *ctx, const uint8_t *payload, uint32_t len);
/* Finish a copy of midstate with the header bytes into md. */
int tp_digest_from(void *tmp, const void *midstate,
    const uint8_t hdr[TP_HASHED_HDR], uint8_t md[32]);

#endif
