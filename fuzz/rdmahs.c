/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness: rdma-probe's handshake messages on arbitrary bytes.
 * Whatever decodes must re-encode to a message that decodes the same.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rdmahs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
params(const uint8_t *body, uint32_t len)
{
	static uint8_t buf[HS_HDR_LEN + HS_MAX_BODY];
	struct hs_params p, q;
	struct hs_expect w = { 2, 1024, 4096, 65536, HS_LINK_ETH, 2048,
	    1 << 20 };
	enum hs_type type;
	uint32_t qlen;
	char err[512];
	size_t n;

	if (hs_decode_params(body, len, &p, err, sizeof(err)) != HS_OK)
		return;
	n = hs_encode_params(buf, sizeof(buf), HS_ACCEPT, &p);
	if (n != HS_HDR_LEN + len ||
	    hs_decode_header(buf, &type, &qlen, err, sizeof(err)) != HS_OK ||
	    hs_decode_params(buf + HS_HDR_LEN, qlen, &q, err, sizeof(err)) !=
	    HS_OK || memcmp(&p, &q, sizeof(p)) != 0)
		abort();
	(void)hs_check_hello(&p, &w, err, sizeof(err));
	(void)hs_check_accept(&p, &q, err, sizeof(err));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512], text[HS_MAX_TEXT + 1];
	enum hs_type type;
	uint32_t len, a, b;
	uint64_t c;
	uint8_t f;

	if (size < HS_HDR_LEN ||
	    hs_decode_header(data, &type, &len, err, sizeof(err)) != HS_OK) {
		if (size >= HS_HDR_LEN && strlen(err) >= sizeof(err))
			abort();
		return 0;
	}
	if (len > size - HS_HDR_LEN)
		len = (uint32_t)(size - HS_HDR_LEN);
	data += HS_HDR_LEN;
	switch (type) {
	case HS_HELLO: case HS_ACCEPT: params(data, len); break;
	case HS_REJECT:
		if (hs_decode_text(data, len, text, sizeof(text), err,
		    sizeof(err)) == HS_OK && strlen(text) > HS_MAX_TEXT)
			abort();
		break;
	case HS_DONE: (void)hs_decode_done(data, len, &c, &f, err, sizeof(err));
		break;
	case HS_DONE_ACK:
		if (hs_decode_done_ack(data, len, &a, &b, err, sizeof(err)) ==
		    HS_OK && a > b)
			abort();
		break;
	}
	return 0;
}
