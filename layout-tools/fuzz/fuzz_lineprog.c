// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer: the DWARF line program reader (lib/lineprog.c), which reads
 * the .debug_line bytes of the user's vmlinux or .ko where libdw's merged
 * line table is ambiguous.  Input: an 8-byte little-endian address, a
 * 1-byte unit offset, then the section bytes.  A row found lies at or
 * below the address asked for, and the answer does not change when asked
 * again.
 */
#include "fuzz.h"
#include "../lib/lineprog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fgk_line_row row, again;
	uint64_t addr = 0;
	size_t off;
	uint8_t *copy;
	int r;

	if (size < 9)
		return 0;
	memcpy(&addr, data, 8);
	off = data[8];
	data += 9;
	size -= 9;
	/* an exact-size heap copy, so ASan sees any read past the section */
	copy = malloc(size ? size : 1);
	if (!copy)
		abort();
	memcpy(copy, data, size);
	r = fgk__lineprog_find(copy, size, off, addr, &row);
	if (r < -1 || r > 1)
		abort();
	if (r == 1 && row.addr > addr)
		abort();
	if (fgk__lineprog_find(copy, size, off, addr, &again) != r ||
	    (r == 1 && memcmp(&row, &again, sizeof(row))))
		abort();
	free(copy);
	return 0;
}
