/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness: tcp-probe's wire decoders (control header, HELLO,
 * attach, frame header) and the sequence accounting on arbitrary bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tcpproto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t buf[TP_FRAME_HDR] = { 0 }, run[TP_RUNID_LEN], type;
	struct tp_hello h;
	struct tp_frame f;
	struct tp_seq s = { 0 };
	uint32_t len, id;
	char err[160];
	size_t i;

	memcpy(buf, data, size < sizeof(buf) ? size : sizeof(buf));
	if (tp_ctl_parse(buf, &type, &len, err, sizeof(err)) == 0 &&
	    len > TP_MAX_BODY)
		abort();
	if (tp_hello_decode(data, size, &h, err, sizeof(err)) == 0 &&
	    (h.streams == 0 || h.streams > TP_MAX_STREAMS))
		abort();
	tp_attach_decode(buf, run, &id, err, sizeof(err));
	if (tp_frame_decode(buf, 1u << 20, &f, err, sizeof(err)) == 0 &&
	    f.len > (1u << 20))
		abort();
	/* sequence accounting over 8-byte sequence numbers from the input */
	for (i = 0; i + 9 <= size; i += 9)
		tp_seq_feed(&s, tp_get64(data + i) % 64, data[i + 8] & 1, 100);
	tp_seq_finish(&s, 64);
	if (s.r.verified_bytes != 100 * s.r.frames_ok)
		abort();
	return 0;
}
