// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer: crash dumps (fgk_vmcore_read): ELF cores (program headers,
 * PT_NOTE, the VMCOREINFO note), kdump-compressed headers and sub-headers,
 * makedumpfile's flattened stream; physical memory of ELF cores
 * (fgk__vmcore_read_phys, what a layout from the dump's kallsyms reads).
 * Built with FGK_FUZZING, libkdumpfile itself is not run (fgk runs it in a
 * child process that may crash).
 */
#include "fuzz.h"
#include "../lib/vmcore_mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fgk_vmcoreinfo info;
	struct fgk_error *err;

	const char *path = fuzz_file(data, size);
	uint8_t buf[2][64];

	err = fgk_vmcore_read(path, &info);
	fuzz_check_error(err);
	if (info.format == FGK_VMCORE_ELF) {
		struct fgk__phys_range r[2] = {
			{ 0, sizeof(buf[0]), buf[0] },
			{ 0x1000, sizeof(buf[1]), buf[1] },
		};

		fuzz_check_error(fgk__vmcore_read_phys(path, r, 2));
	}
	fgk_vmcoreinfo_clear(&info);
	return 0;
}
