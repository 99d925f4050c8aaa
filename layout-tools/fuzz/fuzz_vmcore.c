// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer: crash dumps (fgk_vmcore_read): ELF cores (program headers,
 * PT_NOTE, the VMCOREINFO note), kdump-compressed headers and sub-headers,
 * makedumpfile's flattened stream.  Built with FGK_FUZZING, libkdumpfile
 * itself is not run (fgk runs it in a child process that may crash).
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fgk_vmcoreinfo info;
	struct fgk_error *err;

	err = fgk_vmcore_read(fuzz_file(data, size), &info);
	fuzz_check_error(err);
	fgk_vmcoreinfo_clear(&info);
	return 0;
}
