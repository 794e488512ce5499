/* SPDX-License-Identifier: MIT */
/*
 * rdma-probe's handshake: encoding, decoding and option checks, then the
 * whole exchange over real loopback TCP against a forked peer that is an
 * rdma-probe server, a wrong one, or something else entirely.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net.h"
#include "rdmahs.h"
#include "unit.h"

static void
params(struct hs_params *p, int qps)
{
	int i;

	memset(p, 0, sizeof(*p));
	p->qps = (uint16_t)qps;
	p->link = HS_LINK_ETH;
	p->mem = HS_MEM_HOST;
	p->mtu = 1024;
	p->size_min = 4096;
	p->size_max = 1 << 20;
	p->rkey = 0x1234;
	p->addr = 0x7f0000001000ULL;
	p->buf_len = (uint64_t)qps << 20;
	for (i = 0; i < qps; i++) {
		p->qp[i].qpn = 0x100 + (uint32_t)i;
		p->qp[i].psn = 0xabcdef - (uint32_t)i;
		p->qp[i].lid = (uint16_t)i;
		memset(p->qp[i].gid, i + 1, 16);
	}
}

static void
test_roundtrip(void)
{
	uint8_t buf[HS_HDR_LEN + HS_MAX_BODY];
	struct hs_params p, q;
	enum hs_type type;
	uint32_t len;
	char err[256];
	size_t n;

	params(&p, 3);
	n = hs_encode_params(buf, sizeof(buf), HS_HELLO, &p);
	CHECK(n == HS_HDR_LEN + 48 + 3 * 32);
	CHECK(memcmp(buf, "KVRP\0\1\1\0\0\0\0\x90", 12) == 0);
	CHECK(hs_decode_header(buf, &type, &len, err, sizeof(err)) == HS_OK);
	CHECK(type == HS_HELLO && len == 144);
	CHECK(hs_decode_params(buf + HS_HDR_LEN, len, &q, err, sizeof(err)) ==
	    HS_OK);
	CHECK(q.qps == 3 && q.mtu == 1024 && q.rkey == 0x1234);
	CHECK(q.addr == p.addr && q.buf_len == p.buf_len);
	CHECK(q.qp[2].qpn == 0x102 && q.qp[2].psn == 0xabcded);
	CHECK(q.qp[1].gid[15] == 2 && q.qp[2].lid == 2);
	/* big-endian on the wire: qpn of QP 0 at body offset 48 */
	CHECK(memcmp(buf + HS_HDR_LEN + 48, "\0\0\1\0", 4) == 0);

	p.qps = 0;
	CHECK(hs_encode_params(buf, sizeof(buf), HS_HELLO, &p) == 0);
	CHECK(hs_encode_params(buf, 20, HS_HELLO, &q) == 0);
	n = hs_encode_text(buf, sizeof(buf), "--qps: client 4, server 2");
	CHECK(hs_decode_header(buf, &type, &len, err, sizeof(err)) == HS_OK);
	CHECK(type == HS_REJECT && len == 25);
	{
		char text[HS_MAX_TEXT + 1];

		CHECK(hs_decode_text(buf + HS_HDR_LEN, len, text, sizeof(text),
		    err, sizeof(err)) == HS_OK);
		CHECK_STR(text, "--qps: client 4, server 2");
		/* A short buffer truncates; none at all is refused, not
		 * written past. */
		CHECK(hs_decode_text(buf + HS_HDR_LEN, len, text, 6, err,
		    sizeof(err)) == HS_OK);
		CHECK_STR(text, "--qps");
		text[0] = 'x';
		CHECK(hs_decode_text(buf + HS_HDR_LEN, len, text, 0, err,
		    sizeof(err)) == HS_EMALFORMED && text[0] == 'x');
	}
	{
		uint64_t c;
		uint8_t f;
		uint32_t ok, r;

		hs_encode_done(buf, sizeof(buf), 65536, 0xa5);
		CHECK(hs_decode_done(buf + HS_HDR_LEN, 16, &c, &f, err,
		    sizeof(err)) == HS_OK && c == 65536 && f == 0xa5);
		hs_encode_done_ack(buf, sizeof(buf), 3, 4);
		CHECK(hs_decode_done_ack(buf + HS_HDR_LEN, 8, &ok, &r, err,
		    sizeof(err)) == HS_OK && ok == 3 && r == 4);
		hs_encode_done_ack(buf, sizeof(buf), 5, 4);
		CHECK(hs_decode_done_ack(buf + HS_HDR_LEN, 8, &ok, &r, err,
		    sizeof(err)) == HS_EMALFORMED);
	}
}

