/* SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include "redact.h"
#include "unit.h"

static void
test_names(void)
{
	const char *secret[] = { "HF_TOKEN", "github_token", "AWS_SECRET_ACCESS_KEY",
	    "DB_PASSWORD", "MYSQL_PASSWD", "SSH_KEY", "API_KEYS", "AUTH",
	    "X-Auth-Token", "COOKIE_JAR", "SESSION_ID", "PRIVATE_REGISTRY",
	    "CLIENT_CERT", "openaiApiKey", "HFToken", "OAUTH2_TOKEN",
	    "GOOGLE_APPLICATION_CREDENTIALS", "my.secret.value", "APIKEY",
	    "SENTRY_DSN", "smtp_pass", NULL };
	const char *fine[] = { "KEYBOARD", "MONKEY", "TOKENIZERS_PARALLELISM",
	    "AUTHOR", "PASSENGER_ENV", "KEYRING_BACKEND", "XAUTHORITY", "PATH",
	    "PWD", "SECRETARY", "CERTBOT", "SESSIONLESS", "turnkey", "", "_",
	    NULL };

	for (const char **p = secret; *p; p++) {
		if (!redact_name(*p))
			fprintf(stderr, "name not caught: %s\n", *p);
		CHECK(redact_name(*p));
	}
	for (const char **p = fine; *p; p++) {
		if (redact_name(*p))
			fprintf(stderr, "name wrongly caught: %s\n", *p);
		CHECK(!redact_name(*p));
	}
}

static void
test_values(void)
{
	const char *secret[] = {
	    "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",
	    "--token=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",
	    "sk-proj-4fG7hJ2kL9mN3pQ8rS1tU6vW0xY5zA2b",
	    "ghp_1A2b3C4d5E6f7G8h9I0jK1lM2nO3pQ4rS5tU",
	    "github_pat_11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTu",
	    "AKIAIOSFODNN7EXAMPLE", "xoxb-123456789012-abcdefgh",
	    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
	    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----",
	    "Bearer abcdefghijklmnop", "x Basic dXNlcjpwYXNzd29yZA==",
	    "Zm9vYmFyQmF6UXV4MTIzNDU2Nzg5MGFiY2RlZkdISUpL",
	    "https://hooks.example/services/T0/B0/B8a7ZkT1c9QpLmN4xY2wV6rS",
	    NULL };
	const char *fine[] = {
	    "/usr/local/bin:/usr/bin", "GPU-8e4f2c1a-9b7d-4c3e-a1f2-5d6e7f8a9b0c",
	    "9fceb02d0ae598e95dc970b74767f19372d61af8", "Qwen/Qwen2.5-7B-Instruct",
	    "task-runner-with-a-long-name-0001", "desk-xxxxxxxxxxxxxxxxxxxxxxxx",
	    "hf_short", "sk-short", "AKIA-not-a-key", "/models/VeryLongDirectoryNameWith123Digits",
	    "", "Bearer", NULL };

	for (const char **p = secret; *p; p++) {
		if (!redact_value_shape(*p))
			fprintf(stderr, "value not caught: %s\n", *p);
		CHECK(redact_value_shape(*p) != NULL);
	}
	for (const char **p = fine; *p; p++) {
		if (redact_value_shape(*p))
			fprintf(stderr, "value wrongly caught: %s (%s)\n", *p,
			    redact_value_shape(*p));
		CHECK(redact_value_shape(*p) == NULL);
	}
}

static void
url(const char *in, const char *want)
{
	char *out = redact_url_passwords(in);

	if (want == NULL)
		CHECK(out == NULL);
	else
		CHECK_STR(out, want);
	free(out);
}

static void
test_urls(void)
{
	url("postgres://u:pw@h/db", "postgres://u:[REDACTED]@h/db");
	url("redis://:pw@h:6379", "redis://:[REDACTED]@h:6379");
	url("a://u:p#w@h b://v:q@h", "a://u:[REDACTED]@h b://v:[REDACTED]@h");
	url("http://u:p@ss@h/", "http://u:[REDACTED]@h/");
	url("http://u:p/w@h/", "http://u:[REDACTED]@h/");
	url("https://host:8080/path", NULL);
	url("https://user@host/", NULL);
	url("https://host/a:b@c", NULL);
	url("http://u:@h/", NULL);
	url("no url here", NULL);
	url("://", NULL);
}

static void
test_entropy(void)
{
	CHECK_NEAR(redact_entropy("aaaa", 4), 0.0, 1e-12);
	CHECK_NEAR(redact_entropy("abcd", 4), 2.0, 1e-12);
	CHECK_NEAR(redact_entropy("", 0), 0.0, 1e-12);
}

static void
test_hex(void)
{
	const char *h = "0123456789abcdef0123456789ABCDEF";

	CHECK(redact_digest_name("GIT_COMMIT"));
	CHECK(redact_digest_name("imageDigest"));
	CHECK(redact_digest_name("SHA256"));
	CHECK(redact_digest_name("build.rev"));
	CHECK(redact_digest_name("FILE_CHECKSUM"));
	CHECK(redact_digest_name("HashValue"));
	CHECK(!redact_digest_name("SHAPE"));
	CHECK(!redact_digest_name("REVIEWER"));
	CHECK(!redact_digest_name("COMMITTER_EMAIL"));
	CHECK(!redact_digest_name("V01"));
	CHECK(!redact_digest_name(""));
	CHECK(redact_hex_secret("V01", h) != NULL);
	CHECK(redact_hex_secret("V01", "key=0x0123456789abcdef0123456789abcdef;") != NULL);
	CHECK(redact_hex_secret("V01", "a 0123456789abcdef0123456789abcdef01") != NULL);
	CHECK(redact_hex_secret("GIT_COMMIT", h) == NULL);
	CHECK(redact_hex_secret("IMAGE_DIGEST", "sha256:0123456789abcdef0123456789abcdef") == NULL);
	CHECK(redact_hex_secret("V01", h + 1) == NULL);	/* 31 digits */
	CHECK(redact_hex_secret("V01", "x0123456789abcdef0123456789abcdef") == NULL);
	CHECK(redact_hex_secret("V01", "0123456789abcdef0123456789abcdefg") == NULL);
	CHECK(redact_hex_secret("V01", "01234567890123456789012345678901") == NULL);
	CHECK(redact_hex_secret("V01", "4d1c0ffe-7b2a-4c9e-9f3d-aa01bb23cc45") == NULL);
	CHECK(redact_hex_secret("V01", "") == NULL);
}

int
main(void)
{
	test_names();
	test_hex();
	test_values();
	test_urls();
	test_entropy();
	return DONE("test_redact");
}
