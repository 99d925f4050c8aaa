// SPDX-License-Identifier: GPL-2.0
/*
 * Layouts rebuilt without the seed, from what the booted kernel's kallsyms
 * says (fgk.h: fgk_layout_from_kallsyms(), fgk_layout_from_vmcore()).
 *
 * Every kallsyms symbol of vmlinux (decoded from its own kallsyms tables,
 * lib/kallsyms.c) is matched with its runtime address: by kallsyms index
 * when the addresses come from the kernel's tables in a dump, by name from
 * a /proc/kallsyms capture (same-named symbols are told apart by the
 * sections already placed and by the region the packing leaves free).  A
 * randomized section's new address is that of any of its symbols minus the
 * symbol's offset in it and the base offset; all of its symbols must agree.
 * Sections without any kallsyms symbol are then placed by elimination
 * (settle()) and the whole is checked against §7.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "vmcore_mem.h"
#include "layout.h"
#include "symbols.h"
#include "vmlinux.h"

#define UNKNOWN UINT64_MAX
/* More sections without a kallsyms symbol than this: kallsyms too thin. */
#define MAX_ELIMINATED 64
/* Search budget for filling one gap by elimination. */
#define MAX_STEPS 1000000

void fgk_kallsyms_origin_clear(struct fgk_kallsyms_origin *o)
{
	free(o->guessed_names);
	memset(o, 0, sizeof(*o));
}

static uint64_t align_up(uint64_t p, uint64_t a)
{
	uint64_t q = p + (a - 1);

	return (a & (a - 1)) ? q / a * a : q & ~(a - 1);
}

struct gap {
	uint64_t p;		/* end of the section before */
	uint64_t target;	/* where the next placed section starts */
	uint64_t align;		/* its alignment */
};

struct settle {
	struct fgk_layout *l;
	uint64_t *newa;		/* per section, UNKNOWN if not placed */
	uint32_t *unknown;	/* unplaced sections, index order */
	bool *used;
	size_t nunknown;
	struct gap *gaps;
	size_t ngaps;
	uint64_t *first;	/* per unknown: its address in the first
				   solution (UNKNOWN: the tail) */
	bool *guess;		/* per unknown: differs in another solution */
	size_t solutions;
	unsigned long steps;
	long avoid;		/* >= 0: looking for a solution that puts
				   unknown[avoid] elsewhere than first[] */
	bool found;
};

/* The unknown sections left for the tail, in index order. */
static void place_tail(struct settle *st, uint64_t p)
{
	for (size_t u = 0; u < st->nunknown; u++) {
		const struct fgk_section *e = &st->l->secs[st->unknown[u]];

		if (st->used[u])
			continue;
		p = align_up(p, e->align);
		st->newa[st->unknown[u]] = p;
		p += e->size;
	}
}

/* A complete solution: keep the first, note where a second differs. */
static bool solved(struct settle *st)
{
	if (st->avoid >= 0) {
		size_t u = (size_t)st->avoid;
		uint64_t a = st->used[u] ? st->newa[st->unknown[u]] : UNKNOWN;

		st->found = a != st->first[u];
		return st->found;
	}
	if (st->solutions++ == 0) {
		for (size_t u = 0; u < st->nunknown; u++)
			st->first[u] = st->used[u] ? st->newa[st->unknown[u]] : UNKNOWN;
		return false;	/* look for a second one */
	}
	for (size_t u = 0; u < st->nunknown; u++) {
		uint64_t a = st->used[u] ? st->newa[st->unknown[u]] : UNKNOWN;

		if (a != st->first[u])
			st->guess[u] = true;
	}
	return true;		/* two are enough */
}

static bool twins(const struct settle *st, size_t u, size_t v)
{
	const struct fgk_section *a = &st->l->secs[st->unknown[u]];
	const struct fgk_section *b = &st->l->secs[st->unknown[v]];

	return a->size == b->size && a->align == b->align;
}

/*
 * An unused unknown section before u of the same size and alignment: trying
 * u after it gives the same addresses, only the names swapped (which
 * kallsyms cannot tell apart anyway).  Without this the search walks every
 * permutation of such twins (Debian's kernel has 14 unknown syscall stubs
 * of 17 bytes) and gives up at MAX_STEPS.
 */
static bool twin_before(const struct settle *st, size_t u)
{
	for (size_t v = 0; v < u; v++)
		if (!st->used[v] && twins(st, u, v))
			return true;
	return false;
}

/*
 * Fill gap g from p with unused unknown sections so that its next section
 * lands exactly at its target, then the gaps after it; stops at the
 * second complete solution (true).
 */
static bool fill(struct settle *st, size_t g, uint64_t p)
{
	const struct gap *gp;

	if (g == st->ngaps)
		return solved(st);
	gp = &st->gaps[g];
	if (align_up(p, gp->align) == gp->target &&
	    fill(st, g + 1, g + 1 < st->ngaps ? st->gaps[g + 1].p : 0))
		return true;
	for (size_t u = 0; u < st->nunknown; u++) {
		const struct fgk_section *e = &st->l->secs[st->unknown[u]];
		uint64_t q, r;

		if (st->used[u] || twin_before(st, u) || ++st->steps > MAX_STEPS)
			continue;
		q = align_up(p, e->align);
		r = q + e->size;
		if (r > gp->target || r < q)
			continue;
		if ((long)u == st->avoid && q == st->first[u])
			continue;
		st->used[u] = true;
		st->newa[st->unknown[u]] = q;
		if (fill(st, g, r))
			return true;
		st->newa[st->unknown[u]] = UNKNOWN;
		st->used[u] = false;
	}
	return false;
}

/*
 * Could an unknown section sit in [p, at)?  The padding before a section
 * aligned to 64 or 4096 bytes can hold whole sections as well as nothing.
 */