static void
test_bad_messages(void)
{
	uint8_t buf[HS_HDR_LEN + HS_MAX_BODY];
	struct hs_params p, q;
	enum hs_type type;
	uint32_t len;
	char err[256];

	CHECK(hs_decode_header((const uint8_t *)"HTTP/1.1 200", &type, &len,
	    err, sizeof(err)) == HS_EMAGIC);
	CHECK(strstr(err, "not an rdma-probe") && strstr(err, "HTTP/1.1 200"));
	CHECK(hs_decode_header((const uint8_t *)"KVRP\0\2\1\0\0\0\0\x30", &type,
	    &len, err, sizeof(err)) == HS_EVERSION);
	CHECK_STR(err, "handshake version: peer speaks 2, this rdma-probe "
	    "speaks 1");
	CHECK(hs_decode_header((const uint8_t *)"KVRP\0\1\x09\0\0\0\0\x30", &type,
	    &len, err, sizeof(err)) == HS_EMALFORMED);
	CHECK(hs_decode_header((const uint8_t *)"KVRP\0\1\1\0\xff\0\0\0", &type,
	    &len, err, sizeof(err)) == HS_EMALFORMED);
	CHECK(hs_decode_header((const uint8_t *)"KVRP\0\1\4\0\0\0\0\0", &type,
	    &len, err, sizeof(err)) == HS_EMALFORMED);

	params(&p, 2);
	hs_encode_params(buf, sizeof(buf), HS_HELLO, &p);
	CHECK(hs_decode_params(buf + HS_HDR_LEN, 40, &q, err, sizeof(err)) ==
	    HS_EMALFORMED);
	CHECK(hs_decode_params(buf + HS_HDR_LEN, 48 + 32, &q, err,
	    sizeof(err)) == HS_EMALFORMED);	/* says 2 QPs, carries 1 */
	buf[HS_HDR_LEN + 2] = 7;		/* link layer */
	CHECK(hs_decode_params(buf + HS_HDR_LEN, 112, &q, err, sizeof(err)) ==
	    HS_EMALFORMED);
	CHECK(strstr(err, "link layer") != NULL);
	p.mtu = 1500;
	hs_encode_params(buf, sizeof(buf), HS_HELLO, &p);
	CHECK(hs_decode_params(buf + HS_HDR_LEN, 112, &q, err, sizeof(err)) ==
	    HS_EMALFORMED);
	CHECK(strstr(err, "MTU 1500") != NULL);
	params(&p, 2);
	p.size_min = p.size_max + 1;
	hs_encode_params(buf, sizeof(buf), HS_HELLO, &p);
	CHECK(hs_decode_params(buf + HS_HDR_LEN, 112, &q, err, sizeof(err)) ==
	    HS_EMALFORMED);
	params(&p, 2);
	p.qp[1].qpn = 0x1000000;
	hs_encode_params(buf, sizeof(buf), HS_HELLO, &p);
	CHECK(hs_decode_params(buf + HS_HDR_LEN, 112, &q, err, sizeof(err)) ==
	    HS_EMALFORMED);
	CHECK(hs_decode_done(buf, 15, &p.size_min, &p.mem, err, sizeof(err)) ==
	    HS_EMALFORMED);

	/* Sizes: the same 1 GiB bound as the client's --size/--sizes. */
	params(&p, 1);
	p.size_max = HS_MAX_SIZE;
	hs_encode_params(buf, sizeof(buf), HS_HELLO, &p);
	CHECK(hs_decode_params(buf + HS_HDR_LEN, 80, &q, err, sizeof(err)) ==
	    HS_OK && q.size_max == HS_MAX_SIZE);
	p.size_max = HS_MAX_SIZE + 1;
	hs_encode_params(buf, sizeof(buf), HS_HELLO, &p);
	CHECK(hs_decode_params(buf + HS_HDR_LEN, 80, &q, err, sizeof(err)) ==
	    HS_EMALFORMED);
	CHECK_STR(err, "handshake: sizes 4096..1073741825 (1..1GiB, smallest "
	    "first)");
	p.size_max = 1ULL << 31;
	hs_encode_params(buf, sizeof(buf), HS_HELLO, &p);
	CHECK(hs_decode_params(buf + HS_HDR_LEN, 80, &q, err, sizeof(err)) ==
	    HS_EMALFORMED);
}

