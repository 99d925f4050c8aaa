// SPDX-License-Identifier: GPL-2.0
/* ELF symbol table lookups by name and by (link) address. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "symbols.h"
#include "vmlinux.h"

static struct fgk_vmlinux *sort_vm;	/* qsort has no context argument */

static int cmp_name(const void *a, const void *b)
{
	const struct fgk__symbol *x = &sort_vm->syms[*(const uint32_t *)a];
	const struct fgk__symbol *y = &sort_vm->syms[*(const uint32_t *)b];
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static bool defined(const struct fgk__symbol *s)
{
	return s->shndx != SHN_UNDEF && s->type != STT_SECTION &&
	       s->type != STT_FILE;
}

/* Rank of a lookup candidate: lower is better. */
static int rank(const struct fgk__symbol *s)
{
	int r = 0;

	if (s->bind == STB_LOCAL)
		r += 4;
	else if (s->bind == STB_WEAK)
		r += 2;
	if (s->type != STT_FUNC && s->type != STT_OBJECT)
		r += 1;
	return r;
}

static bool build_by_name(struct fgk_vmlinux *vm)
{
	if (vm->by_name)
		return true;
	vm->by_name = malloc((vm->nsyms ? vm->nsyms : 1) * sizeof(uint32_t));
	if (!vm->by_name)
		return false;
	for (size_t i = 0; i < vm->nsyms; i++)
		vm->by_name[i] = (uint32_t)i;
	sort_vm = vm;
	qsort(vm->by_name, vm->nsyms, sizeof(uint32_t), cmp_name);
	return true;
}

const struct fgk__symbol *fgk__find_symbol(struct fgk_vmlinux *vm, const char *name)
{
	size_t lo = 0, hi;
	const struct fgk__symbol *best = NULL;

	if (!vm->nsyms || !build_by_name(vm))
		return NULL;
	hi = vm->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(vm->syms[vm->by_name[mid]].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < vm->nsyms; lo++) {
		const struct fgk__symbol *s = &vm->syms[vm->by_name[lo]];

		if (strcmp(s->name, name))
			break;
		if (defined(s) && (!best || rank(s) < rank(best)))
			best = s;
	}
	return best;
}

/*
 * The extent of a symbol as kallsyms gives it: its ELF size, or for an
 * assembler label without one (entry_SYSCALL_64_after_hwframe) the distance
 * to the next symbol of its section, at most to the section's end.  With
 * sized_too, a sized symbol is cut at the next symbol inside it too (inner
 * labels), which is the least size a trace can print for it.
 */
uint64_t fgk__symbol_extent(struct fgk_vmlinux *vm, const struct fgk__symbol *s,
			    bool sized_too)
{
	const GElf_Shdr *sh;
	uint64_t end;

	if (s->size && !sized_too)
		return s->size;
	if (s->shndx == 0 || s->shndx >= vm->shnum)
		return s->size;
	sh = &vm->secs[s->shndx].shdr;
	if (!(sh->sh_flags & SHF_ALLOC) || s->value < sh->sh_addr ||
	    s->value >= sh->sh_addr + sh->sh_size)
		return s->size;
	end = sh->sh_addr + sh->sh_size;
	if (s->size && s->value + s->size < end)
		end = s->value + s->size;
	for (size_t i = 0; i < vm->nsyms; i++) {
		const struct fgk__symbol *o = &vm->syms[i];

		if (o->shndx != s->shndx || o->value <= s->value || o->value >= end ||
		    !o->name[0] || o->name[0] == '$' || !strncmp(o->name, ".L", 2) ||
		    (o->type != STT_FUNC && o->type != STT_OBJECT &&
		     o->type != STT_NOTYPE))
			continue;
		end = o->value;
	}
	return end - s->value;
}

static bool absolute_symbol(struct fgk_vmlinux *vm, const struct fgk__symbol *s)
{
	if (s->shndx == VM_SHN_ABS)
		return true;
	/*
	 * x86_64 SMP per-CPU data is linked at 0 and never relocated.  Only
	 * values inside that section count: the linker also attaches
	 * ordinary symbols such as __init_begin to it.
	 */
	return s->shndx < vm->shnum &&
	       (vm->secs[s->shndx].shdr.sh_flags & SHF_ALLOC) &&
	       vm->secs[s->shndx].shdr.sh_addr == 0 &&
	       s->value <= vm->secs[s->shndx].shdr.sh_size;
}

static void fill(struct fgk_vmlinux *vm, const struct fgk__symbol *s,
		 struct fgk_symbol *ret)
{
	ret->name = s->name;
	ret->addr = s->value;
	ret->size = fgk__symbol_extent(vm, s, false);
	ret->type = s->nmtype;
	ret->absolute = absolute_symbol(vm, s);
}

struct fgk_error *fgk_symbol_lookup(struct fgk_vmlinux *vm, const char *name,
				    struct fgk_symbol *ret)
{
	const struct fgk__symbol *s;
	struct fgk_error *err = fgk__require_symtab(vm, "symbol lookup");

	if (err)
		return err;
	s = fgk__find_symbol(vm, name);
	if (!s)
		return fgk__error_new(FGK_ERR_LOOKUP, vm->path,
				      "no symbol '%s'", name);
	fill(vm, s, ret);
	return NULL;
}

/* Candidates for address lookup: named, defined, in an allocated section. */
static bool addr_candidate(struct fgk_vmlinux *vm, const struct fgk__symbol *s)
{
	if (!defined(s) || !s->name[0] || s->shndx >= vm->shnum)
		return false;
	if (!(vm->secs[s->shndx].shdr.sh_flags & SHF_ALLOC))
		return false;
	if (s->type != STT_FUNC && s->type != STT_OBJECT && s->type != STT_NOTYPE)
		return false;
	/* local labels and mapping symbols */
	if (s->name[0] == '$' || !strncmp(s->name, ".L", 2))
		return false;
	return true;
}

static int cmp_addr(const void *a, const void *b)
{
	uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;
	const struct fgk__symbol *x = &sort_vm->syms[ia];
	const struct fgk__symbol *y = &sort_vm->syms[ib];

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	if (rank(x) != rank(y))
		return rank(x) < rank(y) ? 1 : -1;	/* best last */
	return ia < ib ? 1 : -1;
}

static bool build_by_addr(struct fgk_vmlinux *vm)
{
	if (vm->by_addr)
		return true;
	vm->by_addr = malloc((vm->nsyms ? vm->nsyms : 1) * sizeof(uint32_t));
	if (!vm->by_addr)
		return false;
	vm->nby_addr = 0;
	for (size_t i = 0; i < vm->nsyms; i++)
		if (addr_candidate(vm, &vm->syms[i]))
			vm->by_addr[vm->nby_addr++] = (uint32_t)i;
	sort_vm = vm;
	qsort(vm->by_addr, vm->nby_addr, sizeof(uint32_t), cmp_addr);
	return true;
}

/*
 * The image spans its allocated sections (the per-CPU template at 0 aside),
 * padding between them included, end inclusive: linker symbols such as
 * __static_call_text_end or _end sit one past a section's last byte.
 */
bool fgk_vmlinux_contains(struct fgk_vmlinux *vm, uint64_t addr)
{
	uint64_t lo = UINT64_MAX, hi = 0;

	for (size_t i = 1; i < vm->shnum; i++) {
		const GElf_Shdr *sh = &vm->secs[i].shdr;

		if (!(sh->sh_flags & SHF_ALLOC) || !sh->sh_size || !sh->sh_addr)
			continue;
		if (sh->sh_addr < lo)
			lo = sh->sh_addr;
		if (sh->sh_addr + sh->sh_size > hi)
			hi = sh->sh_addr + sh->sh_size;
	}
	return addr >= lo && addr <= hi;
}

struct fgk_error *fgk_symbol_at(struct fgk_vmlinux *vm, uint64_t addr,
				struct fgk_symbol *ret)
{
	struct fgk_error *err = fgk__require_symtab(vm, "address lookup");
	size_t lo = 0, hi;
	const struct fgk__symbol *best = NULL;

	if (err)
		return err;
	if (!build_by_addr(vm))
		return &fgk_enomem;
	hi = vm->nby_addr;
	/* first candidate with value > addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (vm->syms[vm->by_addr[mid]].value <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/*
	 * Among the symbols at the closest address below, prefer one whose
	 * size covers addr; the sort puts the best-ranked last.
	 */
	if (lo > 0) {
		uint64_t v = vm->syms[vm->by_addr[lo - 1]].value;

		for (size_t k = lo; k > 0; k--) {
			const struct fgk__symbol *s = &vm->syms[vm->by_addr[k - 1]];

			if (s->value != v)
				break;
			if (!best)
				best = s;
			if (s->size && addr - s->value < s->size) {
				best = s;
				break;
			}
		}
	}
	if (!best)
		return fgk__error_new(FGK_ERR_LOOKUP, vm->path,
				      "no symbol at or below 0x%016llx",
				      (unsigned long long)addr);
	fill(vm, best, ret);
	return NULL;
}
