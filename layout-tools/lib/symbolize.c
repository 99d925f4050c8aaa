// SPDX-License-Identifier: GPL-2.0
/*
 * Oops symbolization: what scripts/decode_stacktrace.sh does (function +
 * offset -> file:line with the inline chain), and what it cannot do on a
 * shuffled kernel: raw runtime addresses (register values, "[<addr>]"
 * frames, %px prints, traces printed without kallsyms) mapped through the
 * seed's layout and the base offset.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "vmlinux.h"

struct fgk_symbolizer {
	struct fgk_vmlinux *vm;
	const struct fgk_layout *l;	/* NULL: no seed, randomized code unknown */
	struct fgk_dwarf *dwarf;
	bool have_offset;
	uint64_t offset;
	const char *offset_source;
	size_t decoded;			/* frames/addresses annotated so far */
};

struct fgk_error *fgk_symbolizer_new(struct fgk_vmlinux *vm,
				     const struct fgk_layout *l,
				     struct fgk_dwarf *dwarf,
				     struct fgk_symbolizer **ret)
{
	struct fgk_symbolizer *s = calloc(1, sizeof(*s));
	struct fgk_error *err;

	if (!s)
		return &fgk_enomem;
	err = vm_require_symtab(vm, "symbolization");
	if (err) {
		free(s);
		return err;
	}
	s->vm = vm;
	s->l = l;
	s->dwarf = dwarf;
	*ret = s;
	return NULL;
}

void fgk_symbolizer_free(struct fgk_symbolizer *s)
{
	free(s);
}

void fgk_symbolizer_set_offset(struct fgk_symbolizer *s, uint64_t offset,
			       const char *source)
{
	s->have_offset = true;
	s->offset = offset;
	s->offset_source = source;
}

bool fgk_symbolizer_get_offset(const struct fgk_symbolizer *s, uint64_t *offset,
			       const char **source)
{
	if (s->have_offset) {
		*offset = s->offset;
		if (source)
			*source = s->offset_source;
	}
	return s->have_offset;
}

size_t fgk_symbolizer_decoded(const struct fgk_symbolizer *s)
{
	return s->decoded;
}

/*
 * The text symbol called name whose size is size (static functions share
 * names; the /0xSIZE of a trace tells them apart), else the first one.
 */
static const struct vm_symbol *text_symbol(struct fgk_vmlinux *vm,
					   const char *name, size_t len,
					   uint64_t size)
{
	const struct vm_symbol *first = NULL;

	for (size_t i = 0; i < vm->nsyms; i++) {
		const struct vm_symbol *s = &vm->syms[i];

		if (s->nmtype != 't' && s->nmtype != 'T')
			continue;
		if (strncmp(s->name, name, len) || s->name[len])
			continue;
		if (s->size == size)
			return s;
		if (!first)
			first = s;
	}
	return first;
}

/* Index of the executable section holding link, or 0. */
static size_t text_section(struct fgk_vmlinux *vm, uint64_t link)
{
	for (size_t i = 1; i < vm->shnum; i++) {
		const GElf_Shdr *sh = &vm->secs[i].shdr;

		if ((sh->sh_flags & (SHF_ALLOC | SHF_EXECINSTR)) ==
		    (SHF_ALLOC | SHF_EXECINSTR) &&
		    link >= sh->sh_addr && link < sh->sh_addr + sh->sh_size)
			return i;
	}
	return 0;
}

/*
 * Runtime address -> link address, if it is kernel text we can place.
 * Without a layout (no seed) only code outside the randomized .text.*
 * sections can be placed: inside them, the address says nothing.
 */