static void
test_checks(void)
{
	struct hs_params h, a;
	struct hs_expect w = { 0, 0, 0, 0, HS_LINK_ETH, 4096, 0 };
	char err[256];

	params(&h, 4);
	CHECK(hs_check_hello(&h, &w, err, sizeof(err)) == HS_OK);
	w.qps = 2;
	CHECK(hs_check_hello(&h, &w, err, sizeof(err)) == HS_EMISMATCH);
	CHECK_STR(err, "--qps: client 4, server 2");
	w.qps = 4;
	w.mtu = 4096;
	CHECK(hs_check_hello(&h, &w, err, sizeof(err)) == HS_EMISMATCH);
	CHECK_STR(err, "--mtu: client 1024, server 4096");
	w.mtu = 0;
	w.mtu_max = 512;
	CHECK(hs_check_hello(&h, &w, err, sizeof(err)) == HS_EMISMATCH);
	CHECK(strstr(err, "active MTU 512") != NULL);
	w.mtu_max = 0;
	w.size_min = w.size_max = 65536;
	CHECK(hs_check_hello(&h, &w, err, sizeof(err)) == HS_EMISMATCH);
	CHECK_STR(err, "--size/--sizes: client 4096..1048576, server "
	    "65536..65536 bytes");
	w.size_min = 4096;
	w.size_max = 1 << 20;
	CHECK(hs_check_hello(&h, &w, err, sizeof(err)) == HS_OK);
	w.link = HS_LINK_IB;
	CHECK(hs_check_hello(&h, &w, err, sizeof(err)) == HS_EMISMATCH);
	CHECK(strncmp(err, "link layer: client Ethernet, server InfiniBand",
	    45) == 0);

	w.link = HS_LINK_ETH;

	/* The server's memory bound: size_max * qps, boundary included. */
	w.mem_max = 4 << 20;
	CHECK(hs_check_hello(&h, &w, err, sizeof(err)) == HS_OK);
	w.mem_max = (4 << 20) - 1;
	CHECK(hs_check_hello(&h, &w, err, sizeof(err)) == HS_EMISMATCH);
	CHECK_STR(err, "--sizes/-q: client asks for 4 QPs x 1048576 bytes = "
	    "4194304 bytes of registered memory, server allows 4194303 (its "
	    "--max-mem; use fewer QPs or a smaller largest size)");
	w.mem_max = 0;	/* the default, 16 GiB */
	w.qps = 0;
	w.size_min = w.size_max = 0;
	params(&h, 16);
	h.size_max = HS_MAX_SIZE;
	CHECK(hs_check_hello(&h, &w, err, sizeof(err)) == HS_OK);
	params(&h, HS_MAX_QPS);
	h.size_max = HS_MAX_SIZE;
	CHECK(hs_check_hello(&h, &w, err, sizeof(err)) == HS_EMISMATCH);
	CHECK(strstr(err, "256 QPs x 1073741824 bytes = 274877906944 bytes") &&
	    strstr(err, "allows 17179869184"));
	params(&h, 4);

	params(&a, 4);
	CHECK(hs_check_accept(&h, &a, err, sizeof(err)) == HS_OK);
	a.buf_len = 1 << 20;
	CHECK(hs_check_accept(&h, &a, err, sizeof(err)) == HS_EMALFORMED);
	params(&a, 3);
	CHECK(hs_check_accept(&h, &a, err, sizeof(err)) == HS_EMISMATCH);
	CHECK_STR(err, "--qps: client 4, server 3");
	params(&a, 4);
	a.mtu = 2048;
	CHECK(hs_check_accept(&h, &a, err, sizeof(err)) == HS_EMISMATCH);
	CHECK(hs_status_exit(HS_EMISMATCH) == 1);
	CHECK(hs_status_exit(HS_EMAGIC) == 69);
	CHECK(hs_status_exit(HS_ETRUNC) == 65);
	CHECK(hs_status_exit(HS_EIO) == 69);
}

