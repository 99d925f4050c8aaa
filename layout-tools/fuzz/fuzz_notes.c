// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer: what fgk-gdb decodes from guest memory: the build-id notes of
 * a memory copy (fgk_notes_find_build_ids, the first 8 bytes its base
 * address), a run of notes (fgk_notes_build_id), the kernel's
 * fgkaslr_boot_info (fgk_boot_info_decode), and the build-id and offset
 * text users type (fgk_build_id_parse, fgk_offset_parse).  Every note
 * found must be complete, aligned in memory and what its bytes say.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fgk_build_id_note *notes;
	struct fgk_boot_info bi;
	uint64_t base = 0, v;
	size_t n;
	char *hex, *text;

	if (size >= 8) {
		memcpy(&base, data, 8);
		base = (base & ~(uint64_t)0xfff) | (base & 3);	/* page + misalignment */
	}
	if (fgk_notes_find_build_ids(size > 8 ? data + 8 : data, size > 8 ? size - 8 : 0,
				     base, &notes, &n))
		abort();
	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = data + 8 + (notes[i].addr - base);

		if (notes[i].addr % 4 || notes[i].size < FGK_BUILD_ID_MIN ||
		    notes[i].size > FGK_BUILD_ID_MAX ||
		    notes[i].addr - base + 16 + notes[i].size > size - 8 ||
		    memcmp(p + 12, "GNU", 4) ||
		    strlen(notes[i].build_id) != 2 * notes[i].size ||
		    (i && notes[i].addr <= notes[i - 1].addr))
			abort();
	}
	free(notes);
	if (fgk_notes_build_id(data, size, &hex))
		abort();
	free(hex);
	fuzz_check_error(fgk_boot_info_decode(data, size, "fuzz", &bi));
	if (size >= FGK_BOOT_INFO_SIZE_MIN && (bi.size > size || bi.size < FGK_BOOT_INFO_SIZE_MIN))
		abort();
	text = fuzz_string(data, size);
	fuzz_check_error(fgk_build_id_parse(text, &hex));
	free(hex);
	fuzz_check_error(fgk_offset_parse(text, FGK_KASLR_ALIGN, &v));
	free(text);
	return 0;
}
