// SPDX-License-Identifier: GPL-2.0
/*
 * A module relinked in its booted order (docs/layout-spec.md §8): the core
 * text sections of the layout become one .text section, each at its layout
 * offset, so that a debugger which places a module's .text at the module's
 * base and nothing else (crash: see docs/fgk-crash.1.md) finds every
 * function, with its DWARF, where the kernel put it.
 *
 * The .ko is an ELF64 little-endian ET_REL file (fgk_module_open checked
 * the ELF; this checks the rest).  Everything outside the core text is
 * copied unchanged; symbols of the merged sections move into .text (value
 * + offset); relocations against the merged sections' section symbols are
 * rewritten against .text's (addend + offset), and the relocation sections
 * of the merged sections become one .rela.text (r_offset + offset).
 */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "module.h"
#include "vmlinux.h"

struct mrel {
	const unsigned char *img;
	size_t size, shnum;
	const Elf64_Shdr *sh;		/* the input's section headers */
	const char *path;
	int64_t *off;			/* per input section: offset in .text, or -1 */
	size_t text;			/* input index of .text */
	size_t symtab;
	uint32_t text_secsym;		/* .text's STT_SECTION symbol, 0 if none */
	uint32_t *secsym_of;		/* per input section: its section symbol */
};

static struct fgk_error *bad(const struct mrel *r, const char *what)
{
	return fgk__error_new(FGK_ERR_INVALID, r->path, "cannot relink this module: %s", what);
}

static bool in_file(const struct mrel *r, uint64_t off, uint64_t len)
{
	return off <= r->size && len <= r->size - off;
}

static struct fgk_error *check(struct mrel *r)
{
	const Elf64_Ehdr *eh = (const void *)r->img;

	if (r->size < sizeof(*eh) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_type != ET_REL ||
	    eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shnum == 0 ||
	    eh->e_shnum >= SHN_LORESERVE || eh->e_shstrndx >= eh->e_shnum ||
	    !in_file(r, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)) ||
	    eh->e_shoff % 8)
		return bad(r, "not a little-endian ELF64 relocatable file with a plain section table");
	r->shnum = eh->e_shnum;
	r->sh = (const void *)(r->img + eh->e_shoff);
	r->symtab = 0;
	for (size_t i = 1; i < r->shnum; i++) {
		const Elf64_Shdr *s = &r->sh[i];

		if (s->sh_type != SHT_NOBITS && !in_file(r, s->sh_offset, s->sh_size))
			return bad(r, "a section lies outside the file");
		if (s->sh_type == SHT_SYMTAB) {
			if (r->symtab || s->sh_entsize != sizeof(Elf64_Sym) ||
			    s->sh_offset % 8 || s->sh_link >= r->shnum)
				return bad(r, "unexpected symbol table");
			r->symtab = i;
		} else if (s->sh_type == SHT_REL || s->sh_type == SHT_SYMTAB_SHNDX) {
			return bad(r, "SHT_REL or SHT_SYMTAB_SHNDX section");
		} else if (s->sh_type == SHT_RELA &&
			   (s->sh_entsize != sizeof(Elf64_Rela) || s->sh_offset % 8 ||
			    s->sh_info >= r->shnum)) {
			return bad(r, "unexpected relocation section");
		}
	}
	if (!r->symtab)
		return bad(r, "no symbol table");
	return NULL;
}

static size_t nsyms(const struct mrel *r)
{
	return r->sh[r->symtab].sh_size / sizeof(Elf64_Sym);
}

static const Elf64_Sym *syms(const struct mrel *r)
{
	return (const void *)(r->img + r->sh[r->symtab].sh_offset);
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return a > 1 ? (v + a - 1) / a * a : v;
}

