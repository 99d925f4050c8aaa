// SPDX-License-Identifier: GPL-2.0
/* Randomized sections (§3), placement (§7) and address mapping. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "layout.h"
#include "symbols.h"
#include "vmlinux.h"

struct fgk_error *fgk__place(struct fgk_section *secs, size_t n,
			     const uint32_t *order, uint64_t start,
			     uint64_t limit, const char *limit_name, uint64_t *end)
{
	uint64_t p = start;
	bool overflow = false;

	for (size_t k = 0; k < n; k++) {
		struct fgk_section *e = &secs[order[k]];
		uint64_t a = e->align ? e->align : 1;
		uint64_t q = p + (a - 1);

		if (q < p)
			overflow = true;
		/* align_up for any alignment, powers of two being the norm */
		q = (a & (a - 1)) ? q / a * a : q & ~(a - 1);
		e->new_addr = q;
		p = q + e->size;
		if (p < q)
			overflow = true;
	}
	if (end)
		*end = p;
	if (overflow || p > limit)
		return fgk__error_new(FGK_ERR_NO_FIT, NULL,
				      "layout does not fit: sections end at 0x%llx, beyond %s 0x%llx by 0x%llx bytes (the kernel boots unshuffled with this seed)",
				      (unsigned long long)p, limit_name,
				      (unsigned long long)limit,
				      (unsigned long long)(p - limit));
	return NULL;
}

struct fgk_error *fgk_place(struct fgk_section *secs, size_t n,
			    const uint32_t *order, uint64_t start,
			    uint64_t limit, uint64_t *end)
{
	return fgk__place(secs, n, order, start, limit, "the region's end", end);
}

static const struct fgk_section *cmp_secs;

static int cmp_link(const void *a, const void *b)
{
	uint64_t x = cmp_secs[*(const uint32_t *)a].addr;
	uint64_t y = cmp_secs[*(const uint32_t *)b].addr;

	return x < y ? -1 : x > y;
}

static int cmp_new(const void *a, const void *b)
{
	uint64_t x = cmp_secs[*(const uint32_t *)a].new_addr;
	uint64_t y = cmp_secs[*(const uint32_t *)b].new_addr;

	return x < y ? -1 : x > y;
}

bool fgk__section_randomized(const struct fgk__section *s)
{
	return s->shdr.sh_type == SHT_PROGBITS &&
	       (s->shdr.sh_flags & (SHF_ALLOC | SHF_EXECINSTR)) ==
	       (SHF_ALLOC | SHF_EXECINSTR) &&
	       !strncmp(s->name, ".text.", 6) && s->shdr.sh_size > 0;
}

bool fgk__section_relocates(const struct fgk_vmlinux *vm, size_t i, size_t *target)
{
	const GElf_Shdr *sh = &vm->secs[i].shdr;

	if ((sh->sh_type != SHT_RELA && sh->sh_type != SHT_REL) ||
	    !sh->sh_info || sh->sh_info >= vm->shnum)
		return false;
	*target = sh->sh_info;
	return true;
}

void fgk_layout_free(struct fgk_layout *l)
{
	if (!l)
		return;
	free(l->secs);
	free(l->order);
	free(l->by_addr);
	free(l->by_new);
	free(l);
}

/*
 * §3: the input list and the region of vm, nothing placed yet (seed zero,
 * order and new addresses unset).
 */
struct fgk_error *fgk__layout_new(struct fgk_vmlinux *vm, struct fgk_layout **ret)
{
	struct fgk_layout *l;
	struct fgk_error *err = NULL;
	const struct fgk__symbol *lim;
	size_t n = 0;

