// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer: relinking a vmlinux from anywhere: section headers, symbol
 * tables and SHT_SYMTAB_SHNDX, every relocation section, program headers
 * (fgk_relink_image).  The result is the input up to its last section
 * kept (relocation sections go), the randomized sections folded into one,
 * with a new section name table and header table appended: longer than
 * the input by at most those two tables.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fgk_vmlinux *vm;
	struct fgk_layout *l = NULL;
	struct fgk_seed seed = { { 0x5a, 0xa5, 7 } };
	struct fgk_relink_stats st;
	struct fgk_error *err;
	void *image = NULL;
	size_t isize = 0;

	err = fgk_vmlinux_open(fuzz_file(data, size), &vm);
	if (err) {
		fuzz_check_error(err);
		return 0;
	}
	err = fgk_layout_compute(vm, &seed, &l);
	if (!err) {
		err = fgk_relink_image(vm, l, &image, &isize, &st);
		/* both tables come from the input: at most its size each */
		if (!err && isize > 3 * size + 64)
			abort();
		free(image);
	}
	fuzz_check_error(err);
	fgk_layout_free(l);
	fgk_vmlinux_close(vm);
	return 0;
}
