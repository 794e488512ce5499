/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "net.h"
#include "rdmahs.h"

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

static void
put64(uint8_t *p, uint64_t v)
{
	put32(p, v >> 32);
	put32(p + 4, v);
}

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static uint64_t
get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* Write a header for a body of len bytes; returns HS_HDR_LEN. */
static size_t
put_header(uint8_t *buf, enum hs_type type, uint32_t len)
{
	memcpy(buf, HS_MAGIC, 4);
	put16(buf + 4, HS_VERSION);
	buf[6] = (uint8_t)type;
	buf[7] = 0;
	put32(buf + 8, len);
	return HS_HDR_LEN;
}

size_t
hs_encode_params(uint8_t *buf, size_t cap, enum hs_type type,
    const struct hs_params *p)
{
	size_t len, i;
	uint8_t *b;

	if (p->qps == 0 || p->qps > HS_MAX_QPS)
		return 0;
	len = HS_FIXED_LEN + (size_t)HS_QP_LEN * p->qps;
	if (cap < HS_HDR_LEN + len)
		return 0;
	b = buf + put_header(buf, type, (uint32_t)len);
	memset(b, 0, len);
	put16(b, p->qps);
	b[2] = p->link;
	b[3] = p->mem;
	put32(b + 4, p->mtu);
	put64(b + 8, p->size_min);
	put64(b + 16, p->size_max);
	put32(b + 24, p->rkey);
	put64(b + 32, p->addr);
	put64(b + 40, p->buf_len);
	for (i = 0; i < p->qps; i++) {
		uint8_t *q = b + HS_FIXED_LEN + HS_QP_LEN * i;

		put32(q, p->qp[i].qpn);
		put32(q + 4, p->qp[i].psn);
		put16(q + 8, p->qp[i].lid);
		memcpy(q + 12, p->qp[i].gid, 16);
	}
	return HS_HDR_LEN + len;
}

size_t
hs_encode_text(uint8_t *buf, size_t cap, const char *text)
{
	size_t len = strnlen(text, HS_MAX_TEXT);

	if (len == 0)
		text = "rejected", len = 8;
	if (cap < HS_HDR_LEN + len)
		return 0;
	put_header(buf, HS_REJECT, (uint32_t)len);
	memcpy(buf + HS_HDR_LEN, text, len);
	return HS_HDR_LEN + len;
}

size_t
hs_encode_done(uint8_t *buf, size_t cap, uint64_t check_len, uint8_t fill)
{
	if (cap < HS_HDR_LEN + 16)
		return 0;
	put_header(buf, HS_DONE, 16);
	memset(buf + HS_HDR_LEN, 0, 16);
	put64(buf + HS_HDR_LEN, check_len);
	buf[HS_HDR_LEN + 8] = fill;
	return HS_HDR_LEN + 16;
}

size_t
hs_encode_done_ack(uint8_t *buf, size_t cap, uint32_t ok, uint32_t regions)
{
	if (cap < HS_HDR_LEN + 8)
		return 0;
	put_header(buf, HS_DONE_ACK, 8);
	put32(buf + HS_HDR_LEN, ok);
	put32(buf + HS_HDR_LEN + 4, regions);
	return HS_HDR_LEN + 8;
}

/* Quote up to n bytes printably into out ("HTTP/1.1 4" or hex). */
static void
quote(const uint8_t *p, size_t n, char *out, size_t cap)
{
	size_t i, o = 0;

	while (n > 0 && p[n - 1] == 0)
		n--;
	for (i = 0; i < n && o + 5 < cap; i++) {
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' && p[i] != '\\')
			out[o++] = (char)p[i];
		else
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", p[i]);
	}
	out[o < cap ? o : cap - 1] = '\0';
}

