/* SPDX-License-Identifier: MIT */
#ifndef KV_SHA_H
#define KV_SHA_H

#include <stddef.h>
#include <stdint.h>

#define KV_SHA256_LEN 32
#define KV_SHA256_HEX 65	/* 64 hex digits and NUL */

/* Streaming SHA-256 through OpenSSL's EVP (SHA-NI where the CPU has it). */
struct kv_sha256 {
	void *ctx;		/* EVP_MD_CTX */
};

/* Each returns 0, or -1 with OpenSSL's error text reported by kv_warn. */
int kv_sha256_init(struct kv_sha256 *h);
int kv_sha256_update(struct kv_sha256 *h, const void *buf, size_t len);
int kv_sha256_final(struct kv_sha256 *h, uint8_t md[KV_SHA256_LEN]);
void kv_sha256_free(struct kv_sha256 *h);

/* One-shot digest of buf. */
int kv_sha256(const void *buf, size_t len, uint8_t md[KV_SHA256_LEN]);

/* Lower-case hex of md into hex (KV_SHA256_HEX bytes). */
void kv_hex(const uint8_t *md, size_t len, char *hex);

#endif