/* --- over real loopback TCP ------------------------------------------ */

enum peer_act { ACT_SERVER, ACT_BYTES, ACT_CLOSE, ACT_SILENT, ACT_CLIENT };

struct peer {
	enum peer_act act;
	const void *bytes;
	size_t len;
	struct hs_expect want;
};

/* Fork a peer on a fresh loopback port; returns its pid, *port set. */
static pid_t
spawn(const struct peer *pr, char *port, size_t cap)
{
	char err[256];
	int lfd = kv_listen("127.0.0.1", "0", 1, err, sizeof(err)), fd;
	pid_t pid;

	if (lfd < 0) {
		fprintf(stderr, "listen: %s\n", err);
		exit(1);
	}
	snprintf(port, cap, "%d", kv_local_port(lfd));
	if ((pid = fork()) != 0) {
		close(lfd);
		return pid;
	}
	alarm(10);
	if ((fd = accept(lfd, NULL, NULL)) < 0)
		_exit(2);
	kv_set_timeouts(fd, 5);
	if (pr->act == ACT_SERVER) {
		struct hs_params h, a;
		uint8_t buf[HS_HDR_LEN + HS_MAX_BODY];
		enum hs_status st;

		st = hs_server_hello(fd, &pr->want, &h, err, sizeof(err));
		if (st != HS_OK)
			_exit(10 + st);
		a = h;
		a.mem = HS_MEM_HOST;
		a.rkey = 0x5151;
		a.buf_len = h.size_max * h.qps;
		hs_send(fd, buf, hs_encode_params(buf, sizeof(buf), HS_ACCEPT,
		    &a), err, sizeof(err));
		if (pr->bytes) {	/* then DONE -> DONE_ACK, as after a run */
			enum hs_type t;
			uint32_t n;
			uint64_t check;
			uint8_t fill;

			if (hs_recv(fd, &t, buf, sizeof(buf), &n, err,
			    sizeof(err)) != HS_OK || t != HS_DONE ||
			    hs_decode_done(buf, n, &check, &fill, err,
			    sizeof(err)) != HS_OK || check != 65536 ||
			    fill != 0xa5)
				_exit(3);
			hs_send(fd, buf, hs_encode_done_ack(buf, sizeof(buf),
			    h.qps - 1, h.qps), err, sizeof(err));
		}
		_exit(0);
	}
	if (pr->act == ACT_CLIENT) {
		struct hs_params h;

		_exit(10 + hs_server_hello(fd, &pr->want, &h, err, sizeof(err)));
	}
	if (pr->act == ACT_BYTES) {
		char junk[256];

		(void)recv(fd, junk, sizeof(junk), 0);
		(void)kv_write_full(fd, pr->bytes, pr->len);
	}
	if (pr->act == ACT_SILENT)
		sleep(3);
	close(fd);
	_exit(0);
}