enum hs_status
hs_decode_header(const uint8_t *hdr, enum hs_type *type, uint32_t *body_len,
    char *err, size_t errlen)
{
	char q[64];
	uint16_t ver;
	uint32_t len, max;

	if (memcmp(hdr, HS_MAGIC, 4) != 0) {
		quote(hdr, HS_HDR_LEN, q, sizeof(q));
		snprintf(err, errlen, "peer is not an rdma-probe (got \"%s\", "
		    "want magic \"KVRP\")", q);
		return HS_EMAGIC;
	}
	if ((ver = get16(hdr + 4)) != HS_VERSION) {
		snprintf(err, errlen, "handshake version: peer speaks %u, this "
		    "rdma-probe speaks %u", ver, HS_VERSION);
		return HS_EVERSION;
	}
	len = get32(hdr + 8);
	switch (hdr[6]) {
	case HS_HELLO: case HS_ACCEPT: max = HS_MAX_BODY; break;
	case HS_REJECT: max = HS_MAX_TEXT; break;
	case HS_DONE: max = 16; break;
	case HS_DONE_ACK: max = 8; break;
	default:
		snprintf(err, errlen, "unknown handshake message type %u",
		    hdr[6]);
		return HS_EMALFORMED;
	}
	if (len > max || len == 0) {
		snprintf(err, errlen, "handshake message type %u: body of %u "
		    "bytes (1..%u allowed)", hdr[6], len, max);
		return HS_EMALFORMED;
	}
	*type = (enum hs_type)hdr[6];
	*body_len = len;
	return HS_OK;
}

static int
pow2_mtu(uint32_t m)
{
	return m == 256 || m == 512 || m == 1024 || m == 2048 || m == 4096;
}

enum hs_status
hs_decode_params(const uint8_t *b, size_t len, struct hs_params *p,
    char *err, size_t errlen)
{
	size_t i;

	if (len < HS_FIXED_LEN) {
		snprintf(err, errlen, "handshake parameters: %zu bytes, at "
		    "least %d needed", len, HS_FIXED_LEN);
		return HS_EMALFORMED;
	}
	memset(p, 0, sizeof(*p));
	p->qps = get16(b);
	p->link = b[2];
	p->mem = b[3];
	p->mtu = get32(b + 4);
	p->size_min = get64(b + 8);
	p->size_max = get64(b + 16);
	p->rkey = get32(b + 24);
	p->addr = get64(b + 32);
	p->buf_len = get64(b + 40);
	if (p->qps == 0 || p->qps > HS_MAX_QPS ||
	    len != HS_FIXED_LEN + (size_t)HS_QP_LEN * p->qps) {
		snprintf(err, errlen, "handshake parameters: %u QPs in %zu "
		    "bytes (1..%d QPs, 48 + 32 bytes each)", p->qps, len,
		    HS_MAX_QPS);
		return HS_EMALFORMED;
	}
	if (p->link != HS_LINK_IB && p->link != HS_LINK_ETH) {
		snprintf(err, errlen, "handshake: unknown link layer %u",
		    p->link);
		return HS_EMALFORMED;
	}
	if (p->mem > HS_MEM_CUDA_PEERMEM) {
		snprintf(err, errlen, "handshake: unknown memory kind %u",
		    p->mem);
		return HS_EMALFORMED;
	}
	if (!pow2_mtu(p->mtu)) {
		snprintf(err, errlen, "handshake: MTU %u is not one of 256, "
		    "512, 1024, 2048, 4096", p->mtu);
		return HS_EMALFORMED;
	}
	if (p->size_min == 0 || p->size_min > p->size_max ||
	    p->size_max > HS_MAX_SIZE) {
		snprintf(err, errlen, "handshake: sizes %llu..%llu (1..1GiB, "
		    "smallest first)", (unsigned long long)p->size_min,
		    (unsigned long long)p->size_max);
		return HS_EMALFORMED;
	}
	for (i = 0; i < p->qps; i++) {
		const uint8_t *q = b + HS_FIXED_LEN + HS_QP_LEN * i;

		p->qp[i].qpn = get32(q);
		p->qp[i].psn = get32(q + 4);
		p->qp[i].lid = get16(q + 8);
		memcpy(p->qp[i].gid, q + 12, 16);
		if (p->qp[i].qpn > 0xffffff || p->qp[i].psn > 0xffffff) {
			snprintf(err, errlen, "handshake: QP %zu: QPN or PSN "
			    "beyond 24 bits", i);
			return HS_EMALFORMED;
		}
	}
	return HS_OK;
}

enum hs_status
hs_decode_text(const uint8_t *b, size_t len, char *text, size_t cap,
    char *err, size_t errlen)
{
	size_t i, n;

	if (cap == 0) {
		snprintf(err, errlen, "handshake: no room for the reason");
		return HS_EMALFORMED;
	}
	n = len < cap ? len : cap - 1;
	if (len == 0 || len > HS_MAX_TEXT) {
		snprintf(err, errlen, "handshake: reason of %zu bytes", len);
		return HS_EMALFORMED;
	}
	for (i = 0; i < n; i++)
		text[i] = b[i] >= 0x20 && b[i] < 0x7f ? (char)b[i] : '?';
	text[n] = '\0';
	return HS_OK;
}

