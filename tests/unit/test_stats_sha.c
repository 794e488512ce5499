/* SPDX-License-Identifier: MIT */
#include "sha.h"
#include "stats.h"
#include "unit.h"

int
main(void)
{
	double x[] = { 5, 1, 4, 2, 3 };
	uint8_t md[KV_SHA256_LEN];
	char hex[KV_SHA256_HEX];
	struct kv_sha256 h;

	kv_sort(x, 5);
	CHECK(x[0] == 1 && x[4] == 5);
	CHECK_NEAR(kv_percentile(x, 5, 50), 3, 1e-15);
	CHECK_NEAR(kv_percentile(x, 5, 90), 4.6, 1e-12);
	CHECK_NEAR(kv_percentile(x, 5, 0), 1, 1e-15);
	CHECK_NEAR(kv_percentile(x, 5, 100), 5, 1e-15);
	CHECK(isnan(kv_percentile(x, 0, 50)));
	CHECK_NEAR(kv_mean(x, 5), 3, 1e-15);

	CHECK(kv_sha256("abc", 3, md) == 0);
	kv_hex(md, sizeof(md), hex);
	CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	CHECK(kv_sha256_init(&h) == 0);
	CHECK(kv_sha256_update(&h, "a", 1) == 0 && kv_sha256_update(&h, "bc", 2) == 0);
	CHECK(kv_sha256_final(&h, md) == 0);
	kv_sha256_free(&h);
	kv_hex(md, sizeof(md), hex);
	CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	return DONE("test_stats_sha");
}
