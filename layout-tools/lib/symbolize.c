// SPDX-License-Identifier: GPL-2.0
/*
 * Oops symbolization: what scripts/decode_stacktrace.sh does (function +
 * offset -> file:line with the inline chain), and what it cannot do on a
 * shuffled kernel: raw runtime addresses (register values, "[<addr>]"
 * frames, %px prints, traces printed without kallsyms) mapped through the
 * seed's layout and the base offset.
 */
#include <ctype.h>
#include <errno.h>
#include <sys/stat.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "layout.h"
#include "symbols.h"
#include "vmlinux.h"

/* A module met in a frame or a sections capture. */
struct smod {
	char *name;
	struct fgk_module *m;	/* NULL: no .ko found under the directories */
};

/* A module section at a known runtime address (sections capture). */
struct msec {
	struct fgk_module *m;
	size_t shndx;
	uint64_t addr, size;
};

struct fgk_symbolizer {
	struct fgk_vmlinux *vm;
	const struct fgk_layout *l;	/* NULL: no seed, randomized code unknown */
	struct fgk_dwarf *dwarf;
	bool have_offset;
	uint64_t offset;
	const char *offset_source;
	int prio;			/* where the offset came from (PRIO_*) */
	size_t decoded;			/* frames/addresses annotated so far */
	char **mod_dirs;		/* NULL-terminated */
	size_t nmod_dirs;
	struct smod *mods;
	size_t nmods;
	struct msec *msecs;
	size_t nmsecs;
	char *last_extra;		/* the explanation lines of the last line */
	struct fgk_symframe *frames;	/* decoded on the last line */
	size_t nframes, capframes;
	bool pending;			/* "[<ADDR>] func+..": ADDR for the frame */
	uint64_t pending_addr;
	bool fetch;			/* modules by build-id via debuginfod */
};

static void frames_clear(struct fgk_symbolizer *s)
{
	for (size_t i = 0; i < s->nframes; i++) {
		struct fgk_symframe *f = &s->frames[i];

		free(f->symbol);
		free(f->module);
		free(f->section);
		free(f->build_id);
		fgk_srcframes_free(f->src, f->nsrc);
	}
	s->nframes = 0;
}

/* A new, zeroed frame of the current line (NULL: out of memory). */
static struct fgk_symframe *frame_add(struct fgk_symbolizer *s, const char *line,
				      const char *p, size_t len, int source)
{
	struct fgk_symframe *f;

	if (s->nframes == s->capframes) {
		size_t cap = s->capframes ? s->capframes * 2 : 8;

		f = realloc(s->frames, cap * sizeof(*f));
		if (!f)
			return NULL;
		s->frames = f;
		s->capframes = cap;
	}
	f = &s->frames[s->nframes++];
	memset(f, 0, sizeof(*f));
	f->column = (size_t)(p - line);
	f->length = len;
	f->source = source;
	/* " ? func+.." / "[<..>] ? func+..": a stale word of the stack */
	f->reliable = !(p - line >= 2 && p[-1] == ' ' && p[-2] == '?');
	return f;
}

size_t fgk_symbolizer_frames(const struct fgk_symbolizer *s,
			     const struct fgk_symframe **frames)
{
	*frames = s->frames;
	return s->nframes;
}

void fgk_symbolizer_fetch_modules(struct fgk_symbolizer *s, bool on)
{
	s->fetch = on;
}

struct fgk_error *fgk_symbolizer_new(struct fgk_vmlinux *vm,
				     const struct fgk_layout *l,
				     struct fgk_dwarf *dwarf,
				     struct fgk_symbolizer **ret)
{
	struct fgk_symbolizer *s = calloc(1, sizeof(*s));
	struct fgk_error *err;

	if (!s)
		return &fgk_enomem;
	err = fgk__require_symtab(vm, "symbolization");
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
	if (!s)
		return;
	for (size_t i = 0; i < s->nmod_dirs; i++)
		free(s->mod_dirs[i]);
	free(s->mod_dirs);
	for (size_t i = 0; i < s->nmods; i++) {
		free(s->mods[i].name);
		fgk_module_close(s->mods[i].m);
	}
	free(s->mods);
	free(s->msecs);
	free(s->last_extra);
	frames_clear(s);
	free(s->frames);
	free(s);
}

struct fgk_error *fgk_symbolizer_add_module_dir(struct fgk_symbolizer *s,
						const char *dir)
{
	char **v;
	struct stat st;

	if (stat(dir, &st) < 0)
		return fgk__error_os(errno, dir, "cannot use as a module directory");
	if (!S_ISDIR(st.st_mode))
		return fgk__error_new(FGK_ERR_INVALID, dir, "not a directory (--modules takes where MOD.ko files are)");
	v = realloc(s->mod_dirs, (s->nmod_dirs + 2) * sizeof(*v));
	if (!v)
		return &fgk_enomem;
	s->mod_dirs = v;
	if (!(v[s->nmod_dirs] = strdup(dir)))
		return &fgk_enomem;
	v[++s->nmod_dirs] = NULL;
	return NULL;
}

