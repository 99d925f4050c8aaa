/* SPDX-License-Identifier: GPL-2.0 */
/* Internal: struct fgk_layout (lib/layout.c), opaque in <fgk/fgk.h>. */
#ifndef FGK_LIB_LAYOUT_H
#define FGK_LIB_LAYOUT_H

#include <fgk/fgk.h>

struct fgk_layout {
	struct fgk_seed seed;
	uint64_t start;		/* min link address of the randomized sections */
	uint64_t limit;		/* link address of _etext */
	uint64_t end;		/* final p of §7 (<= limit) */
	size_t n;
	struct fgk_section *secs;	/* input list, section index order */
	uint32_t *order;		/* §6 permutation */
	/* private lookup tables */
	uint32_t *by_addr;	/* indices sorted by link address */
	uint32_t *by_new;	/* indices sorted by new address */
	/*
	 * Rebuilt from the kernel's kallsyms (fgk_layout_from_kallsyms(),
	 * fgk_layout_from_vmcore()), not computed from a seed: seed is zero
	 * and unknown.
	 */
	bool seedless;
};

#endif
