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

/* §3 (version 3): each range domain's nonce, 12 bytes, no terminator */
static const uint8_t lock_nonce[FGK_NONCE_SIZE] = {
	'f', 'g', 'k', 'a', 's', 'l', 'r', '-', 'l', 'o', 'c', 'k',
};
static const uint8_t scal_nonce[FGK_NONCE_SIZE] = {
	'f', 'g', 'k', 'a', 's', 'l', 'r', '-', 's', 'c', 'a', 'l',
};
static const uint8_t noin_nonce[FGK_NONCE_SIZE] = {
	'f', 'g', 'k', 'a', 's', 'l', 'r', '-', 'n', 'o', 'i', 'n',
};
static const uint8_t idle_nonce[FGK_NONCE_SIZE] = {
	'f', 'g', 'k', 'a', 's', 'l', 'r', '-', 'i', 'd', 'l', 'e',
};

/*
 * §3 (version 3): the domains, in address order.  A name matches at most
 * one prefix (none of the others starts with ".text.").
 */
const struct fgk__domain_def fgk__domains[FGK__NDOMAINS] = {
	[FGK__D_SCHED] = { ".sched.text.", 12, "__sched_text_start",
			   "__sched_text_end", fgk_sched_nonce, 2 },
	[FGK__D_LOCK] = { ".spinlock.text.", 15, "__lock_text_start",
			  "__lock_text_end", lock_nonce, 3 },
	[FGK__D_SCALL] = { ".static_call.text.", 18, "__static_call_text_start",
			   "__static_call_text_end", scal_nonce, 3 },
	[FGK__D_NOINSTR] = { ".noinstr.text.", 14, "__noinstr_text_start",
			     "__fgkaslr_noinstr_end", noin_nonce, 3 },
	[FGK__D_CPUIDLE] = { ".cpuidle.text.", 14, "__cpuidle_text_start",
			     "__cpuidle_text_end", idle_nonce, 3 },
	[FGK__D_TEXT] = { ".text.", 6, NULL, NULL, fgk_text_nonce, 1 },
};

int fgk__section_domain(const struct fgk_vmlinux *vm, const struct fgk__section *s)
{
	if (s->shdr.sh_type != SHT_PROGBITS ||
	    (s->shdr.sh_flags & (SHF_ALLOC | SHF_EXECINSTR)) !=
	    (SHF_ALLOC | SHF_EXECINSTR) || s->shdr.sh_size == 0 || !s->name)
		return -1;
	for (int d = 0; d < FGK__NDOMAINS; d++)
		if (vm->layout_version >= fgk__domains[d].min_version &&
		    !strncmp(s->name, fgk__domains[d].prefix, fgk__domains[d].len))
			return d;
	return -1;
}

bool fgk__section_randomized(const struct fgk_vmlinux *vm, const struct fgk__section *s)
{
	return fgk__section_domain(vm, s) >= 0;
}

bool fgk__layout_in_region(const struct fgk_layout *l, uint64_t x)
{
	for (int d = 0; d < FGK__NDOMAINS; d++)
		if (l->dom[d].n && x >= l->dom[d].start && x < l->dom[d].limit)
			return true;
	return false;
}

