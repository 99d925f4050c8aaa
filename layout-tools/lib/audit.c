// SPDX-License-Identifier: GPL-2.0
/*
 * fgk audit: what FG-KASLR moves and what it leaves at a fixed offset from
 * the kernel base, region by region; the entropy of the shuffle; and a
 * gadget census from a gadget finder's output (docs/fgk-audit.1.md).
 *
 * Regions come from the kernel's own bounds symbols (__sched_text_start ..
 * __sched_text_end, ...; those of a §3 range domain with sections move),
 * the §3 randomized sections, the rest of the main
 * .text, the fixed text section after the randomized region (the one that
 * holds __fgkaslr_text_end: the entry text, kernel series patch 22 on 6.1,
 * 23 on 6.12; before them the entry text was inside the main .text), and
 * the other executable sections (init-only ones by __init_begin ..
 * __init_end).  A function is a sized STT_FUNC symbol; aliases (same
 * address) count once, with the largest size.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "layout.h"
#include "symbols.h"
#include "vmlinux.h"

/* Regions the kernel finds by range, and why they stay today. */
static const struct {
	const char *name, *start, *end, *why;
	int dom;	/* §3 range domain shuffled inside these bounds, or -1 */
} bounded[] = {
	{ ".entry.text", "__entry_text_start", "__entry_text_end",
	  "entry code: PTI maps it into the user page tables, the IDT and the syscall MSRs point at it, crash finds the base offset through it", -1 },
	{ ".irqentry.text", "__irqentry_text_start", "__irqentry_text_end",
	  "interrupt entry, found by range (kprobes blacklist, stack trace filtering); inside the entry text PTI maps", -1 },
	{ ".softirqentry.text", "__softirqentry_text_start", "__softirqentry_text_end",
	  "found by range (kprobes blacklist, stack trace filtering): could be shuffled inside its bounds", -1 },
	{ ".noinstr.text", "__noinstr_text_start", "__noinstr_text_end",
	  "found by range (noinstr bounds, kprobes blacklist): could be shuffled inside its bounds", FGK__D_NOINSTR },
	{ ".sched.text", "__sched_text_start", "__sched_text_end",
	  "found by range (in_sched_functions(), wchan): could be shuffled inside its bounds", FGK__D_SCHED },
	{ ".cpuidle.text", "__cpuidle_text_start", "__cpuidle_text_end",
	  "found by range (cpuidle, kprobes blacklist): could be shuffled inside its bounds", FGK__D_CPUIDLE },
	{ ".lock.text", "__lock_text_start", "__lock_text_end",
	  "found by range (in_lock_functions()): could be shuffled inside its bounds", FGK__D_LOCK },
	{ ".kprobes.text", "__kprobes_text_start", "__kprobes_text_end",
	  "found by range (kprobes blacklist): could be shuffled inside its bounds", -1 },
	{ ".static_call.text", "__static_call_text_start", "__static_call_text_end",
	  "static call trampolines, found by range: could be shuffled inside its bounds", FGK__D_SCALL },
	{ "indirect thunks", "__indirect_thunk_start", "__indirect_thunk_end",
	  "retpoline and return thunks: found by range, SRSO needs their alignment", -1 },
};

/* fgk audit's name of a range domain's region, when it has sections */
static const char *const moving_name[FGK__D_TEXT] = {
	[FGK__D_SCHED] = "shuffled .sched.text.* (per object, inside its bounds)",
	[FGK__D_LOCK] = "shuffled .spinlock.text.* (per object, inside its bounds)",
	[FGK__D_SCALL] = "shuffled .static_call.text.* (per object, inside its bounds)",
	[FGK__D_NOINSTR] = "shuffled .noinstr.text.* (per object, inside its bounds)",
	[FGK__D_CPUIDLE] = "shuffled .cpuidle.text.* (per object, inside its bounds)",
};

/*
 * True before and after kernel series patch 29 (6.1: 28), which gives each
 * object's plain .text (and .ref.text) a section .text.<object>: §3's
 * .text.* rule shuffles it in D1 (a "shuffled .text.*" region here).
 */
