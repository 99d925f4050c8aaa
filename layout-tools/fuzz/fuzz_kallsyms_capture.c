// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer: a /proc/kallsyms capture (fgk_layout_from_kallsyms) against
 * the fixture vmlinux ($FGK_FUZZ_VMLINUX).  A capture that is accepted must
 * give a placed layout: every section inside the region, aligned, none
 * overlapping the next, and the map of that layout must build.
 */
#include "fuzz.h"

static struct fgk_vmlinux *vm;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *path = getenv("FGK_FUZZ_VMLINUX");
	struct fgk_error *err;

	(void)argc;
	(void)argv;
	if (!path) {
		fprintf(stderr, "fuzz_kallsyms_capture: set FGK_FUZZ_VMLINUX to a vmlinux with kallsyms tables\n");
		exit(2);
	}
	err = fgk_vmlinux_open(path, &vm);
	if (err) {
		fprintf(stderr, "fuzz_kallsyms_capture: %s: %s\n", path, err->message);
		exit(2);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fgk_kallsyms_origin o;
	struct fgk_layout *l = NULL;
	struct fgk_map *map = NULL;
	struct fgk_error *err;

	err = fgk_layout_from_kallsyms(vm, (const char *)data, size, "capture",
				       &l, &o);
	if (!err) {
		const struct fgk_section *prev = NULL;
		size_t n;
		const struct fgk_section *secs = fgk_layout_sections(l, &n);
		const uint32_t *order = fgk_layout_order(l);
		uint64_t start = fgk_layout_start(l), limit = fgk_layout_limit(l);

		/* a layout from kallsyms has no seed */
		if (fgk_layout_seed(l) || (o.guessed && !o.guessed_names))
			abort();
		for (size_t k = 0; k < n; k++) {
			const struct fgk_section *e = &secs[order[k]];

			if (e->new_addr < start || e->new_addr + e->size > limit ||
			    e->new_addr % e->align ||
			    (prev && prev->new_addr + prev->size > e->new_addr))
				abort();
			prev = e;
		}
		err = fgk_map_build(vm, l, FGK_MAP_KALLSYMS, o.offset, &map);
		fgk_map_free(map);
		fgk_layout_free(l);
		fgk_kallsyms_origin_clear(&o);
	}
	fuzz_check_error(err);
	return 0;
}