static bool fits_unknown(const struct settle *st, uint64_t p, uint64_t at)
{
	for (size_t u = 0; u < st->nunknown; u++) {
		const struct fgk_section *e = &st->l->secs[st->unknown[u]];
		uint64_t q = align_up(p, e->align);

		if (q >= p && q + e->size <= at)
			return true;
	}
	return false;
}

static const uint64_t *cmp_newa;

static int cmp_by_newa(const void *a, const void *b)
{
	uint64_t x = cmp_newa[*(const uint32_t *)a];
	uint64_t y = cmp_newa[*(const uint32_t *)b];

	return x < y ? -1 : x > y;
}

/* Names of the eliminated sections another solution places elsewhere. */
static struct fgk_error *note_guesses(struct settle *st,
				      struct fgk_kallsyms_origin *o)
{
	const struct fgk_section *s = st->l->secs;
	size_t len = 0, cap = 0;
	char *names = o->guessed_names;	/* the domain before's, if any */

	if (names) {
		len = strlen(names);
		cap = len + 1;
	}

	for (size_t u = 0; u < st->nunknown; u++) {
		const struct fgk_section *e = &s[st->unknown[u]];

		if (!st->guess[u])
			continue;
		o->guessed++;
		if (len + strlen(e->name) + 3 > cap) {
			char *nn;

			cap = 2 * cap + strlen(e->name) + 64;
			nn = realloc(names, cap);
			if (!nn) {
				free(names);
				return &fgk_enomem;
			}
			names = nn;
		}
		len += (size_t)sprintf(names + len, "%s%s", len ? ", " : "",
				       e->name);
	}
	o->guessed_names = names;
	return NULL;
}

/*
 * One domain (l is a view of it: its sections, order, region): newa[]
 * holds the sections placed from symbols; place the others by
 * elimination, check §7, set l->order (indices into l->secs) and l->end.
 */
static struct fgk_error *settle_one(struct fgk_layout *l, uint64_t *newa,
				const char *path, const char *vmpath,
				struct fgk_kallsyms_origin *o)
{
	struct settle st = { .l = l, .newa = newa };
	struct fgk_error *err = NULL;
	uint32_t *known = NULL;
	size_t nknown = 0;
	uint64_t p, end;

	known = calloc(l->n, sizeof(*known));
	st.unknown = calloc(l->n, sizeof(*st.unknown));
	st.used = calloc(l->n, sizeof(*st.used));
	st.gaps = calloc(l->n + 1, sizeof(*st.gaps));
	st.first = calloc(l->n, sizeof(*st.first));
	st.guess = calloc(l->n, sizeof(*st.guess));
	if (!known || !st.unknown || !st.used || !st.gaps || !st.first ||
	    !st.guess) {
		err = &fgk_enomem;
		goto out;
	}
	for (size_t k = 0; k < l->n; k++) {
		const struct fgk_section *e = &l->secs[k];

		if (newa[k] == UNKNOWN) {
			st.unknown[st.nunknown++] = (uint32_t)k;
			continue;
		}
		if (newa[k] % e->align || newa[k] < l->start ||
		    newa[k] > l->limit || e->size > l->limit - newa[k]) {
			err = fgk__error_new(FGK_ERR_KALLSYMS, path,
					     "its symbols put %s at 0x%" PRIx64 ", %s for it (alignment 0x%" PRIx64 ", region [0x%" PRIx64 ", 0x%" PRIx64 ")): not a layout of %s",
					     e->name, newa[k],
					     newa[k] % e->align ? "misaligned" : "out of the region",
					     e->align, l->start, l->limit, vmpath);
			goto out;
		}
		known[nknown++] = (uint32_t)k;
	}
	o->by_symbol += nknown;
	o->by_elimination += st.nunknown;
	if (st.nunknown > MAX_ELIMINATED) {
		err = fgk__error_new(FGK_ERR_KALLSYMS, path,
				     "kallsyms does not cover %zu of the %zu shuffled sections of %s (no symbol of theirs): a kernel without CONFIG_KALLSYMS_ALL? Use the seed",
				     st.nunknown, l->n, vmpath);
		goto out;
	}
	cmp_newa = newa;
	qsort(known, nknown, sizeof(*known), cmp_by_newa);
	p = l->start;
	for (size_t j = 0; j < nknown; j++) {
		const struct fgk_section *e = &l->secs[known[j]];
		uint64_t at = newa[known[j]];

		if (align_up(p, e->align) > at) {
			err = fgk__error_new(FGK_ERR_KALLSYMS, path,
					     "its symbols put %s at 0x%" PRIx64 ", inside the section before it (which ends at 0x%" PRIx64 "): not a layout of %s",
					     e->name, at, p, vmpath);
			goto out;
		}
		if (align_up(p, e->align) == at && fits_unknown(&st, p, at)) {
			/* alignment padding with room for a section */
			st.gaps[st.ngaps++] = (struct gap){ p, at, e->align };
		} else if (align_up(p, e->align) < at) {
			if (!st.nunknown) {
				err = fgk__error_new(FGK_ERR_KALLSYMS, path,
						     "nothing fills [0x%" PRIx64 ", 0x%" PRIx64 ") before %s: not a layout of %s",
						     p, at, e->name, vmpath);
				goto out;
			}
			st.gaps[st.ngaps++] = (struct gap){ p, at, e->align };
		}
		p = at + e->size;
	}
	/* every gap filled, the rest at the end; a second solution? */
	st.avoid = -1;
	fill(&st, 0, st.ngaps ? st.gaps[0].p : 0);
	if (!st.solutions) {
		err = fgk__error_new(FGK_ERR_KALLSYMS, path,
				     "the %zu sections of %s without a kallsyms symbol cannot fill the %zu gaps the others leave (the first [0x%" PRIx64 ", 0x%" PRIx64 ")): not a layout of %s",
				     st.nunknown, vmpath, st.ngaps,
				     st.ngaps ? st.gaps[0].p : 0,
				     st.ngaps ? st.gaps[0].target : 0, vmpath);
		goto out;
	}
	{
		size_t tail = 0;

		for (size_t u = 0; u < st.nunknown; u++) {
			st.used[u] = st.first[u] != UNKNOWN;
			newa[st.unknown[u]] = st.first[u];
			tail += !st.used[u];
		}
		for (size_t u = 0; u < st.nunknown; u++) {
			if ((tail > 1 && !st.used[u]) || st.steps > MAX_STEPS)
				st.guess[u] = true;	/* order unknowable */
			for (size_t v = 0; v < st.nunknown; v++)
				if (v != u && twins(&st, u, v))
					st.guess[u] = true;	/* swappable */
		}
		/*
		 * Two solutions that agree on a section do not make it
		 * certain: a third may move it.  Ask, for each section still
		 * taken as certain, for a solution that puts it elsewhere
		 * (none within the search budget: uncertain too).
		 */
		for (size_t u = 0; u < st.nunknown; u++) {
			if (st.guess[u])
				continue;
			for (size_t v = 0; v < st.nunknown; v++) {
				st.used[v] = false;
				st.newa[st.unknown[v]] = UNKNOWN;
			}
			st.avoid = (long)u;
			st.found = false;
			st.steps = 0;
			fill(&st, 0, st.ngaps ? st.gaps[0].p : 0);
			if (st.found || st.steps > MAX_STEPS)
				st.guess[u] = true;
		}
		for (size_t u = 0; u < st.nunknown; u++) {
			st.used[u] = st.first[u] != UNKNOWN;
			newa[st.unknown[u]] = st.first[u];
		}
		place_tail(&st, p);
	}
	/* §7 check: the order by new address must pack to the same addresses */
	for (size_t k = 0; k < l->n; k++)
		l->order[k] = (uint32_t)k;
	cmp_newa = newa;
	qsort(l->order, l->n, sizeof(*l->order), cmp_by_newa);
	err = fgk__place(l->secs, l->n, l->order, l->start, l->limit, l->limit_sym,
			 &end);
	if (err) {
		struct fgk_error *e2 = fgk__error_new(FGK_ERR_KALLSYMS, path,
						      "the addresses are not a layout of %s: %s",
						      vmpath, err->message);

		fgk_error_free(err);
		err = e2;
		goto out;
	}
	for (size_t k = 0; k < l->n; k++) {
		if (l->secs[k].new_addr != newa[k]) {
			err = fgk__error_new(FGK_ERR_KALLSYMS, path,
					     "%s is at 0x%" PRIx64 ", but packing the sections in that order puts it at 0x%" PRIx64 ": not a layout of %s",
					     l->secs[k].name, newa[k],
					     l->secs[k].new_addr, vmpath);
			goto out;
		}
	}
	l->end = end;
	err = note_guesses(&st, o);
out:
	free(known);
	free(st.unknown);
	free(st.used);
	free(st.gaps);
	free(st.first);
	free(st.guess);
	return err;
}

