// SPDX-License-Identifier: GPL-2.0
/* Seed text (§2). */
#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "error.h"

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

struct fgk_error *fgk_seed_parse(const char *text, struct fgk_seed *seed)
{
	const char *p = text, *end;
	static const char prefix[] = "fgkaslr_seed=";
	size_t len;

	while (isspace((unsigned char)*p))
		p++;
	if (!strncmp(p, prefix, sizeof(prefix) - 1))
		p += sizeof(prefix) - 1;
	end = p + strlen(p);
	while (end > p && isspace((unsigned char)end[-1]))
		end--;
	len = (size_t)(end - p);
	if (len == 8 && !strncmp(p, "disabled", 8))
		return fgk__error_new(FGK_ERR_SEED, NULL,
				      "seed is 'disabled': the kernel did not shuffle (boot in link order)");
	for (size_t i = 0; i < len; i++) {
		if (hexval((unsigned char)p[i]) < 0)
			return fgk__error_new(FGK_ERR_SEED, NULL,
					      "seed: non-hex character '%c' at position %zu (want exactly %d hex digits)",
					      isprint((unsigned char)p[i]) ? p[i] : '?',
					      i + 1, FGK_SEED_HEX_LEN);
	}
	if (len != FGK_SEED_HEX_LEN)
		return fgk__error_new(FGK_ERR_SEED, NULL,
				      "seed: %zu hex digits, want exactly %d",
				      len, FGK_SEED_HEX_LEN);
	for (size_t i = 0; i < FGK_SEED_SIZE; i++)
		seed->bytes[i] = (uint8_t)(hexval((unsigned char)p[2 * i]) << 4 |
					   hexval((unsigned char)p[2 * i + 1]));
	return NULL;
}

void fgk_seed_format(const struct fgk_seed *seed,
		     char buf[FGK_SEED_HEX_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < FGK_SEED_SIZE; i++) {
		buf[2 * i] = digits[seed->bytes[i] >> 4];
		buf[2 * i + 1] = digits[seed->bytes[i] & 15];
	}
	buf[FGK_SEED_HEX_LEN] = '\0';
}

struct fgk_error *fgk_seed_random(struct fgk_seed *seed)
{
	size_t got = 0;

	while (got < sizeof(seed->bytes)) {
		ssize_t r = getrandom(seed->bytes + got,
				      sizeof(seed->bytes) - got, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return fgk__error_os(errno, NULL, "getrandom");
		}
		got += (size_t)r;
	}
	return NULL;
}