enum hs_status
hs_decode_done(const uint8_t *b, size_t len, uint64_t *check_len,
    uint8_t *fill, char *err, size_t errlen)
{
	if (len != 16) {
		snprintf(err, errlen, "handshake: DONE of %zu bytes, want 16",
		    len);
		return HS_EMALFORMED;
	}
	*check_len = get64(b);
	*fill = b[8];
	return HS_OK;
}

enum hs_status
hs_decode_done_ack(const uint8_t *b, size_t len, uint32_t *ok,
    uint32_t *regions, char *err, size_t errlen)
{
	if (len != 8) {
		snprintf(err, errlen, "handshake: DONE_ACK of %zu bytes, want 8",
		    len);
		return HS_EMALFORMED;
	}
	*ok = get32(b);
	*regions = get32(b + 4);
	if (*ok > *regions) {
		snprintf(err, errlen, "handshake: DONE_ACK says %u of %u "
		    "regions matched", *ok, *regions);
		return HS_EMALFORMED;
	}
	return HS_OK;
}

/* The server's bound on what one client may make it register. */
static enum hs_status
check_mem(const struct hs_params *h, uint64_t max, char *err, size_t errlen)
{
	/* size_max <= 1 GiB and qps <= 256: the product cannot overflow. */
	uint64_t need = h->size_max * h->qps;

	if (need <= max)
		return HS_OK;
	snprintf(err, errlen, "--sizes/-q: client asks for %u QPs x %llu "
	    "bytes = %llu bytes of registered memory, server allows %llu "
	    "(its --max-mem; use fewer QPs or a smaller largest size)",
	    h->qps, (unsigned long long)h->size_max,
	    (unsigned long long)need, (unsigned long long)max);
	return HS_EMISMATCH;
}

enum hs_status
hs_check_hello(const struct hs_params *h, const struct hs_expect *w,
    char *err, size_t errlen)
{
	if (h->link != w->link) {
		snprintf(err, errlen, "link layer: client %s, server %s (RoCE "
		    "and InfiniBand ports cannot talk)", hs_link_name(h->link),
		    hs_link_name(w->link));
		return HS_EMISMATCH;
	}
	if (w->qps && h->qps != w->qps) {
		snprintf(err, errlen, "--qps: client %u, server %u", h->qps,
		    w->qps);
		return HS_EMISMATCH;
	}
	if (w->mtu && h->mtu != w->mtu) {
		snprintf(err, errlen, "--mtu: client %u, server %u", h->mtu,
		    w->mtu);
		return HS_EMISMATCH;
	}
	if (w->mtu_max && h->mtu > w->mtu_max) {
		snprintf(err, errlen, "--mtu: client %u, server port's active "
		    "MTU %u (give --mtu %u on both sides)", h->mtu, w->mtu_max,
		    w->mtu_max);
		return HS_EMISMATCH;
	}
	if (w->size_max && (h->size_min != w->size_min ||
	    h->size_max != w->size_max)) {
		snprintf(err, errlen, "--size/--sizes: client %llu..%llu, "
		    "server %llu..%llu bytes",
		    (unsigned long long)h->size_min,
		    (unsigned long long)h->size_max,
		    (unsigned long long)w->size_min,
		    (unsigned long long)w->size_max);
		return HS_EMISMATCH;
	}
	return check_mem(h, w->mem_max ? w->mem_max : HS_MEM_MAX, err, errlen);
}

enum hs_status
hs_check_accept(const struct hs_params *h, const struct hs_params *a,
    char *err, size_t errlen)
{
	uint64_t need = h->size_max * h->qps;

	if (a->link != h->link) {
		snprintf(err, errlen, "link layer: client %s, server %s",
		    hs_link_name(h->link), hs_link_name(a->link));
		return HS_EMISMATCH;
	}
	if (a->qps != h->qps) {
		snprintf(err, errlen, "--qps: client %u, server %u", h->qps,
		    a->qps);
		return HS_EMISMATCH;
	}
	if (a->mtu != h->mtu) {
		snprintf(err, errlen, "--mtu: client %u, server %u", h->mtu,
		    a->mtu);
		return HS_EMISMATCH;
	}
	if (a->size_min != h->size_min || a->size_max != h->size_max) {
		snprintf(err, errlen, "--size/--sizes: client %llu..%llu, "
		    "server %llu..%llu bytes",
		    (unsigned long long)h->size_min,
		    (unsigned long long)h->size_max,
		    (unsigned long long)a->size_min,
		    (unsigned long long)a->size_max);
		return HS_EMISMATCH;
	}
	if (a->buf_len < need) {
		snprintf(err, errlen, "server buffer of %llu bytes, %llu needed "
		    "(%u QPs x %llu)", (unsigned long long)a->buf_len,
		    (unsigned long long)need, h->qps,
		    (unsigned long long)h->size_max);
		return HS_EMALFORMED;
	}
	return HS_OK;
}