static bool runtime_to_link(struct fgk_symbolizer *s, uint64_t rt, uint64_t *link)
{
	uint64_t n = rt - s->offset;
	size_t sec;

	if (!s->have_offset)
		return false;
	if (s->l && n >= s->l->start && n < s->l->limit) {
		if (!fgk_layout_unmap(s->l, n, link))
			return false;	/* int3 padding */
		return true;
	}
	*link = n;
	sec = text_section(s->vm, n);
	if (!sec)
		return false;
	return s->l || strncmp(s->vm->secs[sec].name, ".text.", 6) != 0;
}

/* Growable output string. */
struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL,
			      b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if (b->p && b->len + n < b->cap) {
			b->len += n;
			return;
		}
		{
			size_t cap = (b->cap + n + 1) * 2;
			char *p = realloc(b->p, cap);

			if (!p) {
				b->oom = true;
				return;
			}
			b->p = p;
			b->cap = cap;
		}
	}
}

/* " (file:line file:line ...)" like decode_stacktrace.sh, or nothing. */
static void append_source(struct fgk_symbolizer *s, struct sbuf *b, uint64_t link)
{
	struct fgk_srcframe *f;
	size_t n;
	struct fgk_error *err;

	if (!s->dwarf)
		return;
	err = fgk_dwarf_lookup(s->dwarf, link, &f, &n);
	if (!err && (!n || !f[0].file || !f[0].line)) {
		fgk_srcframes_free(f, n);
		err = fgk_error_new(FGK_ERR_LOOKUP, NULL, "no line");
	}
	if (err && link) {
		/*
		 * A return address right after a call that ends its function
		 * (a noreturn callee) has no line of its own: the call itself,
		 * at link - 1, is what the frame means.
		 */
		fgk_error_free(err);
		err = fgk_dwarf_lookup(s->dwarf, link - 1, &f, &n);
	}
	if (err) {
		fgk_error_free(err);
		return;
	}
	sb_printf(b, " (");
	for (size_t i = 0; i < n; i++)
		sb_printf(b, "%s%s:%d", i ? " " : "",
			  f[i].file ? f[i].file : "??", f[i].line);
	sb_printf(b, ")");
	fgk_srcframes_free(f, n);
}

static bool parse_hex(const char *p, size_t len, uint64_t *v)
{
	char buf[32];
	char *end;

	if (!len || len >= sizeof(buf))
		return false;
	memcpy(buf, p, len);
	buf[len] = '\0';
	*v = strtoull(buf, &end, 16);
	return *end == '\0';
}

/*
 * Match "NAME+0xOFF/0xSIZE" at p (NAME = non-space, non-'+' run ending at
 * p+namelen).  Returns the length of the match or 0.
 */
static size_t match_symoff(const char *p, size_t *namelen, uint64_t *off,
			   uint64_t *size)
{
	const char *q = p, *o, *z;

	while (*q && !isspace((unsigned char)*q) && *q != '+' && *q != '(' &&
	       *q != '[')
		q++;
	if (q == p || strncmp(q, "+0x", 3))
		return 0;
	o = q + 3;
	z = o;
	while (isxdigit((unsigned char)*z))
		z++;
	if (z == o || strncmp(z, "/0x", 3) || !parse_hex(o, z - o, off))
		return 0;
	o = z + 3;
	z = o;
	while (isxdigit((unsigned char)*z))
		z++;
	if (z == o || !parse_hex(o, z - o, size))
		return 0;
	*namelen = q - p;
	return z - p;
}

static bool word_start(const char *line, const char *p)
{
	return p == line || isspace((unsigned char)p[-1]) || strchr("([:<=,", p[-1]);
}

/* A 16-digit kernel address token at p (ffffffff........). */
static bool match_kaddr(const char *line, const char *p, uint64_t *v)
{
	if (!word_start(line, p) || strncasecmp(p, "ffffffff", 8))
		return false;
	for (int i = 8; i < 16; i++)
		if (!isxdigit((unsigned char)p[i]))
			return false;
	if (isxdigit((unsigned char)p[16]) || p[16] == '_' ||
	    isalpha((unsigned char)p[16]))
		return false;
	return parse_hex(p, 16, v);
}

