// SPDX-License-Identifier: GPL-2.0
/*
 * Address translation of `fgk addr` and fgk-gdb's `fgk addr`: one item (a
 * runtime address, or SYMBOL[+OFF[/SIZE]]) to its runtime address, link
 * address, symbol and randomized section.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "vmlinux.h"

/* Hex with an optional 0x, at most 16 significant digits. */
static bool hex_value(const char *s, uint64_t *v)
{
	size_t digits = 0;
	uint64_t x = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; *s; s++, digits++) {
		if (!isxdigit((unsigned char)*s) || x >> 60)
			return false;
		x = x << 4 | (uint64_t)(isdigit((unsigned char)*s) ? *s - '0'
					: tolower((unsigned char)*s) - 'a' + 10);
	}
	if (!digits)
		return false;
	*v = x;
	return true;
}

/* An ADDRESS: hex with a 0x prefix, or exactly 16 hex digits. */
static bool is_address(const char *s, uint64_t *v)
{
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return hex_value(s, v);
	return strlen(s) == 16 && hex_value(s, v);
}

static struct fgk_error *fill(struct fgk_addr *a, const struct fgk_layout *l,
			      const char *shown, uint64_t runtime, uint64_t link,
			      const struct fgk_symbol *sym)
{
	char symtext[64] = "-";
	int n;

	a->runtime = runtime;
	a->link = link;
	a->has_symbol = sym != NULL;
	if (sym)
		a->sym = *sym;
	a->section = fgk_layout_section_at(l, link);
	a->item = strdup(shown);
	if (!a->item)
		return &fgk_enomem;
	if (sym)
		snprintf(symtext, sizeof(symtext), "+0x%llx/0x%llx",
			 (unsigned long long)(link - sym->addr),
			 (unsigned long long)sym->size);
	n = asprintf(&a->line, "%s\t0x%016llx\t0x%016llx\t%s%s\t%s", shown,
		     (unsigned long long)runtime, (unsigned long long)link,
		     sym ? sym->name : "", symtext,
		     a->section ? a->section->name : "-");
	if (n < 0) {
		a->line = NULL;
		return &fgk_enomem;
	}
	return NULL;
}

static struct fgk_error *translate_address(struct fgk_vmlinux *vm,
					   const struct fgk_layout *l,
					   uint64_t offset, const char *p,
					   uint64_t v, struct fgk_addr *a)
{
	struct fgk_symbol sym;
	struct fgk_error *err;
	uint64_t link;

	if (v < offset)
		return fgk__error_new(FGK_ERR_LOOKUP, NULL,
				      "%s: address outside the kernel image (below the base offset 0x%llx)",
				      p, (unsigned long long)offset);
	if (!fgk_layout_unmap(l, v - offset, &link))
		return fgk__error_new(FGK_ERR_LOOKUP, NULL,
				      "%s: address in the int3 padding between shuffled functions (no function there with this seed)",
				      p);
	if (!fgk_vmlinux_contains(vm, link))
		return fgk__error_new(FGK_ERR_LOOKUP, NULL,
				      "%s: address outside the kernel image %s (base offset 0x%llx)",
				      p, fgk_vmlinux_path(vm),
				      (unsigned long long)offset);
	err = fgk_symbol_at(vm, link, &sym);
	if (err) {	/* no symbol there (or no symbol table): shown as '-' */
		fgk_error_free(err);
		return fill(a, l, p, v, link, NULL);
	}
	return fill(a, l, p, v, link, &sym);
}

static struct fgk_error *translate_symbol(struct fgk_vmlinux *vm,
					  const struct fgk_layout *l,
					  uint64_t offset, char *p,
					  struct fgk_addr *a)
{
	struct fgk_symoff so;
	struct fgk_symbol sym;
	struct fgk_error *err;
	size_t n = strlen(p);
	char *shown = NULL;
	uint64_t link;

	if (fgk_symoff_parse(p, n, FGK_SYMOFF_LOOSE, &so) != n)
		return fgk__error_new(FGK_ERR_INVALID, NULL,
				      "%s: not an address or SYMBOL[+OFF[/SIZE]] (OFF, SIZE hex)",
				      p);
	p[so.name_len] = '\0';	/* the name; /SIZE is ignored */
	err = fgk_symbol_lookup(vm, p, &sym);
	if (err) {
		fgk_error_free(err);
		return fgk__error_new(FGK_ERR_LOOKUP, NULL, "%s: no such symbol in %s",
				      p, fgk_vmlinux_path(vm));
	}
	if (so.off && (sym.addr + so.off < sym.addr ||
		       !fgk_vmlinux_contains(vm, sym.addr + so.off)))
		return fgk__error_new(FGK_ERR_LOOKUP, NULL,
				      "%s+0x%llx: beyond the kernel image %s",
				      p, (unsigned long long)so.off, fgk_vmlinux_path(vm));
	link = sym.addr + so.off;
	if (so.has_off && asprintf(&shown, "%s+0x%llx", p,
				   (unsigned long long)so.off) < 0)
		return &fgk_enomem;
	err = fill(a, l, shown ? shown : p,
		   sym.absolute ? link : fgk_layout_map(l, link) + offset, link, &sym);
	free(shown);
	return err;
}

struct fgk_error *fgk_addr_translate(struct fgk_vmlinux *vm,
				     const struct fgk_layout *l, uint64_t offset,
				     const char *item, struct fgk_addr *ret)
{
	char buf[FGK_ADDR_ITEM_MAX + 1], *p = buf;
	struct fgk_error *err;
	size_t len;
	uint64_t v;

	memset(ret, 0, sizeof(*ret));
	while (isspace((unsigned char)*item))
		item++;
	len = strlen(item);
	while (len && isspace((unsigned char)item[len - 1]))
		len--;
	if (len > FGK_ADDR_ITEM_MAX)
		return fgk__error_new(FGK_ERR_INVALID, NULL, "%.40s...: item too long",
				      item);
	memcpy(buf, item, len);
	buf[len] = '\0';
	if (!strncmp(p, "[<", 2) && len > 4 && !strcmp(p + len - 2, ">]")) {
		p += 2;
		p[strlen(p) - 2] = '\0';
	}
	if (!*p)
		return NULL;	/* blank: nothing to translate */
	if (is_address(p, &v))
		err = translate_address(vm, l, offset, p, v, ret);
	else
		err = translate_symbol(vm, l, offset, p, ret);
	if (err)
		fgk_addr_clear(ret);
	return err;
}

void fgk_addr_clear(struct fgk_addr *a)
{
	free(a->item);
	free(a->line);
	memset(a, 0, sizeof(*a));
}