	*ret = NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return &fgk_enomem;
	for (size_t i = 1; i < vm->shnum; i++)
		n += fgk__section_randomized(&vm->secs[i]);
	if (n == 0) {
		err = fgk__error_new(FGK_ERR_NOT_FGKASLR, vm->path,
				     "no .text.* sections: not built with CONFIG_FG_KASLR (nothing to shuffle)");
		goto fail;
	}
	err = fgk__require_symtab(vm, "the end of the randomized region (__fgkaslr_text_end or _etext)");
	if (err)
		goto fail;
	/*
	 * §3: the region ends at __fgkaslr_text_end, the first address of the
	 * fixed entry text placed after it (kernel series patch 22 on 6.1, 23
	 * on 6.12), or at _etext in the builds before.
	 */
	l->limit_sym = "__fgkaslr_text_end";
	lim = fgk__find_symbol(vm, l->limit_sym);
	if (!lim) {
		l->limit_sym = "_etext";
		lim = fgk__find_symbol(vm, l->limit_sym);
	}
	if (!lim) {
		err = fgk__error_new(FGK_ERR_NOT_FGKASLR, vm->path,
				     "no __fgkaslr_text_end or _etext symbol: vmlinux not laid out for FG-KASLR");
		goto fail;
	}
	l->limit = lim->value;
	l->n = n;
	l->secs = calloc(n, sizeof(*l->secs));
	l->order = calloc(n, sizeof(*l->order));
	l->by_addr = calloc(n, sizeof(*l->by_addr));
	l->by_new = calloc(n, sizeof(*l->by_new));
	if (!l->secs || !l->order || !l->by_addr || !l->by_new) {
		err = &fgk_enomem;
		goto fail;
	}
	l->start = UINT64_MAX;
	for (size_t i = 1, k = 0; i < vm->shnum; i++) {
		const struct fgk__section *s = &vm->secs[i];
		struct fgk_section *e;

		if (!fgk__section_randomized(s))
			continue;
		e = &l->secs[k++];
		e->index = i;
		e->name = s->name;
		e->addr = s->shdr.sh_addr;
		e->size = s->shdr.sh_size;
		e->align = s->shdr.sh_addralign ? s->shdr.sh_addralign : 1;
		if (e->addr < l->start)
			l->start = e->addr;
	}
	/* §3: the region must hold the randomized sections and nothing else. */
	for (size_t k = 0; k < n; k++) {
		const struct fgk_section *e = &l->secs[k];

		if (e->addr + e->size < e->addr || e->addr + e->size > l->limit) {
			err = fgk__error_new(FGK_ERR_NOT_FGKASLR, vm->path,
					     "vmlinux not laid out for FG-KASLR: section %s [0x%llx, 0x%llx) extends beyond %s 0x%llx",
					     e->name, (unsigned long long)e->addr,
					     (unsigned long long)(e->addr + e->size),
					     l->limit_sym, (unsigned long long)l->limit);
			goto fail;
		}
	}
	for (size_t i = 1; i < vm->shnum; i++) {
		const struct fgk__section *s = &vm->secs[i];
		uint64_t a = s->shdr.sh_addr, z = a + s->shdr.sh_size;

		if (fgk__section_randomized(s) || !(s->shdr.sh_flags & SHF_ALLOC) ||
		    !s->shdr.sh_size)
			continue;
		if (z < a) {	/* wraps past the top of the address space */
			err = fgk__error_new(FGK_ERR_ELF, vm->path,
					     "corrupt ELF: section %s [0x%llx, +0x%llx) wraps around the address space",
					     s->name, (unsigned long long)a,
					     (unsigned long long)s->shdr.sh_size);
			goto fail;
		}
		if (a < l->limit && z > l->start) {
			err = fgk__error_new(FGK_ERR_NOT_FGKASLR, vm->path,
					     "vmlinux not laid out for FG-KASLR: section %s [0x%llx, 0x%llx) overlaps the randomized region [0x%llx, 0x%llx)",
					     s->name, (unsigned long long)a,
					     (unsigned long long)z,
					     (unsigned long long)l->start,
					     (unsigned long long)l->limit);
			goto fail;
		}
	}
	for (size_t k = 0; k < n; k++)
		l->by_addr[k] = (uint32_t)k;
	cmp_secs = l->secs;
	qsort(l->by_addr, n, sizeof(uint32_t), cmp_link);
	*ret = l;
	return NULL;
fail:
	fgk_layout_free(l);
	return err;
}