static int
reap(pid_t pid)
{
	int ws = 0;

	waitpid(pid, &ws, 0);
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

/* Run the client half against pr; returns the status, err set. */
static enum hs_status
talk(const struct peer *pr, const struct hs_params *hello,
    struct hs_params *acc, double timeout, int *peer_rc, char *err,
    size_t errlen)
{
	char port[16];
	pid_t pid = spawn(pr, port, sizeof(port));
	int fd = kv_connect("127.0.0.1", port, 5, err, errlen);
	enum hs_status st = HS_EIO;

	if (fd >= 0) {
		kv_set_timeouts(fd, timeout);
		st = hs_client_hello(fd, hello, acc, err, errlen);
		close(fd);
	}
	if (pr->act == ACT_SILENT)
		kill(pid, SIGTERM);
	*peer_rc = reap(pid);
	return st;
}

static void
test_tcp(void)
{
	struct hs_params h, a;
	struct peer pr;
	char err[512];
	int rc;
	static const char http[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
	static const uint8_t trunc_body[] = "KVRP\0\1\2\0\0\0\0\x50" "0123456789";
	static const uint8_t v2[] = "KVRP\0\2\2\0\0\0\0\x50";

	params(&h, 2);
	memset(&pr, 0, sizeof(pr));
	pr.act = ACT_SERVER;
	pr.want.link = HS_LINK_ETH;
	CHECK(talk(&pr, &h, &a, 5, &rc, err, sizeof(err)) == HS_OK);
	CHECK(rc == 0);
	CHECK(a.rkey == 0x5151 && a.qps == 2 && a.qp[1].qpn == 0x101);

	pr.want.qps = 4;
	CHECK(talk(&pr, &h, &a, 5, &rc, err, sizeof(err)) == HS_EREJECTED);
	CHECK_STR(err, "server refused: --qps: client 2, server 4");
	CHECK(rc == 10 + HS_EMISMATCH);

	pr.want.qps = 0;
	pr.want.link = HS_LINK_IB;
	CHECK(talk(&pr, &h, &a, 5, &rc, err, sizeof(err)) == HS_EREJECTED);
	CHECK(strstr(err, "link layer: client Ethernet, server InfiniBand"));

	pr.want.link = HS_LINK_ETH;
	pr.want.size_min = pr.want.size_max = 65536;
	CHECK(talk(&pr, &h, &a, 5, &rc, err, sizeof(err)) == HS_EREJECTED);
	CHECK(strstr(err, "--size/--sizes: client 4096..1048576"));

	/* A client's word never makes the server allocate past its bound:
	 * rejected before the server allocates anything, naming the options. */
	pr.want.size_min = pr.want.size_max = 0;
	params(&h, 32);
	h.size_max = HS_MAX_SIZE;
	CHECK(talk(&pr, &h, &a, 5, &rc, err, sizeof(err)) == HS_EREJECTED);
	CHECK(strstr(err, "server refused: --sizes/-q: client asks for 32 QPs "
	    "x 1073741824 bytes") != NULL);
	CHECK(rc == 10 + HS_EMISMATCH);
	params(&h, 2);
	pr.want.mem_max = (2 << 20) - 1;
	CHECK(talk(&pr, &h, &a, 5, &rc, err, sizeof(err)) == HS_EREJECTED);
	CHECK(strstr(err, "server allows 2097151") != NULL);
	pr.want.mem_max = 2 << 20;
	CHECK(talk(&pr, &h, &a, 5, &rc, err, sizeof(err)) == HS_OK);
	CHECK(rc == 0 && a.buf_len == 2 << 20);
	/* Over 1 GiB is malformed, rejected by the decoder itself. */
	h.size_max = HS_MAX_SIZE + 4096;
	CHECK(talk(&pr, &h, &a, 5, &rc, err, sizeof(err)) == HS_EREJECTED);
	CHECK(strstr(err, "(1..1GiB, smallest first)") != NULL);
	CHECK(rc == 10 + HS_EMALFORMED);
	pr.want.mem_max = 0;
	params(&h, 2);

	pr.act = ACT_BYTES;
	pr.bytes = http;
	pr.len = sizeof(http) - 1;
	CHECK(talk(&pr, &h, &a, 5, &rc, err, sizeof(err)) == HS_EMAGIC);
	CHECK(strstr(err, "not an rdma-probe (got \"HTTP/1.1 400") != NULL);

	pr.bytes = "no\n";
	pr.len = 3;
	CHECK(talk(&pr, &h, &a, 5, &rc, err, sizeof(err)) == HS_EMAGIC);
	CHECK(strstr(err, "got \"no\\x0a\"") != NULL);

	pr.bytes = trunc_body;
	pr.len = sizeof(trunc_body) - 1;
	CHECK(talk(&pr, &h, &a, 5, &rc, err, sizeof(err)) == HS_ETRUNC);
	CHECK(strstr(err, "10 bytes into the message body") != NULL);

	pr.bytes = "KVRP\0";
	pr.len = 5;
	CHECK(talk(&pr, &h, &a, 5, &rc, err, sizeof(err)) == HS_ETRUNC);
	CHECK(strstr(err, "5 bytes into the message header") != NULL);

	pr.bytes = v2;
	pr.len = sizeof(v2) - 1;
	CHECK(talk(&pr, &h, &a, 5, &rc, err, sizeof(err)) == HS_EVERSION);

	pr.act = ACT_CLOSE;
	CHECK(talk(&pr, &h, &a, 5, &rc, err, sizeof(err)) == HS_EIO);
	CHECK(strstr(err, "without a handshake") != NULL);

	pr.act = ACT_SILENT;
	CHECK(talk(&pr, &h, &a, 0.3, &rc, err, sizeof(err)) == HS_EIO);
	CHECK(strstr(err, "timed out") != NULL);
}

/* The whole conversation: HELLO, ACCEPT, DONE, DONE_ACK. */
static void
test_full_exchange(void)
{
	struct hs_params h, a;
	struct peer pr;
	uint8_t buf[64];
	enum hs_type type;
	uint32_t len, ok = 9, regions = 9;
	char port[16], err[512];
	pid_t pid;
	int fd;

	memset(&pr, 0, sizeof(pr));
	pr.act = ACT_SERVER;
	pr.bytes = "done";
	pr.want.link = HS_LINK_ETH;
	params(&h, 3);
	pid = spawn(&pr, port, sizeof(port));
	fd = kv_connect("127.0.0.1", port, 5, err, sizeof(err));
	CHECK(fd >= 0);
	kv_set_timeouts(fd, 5);
	CHECK(hs_client_hello(fd, &h, &a, err, sizeof(err)) == HS_OK);
	CHECK(hs_send(fd, buf, hs_encode_done(buf, sizeof(buf), 65536, 0xa5),
	    err, sizeof(err)) == HS_OK);
	CHECK(hs_recv(fd, &type, buf, sizeof(buf), &len, err, sizeof(err)) ==
	    HS_OK && type == HS_DONE_ACK);
	CHECK(hs_decode_done_ack(buf, len, &ok, &regions, err, sizeof(err)) ==
	    HS_OK);
	CHECK(ok == 2 && regions == 3);
	close(fd);
	CHECK(reap(pid) == 0);
}

/* The server half reading something that is not an rdma-probe client. */
static void
test_server_side(void)
{
	struct peer pr;
	char port[16], err[256];
	pid_t pid;
	int fd;

	memset(&pr, 0, sizeof(pr));
	pr.act = ACT_CLIENT;
	pr.want.link = HS_LINK_ETH;
	pid = spawn(&pr, port, sizeof(port));
	fd = kv_connect("127.0.0.1", port, 5, err, sizeof(err));
	CHECK(fd >= 0);
	CHECK(kv_write_full(fd, "GET / HTTP/1.0\r\n\r\n", 18) == 0);
	CHECK(reap(pid) == 10 + HS_EMAGIC);
	close(fd);

	pid = spawn(&pr, port, sizeof(port));
	fd = kv_connect("127.0.0.1", port, 5, err, sizeof(err));
	CHECK(kv_write_full(fd, "KVRP\0\1\1\0\0\0\0\x50" "short", 17) == 0);
	shutdown(fd, SHUT_WR);
	CHECK(reap(pid) == 10 + HS_ETRUNC);
	close(fd);
}

/* A connected loopback TCP pair: *cl the client's end, *sv the server's. */
static void
tcp_pair(int *cl, int *sv)
{
	char port[16], err[256];
	int lfd = kv_listen("127.0.0.1", "0", 1, err, sizeof(err));

	CHECK(lfd >= 0);
	snprintf(port, sizeof(port), "%d", kv_local_port(lfd));
	*cl = kv_connect("127.0.0.1", port, 5, err, sizeof(err));
	*sv = accept(lfd, NULL, NULL);
	CHECK(*cl >= 0 && *sv >= 0);
	CHECK(kv_set_timeouts(*sv, 2) == 0);
	close(lfd);
}

/* The server's wait for DONE after the run, over loopback TCP. */
static void
test_server_done(void)
{
	uint8_t buf[HS_HDR_LEN + HS_MAX_BODY];
	struct hs_params p;
	uint64_t check = 0;
	char err[256];
	int cl, sv;

	tcp_pair(&cl, &sv);
	CHECK(hs_send(cl, buf, hs_encode_done(buf, sizeof(buf), 65536, 0xa5),
	    err, sizeof(err)) == HS_OK);
	CHECK(hs_server_done(sv, 65536, 0xa5, &check, err, sizeof(err)) ==
	    HS_OK && check == 65536);
	/* The client vanishes instead: said as such, not as "no handshake". */
	close(cl);
	CHECK(hs_server_done(sv, 65536, 0xa5, &check, err, sizeof(err)) ==
	    HS_EIO);
	CHECK_STR(err, "peer closed the connection while this side waited "
	    "for its DONE");
	close(sv);

	tcp_pair(&cl, &sv);
	CHECK(hs_send(cl, buf, hs_encode_done(buf, sizeof(buf), 65537, 0xa5),
	    err, sizeof(err)) == HS_OK);
	CHECK(hs_server_done(sv, 65536, 0xa5, &check, err, sizeof(err)) ==
	    HS_EMALFORMED);
	CHECK_STR(err, "handshake: DONE asks to check 65537 bytes of 1..65536 "
	    "with fill 0xa5 (want 0xa5)");
	CHECK(hs_send(cl, buf, hs_encode_done(buf, sizeof(buf), 4096, 0x5a),
	    err, sizeof(err)) == HS_OK);
	CHECK(hs_server_done(sv, 65536, 0xa5, &check, err, sizeof(err)) ==
	    HS_EMALFORMED);
	CHECK(strstr(err, "fill 0x5a (want 0xa5)") != NULL);
	CHECK(hs_send(cl, buf, hs_encode_done(buf, sizeof(buf), 0, 0xa5),
	    err, sizeof(err)) == HS_OK);
	CHECK(hs_server_done(sv, 65536, 0xa5, &check, err, sizeof(err)) ==
	    HS_EMALFORMED);
	/* Another HELLO where DONE belongs: too long for DONE's buffer. */
	params(&p, 1);
	CHECK(hs_send(cl, buf, hs_encode_params(buf, sizeof(buf), HS_HELLO,
	    &p), err, sizeof(err)) == HS_OK);
	CHECK(hs_server_done(sv, 65536, 0xa5, &check, err, sizeof(err)) ==
	    HS_EMALFORMED);
	close(cl);
	close(sv);

	tcp_pair(&cl, &sv);
	CHECK(hs_send(cl, buf, hs_encode_done_ack(buf, sizeof(buf), 1, 1),
	    err, sizeof(err)) == HS_OK);
	CHECK(hs_server_done(sv, 65536, 0xa5, &check, err, sizeof(err)) ==
	    HS_EMALFORMED);
	CHECK_STR(err, "handshake: got message type 5, expected 4 (DONE)");
	/* A client that stays but says nothing: the socket's timeout ends
	 * the wait (rdma-probe uses keepalive for the run itself). */
	CHECK(kv_set_timeouts(sv, 0.2) == 0);
	CHECK(hs_server_done(sv, 65536, 0xa5, &check, err, sizeof(err)) ==
	    HS_EIO);
	CHECK(strstr(err, "timed out") != NULL);
	close(cl);
	close(sv);
}

/* A message longer than the caller's buffer is refused, not copied. */
static void
test_capacity(void)
{
	uint8_t small[16], buf[HS_HDR_LEN + HS_MAX_BODY];
	struct hs_params p;
	enum hs_type type;
	uint32_t len;
	char err[256];
	int sv[2];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	params(&p, 4);
	CHECK(kv_write_full(sv[0], buf, hs_encode_params(buf, sizeof(buf),
	    HS_ACCEPT, &p)) == 0);
	CHECK(hs_recv(sv[1], &type, small, sizeof(small), &len, err,
	    sizeof(err)) == HS_EMALFORMED);
	CHECK(strstr(err, "at most 16 fit") != NULL);
	close(sv[0]);
	close(sv[1]);
}

int
main(void)
{
	test_capacity();
	test_roundtrip();
	test_bad_messages();
	test_checks();
	test_tcp();
	test_full_exchange();
	test_server_side();
	test_server_done();
	return DONE("test_rdmahs");
}