/*
 * newa[] holds the sections placed from symbols; place the others by
 * elimination and check §7, domain by domain (spec §3: each in its own
 * region), and turn l into the layout.
 */
static struct fgk_error *settle(struct fgk_layout *l, uint64_t *newa,
				const char *path, const char *vmpath,
				struct fgk_kallsyms_origin *o)
{
	for (int d = 0; d < FGK__NDOMAINS; d++) {
		struct fgk__domain *D = &l->dom[d];
		struct fgk_layout v = *l;
		struct fgk_error *err;

		if (!D->n)
			continue;
		v.secs = l->secs + D->first;
		v.order = l->order + D->first;
		v.n = D->n;
		v.start = D->start;
		v.limit = D->limit;
		v.limit_sym = D->limit_sym;
		err = settle_one(&v, newa + D->first, path, vmpath, o);
		if (err)
			return err;
		D->end = v.end;
		for (size_t k = 0; k < D->n; k++)
			l->order[D->first + k] += (uint32_t)D->first;
	}
	l->end = l->dom[FGK__D_TEXT].end;
	l->seedless = true;
	memset(&l->seed, 0, sizeof(l->seed));
	fgk__layout_index_new(l);
	return NULL;
}

/* The randomized section holding a link address, as an index, or -1. */
static long section_of(const struct fgk_layout *l, uint64_t link)
{
	const struct fgk_section *e = fgk_layout_section_at(l, link);

	return e ? (long)(e - l->secs) : -1;
}

/* ---- from a /proc/kallsyms capture -------------------------------------- */

struct cap {
	uint64_t addr;
	const char *name;	/* into the capture (NUL-terminated copy) */
	char type;
	bool used;
};