const struct fgk__domain *fgk__layout_domain_of(const struct fgk_layout *l, size_t k)
{
	for (int d = 0; d < FGK__NDOMAINS; d++)
		if (k >= l->dom[d].first && k - l->dom[d].first < l->dom[d].n)
			return &l->dom[d];
	return &l->dom[FGK__D_TEXT];
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
	size_t n = 0, cnt[FGK__NDOMAINS] = { 0 };

	*ret = NULL;
	/*
	 * §3: a layout version this libfgk does not know has domains it would
	 * leave in place, silently wrong: refuse it.
	 */
	if (vm->layout_version_bad)
		return fgk__error_new(FGK_ERR_NOT_FGKASLR, vm->path,
				      "__fgkaslr_layout_version %s: the FG-KASLR layout version is unknown",
				      vm->layout_version_bad);
	if (vm->layout_version < 1 || vm->layout_version > FGK__LAYOUT_VERSION_MAX)
		return fgk__error_new(FGK_ERR_NOT_FGKASLR, vm->path,
				      "vmlinux uses FG-KASLR layout version %llu; this libfgk knows 1-%d",
				      (unsigned long long)vm->layout_version,
				      FGK__LAYOUT_VERSION_MAX);
	l = calloc(1, sizeof(*l));
	if (!l)
		return &fgk_enomem;
	for (size_t i = 1; i < vm->shnum; i++) {
		int d = fgk__section_domain(vm, &vm->secs[i]);

		if (d >= 0) {
			cnt[d]++;
			n++;
		}
	}
	if (cnt[FGK__D_TEXT] == 0) {
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
	for (int d = 0, first = 0; d < FGK__NDOMAINS; d++) {
		struct fgk__domain *D = &l->dom[d];

		D->prefix = fgk__domains[d].prefix;
		D->nonce = fgk__domains[d].nonce;
		D->first = first;
		D->n = cnt[d];
		D->start = UINT64_MAX;
		first += cnt[d];
	}
	l->dom[FGK__D_TEXT].limit_sym = l->limit_sym;
	l->dom[FGK__D_TEXT].limit = l->limit;
	/* §3: the limit symbol is needed only by a domain with sections */
	for (int d = 0; d < FGK__NDOMAINS; d++) {
		struct fgk__domain *D = &l->dom[d];

		if (d == FGK__D_TEXT)
			continue;
		D->limit_sym = fgk__domains[d].limit_sym;
		if (!cnt[d])
			continue;
		lim = fgk__find_symbol(vm, D->limit_sym);
		if (!lim) {
			err = fgk__error_new(FGK_ERR_NOT_FGKASLR, vm->path,
					     "%zu %s* sections but no %s symbol: vmlinux not laid out for FG-KASLR",
					     cnt[d], D->prefix, D->limit_sym);
			goto fail;
		}
		D->limit = lim->value;
	}
	l->n = n;
	l->secs = calloc(n, sizeof(*l->secs));
	l->order = calloc(n, sizeof(*l->order));
	l->by_addr = calloc(n, sizeof(*l->by_addr));
	l->by_new = calloc(n, sizeof(*l->by_new));
	if (!l->secs || !l->order || !l->by_addr || !l->by_new) {
		err = &fgk_enomem;
		goto fail;
	}
	{
		size_t next[FGK__NDOMAINS];

		for (int d = 0; d < FGK__NDOMAINS; d++)
			next[d] = l->dom[d].first;
		for (size_t i = 1; i < vm->shnum; i++) {
			const struct fgk__section *s = &vm->secs[i];
			int d = fgk__section_domain(vm, s);
			struct fgk_section *e;

			if (d < 0)
				continue;
			e = &l->secs[next[d]++];
			e->index = i;
			e->name = s->name;
			e->addr = s->shdr.sh_addr;
			e->size = s->shdr.sh_size;
			e->align = s->shdr.sh_addralign ? s->shdr.sh_addralign : 1;
			if (e->addr < l->dom[d].start)
				l->dom[d].start = e->addr;
		}
	}
	l->start = l->dom[FGK__D_TEXT].start;
	/* §3: each region must hold its domain's sections and nothing else. */
	for (size_t k = 0; k < n; k++) {
		const struct fgk_section *e = &l->secs[k];
		const struct fgk__domain *D = fgk__layout_domain_of(l, k);

		if (e->addr + e->size < e->addr || e->addr + e->size > D->limit) {
			err = fgk__error_new(FGK_ERR_NOT_FGKASLR, vm->path,
					     "vmlinux not laid out for FG-KASLR: section %s [0x%llx, 0x%llx) extends beyond %s 0x%llx",
					     e->name, (unsigned long long)e->addr,
					     (unsigned long long)(e->addr + e->size),
					     D->limit_sym, (unsigned long long)D->limit);
			goto fail;
		}
	}
	/*
	 * §3: the domains' regions are disjoint, with at least one byte that
	 * is in neither between them (no fixed symbol, such as
	 * __sched_text_end, shares the address where a domain starts).
	 */
	for (int d = 0; d < FGK__D_TEXT; d++) {
		const struct fgk__domain *a = &l->dom[d], *b = NULL;

		if (!cnt[d])
			continue;
		for (int e = d + 1; e < FGK__NDOMAINS && !b; e++)
			if (cnt[e])
				b = &l->dom[e];
		/* ... in the table's order, the .text.* one last (the kernel
		 * refuses anything else: relocs and the boot code). */
		if (!(a->limit < b->start)) {
			err = fgk__error_new(FGK_ERR_NOT_FGKASLR, vm->path,
					     "vmlinux not laid out for FG-KASLR: the %s* region [0x%llx, 0x%llx) %s the %s* region [0x%llx, 0x%llx)",
					     a->prefix,
					     (unsigned long long)a->start,
					     (unsigned long long)a->limit,
					     a->limit == b->start ? "has no gap before" :
					     a->start >= b->limit ? "lies after, not before," :
					     "overlaps",
					     b->prefix,
					     (unsigned long long)b->start,
					     (unsigned long long)b->limit);
			goto fail;
		}
		lim = fgk__find_symbol(vm, fgk__domains[d].start_sym);
		if (lim && lim->value >= a->start) {
			err = fgk__error_new(FGK_ERR_NOT_FGKASLR, vm->path,
					     "vmlinux not laid out for FG-KASLR: no gap between %s 0x%llx and the first %s* section at 0x%llx",
					     fgk__domains[d].start_sym,
					     (unsigned long long)lim->value,
					     a->prefix,
					     (unsigned long long)a->start);
			goto fail;
		}
	}
	for (size_t i = 1; i < vm->shnum; i++) {
		const struct fgk__section *s = &vm->secs[i];
		uint64_t a = s->shdr.sh_addr, z = a + s->shdr.sh_size;

		if (fgk__section_randomized(vm, s) || !(s->shdr.sh_flags & SHF_ALLOC) ||
		    !s->shdr.sh_size)
			continue;
		if (z < a) {	/* wraps past the top of the address space */
			err = fgk__error_new(FGK_ERR_ELF, vm->path,
					     "corrupt ELF: section %s [0x%llx, +0x%llx) wraps around the address space",
					     s->name, (unsigned long long)a,
					     (unsigned long long)s->shdr.sh_size);
			goto fail;
		}
		for (int d = FGK__NDOMAINS - 1; d >= 0; d--) {
			const struct fgk__domain *D = &l->dom[d];

			if (D->n && a < D->limit && z > D->start) {
				err = fgk__error_new(FGK_ERR_NOT_FGKASLR, vm->path,
						     "vmlinux not laid out for FG-KASLR: section %s [0x%llx, 0x%llx) overlaps the randomized region [0x%llx, 0x%llx)%s%s%s",
						     s->name, (unsigned long long)a,
						     (unsigned long long)z,
						     (unsigned long long)D->start,
						     (unsigned long long)D->limit,
						     d == FGK__D_TEXT ? "" : " of ",
						     d == FGK__D_TEXT ? "" : D->prefix,
						     d == FGK__D_TEXT ? "" : "*");
				goto fail;
			}
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
	/* §4-§7 per domain, each with its own nonce, in its own region */
	for (int d = 0; d < FGK__NDOMAINS && !err; d++) {
		struct fgk__domain *D = &l->dom[d];

		if (!D->n)
			continue;
		err = fgk_permutation(seed, D->nonce, D->n, l->order + D->first);
		if (err)
			goto fail;
		err = fgk__place(l->secs + D->first, D->n, l->order + D->first,
				 D->start, D->limit, D->limit_sym, &D->end);
		for (size_t k = 0; k < D->n; k++)
			l->order[D->first + k] += (uint32_t)D->first;
	}
	l->end = l->dom[FGK__D_TEXT].end;
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

	if (!fgk__layout_in_region(l, x))
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

	if (!fgk__layout_in_region(l, y)) {
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

size_t fgk_layout_ndomains(const struct fgk_layout *l)
{
	(void)l;
	return FGK__NDOMAINS;
}

const char *fgk_layout_domain(const struct fgk_layout *l, size_t i,
			      uint64_t *start, uint64_t *limit, uint64_t *end,
			      size_t *first, size_t *n)
{
	const struct fgk__domain *D;

	if (i >= FGK__NDOMAINS)
		return NULL;
	D = &l->dom[i];
	if (start)
		*start = D->n ? D->start : 0;
	if (limit)
		*limit = D->n ? D->limit : 0;
	if (end)
		*end = D->n ? D->end : 0;
	if (first)
		*first = D->first;
	if (n)
		*n = D->n;
	return D->prefix;
}

const uint8_t *fgk_layout_domain_nonce(const struct fgk_layout *l, size_t i)
{
	return i < FGK__NDOMAINS ? l->dom[i].nonce : NULL;
}

const char *fgk_layout_domain_limit_symbol(const struct fgk_layout *l, size_t i)
{
	return i < FGK__NDOMAINS ? l->dom[i].limit_sym : NULL;
}
