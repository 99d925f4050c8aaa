// SPDX-License-Identifier: GPL-2.0
/*
 * ELF notes in a buffer (a module's /sys/module/M/notes, a .notes section,
 * a dump's memory): the GNU build-id among them; the build-id notes in a
 * copy of memory; the text of a build-id and of a KASLR offset as users
 * type them.
 */
#include <ctype.h>
#include <stdbool.h>
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

/*
 * Is buf[pos] (memory at base) inside an ELF image whose header starts on
 * a page boundary at most FGK_NOTES_LOOKBACK bytes before it?  The kernel
 * carries its vDSO images, with their own build-id notes, in .rodata; its
 * own .notes are in no ELF image in memory.  The image's extent is the end
 * of its program or section header table, whichever is later.
 */
static bool inside_elf_image(const uint8_t *buf, size_t len, uint64_t base,
			     size_t pos)
{
	const uint64_t page_size = 0x1000;
	uint64_t page = (base + pos) & ~(page_size - 1);

	while (page >= base && base + pos - page <= FGK_NOTES_LOOKBACK) {
		size_t h = (size_t)(page - base);
		uint64_t extent = 0;

		if (len >= h + 64 && !memcmp(buf + h, "\x7f" "ELF", 4)) {
			const uint8_t *e = buf + h;
			uint64_t phoff = 0, shoff = 0;
			const uint8_t *ent = NULL;

			if (e[4] == 2) {		/* ELFCLASS64 */
				phoff = le32(e + 0x20) | (uint64_t)le32(e + 0x24) << 32;
				shoff = le32(e + 0x28) | (uint64_t)le32(e + 0x2c) << 32;
				ent = e + 0x36;
			} else if (e[4] == 1) {		/* ELFCLASS32 */
				phoff = le32(e + 0x1c);
				shoff = le32(e + 0x20);
				ent = e + 0x2a;
			}
			if (ent) {
				uint64_t phent = ent[0] | ent[1] << 8;
				uint64_t phnum = ent[2] | ent[3] << 8;
				uint64_t shent = ent[4] | ent[5] << 8;
				uint64_t shnum = ent[6] | ent[7] << 8;
				uint64_t a = phoff > UINT64_MAX - phent * phnum ?
					     UINT64_MAX : phoff + phent * phnum;
				uint64_t b = shoff > UINT64_MAX - shent * shnum ?
					     UINT64_MAX : shoff + shent * shnum;

				extent = a > b ? a : b;
			}
		}
		if (pos - h < extent)
			return true;
		if (page < page_size)
			break;
		page -= page_size;
	}
	return false;
}

struct fgk_error *fgk_notes_find_build_ids(const void *buf, size_t len,
					   uint64_t base,
					   struct fgk_build_id_note **ret,
					   size_t *n)
{
	static const uint8_t tail[8] = { 3, 0, 0, 0, 'G', 'N', 'U', 0 };
	const uint8_t *p = buf;
	struct fgk_build_id_note *out = NULL;
	size_t cnt = 0, cap = 0;

	*ret = NULL;
	*n = 0;
	/* memory ends at the top of the address space: no wrap-around */
	if (base && len > (size_t)(0 - base))
		len = (size_t)(0 - base);
	if (!p || len < FGK_NOTES_HEADER + 4)
		return NULL;
	/* the type and name of a note, 8 bytes after its start */
	for (size_t at = (size_t)(-base & 3); at + FGK_NOTES_HEADER + 4 <= len;
	     at += 4) {
		uint32_t namesz, descsz;
		size_t end;

		if (memcmp(p + at + 8, tail, sizeof(tail)))
			continue;
		namesz = le32(p + at);
		descsz = le32(p + at + 4);
		if (namesz != 4 || descsz < FGK_BUILD_ID_MIN || descsz > FGK_BUILD_ID_MAX)
			continue;
		end = at + FGK_NOTES_HEADER + 4 + descsz;
		if (end > len)
			continue;
		if (cnt == cap) {
			size_t ncap = cap ? 2 * cap : 4;
			struct fgk_build_id_note *t = realloc(out, ncap * sizeof(*t));

			if (!t) {
				free(out);
				return &fgk_enomem;
			}
			out = t;
			cap = ncap;
		}
		out[cnt].addr = base + at;
		out[cnt].size = descsz;
		for (uint32_t i = 0; i < descsz; i++)
			sprintf(out[cnt].build_id + 2 * i, "%02x",
				p[at + FGK_NOTES_HEADER + 4 + i]);
		out[cnt].embedded = inside_elf_image(p, len, base, at);
		cnt++;
	}
	*ret = out;
	*n = cnt;
	return NULL;
}

struct fgk_error *fgk_build_id_parse(const char *text, char **hex)
{
	const char *s = text, *e;
	size_t digits;
	char *h;

	*hex = NULL;
	if (!text)
		return fgk__error_new(FGK_ERR_INVALID, NULL, "no build-id");
	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	if (e - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	digits = (size_t)(e - s);
	for (const char *c = s; c < e; c++)
		if (!isxdigit((unsigned char)*c))
			digits = 0;
	if (!digits || digits % 2 || digits < 2 * FGK_BUILD_ID_MIN ||
	    digits > 2 * FGK_BUILD_ID_MAX)
		return fgk__error_new(FGK_ERR_INVALID, NULL,
				      "bad build-id '%s': expected %d to %d hex digits (an even number), like the 'Build ID' of 'readelf -n vmlinux'",
				      text, 2 * FGK_BUILD_ID_MIN, 2 * FGK_BUILD_ID_MAX);
	h = malloc(digits + 1);
	if (!h)
		return &fgk_enomem;
	for (size_t i = 0; i < digits; i++)
		h[i] = (char)tolower((unsigned char)s[i]);
	h[digits] = '\0';
	*hex = h;
	return NULL;
}

struct fgk_error *fgk_offset_parse(const char *text, uint64_t align,
				   uint64_t *offset)
{
	const char *s = text;
	uint64_t v = 0;
	size_t digits = 0;

	if (!text)
		return fgk__error_new(FGK_ERR_INVALID, NULL, "no offset");
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; *s; s++, digits++) {
		if (!isxdigit((unsigned char)*s) || v >> 60) {
			digits = 0;
			break;
		}
		v = v << 4 | (uint64_t)(isdigit((unsigned char)*s) ? *s - '0' :
					tolower((unsigned char)*s) - 'a' + 10);
	}
	if (!digits)
		return fgk__error_new(FGK_ERR_INVALID, NULL,
				      "bad offset '%s': expected a hex number like 0x1e000000",
				      text);
	if (align && v % align)
		return fgk__error_new(FGK_ERR_INVALID, NULL,
				      "offset 0x%llx is not a multiple of 0x%llx",
				      (unsigned long long)v, (unsigned long long)align);
	*offset = v;
	return NULL;
}
