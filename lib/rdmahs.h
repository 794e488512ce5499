/* SPDX-License-Identifier: MIT */
#ifndef KV_RDMAHS_H
#define KV_RDMAHS_H

/*
 * rdma-probe's out-of-band handshake over TCP, kept apart from the verbs
 * code so it can be tested over real sockets where no RDMA device exists.
 * The wire format (version 1) is documented byte by byte in
 * man/rdma-probe.1, HANDSHAKE.  Every integer is big-endian.
 *
 * header, 12 bytes:
 *   0  4  magic "KVRP"
 *   4  2  version (1)
 *   6  1  type (HS_HELLO, HS_ACCEPT, HS_REJECT, HS_DONE, HS_DONE_ACK)
 *   7  1  reserved, 0
 *   8  4  body length in bytes
 * HELLO (client) and ACCEPT (server) body, 48 + 32 * qps bytes:
 *   0  2  qps             2  1  link layer (1 IB, 2 Ethernet)
 *   3  1  memory kind     4  4  MTU in bytes
 *   8  8  smallest size  16  8  largest size
 *  24  4  rkey           28  4  reserved, 0
 *  32  8  buffer address 40  8  buffer length in bytes
 *  48 + 32 i: qpn (4), psn (4), lid (2), reserved (2), gid (16),
 *              reserved (4)
 * REJECT body: the reason, 1..HS_MAX_TEXT bytes of text, no NUL.
 * DONE body, 16 bytes: bytes to check per QP region (8), fill byte (1),
 *   reserved (7).
 * DONE_ACK body, 8 bytes: regions whose bytes matched (4), regions (4).
 */

#include <stddef.h>
#include <stdint.h>

#define HS_MAGIC	"KVRP"
#define HS_VERSION	1
#define HS_HDR_LEN	12
#define HS_FIXED_LEN	48
#define HS_QP_LEN	32
#define HS_MAX_QPS	256
#define HS_MAX_TEXT	512
#define HS_MAX_BODY	(HS_FIXED_LEN + HS_QP_LEN * HS_MAX_QPS)
#define HS_MAX_SIZE	(1ULL << 30)	/* largest message size: 1 GiB */
#define HS_MEM_MAX	(16ULL << 30)	/* default bound on size_max * qps */

enum hs_type {
	HS_HELLO = 1, HS_ACCEPT = 2, HS_REJECT = 3, HS_DONE = 4,
	HS_DONE_ACK = 5
};

enum hs_link { HS_LINK_IB = 1, HS_LINK_ETH = 2 };

enum hs_mem { HS_MEM_HOST = 0, HS_MEM_CUDA_DMABUF = 1, HS_MEM_CUDA_PEERMEM = 2 };

/* What a handshake call returns; hs_status_exit maps it to an exit status. */
enum hs_status {
	HS_OK = 0,
	HS_EIO,		/* socket error, timeout, or the peer closed */
	HS_ETRUNC,	/* the peer closed in the middle of a message */
	HS_EMAGIC,	/* the peer is not an rdma-probe */
	HS_EVERSION,	/* another protocol version */
	HS_EMALFORMED,	/* a well-framed message with invalid contents */
	HS_EMISMATCH,	/* an option on which both sides must agree differs */
	HS_EREJECTED	/* the server refused and said why */
};

struct hs_qp {
	uint32_t qpn, psn;
	uint16_t lid;
	uint8_t gid[16];
};

/* The contents of a HELLO or an ACCEPT. */
struct hs_params {
	uint16_t qps;
	uint8_t link, mem;
	uint32_t mtu;
	uint64_t size_min, size_max;
	uint32_t rkey;
	uint64_t addr, buf_len;
	struct hs_qp qp[HS_MAX_QPS];
};

/*
 * Options a server may be given explicitly; zero means "take the
 * client's".  A non-zero value that differs is a mismatch.
 */
