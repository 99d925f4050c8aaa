// SPDX-License-Identifier: GPL-2.0
/*
 * ELF notes in a buffer (a module's /sys/module/M/notes, a .notes section,
 * a dump's memory): the GNU build-id among them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

struct fgk_error *fgk_notes_build_id(const void *notes, size_t len, char **hex)
{
	const uint8_t *p = notes;
	size_t off = 0;

	*hex = NULL;
	while (len - off >= 12) {
		uint32_t nsz = le32(p + off), dsz = le32(p + off + 4);
		uint32_t type = le32(p + off + 8);
		size_t name = off + 12, desc;

		if (nsz > len - name)
			return NULL;
		desc = name + ((nsz + 3) & ~(size_t)3);
		if (desc > len || dsz > len - desc)
			return NULL;
		if (type == 3 && nsz == 4 && !memcmp(p + name, "GNU", 4) &&
		    dsz >= 1 && dsz <= 64) {
			char *h = malloc(2 * dsz + 1);

			if (!h)
				return &fgk_enomem;
			for (uint32_t i = 0; i < dsz; i++)
				sprintf(h + 2 * i, "%02x", p[desc + i]);
			*hex = h;
			return NULL;
		}
		off = desc + ((dsz + 3) & ~(size_t)3);
		if (off > len)
			return NULL;
	}
	return NULL;
}