/*
 * The module called name[0..len): found under the module directories,
 * opened and checked against vmlinux once.  *ret NULL (no error) when no
 * .ko of that name is there; a .ko of another build is an error.
 */
static struct fgk_error *get_module(struct fgk_symbolizer *s, const char *name,
				    size_t len, const char *bid, size_t blen,
				    struct fgk_module **ret)
{
	struct smod *v;
	char *path = NULL;
	struct fgk_error *err = NULL;
	struct fgk_module *m = NULL;
	bool fetch = s->fetch && blen >= 2 && blen <= 128;

	*ret = NULL;
	for (size_t i = 0; i < s->nmods; i++)
		if (fgk_module_name_eq(s->mods[i].name, strlen(s->mods[i].name),
				       name, len) && (s->mods[i].m || !fetch)) {
			*ret = s->mods[i].m;
			return NULL;
		}
	if (!s->nmod_dirs && !fetch)
		return NULL;
	v = realloc(s->mods, (s->nmods + 1) * sizeof(*v));
	if (!v)
		return &fgk_enomem;
	s->mods = v;
	if (!(v[s->nmods].name = strndup(name, len)))
		return &fgk_enomem;
	v[s->nmods].m = NULL;
	if (s->nmod_dirs)
		err = fgk_module_find((const char *const *)s->mod_dirs,
				      v[s->nmods].name, &path);
	s->nmods++;
	if (err || !s->nmod_dirs) {
		bool missing = !err || err->code == FGK_ERR_LOOKUP;

		fgk_error_free(err);
		if (!missing)
			return err;
		if (!fetch)
			return NULL;
		/*
		 * "[mod BUILDID]" (CONFIG_STACKTRACE_BUILD_ID) and no mod.ko
		 * here: the build-id names the file on a debuginfod server.
		 */
		{
			char id[129];
			struct fgk_fetch f;

			for (size_t i = 0; i < blen; i++)
				id[i] = (char)tolower((unsigned char)bid[i]);
			id[blen] = '\0';
			err = fgk_module_fetch(id, v[s->nmods - 1].name, &f, &m);
			fgk_fetch_clear(&f);
		}
	} else {
		err = fgk_module_open(path, &m);
		free(path);
	}
	if (!err)
		err = fgk_module_check(m, s->vm);
	if (err) {
		fgk_module_close(m);
		return err;
	}
	v[s->nmods - 1].m = m;
	*ret = m;
	return NULL;
}

