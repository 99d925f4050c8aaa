// SPDX-License-Identifier: GPL-2.0
/*
 * Decode the kernel's own kallsyms tables (§9) from vmlinux, exactly as
 * kernel/kallsyms.c of Linux 6.1 and 6.12 reads them at run time:
 * kallsyms_num_syms, kallsyms_offsets + kallsyms_relative_base
 * (CONFIG_KALLSYMS_BASE_RELATIVE before 6.11, always from 6.11) or
 * kallsyms_addresses, kallsyms_names, kallsyms_token_table,
 * kallsyms_token_index.  The name order (kallsyms_seqs_of_names, 6.2+ and
 * Debian's 6.1) and the series' kallsyms_fgk_idx are not needed: both are
 * functions of what is decoded here.
 */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "symbols.h"
#include "vmlinux.h"

#define KSYM_NAME_LEN 512

struct table {
	const uint8_t *p;
	uint64_t len;
};

static struct fgk_error *get_table(struct fgk_vmlinux *vm, const char *name,
				   bool required, struct table *t)
{
	const struct fgk__symbol *s = fgk__find_symbol(vm, name);

	t->p = NULL;
	t->len = 0;
	if (!s) {
		if (!required)
			return NULL;
		return fgk__error_new(FGK_ERR_KALLSYMS, vm->path,
				      "no symbol %s: kernel built without CONFIG_KALLSYMS?",
				      name);
	}
	t->p = fgk__section_tail(vm, s->shndx, s->value, &t->len);
	if (!t->p)
		return fgk__error_new(FGK_ERR_KALLSYMS, vm->path,
				      "kallsyms table %s is not inside file data",
				      name);
	return NULL;
}

