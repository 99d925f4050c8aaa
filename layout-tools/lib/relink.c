// SPDX-License-Identifier: GPL-2.0
/*
 * Relinking: write the vmlinux a linker would have produced had it laid the
 * randomized sections out in the shuffled order (base offset 0).
 *
 * vmlinux is linked with --emit-relocs, so every reference the linker
 * resolved is still described by a relocation (.rela.text.*, .rela.data,
 * .rela.debug_info, .rela.debug_line, ...).  Moving section X by dX and
 * knowing that symbol S lives in a section moved by dS, a field changes by
 *
 *	absolute (R_X86_64_64/32/32S):		+dS
 *	PC-relative (PC32/PLT32/PC64):		+dS - dX
 *
 * which is exact: it needs neither the old value nor the addend, and it is
 * the same rule the decompressor applies to the running image.  Section
 * headers, symbol values and the r_offset of relocations against moved code
 * are updated so the output is again a consistent, relinkable ELF.
 *
 * The output is produced in memory from a copy of the input file and
 * written atomically (temp file + rename): it is never half-written.
 */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "vmlinux.h"

struct relink {
	struct fgk_vmlinux *vm;
	const struct fgk_layout *l;
	unsigned char *buf;		/* the output image */
	size_t size;
	int64_t *delta;			/* per section index */
	Elf64_Shdr *shdrs;		/* in buf */
	struct fgk_relink_stats *st;
};

static uint64_t shndx_of(const Elf64_Sym *sym, const Elf32_Word *xindex,
			 size_t i, size_t nx)
{
	if (sym->st_shndx == SHN_XINDEX)
		return xindex && i < nx ? xindex[i] : SHN_UNDEF;
	if (sym->st_shndx >= SHN_LORESERVE)
		return SHN_UNDEF;	/* SHN_ABS, SHN_COMMON: never moved */
	return sym->st_shndx;
}

