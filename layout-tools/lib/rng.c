// SPDX-License-Identifier: GPL-2.0
/*
 * The generator of §4 (ChaCha20 keystream, RFC 8439 block function), the
 * bounded draw of §5 and the Fisher-Yates shuffle of §6.
 *
 * The keystream comes from OpenSSL's "ChaCha20" cipher (RFC 8439 variant:
 * 16-byte IV = 32-bit little-endian block counter || 96-bit nonce);
 * encrypting zeros yields the keystream.  Using a well-kept implementation
 * rather than a private twin lets the kernel (lib/crypto/chacha) and the
 * tools check each other against the spec's vectors.
 */
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>

#include "error.h"

const uint8_t fgk_text_nonce[FGK_NONCE_SIZE] = {
	'f', 'g', 'k', 'a', 's', 'l', 'r', '-', 't', 'e', 'x', 't',
};

const uint8_t fgk_sched_nonce[FGK_NONCE_SIZE] = {
	'f', 'g', 'k', 'a', 's', 'l', 'r', '-', 's', 'c', 'h', 'd',
};

/* Keystream is produced this many bytes at a time (64 blocks). */
#define RNG_CHUNK 4096

struct fgk_rng {
	EVP_CIPHER_CTX *ctx;
	size_t pos;		/* next unread byte in buf */
	uint8_t buf[RNG_CHUNK];
};

static const uint8_t zeros[RNG_CHUNK];

static struct fgk_error *cipher_init(EVP_CIPHER_CTX **ret,
				     const uint8_t key[32], uint32_t counter,
				     const uint8_t nonce[12])
{
	uint8_t iv[16];
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();

	if (!ctx)
		return &fgk_enomem;
	iv[0] = counter & 0xff;
	iv[1] = (counter >> 8) & 0xff;
	iv[2] = (counter >> 16) & 0xff;
	iv[3] = (counter >> 24) & 0xff;
	memcpy(iv + 4, nonce, 12);
	if (EVP_EncryptInit_ex(ctx, EVP_chacha20(), NULL, key, iv) != 1) {
		EVP_CIPHER_CTX_free(ctx);
		return fgk__error_openssl("OpenSSL ChaCha20 init failed");
	}
	*ret = ctx;
	return NULL;
}

static struct fgk_error *keystream(EVP_CIPHER_CTX *ctx, uint8_t *out,
				   size_t len)
{
	int outl = 0;

	if (EVP_EncryptUpdate(ctx, out, &outl, zeros, (int)len) != 1 ||
	    (size_t)outl != len)
		return fgk__error_openssl("OpenSSL ChaCha20 keystream failed");
	return NULL;
}

struct fgk_error *fgk_chacha20_block(const uint8_t key[32], uint32_t counter,
				     const uint8_t nonce[12], uint8_t out[64])
{
	EVP_CIPHER_CTX *ctx;
	struct fgk_error *err = cipher_init(&ctx, key, counter, nonce);

	if (err)
		return err;
	err = keystream(ctx, out, 64);
	EVP_CIPHER_CTX_free(ctx);
	return err;
}

struct fgk_error *fgk_rng_new(const struct fgk_seed *seed,
			      const uint8_t nonce[FGK_NONCE_SIZE],
			      struct fgk_rng **ret)
{
	struct fgk_rng *rng = malloc(sizeof(*rng));
	struct fgk_error *err;

	if (!rng)
		return &fgk_enomem;
	err = cipher_init(&rng->ctx, seed->bytes, 0, nonce);
	if (err) {
		free(rng);
		return err;
	}
	rng->pos = RNG_CHUNK;	/* empty: refill on first use */
	*ret = rng;
	return NULL;
}

void fgk_rng_free(struct fgk_rng *rng)
{
	if (!rng)
		return;
	EVP_CIPHER_CTX_free(rng->ctx);
	free(rng);
}

struct fgk_error *fgk_rng_u32(struct fgk_rng *rng, uint32_t *ret)
{
	const uint8_t *p;

	if (rng->pos + 4 > RNG_CHUNK) {
		struct fgk_error *err = keystream(rng->ctx, rng->buf, RNG_CHUNK);

		if (err)
			return err;
		rng->pos = 0;
	}
	p = rng->buf + rng->pos;
	rng->pos += 4;
	*ret = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
	return NULL;
}

struct fgk_error *fgk_rng_below(struct fgk_rng *rng, uint64_t m, uint32_t *ret)
{
	uint32_t threshold, r;
	struct fgk_error *err;

	if (m < 1 || m > (UINT64_C(1) << 32))
		return fgk__error_new(FGK_ERR_INVALID, NULL,
				      "below(%llu): bound out of range",
				      (unsigned long long)m);
	/* (2^32 - m) mod m, computed in 64 bits so that m = 2^32 works. */
	threshold = (uint32_t)(((UINT64_C(1) << 32) - m) % m);
	for (;;) {
		err = fgk_rng_u32(rng, &r);
		if (err)
			return err;
		if (r >= threshold) {
			*ret = (uint32_t)(r % m);
			return NULL;
		}
	}
}

void fgk_module_nonce(const char *name, uint8_t nonce[FGK_NONCE_SIZE])
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		h ^= *p;
		h *= UINT64_C(0x100000001b3);
	}
	memcpy(nonce, "fgkm", 4);
	for (int i = 0; i < 8; i++)
		nonce[4 + i] = (uint8_t)(h >> (8 * i));
}

struct fgk_error *fgk_permutation(const struct fgk_seed *seed,
				  const uint8_t nonce[FGK_NONCE_SIZE],
				  size_t n, uint32_t *order)
{
	struct fgk_rng *rng;
	struct fgk_error *err;

	if (n > UINT32_MAX)
		return fgk__error_new(FGK_ERR_INVALID, NULL,
				      "too many sections (%zu)", n);
	for (size_t i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	if (n <= 1)
		return NULL;	/* §6: no keystream consumed */
	err = fgk_rng_new(seed, nonce, &rng);
	if (err)
		return err;
	for (size_t i = n - 1; i >= 1; i--) {
		uint32_t j, t;

		err = fgk_rng_below(rng, i + 1, &j);
		if (err)
			break;
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	fgk_rng_free(rng);
	return err;
}