enum hs_status
hs_send(int fd, const uint8_t *msg, size_t len, char *err, size_t errlen)
{
	if (len == 0) {
		snprintf(err, errlen, "handshake: message does not fit");
		return HS_EMALFORMED;
	}
	if (kv_write_full(fd, msg, len) != 0) {
		snprintf(err, errlen, "handshake send: %s", strerror(errno));
		return HS_EIO;
	}
	return HS_OK;
}

/*
 * Read up to len bytes, stopping early only at end of file or an error.
 * Returns the count read (errno says why when short and not EOF: it is
 * 0 at end of file).
 */
static size_t
read_upto(int fd, uint8_t *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	errno = 0;
	while (got < len) {
		n = read(fd, buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = 0;
			break;
		}
		got += (size_t)n;
	}
	return got;
}

/*
 * Say why fewer than the wanted bytes of `what` arrived; awaiting names
 * the message expected after the opening exchange (NULL: the first).
 */
static enum hs_status
short_read(size_t got, const char *what, const char *awaiting, char *err,
    size_t errlen)
{
	if (errno == EAGAIN || errno == EWOULDBLOCK) {
		snprintf(err, errlen, "handshake: timed out waiting for the %s",
		    what);
		return HS_EIO;
	}
	if (errno != 0 && errno != ECONNRESET) {
		snprintf(err, errlen, "handshake: reading the %s: %s", what,
		    strerror(errno));
		return HS_EIO;
	}
	if (got == 0 && strcmp(what, "message header") == 0) {
		if (awaiting)
			snprintf(err, errlen, "peer closed the connection while "
			    "this side waited for its %s", awaiting);
		else
			snprintf(err, errlen, "peer closed the connection "
			    "without a handshake (not an rdma-probe, or it "
			    "refused us)");
		return HS_EIO;
	}
	snprintf(err, errlen, "handshake: peer closed the connection %zu "
	    "bytes into the %s", got, what);
	return HS_ETRUNC;
}

/* hs_recv, with awaiting as in short_read. */
static enum hs_status
recv_msg(int fd, enum hs_type *type, uint8_t *body, size_t cap,
    uint32_t *len, const char *awaiting, char *err, size_t errlen)
{
	uint8_t hdr[HS_HDR_LEN];
	enum hs_status st;
	size_t got;

	got = read_upto(fd, hdr, HS_HDR_LEN);
	if (got < HS_HDR_LEN) {
		/* A short reply that is not ours ("no\n") is judged by its
		 * magic rather than called truncated. */
		if (got > 0 && memcmp(hdr, HS_MAGIC, got < 4 ? got : 4) != 0) {
			memset(hdr + got, 0, HS_HDR_LEN - got);
			return hs_decode_header(hdr, type, len, err, errlen);
		}
		return short_read(got, "message header", awaiting, err, errlen);
	}
	if ((st = hs_decode_header(hdr, type, len, err, errlen)) != HS_OK)
		return st;
	if (*len > cap) {
		snprintf(err, errlen, "handshake: message type %u of %u bytes "
		    "where at most %zu fit", *type, *len, cap);
		return HS_EMALFORMED;
	}
	got = read_upto(fd, body, *len);
	if (got < *len)
		return short_read(got, "message body", awaiting, err, errlen);
	return HS_OK;
}

enum hs_status
hs_recv(int fd, enum hs_type *type, uint8_t *body, size_t cap, uint32_t *len,
    char *err, size_t errlen)
{
	return recv_msg(fd, type, body, cap, len, NULL, err, errlen);
}

