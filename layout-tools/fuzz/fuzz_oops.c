// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer: oops text.  Every line goes through fgk_symbolizer_learn and
 * fgk_symbolize_line against the fixture vmlinux ($FGK_FUZZ_VMLINUX) with
 * a layout and its DWARF; also fgk_symoff_parse and fgk_kernel_offset_scan.
 */
#include "fuzz.h"

static struct fgk_vmlinux *vm;
static struct fgk_layout *layout;
static struct fgk_dwarf *dwarf;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *path = getenv("FGK_FUZZ_VMLINUX");
	struct fgk_seed seed = { { 0x42 } };
	struct fgk_error *err;

	(void)argc;
	(void)argv;
	if (!path) {
		fprintf(stderr, "fuzz_oops: set FGK_FUZZ_VMLINUX to a vmlinux\n");
		exit(2);
	}
	err = fgk_vmlinux_open(path, &vm);
	if (!err)
		err = fgk_layout_compute(vm, &seed, &layout);
	if (!err)
		err = fgk_dwarf_open(path, &dwarf);
	if (err) {
		fprintf(stderr, "fuzz_oops: %s: %s\n", path, err->message);
		exit(2);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_string(data, size), *line, *next;
	struct fgk_symbolizer *s;
	struct fgk_symoff so;
	uint64_t off;
	size_t m;

	m = fgk_symoff_parse(text, size, FGK_SYMOFF_LOOSE, &so);
	if (m > size || (m && (so.name != text || so.name_len > m)))
		abort();
	(void)fgk_kernel_offset_scan(text, strlen(text), &off);
	if (fgk_symbolizer_new(vm, size & 1 ? layout : NULL, dwarf, &s))
		abort();
	for (line = text; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		fgk_symbolizer_learn(s, line);
	}
	for (size_t i = 0; i < size; i++)
		if (!text[i])
			text[i] = '\n';
	for (line = text; line; line = next) {
		char *out;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		struct fgk_error *err = fgk_symbolize_line(s, line, &out);

		if (err) {
			/* a frame contradicting its address or size: said, not crashed */
			if (err->code != FGK_ERR_BUILD_ID || !err->message[0])
				abort();
			fgk_error_free(err);
			continue;
		}
		/* whole lines come back; "" drops an explanation line written again */
		if (*out && out[strlen(out) - 1] != '\n')
			abort();
		free(out);
	}
	fgk_symbolizer_free(s);
	free(text);
	return 0;
}
