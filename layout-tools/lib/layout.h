/* SPDX-License-Identifier: GPL-2.0 */
/* Internal: struct fgk_layout, opaque in <fgk/fgk.h>, and lib/layout.c's helpers. */
#ifndef FGK_LIB_LAYOUT_H
#define FGK_LIB_LAYOUT_H

#include <fgk/fgk.h>

#include "vmlinux.h"

/*
 * Spec §3 (version 3): one shuffle domain.  Its sections are
 * secs[first .. first + n) of the layout, index order; order[first ..
 * first + n) is its §6 permutation as indices into secs (global).
 */
struct fgk__domain {
	const char *prefix;	/* ".sched.text.", ..., ".text." (fgk__domains[]) */
	const char *limit_sym;	/* the symbol limit is the value of */
	const uint8_t *nonce;	/* FGK_NONCE_SIZE bytes */
	uint64_t start, limit, end;
	size_t first, n;
};

/* §3 (version 3): the domains, in address order (fgk__domains[]) */
#define FGK__NDOMAINS 6
#define FGK__D_SCHED 0	/* .sched.text.*, layout version 2 */
#define FGK__D_LOCK 1	/* .spinlock.text.*, layout version 3 */
#define FGK__D_SCALL 2	/* .static_call.text.*, 3 */
#define FGK__D_NOINSTR 3	/* .noinstr.text.*, 3 */
#define FGK__D_CPUIDLE 4	/* .cpuidle.text.*, 3 */
#define FGK__D_TEXT 5	/* .text.*, every version (last: ABI fgk_layout_start()) */
#define FGK__LAYOUT_VERSION_MAX 3

/*
 * §3's domain table: the section name prefix, the symbol before the gap
 * its first section follows (NULL for .text.*: the previous domain's
 * limit), the symbol its limit is the value of (NULL for .text.*:
 * __fgkaslr_text_end or _etext), its nonce, the first layout version that
 * has it, and the kernel's name of its bounds (fgk audit).
 */
struct fgk__domain_def {
	const char *prefix;
	size_t len;
	const char *start_sym, *limit_sym;
	const uint8_t *nonce;
	unsigned min_version;
};
extern const struct fgk__domain_def fgk__domains[FGK__NDOMAINS];
_Static_assert(FGK__NDOMAINS == FGK_LAYOUT_DOMAINS, "fgk.h's FGK_LAYOUT_DOMAINS");

struct fgk_layout {
	struct fgk_seed seed;
	struct fgk__domain dom[FGK__NDOMAINS];
	/* start, limit, limit_sym and end: the .text.* domain's, as before */
	uint64_t start;		/* min link address of the randomized sections */
	uint64_t limit;		/* link address of limit_sym */
	/*
	 * §3: "__fgkaslr_text_end" (the region ends where the fixed entry
	 * text after it starts: kernel series patch 22 on 6.1, 23 on 6.12),
	 * else "_etext" (the builds before).  Errors name it.
	 */
	const char *limit_sym;
	uint64_t end;		/* final p of §7 (<= limit) */
	size_t n;			/* all domains' sections */
	struct fgk_section *secs;	/* input lists, domain by domain, index order in each */
	uint32_t *order;		/* §6 permutations, domain by domain */
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
/*
 * §3: the domain (FGK__D_*) of section s of vm, or -1 if s is not
 * randomized.  .sched.text.* only in a vmlinux of layout version >= 2,
 * the other range domains only in one of version >= 3 (fgk__domains[]).
 * Modules have a rule of their own (lib/module.c).
 */
int fgk__section_domain(const struct fgk_vmlinux *vm, const struct fgk__section *s);
/* §3: is s a randomized section of vm? (lib/layout.c) */
bool fgk__section_randomized(const struct fgk_vmlinux *vm, const struct fgk__section *s);
/* Is the link (or new) address x inside one domain's [start, limit)? */
bool fgk__layout_in_region(const struct fgk_layout *l, uint64_t x);
/* The domain section k (index into l->secs) belongs to. */
const struct fgk__domain *fgk__layout_domain_of(const struct fgk_layout *l, size_t k);
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