enum hs_status
hs_server_done(int fd, uint64_t size_max, uint8_t fill, uint64_t *check,
    char *err, size_t errlen)
{
	uint8_t body[16], got_fill;
	enum hs_type type;
	enum hs_status st;
	uint32_t len;

	if ((st = recv_msg(fd, &type, body, sizeof(body), &len, "DONE", err,
	    errlen)) != HS_OK)
		return st;
	if (type != HS_DONE) {
		snprintf(err, errlen, "handshake: got message type %u, expected "
		    "%u (DONE)", type, HS_DONE);
		return HS_EMALFORMED;
	}
	if ((st = hs_decode_done(body, len, check, &got_fill, err, errlen)))
		return st;
	if (*check == 0 || *check > size_max || got_fill != fill) {
		snprintf(err, errlen, "handshake: DONE asks to check %llu bytes "
		    "of 1..%llu with fill 0x%02x (want 0x%02x)",
		    (unsigned long long)*check, (unsigned long long)size_max,
		    got_fill, fill);
		return HS_EMALFORMED;
	}
	return HS_OK;
}

/* Receive one message and insist on its type. */
static enum hs_status
recv_type(int fd, enum hs_type want, uint8_t *body, size_t cap, uint32_t *len,
    char *err, size_t errlen)
{
	enum hs_type type;
	enum hs_status st;
	char text[HS_MAX_TEXT + 1];

	if ((st = hs_recv(fd, &type, body, cap, len, err, errlen)))
		return st;
	if (type == HS_REJECT && want != HS_REJECT) {
		if ((st = hs_decode_text(body, *len, text, sizeof(text), err,
		    errlen)))
			return st;
		snprintf(err, errlen, "server refused: %s", text);
		return HS_EREJECTED;
	}
	if (type != want) {
		snprintf(err, errlen, "handshake: got message type %u, "
		    "expected %u", type, want);
		return HS_EMALFORMED;
	}
	return HS_OK;
}

enum hs_status
hs_client_hello(int fd, const struct hs_params *hello,
    struct hs_params *accept, char *err, size_t errlen)
{
	uint8_t buf[HS_HDR_LEN + HS_MAX_BODY];
	enum hs_status st;
	uint32_t len;
	size_t n;

	n = hs_encode_params(buf, sizeof(buf), HS_HELLO, hello);
	if ((st = hs_send(fd, buf, n, err, errlen)))
		return st;
	if ((st = recv_type(fd, HS_ACCEPT, buf, sizeof(buf), &len, err, errlen)))
		return st;
	if ((st = hs_decode_params(buf, len, accept, err, errlen)))
		return st;
	return hs_check_accept(hello, accept, err, errlen);
}

enum hs_status
hs_server_hello(int fd, const struct hs_expect *want,
    struct hs_params *hello, char *err, size_t errlen)
{
	uint8_t buf[HS_HDR_LEN + HS_MAX_BODY];
	enum hs_status st;
	uint32_t len;
	size_t n;

	if ((st = recv_type(fd, HS_HELLO, buf, sizeof(buf), &len, err, errlen)))
		return st;
	if ((st = hs_decode_params(buf, len, hello, err, errlen)) == HS_OK)
		st = hs_check_hello(hello, want, err, errlen);
	if (st == HS_EMISMATCH || st == HS_EMALFORMED) {
		char why[HS_MAX_TEXT + 1], e2[64];

		snprintf(why, sizeof(why), "%s", err);
		n = hs_encode_text(buf, sizeof(buf), why);
		(void)hs_send(fd, buf, n, e2, sizeof(e2));	/* best effort */
	}
	return st;
}

int
hs_status_exit(enum hs_status st)
{
	switch (st) {
	case HS_OK: return KV_OK;
	case HS_EIO: case HS_EMAGIC: return KV_UNAVAILABLE;
	case HS_ETRUNC: case HS_EMALFORMED: return KV_DATAERR;
	case HS_EVERSION: case HS_EMISMATCH: case HS_EREJECTED: return KV_FAIL;
	}
	return KV_SOFTWARE;
}

const char *
hs_link_name(uint8_t link)
{
	return link == HS_LINK_IB ? "InfiniBand" : link == HS_LINK_ETH ?
	    "Ethernet" : "unknown";
}

const char *
hs_mem_name(uint8_t mem)
{
	switch (mem) {
	case HS_MEM_HOST: return "host";
	case HS_MEM_CUDA_DMABUF: return "cuda-dmabuf";
	case HS_MEM_CUDA_PEERMEM: return "cuda-peermem";
	}
	return "unknown";
}
