/* SPDX-License-Identifier: MIT */
#include <openssl/err.h>
#include <openssl/evp.h>

#include "err.h"
#include "sha.h"

static int
sslfail(const char *what)
{
	char buf[256];

	ERR_error_string_n(ERR_get_error(), buf, sizeof(buf));
	kv_warn("%s: %s", what, buf);
	return -1;
}

int
kv_sha256_init(struct kv_sha256 *h)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();

	h->ctx = c;
	if (c == NULL)
		return sslfail("EVP_MD_CTX_new");
	if (EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1)
		return sslfail("EVP_DigestInit_ex");
	return 0;
}

int
kv_sha256_update(struct kv_sha256 *h, const void *buf, size_t len)
{
	if (EVP_DigestUpdate(h->ctx, buf, len) != 1)
		return sslfail("EVP_DigestUpdate");
	return 0;
}

int
kv_sha256_final(struct kv_sha256 *h, uint8_t md[KV_SHA256_LEN])
{
	unsigned int n = 0;

	if (EVP_DigestFinal_ex(h->ctx, md, &n) != 1 || n != KV_SHA256_LEN)
		return sslfail("EVP_DigestFinal_ex");
	return 0;
}

void
kv_sha256_free(struct kv_sha256 *h)
{
	EVP_MD_CTX_free(h->ctx);
	h->ctx = NULL;
}

int
kv_sha256(const void *buf, size_t len, uint8_t md[KV_SHA256_LEN])
{
	unsigned int n = 0;

	if (EVP_Digest(buf, len, md, &n, EVP_sha256(), NULL) != 1 ||
	    n != KV_SHA256_LEN)
		return sslfail("EVP_Digest");
	return 0;
}

void
kv_hex(const uint8_t *md, size_t len, char *hex)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 15];
	}
	hex[2 * len] = '\0';
}