void fgk__layout_index_new(struct fgk_layout *l)
{
	for (size_t k = 0; k < l->n; k++)
		l->by_new[k] = (uint32_t)k;
	cmp_secs = l->secs;
	qsort(l->by_new, l->n, sizeof(uint32_t), cmp_new);
}

struct fgk_error *fgk_layout_compute(struct fgk_vmlinux *vm,
				     const struct fgk_seed *seed,
				     struct fgk_layout **ret)
{
	struct fgk_layout *l;
	struct fgk_error *err;

	*ret = NULL;
	err = fgk__layout_new(vm, &l);
	if (err)
		return err;
	l->seed = *seed;
	err = fgk_permutation(seed, fgk_text_nonce, l->n, l->order);
	if (err)
		goto fail;
	err = fgk__place(l->secs, l->n, l->order, l->start, l->limit, l->limit_sym,
			 &l->end);
	if (err) {
		char hex[FGK_SEED_HEX_LEN + 1];
		struct fgk_error *e2;

		fgk_seed_format(seed, hex);
		e2 = fgk__error_new(FGK_ERR_NO_FIT, vm->path, "seed %s: %s",
				    hex, err->message);
		fgk_error_free(err);
		err = e2;
		goto fail;
	}
	fgk__layout_index_new(l);
	*ret = l;
	return NULL;
fail:
	fgk_layout_free(l);
	return err;
}

/* Index into idx (sorted by key) of the last entry with key <= x, or -1. */
static long floor_search(const struct fgk_section *secs, const uint32_t *idx,
			 size_t n, uint64_t x, bool by_new)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct fgk_section *e = &secs[idx[mid]];

		if ((by_new ? e->new_addr : e->addr) <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

const struct fgk_section *fgk_layout_section_at(const struct fgk_layout *l,
						uint64_t x)
{
	long k;
	const struct fgk_section *e;

	if (x < l->start || x >= l->limit)
		return NULL;
	k = floor_search(l->secs, l->by_addr, l->n, x, false);
	if (k < 0)
		return NULL;
	e = &l->secs[l->by_addr[k]];
	return x - e->addr < e->size ? e : NULL;
}

uint64_t fgk_layout_map(const struct fgk_layout *l, uint64_t x)
{
	const struct fgk_section *e = fgk_layout_section_at(l, x);

	return e ? x - e->addr + e->new_addr : x;
}

bool fgk_layout_unmap(const struct fgk_layout *l, uint64_t y, uint64_t *link)
{
	long k;
	const struct fgk_section *e;

	if (y < l->start || y >= l->limit) {
		*link = y;
		return true;
	}
	k = floor_search(l->secs, l->by_new, l->n, y, true);
	if (k < 0)
		return false;
	e = &l->secs[l->by_new[k]];
	if (y - e->new_addr >= e->size)
		return false;
	*link = y - e->new_addr + e->addr;
	return true;
}

const struct fgk_seed *fgk_layout_seed(const struct fgk_layout *l)
{
	return l->seedless ? NULL : &l->seed;
}

uint64_t fgk_layout_start(const struct fgk_layout *l)
{
	return l->start;
}

uint64_t fgk_layout_limit(const struct fgk_layout *l)
{
	return l->limit;
}

uint64_t fgk_layout_end(const struct fgk_layout *l)
{
	return l->end;
}

const struct fgk_section *fgk_layout_sections(const struct fgk_layout *l,
					      size_t *n)
{
	*n = l->n;
	return l->secs;
}

const uint32_t *fgk_layout_order(const struct fgk_layout *l)
{
	return l->order;
}
