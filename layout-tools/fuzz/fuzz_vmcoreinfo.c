// SPDX-License-Identifier: GPL-2.0
/* libFuzzer: VMCOREINFO text (fgk_vmcoreinfo_parse), any bytes. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fgk_vmcoreinfo info = { 0 };
	struct fgk_error *err;

	err = fgk_vmcoreinfo_parse((const char *)data, size, "fuzz", &info);
	if (!err) {
		/* what fgk prints from it must be printable */
		for (const char *p = info.osrelease; p && *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				abort();
		for (const char *p = info.build_id; p && *p; p++)
			if (!strchr("0123456789abcdef", *p))
				abort();
	}
	fuzz_check_error(err);
	fgk_vmcoreinfo_clear(&info);
	return 0;
}