void fgk_symbolizer_set_offset(struct fgk_symbolizer *s, uint64_t offset,
			       const char *source)
{
	s->have_offset = true;
	s->offset = offset;
	s->offset_source = source;
	s->prio = 3;	/* PRIO_SET; learn() lowers it for what it finds */
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
static bool is_text_symbol(const struct fgk__symbol *s, const char *name,
			   size_t len)
{
	return (s->nmtype == 't' || s->nmtype == 'T') &&
	       !strncmp(s->name, name, len) && !s->name[len];
}

static const struct fgk__symbol *text_symbol(struct fgk_vmlinux *vm,
					     const char *name, size_t len,
					     uint64_t size)
{
	const struct fgk__symbol *first = NULL, *fits = NULL;

	for (size_t i = 0; i < vm->nsyms; i++) {
		const struct fgk__symbol *s = &vm->syms[i];

		if (!is_text_symbol(s, name, len))
			continue;
		if (fgk__symbol_extent(vm, s, false) == size)
			return s;
		if (!fits && size && fgk__symbol_extent(vm, s, true) <= size)
			fits = s;
		if (!first)
			first = s;
	}
	return fits ? fits : first;
}

/*
 * The kernel prints the distance to its next symbol: at least the
 * function's own size (up to an inner label).  A trace size below that
 * for every function of the name is a trace of another build.
 */
static struct fgk_error *check_size(struct fgk_vmlinux *vm, const char *name,
				    size_t len, uint64_t size)
{
	uint64_t least = UINT64_MAX;

	if (!size)
		return NULL;
	for (size_t i = 0; i < vm->nsyms; i++) {
		const struct fgk__symbol *s = &vm->syms[i];
		uint64_t e;

		if (!is_text_symbol(s, name, len))
			continue;
		e = fgk__symbol_extent(vm, s, true);
		if (e <= size)
			return NULL;
		if (e < least)
			least = e;
	}
	if (least == UINT64_MAX)
		return NULL;
	return fgk__error_new(FGK_ERR_BUILD_ID, vm->path,
			      "%.*s is 0x%" PRIx64 " bytes here, only 0x%" PRIx64 " in the trace: the trace is of another kernel build",
			      (int)len, name, least, size);
}

/*
 * "__pfx_func" (CONFIG_CALL_PADDING, 6.2+): the padding before func, no
 * function of its own: never a frame's function.
 */
static bool is_prefix_symbol(const char *name, size_t len)
{
	return len > 6 && !strncmp(name, "__pfx_", 6);
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
	if (s->l && fgk__layout_in_region(s->l, n)) {
		if (!fgk_layout_unmap(s->l, n, link))
			return false;	/* int3 padding */
		return true;
	}
	*link = n;
	sec = text_section(s->vm, n);
	if (!sec)
		return false;
	return s->l || !fgk__section_randomized(s->vm, &s->vm->secs[sec]);
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

static struct fgk_error *src_lookup(struct fgk_symbolizer *s,
				    struct fgk_module *m, size_t shndx,
				    uint64_t addr, struct fgk_srcframe **f,
				    size_t *n)
{
	if (m)
		return fgk_module_lookup(m, shndx, addr, f, n);
	return fgk_dwarf_lookup(s->dwarf, addr, f, n);
}

/* The lines at addr (an error where there is none). */
static struct fgk_error *src_lines(struct fgk_symbolizer *s,
				   struct fgk_module *m, size_t shndx,
				   uint64_t addr, struct fgk_srcframe **f,
				   size_t *n)
{
	struct fgk_error *err = src_lookup(s, m, shndx, addr, f, n);

	if (!err && (!*n || !(*f)[0].file || !(*f)[0].line)) {
		fgk_srcframes_free(*f, *n);
		err = fgk__error_new(FGK_ERR_LOOKUP, NULL, "no line");
	}
	return err;
}

/*
 * " (file:line file:line ...)" like decode_stacktrace.sh, or nothing.
 * m NULL: vmlinux at link address link; else offset link of section
 * shndx of module m.  link is off bytes into a function of size bytes
 * (its own: the ELF symbol's size, not the padding kallsyms counts).
 */
static void append_source_in(struct fgk_symbolizer *s, struct sbuf *b,
			     struct fgk_module *m, size_t shndx, uint64_t link,
			     uint64_t off, uint64_t size,
			     struct fgk_symframe *fr)
{
	struct fgk_srcframe *f;
	size_t n;
	struct fgk_error *err;

	if (!m && !s->dwarf)
		return;
	if (size && off >= size) {
		/*
		 * func+SIZE/..: a return address right after a call that ends
		 * its function (a noreturn callee), as %pB prints it.  The
		 * call, at link - 1, is what the frame means; link itself is
		 * whatever followed the function at link time (another
		 * function, elsewhere in a shuffled kernel), never looked up.
		 * Past the end, the address is not in the function at all.
		 */
		if (off > size || !link)
			return;
		err = src_lines(s, m, shndx, link - 1, &f, &n);
	} else {
		err = src_lines(s, m, shndx, link, &f, &n);
		if (err && link) {
			/* no line of its own: the instruction before it */
			fgk_error_free(err);
			err = src_lines(s, m, shndx, link - 1, &f, &n);
		}
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
	if (fr && !fr->src) {
		fr->src = f;
		fr->nsrc = n;
	} else {
		fgk_srcframes_free(f, n);
	}
}

static void append_source(struct fgk_symbolizer *s, struct sbuf *b, uint64_t link,
			  uint64_t off, uint64_t size, struct fgk_symframe *fr)
{
	append_source_in(s, b, NULL, 0, link, off, size, fr);
}

/* The frame's function, module and section (out of memory: b->oom). */
static void frame_names(struct sbuf *b, struct fgk_symframe *f, const char *sym,
			size_t symlen, const char *mod, const char *sec)
{
	if (!f)
		return;
	if (sym && !(f->symbol = strndup(sym, symlen)))
		b->oom = true;
	if (mod && !(f->module = strdup(mod)))
		b->oom = true;
	if (sec && !(f->section = strdup(sec)))
		b->oom = true;
}

static bool parse_hex(const char *p, size_t len, uint64_t *v)
{
	uint64_t x = 0;

	if (!len || len > 16)
		return false;
	for (size_t i = 0; i < len; i++) {
		int c = (unsigned char)p[i], d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return false;
		x = x << 4 | (uint64_t)d;
	}
	*v = x;
	return true;
}

/* Hex digits at p (at most end - p), "0x" required unless loose. */
static size_t match_hexnum(const char *p, const char *end, bool loose,
			   uint64_t *v)
{
	const char *q = p, *z;

	if (end - q >= 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
		q += 2;
	else if (!loose)
		return 0;
	z = q;
	while (z < end && isxdigit((unsigned char)*z))
		z++;
	if (!parse_hex(q, (size_t)(z - q), v))
		return 0;
	return (size_t)(z - p);
}

size_t fgk_symoff_parse(const char *text, size_t len, int flags,
			struct fgk_symoff *ret)
{
	bool loose = flags & FGK_SYMOFF_LOOSE;
	const char *p = text, *end = text + len, *q = p;
	size_t m;

	memset(ret, 0, sizeof(*ret));
	/* ':' ends a word too: "RIP: 0010:func+0x4/0x10" names func */
	while (q < end && *q && !isspace((unsigned char)*q) && *q != '+' &&
	       *q != '(' && *q != '[' && *q != ':')
		q++;
	if (q == p)
		return 0;
	ret->name = p;
	ret->name_len = (size_t)(q - p);
	if (q == end || *q != '+')
		return loose ? (size_t)(q - p) : 0;
	q++;
	m = match_hexnum(q, end, loose, &ret->off);
	if (!m)
		return 0;
	ret->has_off = true;
	q += m;
	if (q == end || *q != '/')
		return loose ? (size_t)(q - p) : 0;
	q++;
	m = match_hexnum(q, end, loose, &ret->size);
	if (!m)
		return 0;
	ret->has_size = true;
	return (size_t)(q + m - p);
}

/*
 * Match "NAME+0xOFF/0xSIZE" at p.  Returns the length of the match or 0.
 */
static size_t match_symoff(const char *p, const char *end, size_t *namelen,
			   uint64_t *off, uint64_t *size)
{
	struct fgk_symoff so;
	size_t m = fgk_symoff_parse(p, (size_t)(end - p), 0, &so);

	if (!m)
		return 0;
	*namelen = so.name_len;
	*off = so.off;
	*size = so.size;
	return m;
}

static bool word_start(const char *line, const char *p)
{
	return p == line || isspace((unsigned char)p[-1]) || strchr("([:<=,", p[-1]);
}

/*
 * A 16-digit kernel address token at p (ffffffff........), or the same
 * with "0x" (what %pS prints when kallsyms cannot name an address): its
 * length, or 0.
 */
static size_t match_kaddr(const char *line, const char *p, uint64_t *v)
{
	size_t x = 0;

	if (!word_start(line, p))
		return 0;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		x = 2;
	p += x;
	if (strncasecmp(p, "ffffffff", 8))
		return 0;
	for (int i = 8; i < 16; i++)
		if (!isxdigit((unsigned char)p[i]))
			return 0;
	if (isxdigit((unsigned char)p[16]) || p[16] == '_' ||
	    isalpha((unsigned char)p[16]))
		return 0;
	return parse_hex(p, 16, v) ? 16 + x : 0;
}

/*
 * " (file:line ...)" already after a frame (fgk's or decode_stacktrace.sh's
 * own output fed back): its length, or 0.
 */
static size_t annotation(const char *p, const char *end)
{
	const char *q = p;
	bool colon_digit = false;

	if (end - q < 4 || q[0] != ' ' || q[1] != '(')
		return 0;
	for (q += 2; q < end && *q != ')' && *q != '('; q++)
		if (*q == ':' && q + 1 < end && isdigit((unsigned char)q[1]))
			colon_digit = true;
	if (q == end || *q != ')' || !colon_digit)
		return 0;
	return (size_t)(q + 1 - p);
}

/* "    ADDR = func+0x1/0x2 ..." : a line fgk symbolize wrote itself. */
static bool explained_line(const char *line, const char *end)
{
	const char *p = line;
	uint64_t v;
	size_t m;

	while (p < end && *p == ' ')
		p++;
	if (p - line < 4 || !(m = match_kaddr(line, p, &v)))
		return false;
	return end - (p + m) > 3 && !strncmp(p + m, " = ", 3);
}

/*
 * "func+0x1/0x2 [mod]" or "[mod BUILDID]" (after the match at after): a
 * module's frame; name and build-id (bid, may be empty) returned.
 */
static bool module_tag(const char *after, const char *end, const char **name,
		       size_t *nlen, const char **bid, size_t *blen)
{
	const char *q;

	while (after < end && *after == ' ')
		after++;
	if (!(after + 1 < end && after[0] == '[' && after[1] != '<'))
		return false;
	q = ++after;
	while (q < end && *q != ']' && *q != ' ')
		q++;
	*name = after;
	*nlen = (size_t)(q - after);
	*bid = q;
	*blen = 0;
	if (q < end && *q == ' ') {
		*bid = ++q;
		while (q < end && isxdigit((unsigned char)*q))
			q++;
		*blen = (size_t)(q - *bid);
	}
	return true;
}

static bool module_frame(const char *after, const char *end)
{
	const char *n, *b;
	size_t nl, bl;

	return module_tag(after, end, &n, &nl, &b, &bl);
}

/*
 * After the 16 hex digits of "[<ADDR>]" at p: the "func+0xOFF/0xSIZE" the
 * kernel printed beside ADDR ('?' marks skipped), at *q.  Its length, or 0.
 */
static size_t bracket_symoff(const char *p, const char *end, const char **q,
			     size_t *namelen, uint64_t *off, uint64_t *size)
{
	const char *r = p + 16;

	if (end - r < 2 || strncmp(r, ">]", 2))
		return 0;
	r += 2;
	while (r < end && (*r == ' ' || *r == '?'))
		r++;
	*q = r;
	return match_symoff(r, end, namelen, off, size);
}

/* The address at p is the "[<addr>] func+0x1/0x2 [mod]" of a module frame. */
static bool module_address(const char *p, const char *end)
{
	const char *q;
	uint64_t off, size;
	size_t nl, m;

	m = bracket_symoff(p, end, &q, &nl, &off, &size);
	return m && module_frame(q + m, end);
}

/*
 * Offset sources, strongest first: set_offset (--offset, a record), the
 * "Kernel Offset:" line (wherever it is), a frame with address and symbol.
 */
enum { PRIO_NONE, PRIO_FRAME, PRIO_LINE, PRIO_SET };

void fgk_symbolizer_learn(struct fgk_symbolizer *s, const char *text)
{
	const char *p, *end = text + strlen(text);
	uint64_t v;

	if (s->prio >= PRIO_LINE)
		return;
	if (fgk_kernel_offset_scan(text, (size_t)(end - text), &v)) {
		fgk_symbolizer_set_offset(s, v, strstr(text, "Kernel Offset: disabled")
					  ? "\"Kernel Offset: disabled\""
					  : "the \"Kernel Offset:\" line");
		s->prio = PRIO_LINE;
		return;
	}
	if (s->prio >= PRIO_FRAME)
		return;
	/* "[<ffffffff8a2b3c4d>] func+0x1c/0x40": runtime and symbolic together */
	for (p = strstr(text, "[<"); p; p = strstr(p + 2, "[<")) {
		uint64_t rt, off, size;
		size_t nl, m;
		const char *q = p + 2;
		const struct fgk__symbol *sym;

		if (end - q < 18 || match_kaddr(text, q, &rt) != 16 ||
		    strncmp(q + 16, ">]", 2))
			continue;
		q += 18;
		while (*q == ' ' || *q == '?')
			q++;
		m = match_symoff(q, end, &nl, &off, &size);
		if (!m || module_frame(q + m, end))
			continue;
		sym = text_symbol(s->vm, q, nl, size);
		if (!sym || off > sym->size)
			continue;
		{
			uint64_t link = sym->value + off;
			uint64_t nw = s->l ? fgk_layout_map(s->l, link) : link;

			fgk_symbolizer_set_offset(s, rt - nw,
						  "a frame printed with both its address and its symbol");
			s->prio = PRIO_FRAME;
			return;
		}
	}
}

/* "func+0xOFF/0xSIZE [mod]": decode from mod.ko, found under the dirs. */
static struct fgk_error *module_symbolic(struct fgk_symbolizer *s,
					 struct sbuf *b, const char *fn,
					 size_t fnlen, uint64_t off,
					 uint64_t size, const char *after,
					 const char *end, struct fgk_symframe *fr)
{
	const char *name, *bid;
	size_t nlen, blen;
	struct fgk_module *m;
	struct fgk_module_symbol ms;
	struct fgk_error *err;
	const char *kbid;

	if (!module_tag(after, end, &name, &nlen, &bid, &blen))
		return NULL;
	if (fr && (!(fr->module = strndup(name, nlen)) ||
		   (blen && !(fr->build_id = strndup(bid, blen)))))
		return &fgk_enomem;
	err = get_module(s, name, nlen, bid, blen, &m);
	if (err || !m)
		return err;
	kbid = fgk_module_build_id(m);
	if (fr && !fr->build_id && kbid && !(fr->build_id = strdup(kbid)))
		return &fgk_enomem;
	if (blen && kbid && (strlen(kbid) != blen || strncasecmp(kbid, bid, blen)))
		return fgk__error_new(FGK_ERR_BUILD_ID, fgk_module_path(m),
				      "build-id %s, but the trace's module %.*s has %.*s (another build of the module)",
				      kbid, (int)nlen, name, (int)blen, bid);
	err = fgk_module_symbol(m, fn, fnlen, size, &ms);
	if (err) {
		fgk_error_free(err);
		return NULL;
	}
	if (off > ms.size + 1)
		return NULL;
	/*
	 * The kernel prints the distance to the module's next symbol: the
	 * function and the padding before the next (shuffled) section, so
	 * at least the function's own size.
	 */
	if (size && ms.size > size)
		return fgk__error_new(FGK_ERR_BUILD_ID, fgk_module_path(m),
				      "%.*s is 0x%" PRIx64 " bytes in this .ko, only 0x%" PRIx64 " in the trace (another build of the module)",
				      (int)fnlen, fn, ms.size, size);
	if (fr) {
		fr->has_link = true;
		fr->link = ms.value + off;
		if (ms.section && !(fr->section = strdup(ms.section)))
			return &fgk_enomem;
	}
	append_source_in(s, b, m, ms.shndx, ms.value + off, off, ms.size, fr);
	s->decoded++;
	return NULL;
}

/* A raw address inside a captured module section: explained in extra. */
static bool module_runtime(struct fgk_symbolizer *s, struct sbuf *extra,
			   const char *line, const char *p, size_t plen,
			   uint64_t rt)
{
	for (size_t i = 0; i < s->nmsecs; i++) {
		const struct msec *e = &s->msecs[i];
		struct fgk_module_symbol ms;
		struct fgk_symframe *fr;
		struct fgk_error *err;
		uint64_t off;

		if (rt < e->addr || rt - e->addr >= e->size)
			continue;
		off = rt - e->addr;
		err = fgk_module_symbol_at(e->m, e->shndx, off, &ms);
		if (err) {
			fgk_error_free(err);
			return false;
		}
		sb_printf(extra, "    %.*s = %s+0x%" PRIx64 "/0x%" PRIx64 " [%s]",
			  (int)plen, p, ms.name, off - ms.value, ms.size,
			  fgk_module_name(e->m));
		fr = frame_add(s, line, p, plen, FGK_SYMFRAME_CAPTURE);
		if (!fr) {
			extra->oom = true;
			return true;
		}
		fr->has_address = fr->has_link = true;
		fr->address = rt;
		fr->link = off;
		fr->offset = off - ms.value;
		fr->size = ms.size;
		frame_names(extra, fr, ms.name, strlen(ms.name),
			    fgk_module_name(e->m), ms.section);
		{
			const char *kbid = fgk_module_build_id(e->m);

			if (kbid && !(fr->build_id = strdup(kbid)))
				extra->oom = true;
		}
		append_source_in(s, extra, e->m, e->shndx, off, fr->offset,
				 ms.size, fr);
		sb_printf(extra, "\n");
		return true;
	}
	return false;
}

static char *trim(char *p)
{
	char *e;

	while (isspace((unsigned char)*p))
		p++;
	e = p + strlen(p);
	while (e > p && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return p;
}

/* One capture line: module name, section name and address. */
static bool capture_line(char *line, char **mod, char **sec, uint64_t *addr)
{
	char *q = strstr(line, "/sections/"), *c, *end;
	size_t m;

	if (q) {
		c = strrchr(q, ':');
		if (!c)
			return false;
		*c = '\0';
		*sec = q + 10;
		*q = '\0';
		*mod = strrchr(line, '/') ? strrchr(line, '/') + 1 : line;
		q = trim(c + 1);
	} else {
		*mod = strtok_r(line, " \t", &end);
		*sec = strtok_r(NULL, " \t", &end);
		q = strtok_r(NULL, " \t", &end);
		if (!*mod || !*sec || !q || strtok_r(NULL, " \t", &end))
			return false;
	}
	if (!**mod || !**sec || strchr(*sec, '/'))
		return false;
	m = match_hexnum(q, q + strlen(q), false, addr);
	return m && !q[m];
}

/* With a seed: the captured core text must be where §8 puts it. */
static struct fgk_error *check_capture_layout(struct fgk_symbolizer *s,
					      struct fgk_module *m,
					      const char *path)
{
	struct fgk_module_layout *ml;
	struct fgk_error *err = fgk_module_layout_compute(m, &s->l->seed, &ml);
	bool have_base = false;
	uint64_t base = 0;

	if (err)
		return err;
	for (size_t k = 0; k < ml->n && !err; k++) {
		const struct fgk_module_section *e = &ml->secs[k];

		for (size_t i = 0; i < s->nmsecs; i++) {
			if (s->msecs[i].m != m || s->msecs[i].shndx != e->index)
				continue;
			if (!have_base) {
				base = s->msecs[i].addr - e->offset;
				have_base = true;
			} else if (s->msecs[i].addr != base + e->offset) {
				err = fgk__error_new(FGK_ERR_BUILD_ID, path,
						     "module %s: %s at 0x%" PRIx64 ", but the seed's layout (docs/layout-spec.md section 8) puts it at 0x%" PRIx64 ": the capture is of another seed or another build of %s",
						     fgk_module_name(m), e->name,
						     s->msecs[i].addr, base + e->offset,
						     fgk_module_path(m));
			}
			break;
		}
	}
	fgk_module_layout_free(ml);
	return err;
}

struct fgk_error *fgk_symbolizer_module_sections(struct fgk_symbolizer *s,
						 const char *text, size_t len,
						 const char *path)
{
	char *copy = strndup(text, len), *line, *next;
	struct fgk_error *err = NULL;
	size_t lineno = 0, first = s->nmsecs, nonzero = 0;

	if (!copy)
		return &fgk_enomem;
	if (!path)
		path = "module sections capture";
	for (line = copy; line && !err; line = next) {
		char *mod, *sec, *l;
		uint64_t addr;
		struct fgk_module *m;
		struct fgk_section_info si;
		struct msec *v;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		l = trim(line);
		if (!*l || *l == '#')
			continue;
		if (!capture_line(l, &mod, &sec, &addr)) {
			err = fgk__error_new(FGK_ERR_INVALID, path,
					     "line %zu: not \"MOD/sections/SECTION:0xADDR\" nor \"MOD SECTION 0xADDR\"",
					     lineno);
			break;
		}
		err = get_module(s, mod, strlen(mod), NULL, 0, &m);
		if (!err && !m)
			err = fgk__error_new(FGK_ERR_LOOKUP, path,
					     "line %zu: module %s: no %s.ko under the module directories (--modules)",
					     lineno, mod, mod);
		if (err)
			break;
		err = fgk_module_section(m, sec, &si);
		if (err) {
			fgk_error_free(err);
			err = fgk__error_new(FGK_ERR_BUILD_ID, path,
					     "line %zu: %s has no section %s (the capture is of another build of %s)",
					     lineno, fgk_module_path(m), sec, mod);
			break;
		}
		if (!(si.flags & SHF_ALLOC) || !si.size)
			continue;
		if (addr)
			nonzero++;
		v = realloc(s->msecs, (s->nmsecs + 1) * sizeof(*v));
		if (!v) {
			err = &fgk_enomem;
			break;
		}
		s->msecs = v;
		v[s->nmsecs++] = (struct msec){ m, si.index, addr, si.size };
	}
	free(copy);
	if (!err && s->nmsecs > first && !nonzero)
		err = fgk__error_new(FGK_ERR_INVALID, path,
				     "every address is 0: /sys/module/*/sections hides them from users other than root; capture it as root");
	/* a layout rebuilt from kallsyms has no seed to compute §8 with */
	for (size_t i = 0; !err && s->l && !s->l->seedless && i < s->nmods; i++) {
		bool captured = false;

		for (size_t k = first; k < s->nmsecs; k++)
			captured |= s->msecs[k].m == s->mods[i].m;
		if (captured)
			err = check_capture_layout(s, s->mods[i].m, path);
	}
	if (err)
		s->nmsecs = first;
	return err;
}

/*
 * "[<ADDR>] func+0xOFF/0xSIZE" (not a module's): the kernel named ADDR
 * itself.  Where this vmlinux, seed and base offset place ADDR, it must be
 * in a function of that name at that offset; else they are not the ones
 * the kernel ran with.  *checked: the frame needs no line of its own.
 */
static struct fgk_error *cross_check(struct fgk_symbolizer *s, const char *p,
				     const char *end, uint64_t rt, bool *checked)
{
	const char *q;
	uint64_t off, size, link;
	size_t nl, m;
	struct fgk_symbol at;
	struct fgk_error *err;

	*checked = false;
	m = bracket_symoff(p, end, &q, &nl, &off, &size);
	if (!m || module_frame(q + m, end))
		return NULL;
	*checked = true;
	if (!runtime_to_link(s, rt, &link)) {
		uint64_t n = rt - s->offset;

		/* in the randomized region, but between two functions */
		if (s->have_offset && s->l && fgk__layout_in_region(s->l, n))
			return fgk__error_new(FGK_ERR_BUILD_ID, fgk_vmlinux_path(s->vm),
					      "the trace names %.16s %.*s, but with this vmlinux, %s and base offset 0x%" PRIx64 " (from %s) it is in the int3 padding between two shuffled functions: they are not the ones the kernel ran with",
					      p, (int)m, q, "seed", s->offset, s->offset_source);
		return NULL;	/* the symbolic part decodes it */
	}
	for (size_t i = 0; i < s->vm->nsyms; i++) {
		const struct fgk__symbol *v = &s->vm->syms[i];

		if (is_text_symbol(v, q, nl) && v->value + off == link)
			return NULL;
	}
	err = fgk_symbol_at(s->vm, link, &at);
	if (err) {
		fgk_error_free(err);
		at.name = "no function";
		at.addr = link;
		at.size = 0;
	}
	return fgk__error_new(FGK_ERR_BUILD_ID, fgk_vmlinux_path(s->vm),
			      "the trace names %.16s %.*s, but with this vmlinux, %s and base offset 0x%" PRIx64 " (from %s) it is %s+0x%" PRIx64 "/0x%" PRIx64 ": they are not the ones the kernel ran with",
			      p, (int)m, q, s->l ? "seed" : "no seed", s->offset,
			      s->offset_source, at.name, link - at.addr, at.size);
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
	frames_clear(s);
	s->pending = false;
	if (explained_line(line, line + len)) {
		/*
		 * Already decoded: kept as it is, unless it is one of the lines
		 * just written again for the line before it.
		 */
		const char *e = s->last_extra;
		bool again = false;

		while (e && !again && (e = strstr(e, "    "))) {
			again = !strncmp(e, line, len) && e[len] == '\n';
			e = strchr(e, '\n');
		}
		if (!again)
			sb_printf(&b, "%.*s\n", (int)len, line);
		else
			sb_printf(&b, "%s", "");
		s->decoded++;
		if (b.oom) {
			free(b.p);
			return &fgk_enomem;
		}
		*out = b.p;
		return NULL;
	}
	while ((size_t)(p - line) < len) {
		uint64_t off, size, rt, link;
		size_t nl, m;

		if (word_start(line, p) &&
		    (m = match_symoff(p, line + len, &nl, &off, &size))) {
			const struct fgk__symbol *sym = text_symbol(s->vm, p, nl, size);
			/* "func+0x1/0x2 [mod]": a module symbol, not ours */
			bool module = module_frame(p + m, line + len);
			size_t a;
			struct fgk_symframe *fr = frame_add(s, line, p, m,
							    FGK_SYMFRAME_SYMBOL);

			if (!fr) {
				free(b.p);
				free(extra.p);
				return &fgk_enomem;
			}
			if (is_prefix_symbol(p, nl))
				sym = NULL;	/* padding: no function, no line */
			else
				frame_names(&b, fr, p, nl, NULL, NULL);
			fr->offset = off;
			fr->size = size;
			if (s->pending) {	/* "[<ADDR>] func+..": ADDR is it */
				fr->has_address = true;
				fr->address = s->pending_addr;
				s->pending = false;
			}
			sb_printf(&b, "%.*s", (int)m, p);
			if (!module && (a = annotation(p + m, line + len))) {
				/* already annotated: kept as it is */
				sb_printf(&b, "%.*s", (int)a, p + m);
				m += a;
				s->decoded += sym != NULL;
				if (sym && off <= fgk__symbol_extent(s->vm, sym, false) + 1) {
					struct sbuf none = { 0 };

					fr->has_link = true;
					fr->link = sym->value + off;
					append_source(s, &none, fr->link, off,
						      fgk__symbol_extent(s->vm, sym, false), fr);
					b.oom |= none.oom;
					free(none.p);
				}
			} else if (module) {
				/* the source goes after " [mod]" */
				const char *t = p + m;
				const char *z = memchr(t, ']', (size_t)(line + len - t));
				struct sbuf src = { 0 };
				struct fgk_error *err = is_prefix_symbol(p, nl) ? NULL :
					module_symbolic(s, &src, p, nl, off, size,
							t, line + len, fr);

				if (err) {
					free(src.p);
					free(b.p);
					free(extra.p);
					return err;
				}
				if (z) {
					size_t a;

					sb_printf(&b, "%.*s", (int)(z + 1 - t), t);
					m = (size_t)(z + 1 - p);
					a = annotation(z + 1, line + len);
					if (a) {	/* already annotated */
						sb_printf(&b, "%.*s", (int)a, z + 1);
						m += a;
						src.len = 0;
					}
				}
				if (src.len)
					sb_printf(&b, "%s", src.p);
				if (src.oom)
					b.oom = true;
				free(src.p);
			} else if (sym && off <= fgk__symbol_extent(s->vm, sym, false) + 1) {
				struct fgk_error *err = check_size(s->vm, p, nl, size);

				if (err) {
					free(b.p);
					free(extra.p);
					return err;
				}
				fr->has_link = true;
				fr->link = sym->value + off;
				append_source(s, &b, fr->link, off,
					      fgk__symbol_extent(s->vm, sym, false), fr);
				s->decoded++;
			}
			p += m;
			continue;
		}
		if ((m = match_kaddr(line, p, &rt))) {
			/* "[<ADDR>] func+0x1/0x2 [mod]": its symbol decodes it */
			bool checked = m == 16 && module_address(p, line + len);

			sb_printf(&b, "%.*s", (int)m, p);
			if (!checked && m == 16 && s->have_offset) {
				struct fgk_error *err =
					cross_check(s, p, line + len, rt, &checked);

				if (err) {
					free(b.p);
					free(extra.p);
					return err;
				}
			}
			if (checked) {
				/* its symbolic part decodes it */
				s->pending = true;
				s->pending_addr = rt;
			} else if (module_runtime(s, &extra, line, p, m, rt)) {
				s->decoded++;
			} else if (runtime_to_link(s, rt, &link)) {
				struct fgk_symbol sym;
				struct fgk_error *err = fgk_symbol_at(s->vm, link, &sym);

				if (!err && is_prefix_symbol(sym.name, strlen(sym.name))) {
					/* in the padding: say whose, as no frame */
					sb_printf(&extra, "    %.*s = 0x%" PRIx64 " bytes before %s (its padding)\n",
						  (int)m, p, sym.addr + sym.size - link,
						  sym.name + 6);
					s->decoded++;
				} else if (!err) {
					struct fgk_symframe *fr =
						frame_add(s, line, p, m, FGK_SYMFRAME_ADDRESS);

					if (!fr) {
						free(b.p);
						free(extra.p);
						return &fgk_enomem;
					}
					fr->has_address = fr->has_link = true;
					fr->address = rt;
					fr->link = link;
					fr->offset = link - sym.addr;
					fr->size = sym.size;
					frame_names(&extra, fr, sym.name, strlen(sym.name),
						    NULL, NULL);
					sb_printf(&extra, "    %.*s = %s+0x%" PRIx64 "/0x%" PRIx64,
						  (int)m, p, sym.name, link - sym.addr, sym.size);
					append_source(s, &extra, link, fr->offset, fr->size, fr);
					sb_printf(&extra, "\n");
					s->decoded++;
				} else {
					fgk_error_free(err);
				}
			}
			p += m;
			continue;
		}
		sb_printf(&b, "%c", *p);
		p++;
	}
	sb_printf(&b, "\n");
	if (extra.len)
		sb_printf(&b, "%s", extra.p);
	free(s->last_extra);
	s->last_extra = extra.p;	/* NULL when none */
	if (b.oom || extra.oom) {
		free(b.p);
		return &fgk_enomem;
	}
	*out = b.p;
	return NULL;
}
