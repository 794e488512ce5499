/* SPDX-License-Identifier: MIT */
#include <stdint.h>

#include "units.h"
#include "unit.h"

static uint64_t
size(const char *s)
{
	char err[128];
	uint64_t v = 0;

	return kv_parse_size(s, &v, err, sizeof(err)) == 0 ? v : UINT64_MAX;
}

static double
bw(const char *s)
{
	char err[128];
	double v = -1;

	return kv_parse_bw(s, &v, err, sizeof(err)) == 0 ? v : -1;
}

static double
dur(const char *s)
{
	char err[128];
	double v = -1;

	return kv_parse_duration(s, &v, err, sizeof(err)) == 0 ? v : -1;
}

int
main(void)
{
	char err[128];
	uint64_t u;
	long long ll;
	double d;

	CHECK(size("64KiB") == 65536);
	CHECK(size("64K") == 65536);
	CHECK(size("2.5GB") == 2500000000ULL);
	CHECK(size("1.5e9") == 1500000000ULL);
	CHECK(size("8MiB") == 8388608);
	CHECK(size("0") == 0);
	CHECK(size("12furlongs") == UINT64_MAX);
	CHECK(size("-1") == UINT64_MAX);
	CHECK(size("") == UINT64_MAX);
	CHECK(size("1.5B") == UINT64_MAX);	/* not whole */
	CHECK(size("1e30") == UINT64_MAX);	/* overflow */
	CHECK(size("inf") == UINT64_MAX);
	CHECK(size("nan") == UINT64_MAX);
	CHECK(kv_parse_size("12furlongs", &u, err, sizeof(err)) == -1 &&
	    strstr(err, "furlongs") != NULL);

	CHECK_NEAR(bw("25Gbit/s"), 3.125e9, 1e-12);
	CHECK_NEAR(bw("2.5GB/s"), 2.5e9, 1e-12);
	CHECK_NEAR(bw("23GiB/s"), 23.0 * 1073741824.0, 1e-12);
	CHECK_NEAR(bw("100Mbps"), 12.5e6, 1e-12);
	CHECK_NEAR(bw("1e9"), 1e9, 1e-12);
	CHECK(bw("-5GB/s") < 0);
	CHECK(bw("5 parsecs") < 0);

	CHECK(kv_parse_count("128K", &u, err, sizeof(err)) == 0 && u == 131072);
	CHECK(kv_parse_count("8k", &u, err, sizeof(err)) == 0 && u == 8192);
	CHECK(kv_parse_count("1000", &u, err, sizeof(err)) == 0 && u == 1000);
	CHECK(kv_parse_count("1.5e6", &u, err, sizeof(err)) == 0 && u == 1500000);
	CHECK(kv_parse_count("1.5", &u, err, sizeof(err)) == -1);
	CHECK(kv_parse_count("99999999999999999999", &u, err, sizeof(err)) == -1);

	CHECK_NEAR(dur("500ms"), 0.5, 1e-12);
	CHECK_NEAR(dur("10s"), 10, 1e-12);
	CHECK_NEAR(dur("1.5m"), 90, 1e-12);
	CHECK_NEAR(dur("2h"), 7200, 1e-12);
	CHECK_NEAR(dur("250us"), 250e-6, 1e-12);
	CHECK_NEAR(dur("3"), 3, 1e-12);
	CHECK(dur("3 fortnights") < 0);
	CHECK(dur("-1s") < 0);

	CHECK(kv_parse_real("0.5", 0, 1, &d, err, sizeof(err)) == 0 && d == 0.5);
	CHECK(kv_parse_real("1.5", 0, 1, &d, err, sizeof(err)) == -1);
	CHECK(kv_parse_real("0.5x", 0, 1, &d, err, sizeof(err)) == -1);
	CHECK(kv_parse_int("42", 0, 100, &ll, err, sizeof(err)) == 0 && ll == 42);
	CHECK(kv_parse_int("101", 0, 100, &ll, err, sizeof(err)) == -1);
	CHECK(kv_parse_int("4x", 0, 100, &ll, err, sizeof(err)) == -1);
	return DONE("test_units");
}