struct hs_expect {
	uint16_t qps;
	uint32_t mtu;
	uint64_t size_min, size_max;
	uint8_t link;	/* the server's own link layer: always compared */
	uint32_t mtu_max;	/* the server port's active MTU; 0: no limit */
	uint64_t mem_max;	/* most bytes the server registers for a
				 * client (size_max * qps); 0: HS_MEM_MAX */
};

/* Pure encoding and decoding.  encode returns the message length. */
size_t hs_encode_params(uint8_t *buf, size_t cap, enum hs_type type,
    const struct hs_params *p);
size_t hs_encode_text(uint8_t *buf, size_t cap, const char *text);
size_t hs_encode_done(uint8_t *buf, size_t cap, uint64_t check_len,
    uint8_t fill);
size_t hs_encode_done_ack(uint8_t *buf, size_t cap, uint32_t ok,
    uint32_t regions);

/*
 * Check a 12-byte header: magic, version, known type, body length within
 * limits.  Stores the type and body length.  On failure err says why,
 * quoting the bytes received when they are not an rdma-probe header.
 */
enum hs_status hs_decode_header(const uint8_t *hdr, enum hs_type *type,
    uint32_t *body_len, char *err, size_t errlen);
/* Decode a HELLO/ACCEPT body; every field is range-checked. */
enum hs_status hs_decode_params(const uint8_t *body, size_t len,
    struct hs_params *p, char *err, size_t errlen);
/* Decode a REJECT body into text (NUL-terminated, control bytes as '?'). */
enum hs_status hs_decode_text(const uint8_t *body, size_t len, char *text,
    size_t cap, char *err, size_t errlen);
enum hs_status hs_decode_done(const uint8_t *body, size_t len,
    uint64_t *check_len, uint8_t *fill, char *err, size_t errlen);
enum hs_status hs_decode_done_ack(const uint8_t *body, size_t len,
    uint32_t *ok, uint32_t *regions, char *err, size_t errlen);

/*
 * Compare a client's HELLO with what the server expects.  On a mismatch
 * err names the option and both values ("--qps: client 4, server 2").
 * A HELLO asking for more than want->mem_max bytes of registered memory
 * (size_max * qps) is a mismatch naming --sizes/-q: the server never
 * allocates on a client's word beyond its bound.
 */
enum hs_status hs_check_hello(const struct hs_params *hello,
    const struct hs_expect *want, char *err, size_t errlen);
/* The client's check of an ACCEPT against its HELLO. */
enum hs_status hs_check_accept(const struct hs_params *hello,
    const struct hs_params *accept, char *err, size_t errlen);

/*
 * Socket side.  Each reads or writes one whole message on fd (which
 * should have timeouts set).  hs_recv stores the type, and the body in
 * body (cap bytes: a longer one is HS_EMALFORMED) with its length.
 */
enum hs_status hs_send(int fd, const uint8_t *msg, size_t len, char *err,
    size_t errlen);
enum hs_status hs_recv(int fd, enum hs_type *type, uint8_t *body,
    size_t cap, uint32_t *len, char *err, size_t errlen);

/*
 * The client's half: send hello, receive and check the ACCEPT into
 * accept.  A REJECT is HS_EREJECTED with the server's reason in err.
 */
enum hs_status hs_client_hello(int fd, const struct hs_params *hello,
    struct hs_params *accept, char *err, size_t errlen);
/*
 * The server's first half: receive and check a HELLO.  On a mismatch it
 * sends a REJECT with the reason before returning HS_EMISMATCH.
 */
enum hs_status hs_server_hello(int fd, const struct hs_expect *want,
    struct hs_params *hello, char *err, size_t errlen);

/*
 * The server's wait after the run: receive the client's DONE and check
 * it (1..size_max bytes to check, the fill byte both sides agreed on)
 * into check.  A peer that closes says so ("... waited for its DONE").
 */
enum hs_status hs_server_done(int fd, uint64_t size_max, uint8_t fill,
    uint64_t *check, char *err, size_t errlen);

/* The exit status for a handshake failure (kvgate(7)). */
int hs_status_exit(enum hs_status st);
const char *hs_link_name(uint8_t link);
const char *hs_mem_name(uint8_t mem);

#endif
