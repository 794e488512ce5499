/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "tcpproto.h"

void
tp_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

void
tp_put32(uint8_t *p, uint32_t v)
{
	tp_put16(p, (uint16_t)(v >> 16));
	tp_put16(p + 2, (uint16_t)v);
}

void
tp_put64(uint8_t *p, uint64_t v)
{
	tp_put32(p, (uint32_t)(v >> 32));
	tp_put32(p + 4, (uint32_t)v);
}

uint16_t
tp_get16(const uint8_t *p)
{
	return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

uint32_t
tp_get32(const uint8_t *p)
{
	return (uint32_t)tp_get16(p) << 16 | tp_get16(p + 2);
}

uint64_t
tp_get64(const uint8_t *p)
{
	return (uint64_t)tp_get32(p) << 32 | tp_get32(p + 4);
}

void
tp_ctl_header(uint8_t h[TP_CTL_HDR], enum tp_type type, uint32_t len)
{
	tp_put32(h, TP_MAGIC_CTL);
	h[4] = TP_VERSION;
	h[5] = (uint8_t)type;
	tp_put16(h + 6, 0);
	tp_put32(h + 8, len);
}

int
tp_ctl_parse(const uint8_t h[TP_CTL_HDR], uint8_t *type, uint32_t *len,
    char *err, size_t errlen)
{
	if (tp_get32(h) != TP_MAGIC_CTL) {
		snprintf(err, errlen, "bad control magic 0x%08x",
		    (unsigned)tp_get32(h));
		return -1;
	}
	if (h[4] != TP_VERSION) {
		snprintf(err, errlen, "protocol version %u, expected %u",
		    (unsigned)h[4], TP_VERSION);
		return -1;
	}
	if (h[5] < TP_HELLO || h[5] > TP_RESULT) {
		snprintf(err, errlen, "unknown control message type %u",
		    (unsigned)h[5]);
		return -1;
	}
	*type = h[5];
	*len = tp_get32(h + 8);
	if (*len > TP_MAX_BODY) {
		snprintf(err, errlen, "control body of %u bytes over the "
		    "bound of %u", (unsigned)*len, TP_MAX_BODY);
		return -1;
	}
	return 0;
}

void
tp_hello_encode(uint8_t b[TP_HELLO_LEN], const struct tp_hello *h)
{
	memset(b, 0, TP_HELLO_LEN);
	memcpy(b, h->run_id, TP_RUNID_LEN);
	tp_put32(b + 16, h->streams);
	tp_put32(b + 20, h->frame_bytes);
	b[24] = h->verify;
}

int
tp_hello_decode(const uint8_t *b, size_t len, struct tp_hello *h, char *err,
    size_t errlen)
{
	if (len != TP_HELLO_LEN) {
		snprintf(err, errlen, "HELLO of %zu bytes, expected %d", len,
		    TP_HELLO_LEN);
		return -1;
	}
	memcpy(h->run_id, b, TP_RUNID_LEN);
	h->streams = tp_get32(b + 16);
	h->frame_bytes = tp_get32(b + 20);
	h->verify = b[24];
	if (h->streams < 1 || h->streams > TP_MAX_STREAMS) {
		snprintf(err, errlen, "stream count %u outside 1..%d",
		    (unsigned)h->streams, TP_MAX_STREAMS);
		return -1;
	}
	if (h->frame_bytes < TP_MIN_FRAME || h->frame_bytes > TP_MAX_FRAME) {
		snprintf(err, errlen, "frame size %u outside %u..%u",
		    (unsigned)h->frame_bytes, TP_MIN_FRAME, TP_MAX_FRAME);
		return -1;
	}
	if (h->verify > TP_VERIFY_SHA256) {
		snprintf(err, errlen, "unknown verification mode %u",
		    (unsigned)h->verify);
		return -1;
	}
	return 0;
}

void
tp_attach_encode(uint8_t b[TP_ATTACH_LEN], const uint8_t run_id[TP_RUNID_LEN],
    uint32_t stream)
{
	memset(b, 0, TP_ATTACH_LEN);
	tp_put32(b, TP_MAGIC_ATTACH);
	b[4] = TP_VERSION;
	memcpy(b + 8, run_id, TP_RUNID_LEN);
	tp_put32(b + 24, stream);
}

int
tp_attach_decode(const uint8_t b[TP_ATTACH_LEN], uint8_t run_id[TP_RUNID_LEN],
    uint32_t *stream, char *err, size_t errlen)
{
	if (tp_get32(b) != TP_MAGIC_ATTACH) {
		snprintf(err, errlen, "bad attach magic 0x%08x",
		    (unsigned)tp_get32(b));
		return -1;
	}
	if (b[4] != TP_VERSION) {
		snprintf(err, errlen, "protocol version %u, expected %u",
		    (unsigned)b[4], TP_VERSION);
		return -1;
	}
	memcpy(run_id, b + 8, TP_RUNID_LEN);
	*stream = tp_get32(b + 24);
	return 0;
}

void
tp_frame_encode(uint8_t b[TP_FRAME_HDR], const struct tp_frame *f)
{
	memset(b, 0, TP_FRAME_HDR);
	tp_put32(b, TP_MAGIC_FRAME);
	b[4] = f->version;
	b[5] = f->flags;
	tp_put32(b + 8, f->stream);
	tp_put64(b + 16, f->seq);
	tp_put32(b + 24, f->len);
	memcpy(b + 32, f->sha, 32);
}

int
tp_frame_decode(const uint8_t b[TP_FRAME_HDR], uint32_t max_len,
    struct tp_frame *f, char *err, size_t errlen)
{
	if (tp_get32(b) != TP_MAGIC_FRAME) {
		snprintf(err, errlen, "bad frame magic 0x%08x",
		    (unsigned)tp_get32(b));
		return -1;
	}
	f->version = b[4];
	f->flags = b[5];
	f->stream = tp_get32(b + 8);
	f->seq = tp_get64(b + 16);
	f->len = tp_get32(b + 24);
	memcpy(f->sha, b + 32, 32);
	if (f->version != TP_VERSION) {
		snprintf(err, errlen, "frame version %u, expected %u",
		    (unsigned)f->version, TP_VERSION);
		return -1;
	}
	if (f->len > max_len) {
		snprintf(err, errlen, "frame length %u over the bound of %u",
		    (unsigned)f->len, (unsigned)max_len);
		return -1;
	}
	return 0;
}

bool
tp_seq_feed(struct tp_seq *s, uint64_t seq, bool digest_ok, uint32_t len)
{
	if (!digest_ok || seq < s->expect) {
		s->r.frames_bad++;
		return false;
	}
	if (seq > s->expect)
		s->r.seq_gaps++;
	s->expect = seq + 1;
	s->r.frames_ok++;
	s->r.verified_bytes += len;
	return true;
}

void
tp_seq_finish(struct tp_seq *s, uint64_t frames_sent)
{
	if (frames_sent > s->expect)
		s->r.seq_gaps++;
}

void *
tp_ctx_new(void)
{
	return EVP_MD_CTX_new();
}

void
tp_ctx_free(void *ctx)
{
	EVP_MD_CTX_free(ctx);
}

int
tp_ctx_copy(void *dst, const void *src)
{
	return EVP_MD_CTX_copy_ex(dst, src) == 1 ? 0 : -1;
}

int
tp_digest(void *ctx, const uint8_t *payload, uint32_t len,
    const uint8_t hdr[TP_HASHED_HDR], uint8_t md[32])
{
	unsigned mdlen = 0;

	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1 ||
	    EVP_DigestUpdate(ctx, payload, len) != 1 ||
	    EVP_DigestUpdate(ctx, hdr, TP_HASHED_HDR) != 1 ||
	    EVP_DigestFinal_ex(ctx, md, &mdlen) != 1)
		return -1;
	return 0;
}