static uint64_t rd(const uint8_t *p, int size)
{
	uint64_t v = 0;

	for (int i = size - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

void fgk_kallsyms_free(struct fgk_kallsyms *ks)
{
	if (!ks)
		return;
	free(ks->syms);
	free(ks->strings);
	free(ks);
}

#define CORRUPT(what) \
	fgk__error_new(FGK_ERR_KALLSYMS, vm->path, "corrupt kallsyms tables: %s", what)

struct fgk_error *fgk_kallsyms_read(struct fgk_vmlinux *vm,
				    struct fgk_kallsyms **ret)
{
	struct table num, offs, base, addrs, names, ttab, tidx;
	struct fgk_kallsyms *ks = NULL;
	struct fgk_error *err;
	uint64_t n, relative_base = 0, pos = 0, strpos = 0, strcap;
	bool base_relative, absolute_percpu = false;
	const struct fgk__symbol *ref;

	err = fgk__require_symtab(vm, "kallsyms");
	if (err)
		return err;
	if ((err = get_table(vm, "kallsyms_num_syms", true, &num)) ||
	    (err = get_table(vm, "kallsyms_names", true, &names)) ||
	    (err = get_table(vm, "kallsyms_token_table", true, &ttab)) ||
	    (err = get_table(vm, "kallsyms_token_index", true, &tidx)) ||
	    (err = get_table(vm, "kallsyms_offsets", false, &offs)) ||
	    (err = get_table(vm, "kallsyms_addresses", false, &addrs)))
		return err;
	base_relative = offs.p != NULL;
	if (base_relative) {
		err = get_table(vm, "kallsyms_relative_base", true, &base);
		if (err)
			return err;
		if (base.len < 8)
			return CORRUPT("kallsyms_relative_base truncated");
		relative_base = rd(base.p, 8);
	} else if (!addrs.p) {
		return fgk__error_new(FGK_ERR_KALLSYMS, vm->path,
				      "neither kallsyms_offsets nor kallsyms_addresses");
	}
	if (num.len < 4)
		return CORRUPT("kallsyms_num_syms truncated");
	n = rd(num.p, 4);
	if (base_relative ? offs.len / 4 < n : addrs.len / 8 < n)
		return CORRUPT("address table shorter than kallsyms_num_syms");
	if (tidx.len < 512)
		return CORRUPT("kallsyms_token_index truncated");
	/*
	 * KALLSYMS_ABSOLUTE_PERCPU (x86_64 SMP) stores relative addresses as
	 * negative offsets (relative_base - 1 - off) and per-CPU symbols as
	 * non-negative absolute values; without it all offsets are unsigned
	 * (addr - relative_base) and, the kernel image being far smaller than
	 * 2 GiB, never have the top bit set.  So any negative offset means
	 * absolute per-CPU mode; the result is cross-checked against _text.
	 */
	if (base_relative)
		for (uint64_t i = 0; i < n; i++)
			if ((int32_t)rd(offs.p + 4 * i, 4) < 0) {
				absolute_percpu = true;
				break;
			}

	ks = calloc(1, sizeof(*ks));
	if (!ks)
		return &fgk_enomem;
	ks->syms = calloc(n ? n : 1, sizeof(*ks->syms));
	strcap = names.len + n + 1;	/* expansion can exceed: grown below */
	ks->strings = malloc(strcap);
	if (!ks->syms || !ks->strings) {
		err = &fgk_enomem;
		goto fail;
	}
	for (uint64_t i = 0; i < n; i++) {
		struct fgk_symbol *s = &ks->syms[i];
		uint64_t len, start;
		bool skipped_first = false;
		size_t outlen = 0;

		if (pos >= names.len) {
			err = CORRUPT("kallsyms_names truncated");
			goto fail;
		}
		start = pos;
		len = names.p[pos++];
		if (len & 0x80) {
			if (pos >= names.len) {
				err = CORRUPT("kallsyms_names truncated");
				goto fail;
			}
			len = (len & 0x7f) | (uint64_t)names.p[pos++] << 7;
		}
		if (len > names.len - pos || len == 0) {
			err = CORRUPT("kallsyms_names entry out of bounds");
			goto fail;
		}
		/* kallsyms_get_symbol_type(): first char of the first token */
		{
			uint64_t off = start;
			uint16_t ti;

			if (names.p[off] & 0x80)
				off++;
			ti = (uint16_t)rd(tidx.p + 2 * names.p[off + 1], 2);
			if (ti >= ttab.len) {
				err = CORRUPT("token index out of bounds");
				goto fail;
			}
			s->type = (char)ttab.p[ti];
		}
		if (strcap - strpos < KSYM_NAME_LEN) {
			char *ns = realloc(ks->strings, strcap * 2 + KSYM_NAME_LEN);

			if (!ns) {
				err = &fgk_enomem;
				goto fail;
			}
			ks->strings = ns;
			strcap = strcap * 2 + KSYM_NAME_LEN;
		}
		for (uint64_t k = 0; k < len; k++) {
			uint16_t ti = (uint16_t)rd(tidx.p + 2 * names.p[pos + k], 2);

			for (; ti < ttab.len && ttab.p[ti]; ti++) {
				if (!skipped_first) {
					skipped_first = true;
					continue;
				}
				if (outlen < KSYM_NAME_LEN - 1)
					ks->strings[strpos + outlen++] = (char)ttab.p[ti];
			}
			if (ti >= ttab.len) {
				err = CORRUPT("unterminated token");
				goto fail;
			}
		}
		ks->strings[strpos + outlen] = '\0';
		/* store the offset for now; turned into pointers at the end */
		s->name = (const char *)(uintptr_t)strpos;
		strpos += outlen + 1;
		pos += len;

		if (!base_relative) {
			s->addr = rd(addrs.p + 8 * i, 8);
		} else {
			int32_t off = (int32_t)rd(offs.p + 4 * i, 4);

			if (!absolute_percpu) {
				s->addr = relative_base + (uint32_t)off;
			} else if (off >= 0) {
				s->addr = (uint64_t)(int64_t)off;
				s->absolute = true;
			} else {
				s->addr = relative_base - 1 - (uint64_t)(int64_t)off;
			}
		}
	}
	for (uint64_t i = 0; i < n; i++)
		ks->syms[i].name = ks->strings + (uintptr_t)ks->syms[i].name;
	ks->n = n;

	/* Cross-check the decoding against the ELF symbol table. */
	ref = fgk__find_symbol(vm, "_text");
	if (ref) {
		for (uint64_t i = 0; i < n; i++) {
			if (strcmp(ks->syms[i].name, "_text"))
				continue;
			if (ks->syms[i].addr != ref->value) {
				err = fgk__error_new(FGK_ERR_KALLSYMS, vm->path,
						     "kallsyms decoding disagrees with the symbol table (_text 0x%llx vs 0x%llx)",
						     (unsigned long long)ks->syms[i].addr,
						     (unsigned long long)ref->value);
				goto fail;
			}
			break;
		}
	}
	*ret = ks;
	return NULL;
fail:
	fgk_kallsyms_free(ks);
	return err;
}
