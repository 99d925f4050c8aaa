// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer: a vmlinux from anywhere.  ELF header and section table,
 * symbols, notes and linux_banner (fgk_vmlinux_open), symbol lookups, the
 * image kind, kallsyms tables, the layout and both map formats.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fgk_vmlinux *vm;
	struct fgk_kallsyms *ks = NULL;
	struct fgk_layout *l = NULL;
	struct fgk_seed seed = { { 1, 2, 3 } };
	enum fgk_vmlinux_kind kind;
	struct fgk_symbol sym;
	struct fgk_section_info si;
	struct fgk_error *err;
	uint8_t buf[16];

	err = fgk_vmlinux_open(fuzz_file(data, size), &vm);
	if (err) {
		fuzz_check_error(err);
		return 0;
	}
	(void)fgk_vmlinux_build_id(vm);
	(void)fgk_vmlinux_release(vm);
	fuzz_check_error(fgk_vmlinux_kind(vm, &kind));
	fuzz_check_error(fgk_vmlinux_section(vm, ".text", &si));
	fuzz_check_error(fgk_vmlinux_read(vm, 0xffffffff81000000ull, buf, sizeof(buf)));
	fuzz_check_error(fgk_symbol_lookup(vm, "_etext", &sym));
	err = fgk_symbol_lookup(vm, "_text", &sym);
	if (!err) {
		fuzz_check_error(fgk_symbol_at(vm, sym.addr + 1, &sym));
		(void)fgk_vmlinux_contains(vm, sym.addr);
	}
	fuzz_check_error(err);
	err = fgk_kallsyms_read(vm, &ks);
	fuzz_check_error(err);
	fgk_kallsyms_free(ks);
	err = fgk_layout_compute(vm, &seed, &l);
	if (!err) {
		struct fgk_map *map = NULL;
		uint64_t link;

		size_t n;
		const struct fgk_section *secs = fgk_layout_sections(l, &n);

		for (size_t i = 0; i < n; i++) {
			uint64_t a = secs[i].addr;

			(void)fgk_layout_section_at(l, a);
			if (fgk_layout_unmap(l, fgk_layout_map(l, a), &link) &&
			    link != a)
				abort();	/* map and unmap must agree */
		}
		err = fgk_map_build(vm, l, FGK_MAP_SYSTEM_MAP, 0x1000000, &map);
		fuzz_check_error(err);
		fgk_map_free(map);
		map = NULL;
		err = fgk_map_build(vm, l, FGK_MAP_KALLSYMS, 0, &map);
		fgk_map_free(map);
	}
	fuzz_check_error(err);
	fgk_layout_free(l);
	fgk_vmlinux_close(vm);
	return 0;
}