#define WHY_TEXT "the rest of the main .text, named by the linker script and not shuffled: the head code the CPUs enter by (.head.text, head_64.o's .text), relocate_kernel_64.o's and hibernate_asm_64.o's .text (absolute references to them whose values lie outside them: kexec's end check, the hibernation header's physical address), the retpoline and return thunks (.text..__x86.*, found by range), input sections without a function's name (.text.hot, .text.unlikely, .text.fixup); before kernel series patch 29 (6.1: 28) also .ref.text and every object's plain .text (assembly, SYM_FUNC_START in .text; init/ objects built with -fno-function-sections), which that patch puts in a .text.<object> section per object, shuffled like a function's"
#define WHY_ENTRY "fixed text after the shuffled region (from __fgkaslr_text_end, the region's end): the PMD-aligned entry text, which PTI maps into the user page tables (entry trampoline, syscall and interrupt entry), and the SRSO thunks placed with it; the rest is int3 padding to a 2 MiB boundary"
#define WHY_INIT "init-only: freed after boot"
#define WHY_OTHER "executable section outside .text, not shuffled"

struct func {
	uint64_t addr, size;
};

/*
 * struct fgk_audit and what fgk_audit_gadgets() needs of the symbol table:
 * the union of the function symbols' [value, value + size), as disjoint
 * spans sorted by address.
 */
struct audit {
	struct fgk_audit pub;
	size_t nspans;
	struct func *spans;	/* addr, size of each span */
};

static struct audit *audit_of(struct fgk_audit *a)
{
	return (struct audit *)a;	/* pub is the first member */
}

