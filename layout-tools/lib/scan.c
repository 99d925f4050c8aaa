// SPDX-License-Identifier: GPL-2.0
/*
 * Seeds in free text (a console log, a script's output): what 'fgk seed
 * capture --text' and the runner's dump capture look for.
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "error.h"

static bool word_is(const char *b, size_t n, const char *s)
{
	return strlen(s) == n && !memcmp(b, s, n);
}

int fgk_seed_scan(const char *text, size_t len, struct fgk_seed *seed,
		  bool *disabled)
{
	static const char prefix[] = "fgkaslr_seed=";
	const size_t plen = sizeof(prefix) - 1;
	size_t i = 0;
	int found = 0;

	*disabled = false;
	while (i < len) {
		char word[FGK_SEED_HEX_LEN + 1];
		const char *b;
		size_t n, j;
		struct fgk_seed s;
		bool hex = true;

		while (i < len && isspace((unsigned char)text[i]))
			i++;
		b = text + i;
		while (i < len && text[i] && !isspace((unsigned char)text[i]))
			i++;
		n = (size_t)(text + i - b);
		if (i < len && !text[i])	/* a NUL ends a word too */
			i++;
		if (word_is(b, n, "FGKASLR_SEED=disabled") ||
		    word_is(b, n, "fgkaslr_seed=disabled")) {
			*disabled = true;
			continue;
		}
		if (n > plen && !strncasecmp(b, prefix, plen)) {
			b += plen;
			n -= plen;
		}
		if (n != FGK_SEED_HEX_LEN)
			continue;
		for (j = 0; j < n && hex; j++)
			hex = isxdigit((unsigned char)b[j]);
		if (!hex)
			continue;
		memcpy(word, b, n);
		word[n] = '\0';
		fgk_error_free(fgk_seed_parse(word, &s));	/* cannot fail: 64 hex */
		if (found && memcmp(&s, seed, sizeof(s)))
			return -1;
		*seed = s;
		found = 1;
	}
	return found;
}