void fgk_symbolizer_learn(struct fgk_symbolizer *s, const char *text)
{
	const char *p;

	if (s->have_offset)
		return;
	p = strstr(text, "Kernel Offset: ");
	if (p) {
		uint64_t v;
		const char *q = p + strlen("Kernel Offset: ");

		if (!strncmp(q, "disabled", 8)) {
			fgk_symbolizer_set_offset(s, 0, "\"Kernel Offset: disabled\"");
			return;
		}
		if (!strncmp(q, "0x", 2)) {
			const char *z = q + 2;

			while (isxdigit((unsigned char)*z))
				z++;
			if (parse_hex(q + 2, z - q - 2, &v)) {
				fgk_symbolizer_set_offset(s, v, "the \"Kernel Offset:\" line");
				return;
			}
		}
	}
	/* "[<ffffffff8a2b3c4d>] func+0x1c/0x40": runtime and symbolic together */
	for (p = strstr(text, "[<"); p; p = strstr(p + 2, "[<")) {
		uint64_t rt, off, size;
		size_t nl, m;
		const char *q = p + 2;
		const struct vm_symbol *sym;

		if (!match_kaddr(text, q, &rt) || strncmp(q + 16, ">]", 2))
			continue;
		q += 18;
		while (*q == ' ' || *q == '?')
			q++;
		m = match_symoff(q, &nl, &off, &size);
		if (!m)
			continue;
		sym = text_symbol(s->vm, q, nl, size);
		if (!sym)
			continue;
		{
			uint64_t link = sym->value + off;
			uint64_t nw = s->l ? fgk_layout_map(s->l, link) : link;

			fgk_symbolizer_set_offset(s, rt - nw,
						  "a frame printed with both its address and its symbol");
			return;
		}
	}
}

struct fgk_error *fgk_symbolize_line(struct fgk_symbolizer *s, const char *line,
				     char **out)
{
	struct sbuf b = { 0 };
	struct sbuf extra = { 0 };
	const char *p = line;
	size_t len = strlen(line);

	if (len && line[len - 1] == '\n')
		len--;
	while ((size_t)(p - line) < len) {
		uint64_t off, size, rt, link;
		size_t nl, m;

		if (word_start(line, p) && (m = match_symoff(p, &nl, &off, &size))) {
			const struct vm_symbol *sym = text_symbol(s->vm, p, nl, size);
			bool module = false;
			const char *after = p + m;

			/* "func+0x1/0x2 [mod]": a module symbol, not ours */
			while (*after == ' ')
				after++;
			if (*after == '[' && after[1] != '<')
				module = true;
			sb_printf(&b, "%.*s", (int)m, p);
			if (sym && !module && off <= sym->size + 1) {
				append_source(s, &b, sym->value + off);
				s->decoded++;
			}
			p += m;
			continue;
		}
		if (match_kaddr(line, p, &rt)) {
			sb_printf(&b, "%.16s", p);
			if (runtime_to_link(s, rt, &link)) {
				struct fgk_symbol sym;
				struct fgk_error *err = fgk_symbol_at(s->vm, link, &sym);

				if (!err) {
					sb_printf(&extra, "    %.16s = %s+0x%" PRIx64 "/0x%" PRIx64,
						  p, sym.name, link - sym.addr, sym.size);
					append_source(s, &extra, link);
					sb_printf(&extra, "\n");
					s->decoded++;
				} else {
					fgk_error_free(err);
				}
			}
			p += 16;
			continue;
		}
		sb_printf(&b, "%c", *p);
		p++;
	}
	sb_printf(&b, "\n");
	if (extra.len)
		sb_printf(&b, "%s", extra.p);
	free(extra.p);
	if (b.oom || extra.oom) {
		free(b.p);
		return &fgk_enomem;
	}
	*out = b.p;
	return NULL;
}