struct fgk_error *fgk_module_relink(struct fgk_module *m,
				    const struct fgk_module_layout *l,
				    const char *out_path)
{
	struct fgk_vmlinux *vm = fgk__module_elf(m);
	struct mrel r = { .img = (const unsigned char *)vm->image, .size = vm->image_size,
			  .path = vm->path };
	struct fgk_error *err = check(&r);
	size_t *map = NULL, nnew = 0, rela_slot = 0, nrela = 0;
	Elf64_Shdr *nsh = NULL;
	unsigned char *out = NULL;
	uint64_t text_align = 1, pos, textsize = l->size;
	const Elf64_Sym *sy;
	bool have_text = false;

	if (err)
		return err;
	r.off = malloc(r.shnum * sizeof(*r.off));
	r.secsym_of = calloc(r.shnum, sizeof(*r.secsym_of));
	map = calloc(r.shnum, sizeof(*map));
	nsh = calloc(r.shnum + 1, sizeof(*nsh));
	if (!r.off || !r.secsym_of || !map || !nsh) {
		err = &fgk_enomem;
		goto out;
	}
	for (size_t i = 0; i < r.shnum; i++)
		r.off[i] = -1;
	for (size_t k = 0; k < l->n; k++) {
		const struct fgk_module_section *s = &l->secs[k];

		if (s->index == 0 || s->index >= r.shnum || r.sh[s->index].sh_type != SHT_PROGBITS ||
		    s->offset + r.sh[s->index].sh_size > textsize) {
			err = bad(&r, "the layout does not match the file");
			goto out;
		}
		r.off[s->index] = (int64_t)s->offset;
		if (r.sh[s->index].sh_addralign > text_align)
			text_align = r.sh[s->index].sh_addralign;
		if (!strcmp(vm->secs[s->index].name, ".text")) {
			r.text = s->index;
			have_text = true;
		}
	}
	if (!have_text) {
		err = bad(&r, "no .text section among its core text");
		goto out;
	}
	sy = syms(&r);
	for (size_t i = 1; i < nsyms(&r); i++)
		if (ELF64_ST_TYPE(sy[i].st_info) == STT_SECTION && sy[i].st_shndx < r.shnum &&
		    !r.secsym_of[sy[i].st_shndx])
			r.secsym_of[sy[i].st_shndx] = (uint32_t)i;
	r.text_secsym = r.secsym_of[r.text];

	/* the new section table: merged sections and their relocations go */
	for (size_t i = 0; i < r.shnum; i++) {
		const Elf64_Shdr *s = &r.sh[i];

		if (r.off[i] >= 0 && i != r.text)
			continue;
		if (s->sh_type == SHT_RELA && r.off[s->sh_info] >= 0) {
			nrela += s->sh_size / sizeof(Elf64_Rela);
			if (!rela_slot)
				rela_slot = nnew + 1;	/* +1: 0 means none */
			else
				continue;
		}
		map[i] = nnew;
		nsh[nnew] = *s;
		/*
		 * A relocatable file's sections have address 0.  Linux 6.12's
		 * module linker script leaves __patchable_function_entries and
		 * .data at the location counter (0x10, 0x88), and gdb, crash's
		 * too, then relocates none of the module's DWARF to the section
		 * addresses it is given (symfile.c, default_symfile_offsets).
		 */
		nsh[nnew++].sh_addr = 0;
	}
	for (size_t i = 0; i < r.shnum; i++) {
		if (r.off[i] >= 0)
			map[i] = map[r.text];
		else if (r.sh[i].sh_type == SHT_RELA && r.off[r.sh[i].sh_info] >= 0)
			map[i] = rela_slot - 1;
	}

	/* sizes, then the file: ehdr, section contents, section table */
	{
		size_t total = sizeof(Elf64_Ehdr);
		unsigned char *p;
		const Elf64_Ehdr *eh = (const void *)r.img;
		Elf64_Ehdr *neh;
		Elf64_Sym *nsy;
		Elf64_Rela *nrel;
		size_t ri = 0;

		for (size_t j = 1; j < nnew; j++) {
			Elf64_Shdr *s = &nsh[j];
			uint64_t a;

			if (j == map[r.text]) {
				s->sh_size = textsize;
				s->sh_addralign = text_align;
			} else if (rela_slot && j == rela_slot - 1) {
				s->sh_size = nrela * sizeof(Elf64_Rela);
				s->sh_info = 0;	/* set below */
			}
			if (s->sh_type == SHT_NOBITS)
				continue;
			a = s->sh_addralign > 8 ? s->sh_addralign : 8;
			total = align_up(total, a) + s->sh_size;
		}
		total = align_up(total, 8) + nnew * sizeof(Elf64_Shdr);
		out = calloc(1, total);
		if (!out) {
			err = &fgk_enomem;
			goto out;
		}
		memcpy(out, eh, sizeof(*eh));
		neh = (Elf64_Ehdr *)out;
		pos = sizeof(Elf64_Ehdr);
		for (size_t j = 1; j < nnew; j++) {
			Elf64_Shdr *s = &nsh[j];
			uint64_t a = s->sh_addralign > 8 ? s->sh_addralign : 8;

			if (s->sh_type == SHT_NOBITS) {
				s->sh_offset = pos;
				continue;
			}
			pos = align_up(pos, a);
			s->sh_offset = pos;
			pos += s->sh_size;
		}
		/* contents */
		for (size_t i = 1; i < r.shnum; i++) {
			const Elf64_Shdr *s = &r.sh[i];

			if (s->sh_type == SHT_NOBITS)
				continue;
			if (r.off[i] >= 0) {
				memcpy(out + nsh[map[r.text]].sh_offset + r.off[i],
				       r.img + s->sh_offset, s->sh_size);
			} else if (s->sh_type == SHT_RELA && r.off[s->sh_info] >= 0) {
				const Elf64_Rela *src = (const void *)(r.img + s->sh_offset);

				nrel = (Elf64_Rela *)(out + nsh[rela_slot - 1].sh_offset);
				for (size_t e = 0; e < s->sh_size / sizeof(*src); e++, ri++) {
					nrel[ri] = src[e];
					nrel[ri].r_offset += (uint64_t)r.off[s->sh_info];
				}
			} else {
				memcpy(out + nsh[map[i]].sh_offset, r.img + s->sh_offset, s->sh_size);
			}
		}
		/* links: every section index through map */
		for (size_t j = 1; j < nnew; j++) {
			Elf64_Shdr *s = &nsh[j];

			if (s->sh_link && s->sh_link < r.shnum)
				s->sh_link = (uint32_t)map[s->sh_link];
			if ((s->sh_type == SHT_RELA || (s->sh_flags & SHF_INFO_LINK)) &&
			    s->sh_info < r.shnum)
				s->sh_info = (uint32_t)map[s->sh_info];
		}
		if (rela_slot) {
			nsh[rela_slot - 1].sh_info = (uint32_t)map[r.text];
			nsh[rela_slot - 1].sh_flags |= SHF_INFO_LINK;
		}
		/* symbols: into .text, indices through map */
		nsy = (Elf64_Sym *)(out + nsh[map[r.symtab]].sh_offset);
		for (size_t i = 1; i < nsyms(&r); i++) {
			uint16_t sx = nsy[i].st_shndx;

			if (sx == SHN_UNDEF || sx >= SHN_LORESERVE || sx >= r.shnum)
				continue;
			if (r.off[sx] >= 0)
				nsy[i].st_value += (uint64_t)r.off[sx];
			nsy[i].st_shndx = (uint16_t)map[sx];
		}
		/* relocations against a merged section's symbol: against .text's */
		if (r.text_secsym) {
			for (size_t j = 1; j < nnew; j++) {
				Elf64_Rela *e;

				if (nsh[j].sh_type != SHT_RELA)
					continue;
				e = (Elf64_Rela *)(out + nsh[j].sh_offset);
				for (size_t k = 0; k < nsh[j].sh_size / sizeof(*e); k++) {
					uint32_t si = ELF64_R_SYM(e[k].r_info);
					uint16_t sx;

					if (!si || si >= nsyms(&r) ||
					    ELF64_ST_TYPE(sy[si].st_info) != STT_SECTION)
						continue;
					sx = sy[si].st_shndx;
					if (sx >= r.shnum || r.off[sx] < 0 || sx == r.text)
						continue;
					e[k].r_addend += r.off[sx];
					e[k].r_info = ELF64_R_INFO(r.text_secsym,
								   ELF64_R_TYPE(e[k].r_info));
				}
			}
		}
		pos = align_up(pos, 8);
		neh->e_shoff = pos;
		neh->e_shnum = (uint16_t)nnew;
		neh->e_shstrndx = (uint16_t)map[eh->e_shstrndx];
		p = out + pos;
		memcpy(p, nsh, nnew * sizeof(Elf64_Shdr));
		err = fgk_write_file_atomic(out_path, out, pos + nnew * sizeof(Elf64_Shdr));
	}
out:
	free(out);
	free(nsh);
	free(map);
	free(r.secsym_of);
	free(r.off);
	return err;
}