/* Is addr inside a function symbol's [value, value + size)? */
static bool in_function(const struct audit *A, uint64_t addr)
{
	size_t lo = 0, hi = A->nspans;

	while (lo < hi) {	/* the first span ending after addr */
		size_t mid = lo + (hi - lo) / 2;

		if (A->spans[mid].addr + A->spans[mid].size <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < A->nspans && A->spans[lo].addr <= addr;
}

static int cmp_func(const void *a, const void *b)
{
	const struct func *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->size < y->size ? 1 : x->size > y->size ? -1 : 0;
}

static int cmp_region(const void *a, const void *b)
{
	const struct fgk_audit_region *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* the enclosing region first */
	return x->end > y->end ? -1 : x->end < y->end ? 1 : 0;
}

static struct fgk_error *add_region(struct fgk_audit *a, size_t *cap,
				    const struct fgk_audit_region *r)
{
	if (a->nregions == *cap) {
		size_t ncap = *cap ? 2 * *cap : 32;
		struct fgk_audit_region *p = realloc(a->regions, ncap * sizeof(*p));

		if (!p)
			return &fgk_enomem;
		a->regions = p;
		*cap = ncap;
	}
	a->regions[a->nregions++] = *r;
	return NULL;
}

static uint64_t sym_value(struct fgk_vmlinux *vm, const char *name, bool *found)
{
	const struct fgk__symbol *s = fgk__find_symbol(vm, name);

	*found = s != NULL;
	return s ? s->value : 0;
}

/* Index of the executable, not randomized section holding addr, or 0. */
static size_t fixed_text_at(struct fgk_vmlinux *vm, uint64_t addr)
{
	size_t found = 0;

	for (size_t i = 1; i < vm->shnum; i++) {
		const GElf_Shdr *sh = &vm->secs[i].shdr;

		if (sh->sh_addr <= addr && addr < sh->sh_addr + sh->sh_size &&
		    (sh->sh_flags & SHF_EXECINSTR) && !fgk__section_randomized(vm, &vm->secs[i]))
			found = i;
	}
	return found;
}

/* The innermost region holding addr (regions sorted, nested ones after). */
static struct fgk_audit_region *region_at(struct fgk_audit *a, uint64_t addr)
{
	struct fgk_audit_region *best = NULL;

	for (size_t i = 0; i < a->nregions; i++) {
		struct fgk_audit_region *r = &a->regions[i];

		if (r->start > addr)
			break;
		if (addr < r->end)
			best = r;	/* later = nested deeper */
	}
	return best;
}

static bool asm_file(const char *file)
{
	size_t n = file ? strlen(file) : 0;

	return n > 2 && !strcmp(file + n - 2, ".S");
}

void fgk_audit_free(struct fgk_audit *a)
{
	if (!a)
		return;
	free(a->regions);
	free(audit_of(a)->spans);
	free(audit_of(a));
}

struct fgk_error *fgk_audit_compute(struct fgk_vmlinux *vm,
				    const struct fgk_seed *seed,
				    struct fgk_audit **ret)
{
	struct audit *A;
	struct fgk_audit *a;
	struct fgk_error *err;
	struct fgk_audit_region r;
	struct func *funcs = NULL;
	size_t nfuncs = 0, cap = 0, fcap = 0;
	uint64_t stext, init_begin, init_end, rstart = UINT64_MAX, rend = 0;
	uint64_t region_end;
	size_t text_sec, entry_sec = 0;
	bool have_stext, have_init_b, have_init_e, have_region_end, f1, f2;
	struct fgk_dwarf *dw = NULL;

	*ret = NULL;
	err = fgk__require_symtab(vm, "the text region bounds");
	if (err)
		return err;
	A = calloc(1, sizeof(*A));
	if (!A)
		return &fgk_enomem;
	a = &A->pub;
	a->asm_known = true;

	/*
	 * §3 randomized sections: the .text.* domain is one region; each
	 * range domain (.sched.text.*, layout version 2; .spinlock.text.*,
	 * .static_call.text.*, .noinstr.text.*, .cpuidle.text.*, version 3)
	 * is the kernel's bounds of it, below.  Entropy: each domain is shuffled on its
	 * own, so the orderings multiply.
	 */
	for (size_t i = 1; i < vm->shnum; i++) {
		const GElf_Shdr *sh = &vm->secs[i].shdr;
		int d = fgk__section_domain(vm, &vm->secs[i]);

		if (d < 0)
			continue;
		a->sections++;
		a->domain_sections[d]++;
		if (d != FGK__D_TEXT)
			continue;
		if (sh->sh_addr < rstart)
			rstart = sh->sh_addr;
		if (sh->sh_addr + sh->sh_size > rend)
			rend = sh->sh_addr + sh->sh_size;
	}
	for (int d = 0; d < FGK__NDOMAINS; d++) {
		size_t n = a->domain_sections[d];

		a->domain_log2_orderings[d] = n ? lgamma((double)n + 1) / log(2.0) : 0;
		a->log2_orderings += a->domain_log2_orderings[d];
	}

	stext = sym_value(vm, "_stext", &have_stext);
	if (!have_stext)
		stext = sym_value(vm, "_text", &have_stext);
	if (!have_stext) {
		err = fgk__error_new(FGK_ERR_NOT_FGKASLR, vm->path,
				     "no _stext or _text symbol: not a kernel image");
		goto fail;
	}
	init_begin = sym_value(vm, "__init_begin", &have_init_b);
	init_end = sym_value(vm, "__init_end", &have_init_e);

	/* the main .text output section: its bounds from the section header */
	text_sec = fixed_text_at(vm, stext);
	if (!text_sec) {
		err = fgk__error_new(FGK_ERR_NOT_FGKASLR, vm->path,
				     "no executable section holds _stext: not a kernel image");
		goto fail;
	}
	memset(&r, 0, sizeof(r));
	r.name = ".text";
	r.start_sym = "_stext";
	r.start = stext;
	r.end = vm->secs[text_sec].shdr.sh_addr + vm->secs[text_sec].shdr.sh_size;
	r.why = WHY_TEXT;
	if ((err = add_region(a, &cap, &r)))
		goto fail;
	/*
	 * the fixed text section after the randomized region (§3: it starts at
	 * __fgkaslr_text_end), ".entry.text section": the kernel's
	 * __entry_text_start .. __entry_text_end inside it is ".entry.text"
	 */
	region_end = sym_value(vm, "__fgkaslr_text_end", &have_region_end);
	if (have_region_end)
		entry_sec = fixed_text_at(vm, region_end);
	if (entry_sec && entry_sec != text_sec) {
		const GElf_Shdr *sh = &vm->secs[entry_sec].shdr;
		const char *name = vm->secs[entry_sec].name ? vm->secs[entry_sec].name : "?";

		memset(&r, 0, sizeof(r));
		r.name = strcmp(name, ".entry.text") ? name : ".entry.text section";
		r.start_sym = sh->sh_addr == region_end ? "__fgkaslr_text_end" : NULL;
		r.start = sh->sh_addr;
		r.end = sh->sh_addr + sh->sh_size;
		r.why = WHY_ENTRY;
		if ((err = add_region(a, &cap, &r)))
			goto fail;
	} else {
		entry_sec = 0;
	}
	for (size_t k = 0; k < sizeof(bounded) / sizeof(bounded[0]); k++) {
		uint64_t s = sym_value(vm, bounded[k].start, &f1);
		uint64_t e = sym_value(vm, bounded[k].end, &f2);

		if (!f1 || !f2)
			continue;
		if (e < s) {
			err = fgk__error_new(FGK_ERR_ELF, vm->path, "%s above %s",
					     bounded[k].start, bounded[k].end);
			goto fail;
		}
		memset(&r, 0, sizeof(r));
		r.name = bounded[k].name;
		r.start_sym = bounded[k].start;
		r.end_sym = bounded[k].end;
		r.start = s;
		r.end = e;
		r.why = bounded[k].why;
		if (bounded[k].dom >= 0 && a->domain_sections[bounded[k].dom]) {
			/*
			 * §3 range domain: every function byte between the
			 * bounds lies in one of its sections, shuffled per
			 * object inside them.  Its end is its limit symbol
			 * (__fgkaslr_noinstr_end: .cpuidle.text, a domain of
			 * its own, follows inside the noinstr bounds on 6.12).
			 */
			int d = bounded[k].dom;
			uint64_t lim = sym_value(vm, fgk__domains[d].limit_sym, &f2);

			if (f2 && lim >= s) {
				r.end_sym = fgk__domains[d].limit_sym;
				r.end = lim;
			}
			r.name = moving_name[d];
			r.why = NULL;
			r.moves = true;
		}
		if ((err = add_region(a, &cap, &r)))
			goto fail;
	}
	if (a->domain_sections[FGK__D_TEXT]) {
		memset(&r, 0, sizeof(r));
		r.name = "shuffled .text.*";
		r.start = rstart;
		r.end = rend;
		r.moves = true;
		if ((err = add_region(a, &cap, &r)))
			goto fail;
	}
	/* other executable sections (.init.text, .exit.text, ...) */
	for (size_t i = 1; i < vm->shnum; i++) {
		const GElf_Shdr *sh = &vm->secs[i].shdr;

		if (sh->sh_type != SHT_PROGBITS || !sh->sh_size ||
		    (sh->sh_flags & (SHF_ALLOC | SHF_EXECINSTR)) != (SHF_ALLOC | SHF_EXECINSTR) ||
		    fgk__section_randomized(vm, &vm->secs[i]) || i == text_sec || i == entry_sec)
			continue;
		memset(&r, 0, sizeof(r));
		r.name = vm->secs[i].name ? vm->secs[i].name : "?";
		r.start = sh->sh_addr;
		r.end = sh->sh_addr + sh->sh_size;
		r.init = have_init_b && have_init_e && r.start >= init_begin &&
			 r.end <= init_end;
		r.why = r.init ? WHY_INIT : WHY_OTHER;
		if ((err = add_region(a, &cap, &r)))
			goto fail;
	}
	qsort(a->regions, a->nregions, sizeof(*a->regions), cmp_region);

	/* bytes: extent minus the regions nested directly inside */
	for (size_t i = 0; i < a->nregions; i++)
		a->regions[i].bytes = a->regions[i].end - a->regions[i].start;
	for (size_t i = 0; i < a->nregions; i++) {
		struct fgk_audit_region *in = &a->regions[i], *out = NULL;

		for (size_t k = 0; k < i; k++)
			if (a->regions[k].start <= in->start && in->end <= a->regions[k].end &&
			    (a->regions[k].start != in->start || a->regions[k].end != in->end))
				out = &a->regions[k];	/* the innermost enclosing */
		if (out)
			out->bytes -= in->end - in->start;
	}

	/* functions */
	for (size_t i = 0; i < vm->nsyms; i++) {
		const struct fgk__symbol *s = &vm->syms[i];

		if (s->type != STT_FUNC || !s->size || s->shndx >= vm->shnum)
			continue;
		if (nfuncs == fcap) {
			size_t ncap = fcap ? 2 * fcap : 4096;
			struct func *p = realloc(funcs, ncap * sizeof(*p));

			if (!p) {
				err = &fgk_enomem;
				goto fail;
			}
			funcs = p;
			fcap = ncap;
		}
		funcs[nfuncs].addr = s->value;
		funcs[nfuncs++].size = s->size;
	}
	qsort(funcs, nfuncs, sizeof(*funcs), cmp_func);
	/* their union, for fgk_audit_gadgets(): disjoint spans by address */
	if (nfuncs) {
		A->spans = malloc(nfuncs * sizeof(*A->spans));
		if (!A->spans) {
			err = &fgk_enomem;
			goto fail;
		}
	}
	for (size_t i = 0; i < nfuncs; i++) {
		struct func *last = A->nspans ? &A->spans[A->nspans - 1] : NULL;
		uint64_t end = funcs[i].addr + funcs[i].size;

		if (end < funcs[i].addr)
			end = UINT64_MAX;	/* wraps: to the top */
		if (last && funcs[i].addr <= last->addr + last->size) {
			if (end > last->addr + last->size)
				last->size = end - last->addr;
		} else {
			A->spans[A->nspans].addr = funcs[i].addr;
			A->spans[A->nspans++].size = end - funcs[i].addr;
		}
	}
	/* asm or C: the source file DWARF gives a fixed function (optional) */
	if (fgk_dwarf_open(vm->path, &dw)) {
		dw = NULL;
		a->asm_known = false;
	}
	for (size_t i = 0; i < nfuncs; i++) {
		struct fgk_audit_region *reg;

		if (i && funcs[i].addr == funcs[i - 1].addr)
			continue;	/* alias: the largest size came first */
		reg = region_at(a, funcs[i].addr);
		if (!reg)
			continue;
		reg->functions++;
		reg->function_bytes += funcs[i].size;
		if (dw && !reg->moves) {
			struct fgk_srcframe *fr = NULL;
			size_t nfr = 0;
			struct fgk_error *e = fgk_dwarf_lookup(dw, funcs[i].addr, &fr, &nfr);

			/* no line info at all: assembled without DWARF */
			if (e || !nfr || asm_file(fr[nfr - 1].file))
				reg->asm_functions++;
			fgk_error_free(e);
			fgk_srcframes_free(fr, nfr);
		}
	}
	fgk_dwarf_close(dw);
	dw = NULL;
	free(funcs);
	funcs = NULL;

	if (seed && a->sections) {
		struct fgk_layout *l;
		const struct fgk_section *secs;
		size_t n;

		err = fgk_layout_compute(vm, seed, &l);
		if (err)
			goto fail;
		secs = fgk_layout_sections(l, &n);
		for (size_t i = 0; i < n; i++) {
			if (secs[i].new_addr != secs[i].addr) {
				a->moved_sections++;
				a->moved_bytes += secs[i].size;
			}
		}
		a->seeded = true;
		a->seed = *seed;
		a->layout_end = fgk_layout_end(l);
		fgk_layout_free(l);
	}
	*ret = a;
	return NULL;
fail:
	fgk_dwarf_close(dw);
	free(funcs);
	fgk_audit_free(a);
	return err;
}

enum fgk_audit_class fgk_audit_region_class(const struct fgk_audit_region *r)
{
	return r->moves ? FGK_AUDIT_MOVING : r->init ? FGK_AUDIT_INIT : FGK_AUDIT_FIXED;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* FNV-1a-64 of the instructions, blanks squeezed */
static uint64_t insn_hash(const char *p, const char *end)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; p < end; p++) {
		h ^= (unsigned char)*p;
		h *= 0x100000001b3ull;
	}
	return h;
}

struct fgk_error *fgk_audit_gadgets(struct fgk_audit *a, const char *text,
				    size_t len, const char *path)
{
	const char *p = text, *end = text + len;
	uint64_t *hashes[FGK_AUDIT_CLASSES] = { 0 };
	size_t nh[FGK_AUDIT_CLASSES] = { 0 }, caph[FGK_AUDIT_CLASSES] = { 0 };
	size_t lineno = 0, ngadgets = 0;
	struct fgk_error *err = NULL;

	memset(a->gadgets, 0, sizeof(a->gadgets));
	memset(a->unique, 0, sizeof(a->unique));
	memset(a->gadgets_outside_functions, 0, sizeof(a->gadgets_outside_functions));
	a->gadgets_outside = 0;
	for (size_t i = 0; i < a->nregions; i++) {
		memset(a->regions[i].gadgets, 0, sizeof(a->regions[i].gadgets));
		a->regions[i].gadgets_outside_functions = 0;
	}

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *q, *insns, *last;
		uint64_t addr = 0;
		int digits = 0;
		enum fgk_gadget_kind kind;
		struct fgk_audit_region *reg;
		enum fgk_audit_class cls;

		lineno++;
		q = p;
		p = nl ? nl + 1 : end;
		if (le - q < 2 || q[0] != '0' || q[1] != 'x')
			continue;	/* ROPgadget's headers and summary */
		for (q += 2; q < le && isxdigit((unsigned char)*q); q++, digits++) {
			int d = isdigit((unsigned char)*q) ? *q - '0' : (tolower(*q) - 'a' + 10);

			addr = addr << 4 | (uint64_t)d;
		}
		if (!digits || digits > 16 || le - q < 3 || memcmp(q, " : ", 3)) {
			err = fgk__error_new(FGK_ERR_INVALID, path,
					     "line %zu: not a gadget line (0xADDRESS : instructions)",
					     lineno);
			goto out;
		}
		insns = q + 3;
		while (le > insns && (le[-1] == '\r' || le[-1] == ' '))
			le--;
		if (le == insns) {
			err = fgk__error_new(FGK_ERR_INVALID, path,
					     "line %zu: gadget without instructions", lineno);
			goto out;
		}
		last = insns;
		for (q = insns; q + 3 <= le; q++)
			if (!memcmp(q, " ; ", 3))
				last = q + 3;
		if (le - last >= 3 && !memcmp(last, "ret", 3))
			kind = FGK_GADGET_ROP;
		else if ((le - last >= 3 && !memcmp(last, "jmp", 3)) ||
			 (le - last >= 4 && !memcmp(last, "call", 4)))
			kind = FGK_GADGET_JOP;
		else
			kind = FGK_GADGET_SYS;
		ngadgets++;
		reg = region_at(a, addr);
		if (!reg) {
			a->gadgets_outside++;
			continue;
		}
		reg->gadgets[kind]++;
		cls = fgk_audit_region_class(reg);
		a->gadgets[cls][kind]++;
		if (!in_function(audit_of(a), addr)) {
			reg->gadgets_outside_functions++;
			a->gadgets_outside_functions[cls]++;
		}
		if (nh[cls] == caph[cls]) {
			size_t ncap = caph[cls] ? 2 * caph[cls] : 4096;
			uint64_t *np = realloc(hashes[cls], ncap * sizeof(*np));

			if (!np) {
				err = &fgk_enomem;
				goto out;
			}
			hashes[cls] = np;
			caph[cls] = ncap;
		}
		hashes[cls][nh[cls]++] = insn_hash(insns, le);
	}
	if (!ngadgets) {
		err = fgk__error_new(FGK_ERR_INVALID, path,
				     "no gadget lines (expected a gadget finder's '0xADDRESS : instructions')");
		goto out;
	}
	for (int c = 0; c < FGK_AUDIT_CLASSES; c++) {
		qsort(hashes[c], nh[c], sizeof(uint64_t), cmp_u64);
		for (size_t i = 0; i < nh[c]; i++)
			a->unique[c] += !i || hashes[c][i] != hashes[c][i - 1];
	}
	a->have_gadgets = true;
out:
	for (int c = 0; c < FGK_AUDIT_CLASSES; c++)
		free(hashes[c]);
	return err;
}