static int cmp_cap(const void *a, const void *b)
{
	const struct cap *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static const struct fgk_symbol *cmp_syms;

static int cmp_sym_idx(const void *a, const void *b)
{
	const struct fgk_symbol *x = &cmp_syms[*(const uint32_t *)a];
	const struct fgk_symbol *y = &cmp_syms[*(const uint32_t *)b];
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * Parse the capture into caps (vmlinux lines only).  copy is a writable
 * copy of the text; names point into it.
 */
static struct fgk_error *parse_capture(char *copy, size_t len, const char *path,
				       struct cap **ret, size_t *n)
{
	size_t cap = 0, cnt = 0, line = 0;
	struct cap *c = NULL;
	bool nonzero = false;
	char *s = copy, *end = copy + len;

	*ret = NULL;
	*n = 0;
	if (len == 0)
		return fgk__error_new(FGK_ERR_KALLSYMS, path,
				      "empty file: not a /proc/kallsyms capture");
	if (copy[len - 1] != '\n')
		return fgk__error_new(FGK_ERR_KALLSYMS, path,
				      "truncated capture: the last line has no newline");
	while (s < end) {
		char *nl = memchr(s, '\n', (size_t)(end - s)), *q, *name;
		uint64_t a = 0;
		int digits = 0;

		line++;
		*nl = '\0';
		for (q = s; *q && *q != ' '; q++, digits++) {
			int v = *q >= '0' && *q <= '9' ? *q - '0' :
				*q >= 'a' && *q <= 'f' ? *q - 'a' + 10 :
				*q >= 'A' && *q <= 'F' ? *q - 'A' + 10 : -1;

			if (v < 0 || digits >= 16)
				break;
			a = a << 4 | (uint64_t)v;
		}
		if (!digits || q[0] != ' ' || !q[1] || q[1] == ' ' ||
		    q[2] != ' ' || !q[3]) {
			free(c);
			return fgk__error_new(FGK_ERR_KALLSYMS, path,
					      "line %zu: not a /proc/kallsyms line (ADDRESS TYPE NAME)",
					      line);
		}
		name = q + 3;
		q = name + strcspn(name, " \t");
		if (*q) {	/* "name\t[module]": a module symbol */
			s = nl + 1;
			continue;
		}
		if (cnt == cap) {
			struct cap *nc;

			cap = cap ? 2 * cap : 65536;
			nc = realloc(c, cap * sizeof(*c));
			if (!nc) {
				free(c);
				return &fgk_enomem;
			}
			c = nc;
		}
		c[cnt].addr = a;
		c[cnt].type = s[digits + 1];
		c[cnt].name = name;
		c[cnt].used = false;
		cnt++;
		nonzero |= a != 0;
		s = nl + 1;
	}
	if (!cnt) {
		free(c);
		return fgk__error_new(FGK_ERR_KALLSYMS, path,
				      "no kernel symbols: not a /proc/kallsyms capture");
	}
	if (!nonzero) {
		free(c);
		return fgk__error_new(FGK_ERR_KALLSYMS, path,
				      "every address is zero: captured without the right to see addresses (read /proc/kallsyms as root)");
	}
	*ret = c;
	*n = cnt;
	return NULL;
}

struct match {
	struct fgk_layout *l;
	const struct fgk_kallsyms *ks;
	uint32_t *vi;		/* kallsyms indices sorted by (name, link) */
	long *sec;		/* per kallsyms index: section or -1 */
	struct cap *c;		/* sorted by (name, addr) */
	size_t *gv, *gc;	/* group g: vi[gv[g]..gv[g+1]), c[gc[g]..gc[g+1]) */
	size_t ngroups;
	bool *done;
	uint64_t *newa;
	uint64_t offset;
	const char *path, *vmpath;
	unsigned mask;		/* which order each unequal group is tried in:
				   mixed radix, one digit of n! per group */
	unsigned norders;	/* product of the n! of the groups met */
	char *copy_names;	/* their sections, for the guessed list */
	size_t copy_len;
};

/* Orders of same-named copies that differ in alignment tried at most. */
#define MAX_TRIES 64
#define MAX_COPIES 4

/* Runtime address of kallsyms symbol i if its place is known. */
static bool expected(const struct match *m, uint32_t i, uint64_t *addr)
{
	const struct fgk_symbol *s = &m->ks->syms[i];
	long k = m->sec[i];

	if (s->absolute) {
		*addr = s->addr;
		return true;
	}
	if (k < 0) {
		*addr = s->addr + m->offset;
		return true;
	}
	if (m->newa[k] == UNKNOWN)
		return false;
	*addr = s->addr - m->l->secs[k].addr + m->newa[k] + m->offset;
	return true;
}

static struct fgk_error *place(struct match *m, uint32_t i, uint64_t rt)
{
	long k = m->sec[i];
	const struct fgk_section *e = &m->l->secs[k];
	uint64_t na = rt - m->offset - (m->ks->syms[i].addr - e->addr);

	if (m->newa[k] != UNKNOWN && m->newa[k] != na)
		return fgk__error_new(FGK_ERR_KALLSYMS, m->path,
				      "%s at 0x%" PRIx64 " puts its section %s at 0x%" PRIx64 ", its other symbols at 0x%" PRIx64 ": not a capture of %s",
				      m->ks->syms[i].name, rt, e->name, na,
				      m->newa[k], m->vmpath);
	m->newa[k] = na;
	return NULL;
}

/*
 * Could symbol i (of group g) be at rt?  Its section must then fit the
 * region at its alignment, and the group's other symbols in that section
 * must be in the capture where it puts them.
 */
static bool plausible(const struct match *m, size_t g, uint32_t i, uint64_t rt)
{
	long k = m->sec[i];
	const struct fgk_section *e = &m->l->secs[k];
	uint64_t na = rt - m->offset - (m->ks->syms[i].addr - e->addr);

	const struct fgk__domain *D = fgk__layout_domain_of(m->l, (size_t)k);

	if (na % e->align || na < D->start || na > D->limit ||
	    e->size > D->limit - na)
		return false;
	for (size_t v = m->gv[g]; v < m->gv[g + 1]; v++) {
		uint32_t o = m->vi[v];
		uint64_t want = na + (m->ks->syms[o].addr - e->addr) + m->offset;
		bool hit = false;

		if (m->sec[o] != k || o == i)
			continue;
		for (size_t j = m->gc[g]; j < m->gc[g + 1] && !hit; j++)
			hit = !m->c[j].used && m->c[j].addr == want;
		if (!hit)
			return false;
	}
	return true;
}

/*
 * One pass over the groups: match the symbols whose place is known, place
 * a section when a group leaves exactly one candidate for a symbol.
 */
static struct fgk_error *match_pass(struct match *m, bool *progress)
{
	for (size_t g = 0; g < m->ngroups; g++) {
		size_t left = 0, cand = 0;
		uint32_t last = 0;

		if (m->done[g])
			continue;
		for (size_t j = m->gc[g]; j < m->gc[g + 1]; j++)
			m->c[j].used = false;
		for (size_t v = m->gv[g]; v < m->gv[g + 1]; v++) {
			uint32_t i = m->vi[v];
			uint64_t a;
			bool hit = false;

			if (!expected(m, i, &a)) {
				left++;
				last = i;
				continue;
			}
			for (size_t j = m->gc[g]; j < m->gc[g + 1] && !hit; j++)
				if (!m->c[j].used && m->c[j].addr == a)
					hit = m->c[j].used = true;
			if (!hit)
				return fgk__error_new(FGK_ERR_KALLSYMS, m->path,
						      "%s should be at 0x%" PRIx64 " (base offset 0x%" PRIx64 "%s), but the capture does not have it there: not a capture of %s",
						      m->ks->syms[i].name, a, m->offset,
						      m->sec[i] >= 0 ? ", its section placed by other symbols" : "",
						      m->vmpath);
		}
		if (!left) {
			m->done[g] = true;
			continue;
		}
		if (left == 1) {
			for (size_t j = m->gc[g]; j < m->gc[g + 1]; j++)
				if (!m->c[j].used) {
					struct fgk_error *err = place(m, last, m->c[j].addr);

					if (err)
						return err;
					*progress = true;
					break;
				}
			continue;
		}
		/* several unplaced: a symbol with one plausible candidate */
		for (size_t v = m->gv[g]; v < m->gv[g + 1]; v++) {
			uint32_t i = m->vi[v];
			uint64_t a, only = 0;

			if (expected(m, i, &a))
				continue;
			cand = 0;
			for (size_t j = m->gc[g]; j < m->gc[g + 1]; j++)
				if (!m->c[j].used && plausible(m, g, i, m->c[j].addr)) {
					cand++;
					only = m->c[j].addr;
				}
			if (cand == 1) {
				struct fgk_error *err = place(m, i, only);

				if (err)
					return err;
				*progress = true;
				break;
			}
		}
	}
	return NULL;
}

/* Append name to the comma-separated list *names of length *len. */
static struct fgk_error *add_name(char **names, size_t *len, const char *name)
{
	char *nn = realloc(*names, *len + strlen(name) + 3);

	if (!nn)
		return &fgk_enomem;
	*names = nn;
	*len += (size_t)sprintf(nn + *len, "%s%s", *len ? ", " : "", name);
	return NULL;
}

/*
 * Group g is still unresolved after the passes: several sections, each
 * with one symbol of that name.  All of the same size and alignment, the
 * symbol at the same offset: any assignment gives the same kallsyms, so
 * kallsyms cannot tell them apart: place them in link order at the
 * remaining addresses in increasing order, and name them in *names.
 * Otherwise (up to MAX_COPIES copies, a cold one among them): the order
 * numbered m->mask; fgk_layout_from_kallsyms() tries every order.
 */
static struct fgk_error *guess_symmetric(struct match *m, size_t g,
					 char **names, size_t *len,
					 size_t *nguess)
{
	uint32_t first = UINT32_MAX;
	size_t nr = 0, j = m->gc[g];
	const struct fgk_section *e0 = NULL;
	bool asym = false;

	for (size_t v = m->gv[g]; v < m->gv[g + 1]; v++) {
		uint32_t i = m->vi[v];
		const struct fgk_section *e;
		uint64_t a;

		if (expected(m, i, &a))
			continue;
		e = &m->l->secs[m->sec[i]];
		if (first == UINT32_MAX) {
			first = i;
			e0 = e;
		} else if (e == e0 || nr >= MAX_COPIES) {
			return fgk__error_new(FGK_ERR_KALLSYMS, m->path,
					      "cannot tell apart the symbols called %s (sections %s and %s): use the seed",
					      m->ks->syms[i].name, e0->name, e->name);
		} else if (e->size != e0->size || e->align != e0->align ||
			   m->ks->syms[i].addr - e->addr !=
			   m->ks->syms[first].addr - e0->addr) {
			asym = true;
		}
		nr++;
	}
	if (asym) {
		/*
		 * Copies of one function (a static inline out of line in
		 * several objects, some of them cold) that differ in size,
		 * alignment or the symbol's offset, every place plausible
		 * for each: only packing the whole region can tell which is
		 * where.  The caller tries each order (m->mask) and keeps
		 * what passes the §7 check.
		 */
		unsigned perm_f = 1;

		for (unsigned x = 2; x <= nr; x++)
			perm_f *= x;
		if ((m->norders ? m->norders : 1) * perm_f > MAX_TRIES)
			return fgk__error_new(FGK_ERR_KALLSYMS, m->path,
					      "cannot tell apart the %zu symbols called %s (and others before): use the seed",
					      nr, m->ks->syms[first].name);
		unsigned before = m->norders ? m->norders : 1;
		unsigned code = (m->mask / before) % perm_f;
		size_t pick[MAX_COPIES], rest[MAX_COPIES];
		m->norders = before * perm_f;
		/* permutation number code (factorial number system) */
		for (size_t x = 0; x < nr; x++)
			rest[x] = x;
		for (size_t x = 0, left = nr; x < nr; x++, left--) {
			unsigned fl = 1;

			for (unsigned y = 2; y < left; y++)
				fl *= y;
			pick[x] = rest[code / fl];
			for (size_t y = code / fl; y + 1 < left; y++)
				rest[y] = rest[y + 1];
			code %= fl;
		}
		for (size_t v = m->gv[g], n = 0; v < m->gv[g + 1]; v++) {
			uint32_t i = m->vi[v];
			struct fgk_error *err;
			uint64_t a;
			size_t k = 0, want;

			if (expected(m, i, &a))
				continue;
			want = pick[n];
			for (j = m->gc[g]; j < m->gc[g + 1]; j++)
				if (!m->c[j].used && k++ == want)
					break;
			if (j == m->gc[g + 1])
				return fgk__error_new(FGK_ERR_KALLSYMS, m->path,
						      "too few addresses for the symbols called %s",
						      m->ks->syms[i].name);
			err = place(m, i, m->c[j].addr);
			if (err)
				return err;
			err = add_name(&m->copy_names, &m->copy_len,
				       m->l->secs[m->sec[i]].name);
			if (err)
				return err;
			n++;
		}
		for (j = m->gc[g]; j < m->gc[g + 1]; j++)
			m->c[j].used = false;
		return NULL;
	}
	for (size_t v = m->gv[g]; v < m->gv[g + 1]; v++) {
		uint32_t i = m->vi[v];
		struct fgk_error *err;
		uint64_t a;

		if (expected(m, i, &a))
			continue;
		while (j < m->gc[g + 1] && m->c[j].used)
			j++;
		if (j == m->gc[g + 1])
			return fgk__error_new(FGK_ERR_KALLSYMS, m->path,
					      "too few addresses for the symbols called %s",
					      m->ks->syms[i].name);
		m->c[j].used = true;
		err = place(m, i, m->c[j].addr);
		if (err)
			return err;
		err = add_name(names, len, m->l->secs[m->sec[i]].name);
		if (err)
			return err;
		(*nguess)++;
	}
	return NULL;
}

static struct fgk_error *group(struct match *m, size_t nc)
{
	size_t n = m->ks->n, v = 0, j = 0, g = 0;

	m->gv = calloc(n + 1, sizeof(*m->gv));
	m->gc = calloc(n + 1, sizeof(*m->gc));
	m->done = calloc(n + 1, sizeof(*m->done));
	if (!m->gv || !m->gc || !m->done)
		return &fgk_enomem;
	while (v < n || j < nc) {
		const char *name;
		size_t v0 = v, j0 = j;
		int c = v >= n ? 1 : j >= nc ? -1 :
			strcmp(m->ks->syms[m->vi[v]].name, m->c[j].name);

		if (c > 0)
			return fgk__error_new(FGK_ERR_KALLSYMS, m->path,
					      "symbol %s is not in the kallsyms of %s: a capture of another build",
					      m->c[j].name, m->vmpath);
		if (c < 0)
			return fgk__error_new(FGK_ERR_KALLSYMS, m->path,
					      "%s's symbol %s is missing: a truncated capture, or one of another build",
					      m->vmpath, m->ks->syms[m->vi[v]].name);
		name = m->c[j].name;
		while (v < n && !strcmp(m->ks->syms[m->vi[v]].name, name))
			v++;
		while (j < nc && !strcmp(m->c[j].name, name))
			j++;
		if (v - v0 != j - j0)
			return fgk__error_new(FGK_ERR_KALLSYMS, m->path,
					      "symbol %s appears %zu times, %zu times in the kallsyms of %s: a capture of another build%s",
					      name, j - j0, v - v0, m->vmpath,
					      j - j0 < v - v0 ? ", or truncated" : "");
		for (size_t x = 0; x < v - v0; x++)
			if (m->c[j0 + x].type != m->ks->syms[m->vi[v0 + x]].type &&
			    v - v0 == 1)
				return fgk__error_new(FGK_ERR_KALLSYMS, m->path,
						      "symbol %s has type %c, %c in %s: a capture of another build",
						      name, m->c[j0].type,
						      m->ks->syms[m->vi[v0]].type, m->vmpath);
		m->gv[g] = v0;
		m->gc[g] = j0;
		g++;
	}
	m->gv[g] = v;
	m->gc[g] = j;
	m->ngroups = g;
	return NULL;
}

/* The base offset: _text's, checked against every unmoved unique symbol. */
static struct fgk_error *base_offset(struct match *m)
{
	bool have = false;

	for (size_t g = 0; g < m->ngroups && !have; g++) {
		uint32_t i = m->vi[m->gv[g]];

		if (m->gv[g + 1] - m->gv[g] == 1 &&
		    !strcmp(m->ks->syms[i].name, "_text")) {
			m->offset = m->c[m->gc[g]].addr - m->ks->syms[i].addr;
			have = true;
		}
	}
	for (size_t g = 0; g < m->ngroups; g++) {
		uint32_t i = m->vi[m->gv[g]];
		const struct fgk_symbol *s = &m->ks->syms[i];
		uint64_t a = m->c[m->gc[g]].addr;

		if (m->gv[g + 1] - m->gv[g] != 1 || s->absolute || m->sec[i] >= 0)
			continue;
		if (!have) {
			m->offset = a - s->addr;
			have = true;
		} else if (a - s->addr != m->offset) {
			return fgk__error_new(FGK_ERR_KALLSYMS, m->path,
					      "%s is at 0x%" PRIx64 ", _text at base offset 0x%" PRIx64 " puts it at 0x%" PRIx64 ": not a capture of %s",
					      s->name, a, m->offset, s->addr + m->offset,
					      m->vmpath);
		}
	}
	if (!have)
		return fgk__error_new(FGK_ERR_KALLSYMS, m->path,
				      "no symbol outside the shuffled code to find the base offset");
	return NULL;
}

/* names (count sections) first in o's guessed list, then what o had. */
static struct fgk_error *prepend_guessed(struct fgk_kallsyms_origin *o,
					 const char *names, size_t count)
{
	char *all;

	if (asprintf(&all, "%s%s%s", names, o->guessed_names ? ", " : "",
		     o->guessed_names ? o->guessed_names : "") < 0)
		return &fgk_enomem;
	free(o->guessed_names);
	o->guessed_names = all;
	o->guessed += count;
	return NULL;
}

static struct fgk_error *from_kallsyms_once(struct fgk_vmlinux *vm,
					    const char *text, size_t len,
					    const char *path,
					    struct fgk_layout **ret,
					    struct fgk_kallsyms_origin *origin,
					    unsigned mask, unsigned *norders,
					    char **copy_names)
{
	struct match m = { .path = path ? path : "kallsyms capture",
			   .vmpath = vm->path, .mask = mask };
	struct fgk_kallsyms *ks = NULL;
	struct fgk_error *err;
	char *copy = NULL, *gnames = NULL;
	size_t nc = 0, glen = 0, nguess = 0;
	bool progress;

	*ret = NULL;
	memset(origin, 0, sizeof(*origin));
	err = fgk__layout_new(vm, &m.l);
	if (err)
		return err;
	err = fgk_kallsyms_read(vm, &ks);
	if (err)
		goto out;
	m.ks = ks;
	copy = malloc(len + 1);
	if (!copy) {
		err = &fgk_enomem;
		goto out;
	}
	memcpy(copy, text, len);
	copy[len] = '\0';
	if (memchr(copy, '\0', len)) {
		err = fgk__error_new(FGK_ERR_KALLSYMS, m.path,
				     "binary data: not a /proc/kallsyms capture");
		goto out;
	}
	err = parse_capture(copy, len, m.path, &m.c, &nc);
	if (err)
		goto out;
	if (nc < ks->n) {
		err = fgk__error_new(FGK_ERR_KALLSYMS, m.path,
				     "%zu kernel symbols, the kallsyms of %s has %zu: a truncated capture?",
				     nc, vm->path, ks->n);
		goto out;
	}
	m.vi = calloc(ks->n ? ks->n : 1, sizeof(*m.vi));
	m.sec = calloc(ks->n ? ks->n : 1, sizeof(*m.sec));
	m.newa = malloc(m.l->n * sizeof(*m.newa));
	if (!m.vi || !m.sec || !m.newa) {
		err = &fgk_enomem;
		goto out;
	}
	for (size_t i = 0; i < ks->n; i++) {
		m.vi[i] = (uint32_t)i;
		m.sec[i] = ks->syms[i].absolute ? -1 :
			   section_of(m.l, ks->syms[i].addr);
	}
	for (size_t k = 0; k < m.l->n; k++)
		m.newa[k] = UNKNOWN;
	cmp_syms = ks->syms;
	qsort(m.vi, ks->n, sizeof(*m.vi), cmp_sym_idx);
	qsort(m.c, nc, sizeof(*m.c), cmp_cap);
	err = group(&m, nc);
	if (!err)
		err = base_offset(&m);
	if (err)
		goto out;
	for (;;) {
		size_t g;

		do {
			progress = false;
			err = match_pass(&m, &progress);
			if (err)
				goto out;
		} while (progress);
		for (g = 0; g < m.ngroups && m.done[g]; g++)
			;
		if (g == m.ngroups)
			break;
		err = guess_symmetric(&m, g, &gnames, &glen, &nguess);
		if (err)
			goto out;
	}
	err = settle(m.l, m.newa, m.path, vm->path, origin);
	if (err)
		goto out;
	if (nguess) {	/* the same-named twins first, then settle()'s */
		err = prepend_guessed(origin, gnames, nguess);
		if (err)
			goto out;
	}
	origin->offset = m.offset;
	*ret = m.l;
	m.l = NULL;
out:
	if (err)
		fgk_kallsyms_origin_clear(origin);
	fgk_layout_free(m.l);
	fgk_kallsyms_free(ks);
	free(copy);
	free(m.c);
	free(m.vi);
	free(m.sec);
	free(m.newa);
	free(m.gv);
	free(m.gc);
	free(m.done);
	free(gnames);
	*norders = m.norders;
	*copy_names = m.copy_names;
	return err;
}

/*
 * Groups of same-named copies that differ in size or alignment are placed
 * in the order numbered mask (guess_symmetric()); every order is tried,
 * and only one may pass the §7 check for the layout to be exact.  Where
 * several pass, the first is kept and the copies are named as guessed.
 * Each try reads the capture again: such groups are rare (about 1 seed in
 * 7 on 6.1, 2 orders).
 */
struct fgk_error *fgk_layout_from_kallsyms(struct fgk_vmlinux *vm,
					   const char *text, size_t len,
					   const char *path,
					   struct fgk_layout **ret,
					   struct fgk_kallsyms_origin *origin)
{
	struct fgk_error *first_err = NULL;
	struct fgk_layout *keep = NULL;
	struct fgk_kallsyms_origin kept = { 0 };
	char *kept_copies = NULL;
	unsigned passed = 0, tries = 1;

	*ret = NULL;
	for (unsigned mask = 0; mask < tries; mask++) {
		struct fgk_kallsyms_origin o;
		struct fgk_layout *l = NULL;
		struct fgk_error *err;
		unsigned norders = 0;
		char *pairs = NULL;

		err = from_kallsyms_once(vm, text, len, path, &l, &o, mask,
					 &norders, &pairs);
		if (mask == 0 && norders)
			tries = norders;
		if (err) {
			free(pairs);
			if (!first_err && err->code != FGK_ERR_KALLSYMS) {
				fgk_layout_free(keep);
				fgk_kallsyms_origin_clear(&kept);
				free(kept_copies);
				return err;	/* memory, not the capture */
			}
			if (!first_err)
				first_err = err;
			else
				fgk_error_free(err);
			continue;
		}
		if (passed++ == 0) {
			keep = l;
			kept = o;
			kept_copies = pairs;
		} else {
			fgk_layout_free(l);
			fgk_kallsyms_origin_clear(&o);
			free(pairs);
		}
	}
	if (!passed) {
		free(kept_copies);
		return first_err;
	}
	fgk_error_free(first_err);
	if (passed > 1 && kept_copies) {
		size_t count = 1;

		for (const char *c = kept_copies; *c; c++)
			count += *c == ',';
		if (prepend_guessed(&kept, kept_copies, count)) {
			fgk_layout_free(keep);
			fgk_kallsyms_origin_clear(&kept);
			free(kept_copies);
			return &fgk_enomem;
		}
	}
	free(kept_copies);
	*origin = kept;
	*ret = keep;
	return NULL;
}

/* ---- from the kallsyms tables in a dump --------------------------------- */

#define START_KERNEL_MAP 0xffffffff80000000ull

static uint64_t le(const uint8_t *p, int size)
{
	uint64_t v = 0;

	for (int i = size - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

struct fgk_error *fgk_layout_from_vmcore(struct fgk_vmlinux *vm,
					 const char *dump_path,
					 const struct fgk_vmcoreinfo *info,
					 struct fgk_layout **ret,
					 struct fgk_kallsyms_origin *origin)
{
	const struct fgk__symbol *offs, *base, *num;
	struct fgk_kallsyms *ks = NULL;
	struct fgk_layout *l = NULL;
	struct fgk_error *err;
	uint64_t phys_base, *newa = NULL, rb_mem, offset;
	uint8_t nbuf[4], bbuf[8], *obuf = NULL;
	size_t n;

	*ret = NULL;
	memset(origin, 0, sizeof(*origin));
	if (!info->raw || !info->has_offset ||
	    !fgk__vmcoreinfo_number(info->raw, "NUMBER(phys_base)", 10, &phys_base))
		return fgk__error_new(FGK_ERR_VMCORE, dump_path,
				      "its VMCOREINFO lacks KERNELOFFSET or NUMBER(phys_base): cannot find kallsyms in its memory");
	offset = info->offset;
	offs = fgk__find_symbol(vm, "kallsyms_offsets");
	base = fgk__find_symbol(vm, "kallsyms_relative_base");
	num = fgk__find_symbol(vm, "kallsyms_num_syms");
	if (!offs || !base || !num)
		return fgk__error_new(FGK_ERR_KALLSYMS, vm->path,
				      "no kallsyms_offsets, kallsyms_relative_base or kallsyms_num_syms (base-relative kallsyms: CONFIG_KALLSYMS_BASE_RELATIVE before Linux 6.11)");
	err = fgk__layout_new(vm, &l);
	if (err)
		return err;
	err = fgk_kallsyms_read(vm, &ks);
	if (err)
		goto out;
	n = ks->n;
	obuf = malloc(4 * (n ? n : 1));
	newa = malloc(l->n * sizeof(*newa));
	if (!obuf || !newa) {
		err = &fgk_enomem;
		goto out;
	}
	{
		struct fgk__phys_range r[3] = {
			{ num->value + offset - START_KERNEL_MAP + phys_base, 4, nbuf },
			{ base->value + offset - START_KERNEL_MAP + phys_base, 8, bbuf },
			{ offs->value + offset - START_KERNEL_MAP + phys_base, 4 * n, obuf },
		};

		err = fgk__vmcore_read_phys(dump_path, r, 3);
		if (err)
			goto out;
	}
	if (le(nbuf, 4) != n) {
		err = fgk__error_new(FGK_ERR_VMCORE, dump_path,
				     "kallsyms_num_syms in its memory is %" PRIu64 ", %zu in %s: a dump of another build, or a wrong offset",
				     le(nbuf, 4), n, vm->path);
		goto out;
	}
	rb_mem = le(bbuf, 8) - offset;
	for (size_t k = 0; k < l->n; k++)
		newa[k] = UNKNOWN;
	for (size_t i = 0; i < n; i++) {
		const struct fgk_symbol *s = &ks->syms[i];
		int32_t off = (int32_t)le(obuf + 4 * i, 4);
		uint64_t rt;
		long k;

		if (s->absolute)
			continue;	/* per-CPU: neither shuffled nor offset */
		rt = off < 0 ? rb_mem - 1 - (uint64_t)(int64_t)off :
			       rb_mem + (uint32_t)off;
		k = section_of(l, s->addr);
		if (k < 0) {
			if (rt != s->addr) {
				err = fgk__error_new(FGK_ERR_VMCORE, dump_path,
						     "kallsyms in its memory puts %s at 0x%" PRIx64 ", not at 0x%" PRIx64 " (offset 0x%" PRIx64 "): a dump of another build",
						     s->name, rt + offset, s->addr + offset,
						     offset);
				goto out;
			}
			continue;
		}
		rt -= s->addr - l->secs[k].addr;
		if (newa[k] != UNKNOWN && newa[k] != rt) {
			err = fgk__error_new(FGK_ERR_VMCORE, dump_path,
					     "kallsyms in its memory puts the symbols of %s at two places (0x%" PRIx64 ", 0x%" PRIx64 "): corrupt dump",
					     l->secs[k].name, newa[k], rt);
			goto out;
		}
		newa[k] = rt;
	}
	err = settle(l, newa, dump_path, vm->path, origin);
	if (err)
		goto out;
	origin->offset = offset;
	*ret = l;
	l = NULL;
out:
	if (err)
		fgk_kallsyms_origin_clear(origin);
	fgk_layout_free(l);
	fgk_kallsyms_free(ks);
	free(obuf);
	free(newa);
	return err;
}
