// SPDX-License-Identifier: GPL-2.0
/*
 * Questions about an opened vmlinux that the tools and the Python binding
 * ask: a section by name, bytes at a link address, what kind of image it
 * is (§3); and the base offset from kernel console text.
 */
#include <ctype.h>
#include <string.h>

#include "error.h"
#include "layout.h"
#include "vmlinux.h"

static void section_info(const struct fgk_vmlinux *vm, size_t i,
			 struct fgk_section_info *ret)
{
	const GElf_Shdr *sh = &vm->secs[i].shdr;

	ret->index = i;
	ret->name = vm->secs[i].name;
	ret->type = sh->sh_type;
	ret->flags = sh->sh_flags;
	ret->addr = sh->sh_addr;
	ret->size = sh->sh_size;
	ret->align = sh->sh_addralign ? sh->sh_addralign : 1;
	ret->entsize = sh->sh_entsize;
}

size_t fgk_vmlinux_shnum(const struct fgk_vmlinux *vm)
{
	return vm->shnum;
}

unsigned int fgk_vmlinux_machine(const struct fgk_vmlinux *vm)
{
	return vm->ehdr.e_machine;
}

struct fgk_error *fgk_vmlinux_section_at(struct fgk_vmlinux *vm, size_t index,
					 struct fgk_section_info *ret)
{
	if (index >= vm->shnum)
		return fgk__error_new(FGK_ERR_LOOKUP, vm->path, "no section %zu (%zu sections)",
				      index, vm->shnum);
	section_info(vm, index, ret);
	return NULL;
}

struct fgk_error *fgk_vmlinux_section(struct fgk_vmlinux *vm, const char *name,
				      struct fgk_section_info *ret)
{
	for (size_t i = 1; i < vm->shnum; i++) {
		if (vm->secs[i].name && !strcmp(vm->secs[i].name, name)) {
			section_info(vm, i, ret);
			return NULL;
		}
	}
	return fgk__error_new(FGK_ERR_LOOKUP, vm->path, "no section '%s'", name);
}

struct fgk_error *fgk_vmlinux_read(struct fgk_vmlinux *vm, uint64_t link_addr,
				   void *buf, size_t len)
{
	size_t best = 0;

	/* the smallest allocated section with file bytes holding the range */
	for (size_t i = 1; i < vm->shnum; i++) {
		const GElf_Shdr *sh = &vm->secs[i].shdr;

		if (!(sh->sh_flags & SHF_ALLOC) || sh->sh_type == SHT_NOBITS ||
		    link_addr < sh->sh_addr ||
		    link_addr - sh->sh_addr >= sh->sh_size ||
		    len > sh->sh_size - (link_addr - sh->sh_addr))
			continue;
		if (!best || sh->sh_size < vm->secs[best].shdr.sh_size)
			best = i;
	}
	if (best) {
		const void *p = fgk__section_bytes(vm, best, link_addr, len);

		if (p) {
			memcpy(buf, p, len);
			return NULL;
		}
	}
	return fgk__error_new(FGK_ERR_LOOKUP, vm->path,
			      "no section holds the %zu bytes at 0x%llx",
			      len, (unsigned long long)link_addr);
}

struct fgk_error *fgk_vmlinux_kind(struct fgk_vmlinux *vm,
				   enum fgk_vmlinux_kind *ret)
{
	uint64_t prev = 0;
	size_t n = 0;

	*ret = FGK_VMLINUX_PLAIN;
	for (size_t i = 1; i < vm->shnum; i++) {
		const struct fgk__section *s = &vm->secs[i];

		/* fgk relink folds the randomized sections into this one */
		if (s->name && !strcmp(s->name, FGK_FOLDED_TEXT)) {
			*ret = FGK_VMLINUX_RELINKED;
			return NULL;
		}
		if (!fgk__section_randomized(vm, s))
			continue;
		/*
		 * The linker leaves the .text.* sections in increasing
		 * address order by section index; a relink does not.
		 */
		if (n++ && s->shdr.sh_addr < prev) {
			*ret = FGK_VMLINUX_RELINKED;
			return NULL;
		}
		prev = s->shdr.sh_addr;
	}
	if (n)
		*ret = FGK_VMLINUX_FGKASLR;
	return NULL;
}

bool fgk_kernel_offset_scan(const char *text, size_t len, uint64_t *offset)
{
	static const char key[] = "Kernel Offset: ";
	const size_t klen = sizeof(key) - 1;
	bool found = false;

	for (size_t i = 0; i + klen <= len; i++) {
		const char *q;
		size_t rest, d;
		uint64_t v = 0;

		if (memcmp(text + i, key, klen))
			continue;
		q = text + i + klen;
		rest = len - i - klen;
		if (rest >= 8 && !memcmp(q, "disabled", 8)) {
			*offset = 0;
			found = true;
			continue;
		}
		if (rest < 3 || q[0] != '0' || q[1] != 'x')
			continue;
		for (d = 2; d < rest && isxdigit((unsigned char)q[d]); d++) {
			int c = tolower((unsigned char)q[d]);

			v = v << 4 | (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
		}
		if (d == 2 || d - 2 > 16)
			continue;
		*offset = v;
		found = true;
	}
	return found;
}