/* File offset of link address addr inside the PT_LOAD segment holding it. */
static bool addr_to_offset(struct fgk_vmlinux *vm, uint64_t addr, uint64_t *off)
{
	size_t n;

	if (elf_getphdrnum(vm->elf, &n) != 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(vm->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (addr >= ph.p_vaddr && addr <= ph.p_vaddr + ph.p_filesz) {
			*off = ph.p_offset + (addr - ph.p_vaddr);
			return true;
		}
	}
	return false;
}

/* Move the code: int3 over [start, limit), then every section at its new place. */
static struct fgk_error *move_text(struct relink *r)
{
	const struct fgk_layout *l = r->l;
	uint64_t off_start, off_limit;

	if (!addr_to_offset(r->vm, l->start, &off_start) ||
	    !addr_to_offset(r->vm, l->limit, &off_limit) ||
	    off_limit < off_start || off_limit > r->size)
		return fgk_error_new(FGK_ERR_NOT_FGKASLR, r->vm->path,
				     "the randomized region 0x%llx-0x%llx is not inside one loadable segment",
				     (unsigned long long)l->start,
				     (unsigned long long)l->limit);
	memset(r->buf + off_start, 0xcc, off_limit - off_start);
	for (size_t i = 0; i < l->n; i++) {
		const struct fgk_section *s = &l->secs[i];
		const GElf_Shdr *old = &r->vm->secs[s->index].shdr;
		Elf64_Shdr *sh = &r->shdrs[s->index];
		uint64_t dst = old->sh_offset + (s->new_addr - s->addr);

		if (dst < off_start || dst + old->sh_size > off_limit)
			return fgk_error_new(FGK_ERR_NOT_FGKASLR, r->vm->path,
					     "section %s does not map into the randomized region of the file",
					     s->name);
		memcpy(r->buf + dst, r->vm->image + old->sh_offset, old->sh_size);
		sh->sh_addr = s->new_addr;
		sh->sh_offset = dst;
	}
	return NULL;
}

/* The SHT_SYMTAB_SHNDX table of symbol table symndx (in the input), if any. */
static const Elf32_Word *find_xindex(struct fgk_vmlinux *vm, size_t symndx,
				     size_t *nx)
{
	for (size_t i = 1; i < vm->shnum; i++) {
		const GElf_Shdr *sh = &vm->secs[i].shdr;

		if (sh->sh_type == SHT_SYMTAB_SHNDX && sh->sh_link == symndx) {
			*nx = sh->sh_size / sizeof(Elf32_Word);
			return (const Elf32_Word *)(vm->image + sh->sh_offset);
		}
	}
	*nx = 0;
	return NULL;
}

/*
 * Move every symbol defined in a randomized section and record, per symbol,
 * the displacement of its section (the relocation pass needs it for S).
 */
static struct fgk_error *fix_symtab(struct relink *r, size_t symndx,
				    int64_t **symdelta, size_t *nsyms)
{
	const GElf_Shdr *sh = &r->vm->secs[symndx].shdr;
	Elf64_Sym *syms = (Elf64_Sym *)(r->buf + sh->sh_offset);
	size_t n = sh->sh_size / sizeof(Elf64_Sym), nx;
	const Elf32_Word *xindex = find_xindex(r->vm, symndx, &nx);
	int64_t *d = calloc(n ? n : 1, sizeof(*d));

	if (!d)
		return &fgk_enomem;
	for (size_t i = 1; i < n; i++) {
		uint64_t shndx = shndx_of(&syms[i], xindex, i, nx);

		if (shndx < r->vm->shnum && r->delta[shndx]) {
			d[i] = r->delta[shndx];
			syms[i].st_value += d[i];
			r->st->symbols++;
		}
	}
	*symdelta = d;
	*nsyms = n;
	return NULL;
}

static struct fgk_error *patch(struct relink *r, unsigned char *field,
			       uint32_t type, int64_t change, uint64_t where,
			       const char *secname)
{
	switch (type) {
	case R_X86_64_64:
	case R_X86_64_PC64: {
		int64_t v;

		memcpy(&v, field, 8);
		v += change;
		memcpy(field, &v, 8);
		return NULL;
	}
	case R_X86_64_32: {
		uint32_t v;
		uint64_t nv;

		memcpy(&v, field, 4);
		nv = (uint64_t)v + change;
		if (nv > UINT32_MAX)
			goto overflow;
		v = (uint32_t)nv;
		memcpy(field, &v, 4);
		return NULL;
	}
	case R_X86_64_32S:
	case R_X86_64_PC32:
	case R_X86_64_PLT32: {
		int32_t v;
		int64_t nv;

		memcpy(&v, field, 4);
		nv = (int64_t)v + change;
		if (nv < INT32_MIN || nv > INT32_MAX)
			goto overflow;
		v = (int32_t)nv;
		memcpy(field, &v, 4);
		return NULL;
	}
	default:
		return fgk_error_new(FGK_ERR_ELF, r->vm->path,
				     "unsupported relocation type %u at 0x%llx in %s against moved code",
				     type, (unsigned long long)where, secname);
	}
overflow:
	return fgk_error_new(FGK_ERR_ELF, r->vm->path,
			     "relocation type %u at 0x%llx in %s overflows after relinking",
			     type, (unsigned long long)where, secname);
}

static bool is_pcrel(uint32_t type)
{
	return type == R_X86_64_PC32 || type == R_X86_64_PLT32 ||
	       type == R_X86_64_PC64;
}

static struct fgk_error *fix_relocations(struct relink *r, const int64_t *symdelta,
					 size_t nsyms, size_t symndx)
{
	struct fgk_vmlinux *vm = r->vm;

	for (size_t i = 1; i < vm->shnum; i++) {
		const GElf_Shdr *rs = &vm->secs[i].shdr;
		size_t x = rs->sh_info;
		const GElf_Shdr *xs;
		bool alloc;
		Elf64_Rela *rela;
		size_t n;
		int64_t dx;

		if (rs->sh_type == SHT_REL)
			return fgk_error_new(FGK_ERR_ELF, vm->path,
					     "section %s: SHT_REL relocations are not supported on x86_64",
					     vm->secs[i].name);
		if (rs->sh_type != SHT_RELA)
			continue;
		if (rs->sh_link != symndx || x == 0 || x >= vm->shnum)
			continue;	/* dynamic or unrelated relocations */
		xs = &vm->secs[x].shdr;
		if (xs->sh_type == SHT_NOBITS)
			continue;
		alloc = xs->sh_flags & SHF_ALLOC;
		dx = r->delta[x];
		rela = (Elf64_Rela *)(r->buf + rs->sh_offset);
		n = rs->sh_size / sizeof(Elf64_Rela);
		for (size_t k = 0; k < n; k++) {
			uint32_t type = ELF64_R_TYPE(rela[k].r_info);
			size_t sym = ELF64_R_SYM(rela[k].r_info);
			uint64_t off = alloc ? rela[k].r_offset - xs->sh_addr
					     : rela[k].r_offset;
			int64_t ds = sym < nsyms ? symdelta[sym] : 0;
			int64_t change;
			struct fgk_error *err;

			if (type == R_X86_64_NONE)
				continue;
			if (off >= xs->sh_size || xs->sh_size - off < 4)
				return fgk_error_new(FGK_ERR_ELF, vm->path,
						     "relocation %zu of %s points outside %s",
						     k, vm->secs[i].name, vm->secs[x].name);
			change = is_pcrel(type) ? ds - dx : ds;
			if (alloc)
				rela[k].r_offset += dx;
			if (!change)
				continue;
			/* r->shdrs[x].sh_offset is already the new file offset. */
			err = patch(r, r->buf + r->shdrs[x].sh_offset + off, type,
				    change, xs->sh_addr + off, vm->secs[x].name);
			if (err)
				return err;
			r->st->relocations++;
			if (!alloc)
				r->st->debug_relocations++;
		}
	}
	return NULL;
}

struct fgk_error *fgk_relink_image(struct fgk_vmlinux *vm,
				   const struct fgk_layout *l,
				   void **image, size_t *size,
				   struct fgk_relink_stats *stats)
{
	struct relink r = { .vm = vm, .l = l };
	struct fgk_relink_stats dummy = { 0 };
	struct fgk_error *err = NULL;
	size_t nsyms = 0, symndx = 0, nrela = 0;
	int64_t *symdelta = NULL;

	r.st = stats ? stats : &dummy;
	memset(r.st, 0, sizeof(*r.st));
	if (vm->ehdr.e_ident[EI_CLASS] != ELFCLASS64 ||
	    vm->ehdr.e_ident[EI_DATA] != ELFDATA2LSB ||
	    vm->ehdr.e_machine != EM_X86_64 ||
	    vm->ehdr.e_shentsize != sizeof(Elf64_Shdr))
		return fgk_error_new(FGK_ERR_ELF, vm->path,
				     "not a little-endian x86_64 ELF64 vmlinux");
	err = vm_require_symtab(vm, "relinking");
	if (err)
		return err;
	for (size_t i = 1; i < vm->shnum; i++) {
		if (vm->secs[i].shdr.sh_type == SHT_SYMTAB)
			symndx = i;
		if (vm->secs[i].shdr.sh_type == SHT_RELA &&
		    (vm->secs[vm->secs[i].shdr.sh_info].shdr.sh_flags & SHF_EXECINSTR))
			nrela++;
	}
	if (!nrela)
		return fgk_error_new(FGK_ERR_ELF, vm->path,
				     "no relocations for the code (.rela.text*): vmlinux must be linked with --emit-relocs, as x86_64 vmlinux normally is");

	r.size = vm->image_size;
	r.buf = malloc(r.size ? r.size : 1);
	r.delta = calloc(vm->shnum, sizeof(*r.delta));
	if (!r.buf || !r.delta) {
		err = &fgk_enomem;
		goto out;
	}
	memcpy(r.buf, vm->image, r.size);
	r.shdrs = (Elf64_Shdr *)(r.buf + vm->ehdr.e_shoff);
	for (size_t i = 0; i < l->n; i++) {
		r.delta[l->secs[i].index] = (int64_t)(l->secs[i].new_addr - l->secs[i].addr);
		if (r.delta[l->secs[i].index])
			r.st->sections_moved++;
	}
	err = move_text(&r);
	if (err)
		goto out;
	err = fix_symtab(&r, symndx, &symdelta, &nsyms);
	if (err)
		goto out;
	err = fix_relocations(&r, symdelta, nsyms, symndx);
	if (err)
		goto out;
	*image = r.buf;
	*size = r.size;
	r.buf = NULL;
out:
	free(symdelta);
	free(r.delta);
	free(r.buf);
	return err;
}

struct fgk_error *fgk_relink(struct fgk_vmlinux *vm, const struct fgk_layout *l,
			     const char *out_path, struct fgk_relink_stats *stats)
{
	void *image;
	size_t size;
	struct fgk_error *err;

	err = fgk_relink_image(vm, l, &image, &size, stats);
	if (err)
		return err;
	err = fgk_write_file_atomic(out_path, image, size);
	free(image);
	return err;
}