int
tp_digest_begin(void *ctx)
{
	return EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 ? 0 : -1;
}

int
tp_digest_update(void *ctx, const uint8_t *p, size_t len)
{
	return EVP_DigestUpdate(ctx, p, len) == 1 ? 0 : -1;
}

int
tp_digest_end(void *ctx, const uint8_t hdr[TP_HASHED_HDR], uint8_t md[32])
{
	unsigned mdlen = 0;

	if (EVP_DigestUpdate(ctx, hdr, TP_HASHED_HDR) != 1 ||
	    EVP_DigestFinal_ex(ctx, md, &mdlen) != 1)
		return -1;
	return 0;
}

int
tp_midstate(void *ctx, const uint8_t *payload, uint32_t len)
{
	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1 ||
	    EVP_DigestUpdate(ctx, payload, len) != 1)
		return -1;
	return 0;
}

int
tp_digest_from(void *tmp, const void *midstate,
    const uint8_t hdr[TP_HASHED_HDR], uint8_t md[32])
{
	unsigned mdlen = 0;

	if (EVP_MD_CTX_copy_ex(tmp, midstate) != 1 ||
	    EVP_DigestUpdate(tmp, hdr, TP_HASHED_HDR) != 1 ||
	    EVP_DigestFinal_ex(tmp, md, &mdlen) != 1)
		return -1;
	return 0;
}
