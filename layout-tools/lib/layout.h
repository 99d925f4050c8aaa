/* SPDX-License-Identifier: GPL-2.0 */
/* Internal: struct fgk_layout, opaque in <fgk/fgk.h>, and lib/layout.c's helpers. */
#ifndef FGK_LIB_LAYOUT_H
#define FGK_LIB_LAYOUT_H

#include <fgk/fgk.h>

#include "vmlinux.h"

struct fgk_layout {
	struct fgk_seed seed;
	uint64_t start;		/* min link address of the randomized sections */
	uint64_t limit;		/* link address of limit_sym */
	/*
	 * §3: "__fgkaslr_text_end" (the region ends where the fixed entry
	 * text after it starts: kernel series patch 22 on 6.1, 23 on 6.12),
	 * else "_etext" (the builds before).  Errors name it.
	 */
	const char *limit_sym;
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

/* fgk_place(), with limit_name (the symbol limit is the value of) in its error. */
struct fgk_error *fgk__place(struct fgk_section *secs, size_t n,
			     const uint32_t *order, uint64_t start,
			     uint64_t limit, const char *limit_name, uint64_t *end);
/* §3: is s a randomized section? (lib/layout.c) */
bool fgk__section_randomized(const struct fgk__section *s);
/*
 * Is section i a relocation section (SHT_RELA/SHT_REL), and of which
 * section?  vmlinux.fgk drops those of the randomized sections: relink
 * (fold_text) writes it so, the cache checks it so (lib/layout.c).
 */
bool fgk__section_relocates(const struct fgk_vmlinux *vm, size_t i, size_t *target);
/* §3: input list and region of vm, nothing placed (lib/layout.c). */
struct fgk_error *fgk__layout_new(struct fgk_vmlinux *vm, struct fgk_layout **ret);
/* Sort l->by_new once every new_addr is set. */
void fgk__layout_index_new(struct fgk_layout *l);

#endif
