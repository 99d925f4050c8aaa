// SPDX-License-Identifier: GPL-2.0
/* Opening a vmlinux: ELF validation, section headers, symbols, notes. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "error.h"
#include "file.h"
#include "symbols.h"
#include "vmlinux.h"

static struct fgk_error *load_sections(struct fgk_vmlinux *vm)
{
	size_t shstrndx;
	const char *p = vm->path;

	if (vm->ehdr.e_shoff == 0)
		return fgk__error_new(FGK_ERR_ELF, p, "ELF file has no section headers");
	if (vm->ehdr.e_shoff > vm->image_size ||
	    (uint64_t)(vm->ehdr.e_shnum ? vm->ehdr.e_shnum : 1) *
	    vm->ehdr.e_shentsize > vm->image_size - vm->ehdr.e_shoff)
		return fgk__error_new(FGK_ERR_ELF, p,
				      "truncated or corrupt ELF: section headers at offset %llu extend beyond the end of the file (%zu bytes)",
				      (unsigned long long)vm->ehdr.e_shoff,
				      vm->image_size);
	if (elf_getshdrnum(vm->elf, &vm->shnum) != 0)
		return fgk__error_libelf(FGK_ERR_ELF, p, "cannot read the section count");
	if (vm->shnum == 0)
		return fgk__error_new(FGK_ERR_ELF, p, "ELF file has no section headers");
	if (vm->ehdr.e_shoff > vm->image_size ||
	    (uint64_t)vm->shnum * vm->ehdr.e_shentsize >
	    vm->image_size - vm->ehdr.e_shoff)
		return fgk__error_new(FGK_ERR_ELF, p,
				      "truncated or corrupt ELF: section headers (%zu at offset %llu) extend beyond the end of the file (%zu bytes)",
				      vm->shnum,
				      (unsigned long long)vm->ehdr.e_shoff,
				      vm->image_size);
	if (elf_getshdrstrndx(vm->elf, &shstrndx) != 0)
		return fgk__error_libelf(FGK_ERR_ELF, p, "cannot read the section name table index");
	vm->secs = calloc(vm->shnum, sizeof(*vm->secs));
	if (!vm->secs)
		return &fgk_enomem;
	for (size_t i = 0; i < vm->shnum; i++) {
		Elf_Scn *scn = elf_getscn(vm->elf, i);
		GElf_Shdr *sh = &vm->secs[i].shdr;

		if (!scn || !gelf_getshdr(scn, sh))
			return fgk__error_libelf(FGK_ERR_ELF, p, "cannot read section header %zu", i);
		/* SHT_NULL too: its offset must not point anywhere else */
		if (sh->sh_type != SHT_NOBITS &&
		    (sh->sh_offset > vm->image_size ||
		     sh->sh_size > vm->image_size - sh->sh_offset))
			return fgk__error_new(FGK_ERR_ELF, p,
					      "truncated or corrupt ELF: section %zu extends beyond the end of the file",
					      i);
		if (i == 0)
			vm->secs[i].name = "";
		else {
			vm->secs[i].name = elf_strptr(vm->elf, shstrndx, sh->sh_name);
			if (!vm->secs[i].name)
				return fgk__error_libelf(FGK_ERR_ELF, p, "cannot read the name of section %zu", i);
		}
	}
	return NULL;
}

/*
 * nm(1) letter for a section-relative symbol, as binutils (2.40, Debian 12)
 * decides it: bfd's coff_section_type() table, then decode_section_type().
 */
static char coff_section_type(const char *s)
{
	static const struct { const char *name; char type; } stt[] = {
		{ ".drectve", 'i' }, { ".edata", 'e' }, { ".idata", 'i' },
		{ ".pdata", 'p' },
	};

	for (size_t i = 0; i < sizeof(stt) / sizeof(stt[0]); i++) {
		size_t len = strlen(stt[i].name);

		if (!strncmp(s, stt[i].name, len) &&
		    memchr(".$0123456789", s[len], 13))
			return stt[i].type;
	}
	return '?';
}

static char decode_section_type(const GElf_Shdr *sh, const char *name)
{
	bool contents = sh->sh_type != SHT_NOBITS;
	bool alloc = sh->sh_flags & SHF_ALLOC;
	bool readonly = !(sh->sh_flags & SHF_WRITE);

	if (sh->sh_flags & SHF_EXECINSTR)
		return 't';
	if (alloc && contents)
		return readonly ? 'r' : 'd';
	if (!contents)
		return 'b';
	if (!alloc && (!strncmp(name, ".debug", 6) || !strncmp(name, ".zdebug", 7) ||
		       !strncmp(name, ".gnu.linkonce.wi.", 17) ||
		       !strncmp(name, ".stab", 5) || !strncmp(name, ".line", 5)))
		return 'N';
	if (contents && readonly)
		return 'n';
	return '?';
}

static char nm_type(struct fgk_vmlinux *vm, const struct fgk__symbol *s)
{
	char c;

	if (s->shndx == VM_SHN_COMMON)
		return 'C';
	if (s->shndx == SHN_UNDEF) {
		if (s->bind == STB_WEAK)
			return s->type == STT_OBJECT ? 'v' : 'w';
		return 'U';
	}
	if (s->type == STT_GNU_IFUNC)
		return 'i';
	if (s->bind == STB_WEAK)
		return s->type == STT_OBJECT ? 'V' : 'W';
	if (s->bind == STB_GNU_UNIQUE)
		return 'u';
	if (s->bind != STB_GLOBAL && s->bind != STB_LOCAL)
		return '?';
	if (s->shndx == VM_SHN_ABS)
		c = 'a';
	else if (s->shndx < vm->shnum) {
		const struct fgk__section *sec = &vm->secs[s->shndx];

		c = coff_section_type(sec->name);
		if (c == '?')
			c = decode_section_type(&sec->shdr, sec->name);
	} else
		return '?';
	if (s->bind == STB_GLOBAL && c >= 'a' && c <= 'z')
		c = (char)(c - 'a' + 'A');
	return c;
}

static struct fgk_error *load_symbols(struct fgk_vmlinux *vm)
{
	size_t symtab = 0, xndx = 0;
	Elf_Data *data, *xdata = NULL;
	const char *p = vm->path;
	size_t n, strndx;

	for (size_t i = 1; i < vm->shnum; i++) {
		if (vm->secs[i].shdr.sh_type == SHT_SYMTAB && !symtab)
			symtab = i;
		else if (vm->secs[i].shdr.sh_type == SHT_SYMTAB_SHNDX)
			xndx = i;
	}
	if (!symtab)
		return NULL;	/* stripped: callers that need it complain */
	if (vm->secs[symtab].shdr.sh_entsize != gelf_fsize(vm->elf, ELF_T_SYM, 1, EV_CURRENT))
		return fgk__error_new(FGK_ERR_ELF, p, "corrupt ELF: bad .symtab entry size");
	strndx = vm->secs[symtab].shdr.sh_link;
	if (strndx == 0 || strndx >= vm->shnum ||
	    vm->secs[strndx].shdr.sh_type != SHT_STRTAB)
		return fgk__error_new(FGK_ERR_ELF, p, "corrupt ELF: .symtab has no string table");
	data = elf_getdata(elf_getscn(vm->elf, symtab), NULL);
	if (!data)
		return fgk__error_libelf(FGK_ERR_ELF, p, "cannot read .symtab");
	if (xndx) {
		xdata = elf_getdata(elf_getscn(vm->elf, xndx), NULL);
		if (!xdata)
			return fgk__error_libelf(FGK_ERR_ELF, p, "cannot read .symtab_shndx");
	}
	n = data->d_size / vm->secs[symtab].shdr.sh_entsize;
	vm->syms = calloc(n ? n : 1, sizeof(*vm->syms));
	if (!vm->syms)
		return &fgk_enomem;
	for (size_t i = 1; i < n; i++) {
		GElf_Sym sym;
		Elf32_Word x = 0;
		struct fgk__symbol *s = &vm->syms[vm->nsyms];

		if (!gelf_getsymshndx(data, xdata, (int)i, &sym, &x))
			return fgk__error_libelf(FGK_ERR_ELF, p, "cannot read symbol %zu", i);
		s->name = elf_strptr(vm->elf, strndx, sym.st_name);
		if (!s->name)
			return fgk__error_libelf(FGK_ERR_ELF, p, "corrupt ELF: bad name of symbol %zu", i);
		s->value = sym.st_value;
		s->size = sym.st_size;
		/*
		 * With more than 65280 sections a real index can equal a
		 * reserved value (SHN_ABS is 0xfff1): keep them apart.
		 */
		if (sym.st_shndx == SHN_XINDEX)
			s->shndx = x;
		else if (sym.st_shndx == SHN_ABS)
			s->shndx = VM_SHN_ABS;
		else if (sym.st_shndx == SHN_COMMON)
			s->shndx = VM_SHN_COMMON;
		else if (sym.st_shndx >= SHN_LORESERVE)
			s->shndx = VM_SHN_OTHER;
		else
			s->shndx = sym.st_shndx;
		s->bind = GELF_ST_BIND(sym.st_info);
		s->type = GELF_ST_TYPE(sym.st_info);
		if (s->shndx != SHN_UNDEF && s->shndx < VM_SHN_OTHER &&
		    s->shndx >= vm->shnum && sym.st_shndx != SHN_XINDEX)
			return fgk__error_new(FGK_ERR_ELF, p,
					      "corrupt ELF: symbol %zu refers to section %zu of %zu",
					      i, s->shndx, vm->shnum);
		if (sym.st_shndx == SHN_XINDEX && s->shndx >= vm->shnum)
			return fgk__error_new(FGK_ERR_ELF, p,
					      "corrupt ELF: symbol %zu refers to section %zu of %zu",
					      i, s->shndx, vm->shnum);
		s->nmtype = nm_type(vm, s);
		if (s->name && !strcmp(s->name, "__fgkaslr_layout_version")) {
			/*
			 * Spec §3: the version is an absolute symbol. Any other
			 * (section-relative, undefined, a second definition with
			 * another value) leaves the version unknown: refused by
			 * fgk__layout_new(), not read as version 1.
			 */
			if (s->shndx != VM_SHN_ABS)
				vm->layout_version_bad = "is not an absolute symbol";
			else if (vm->layout_version_seen && vm->layout_version != s->value)
				vm->layout_version_bad = "is defined twice with different values";
			vm->layout_version = s->value;
			vm->layout_version_seen = 1;
		}
		vm->nsyms++;
	}
	return NULL;
}

static struct fgk_error *load_build_id(struct fgk_vmlinux *vm)
{
	for (size_t i = 1; i < vm->shnum; i++) {
		Elf_Data *data;
		size_t off = 0, next, name_off, desc_off;
		GElf_Nhdr nh;

		if (vm->secs[i].shdr.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(elf_getscn(vm->elf, i), NULL);
		if (!data)
			return fgk__error_libelf(FGK_ERR_ELF, vm->path, "cannot read note section %s",
						 vm->secs[i].name);
		while (off < data->d_size &&
		       (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)data->d_buf + name_off, "GNU", 4) &&
			    nh.n_descsz > 0) {
				const uint8_t *d = (const uint8_t *)data->d_buf + desc_off;

				vm->build_id = malloc(2 * nh.n_descsz + 1);
				if (!vm->build_id)
					return &fgk_enomem;
				for (size_t k = 0; k < nh.n_descsz; k++)
					sprintf(vm->build_id + 2 * k, "%02x", d[k]);
				return NULL;
			}
			off = next;
		}
	}
	return NULL;
}

static void load_release(struct fgk_vmlinux *vm)
{
	static const char prefix[] = "Linux version ";
	const struct fgk__symbol *s = fgk__find_symbol(vm, "linux_banner");
	const char *str, *end;
	uint64_t avail;

	if (!s)
		return;
	str = fgk__section_tail(vm, s->shndx, s->value, &avail);
	if (!str || avail < sizeof(prefix) ||
	    memcmp(str, prefix, sizeof(prefix) - 1))
		return;
	str += sizeof(prefix) - 1;
	avail -= sizeof(prefix) - 1;
	end = str;
	while ((uint64_t)(end - str) < avail && *end && *end != ' ' && *end != '\n')
		end++;
	if (end > str)
		vm->release = strndup(str, (size_t)(end - str));
}

struct fgk_error *fgk_vmlinux_open(const char *path, struct fgk_vmlinux **ret)
{
	struct fgk_vmlinux *vm;
	struct fgk_error *err;
	struct stat st;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return fgk__error_libelf(FGK_ERR_ELF, NULL, "libelf initialization failed");
	vm = calloc(1, sizeof(*vm));
	if (!vm)
		return &fgk_enomem;
	vm->fd = -1;
	vm->layout_version = 1;	/* until load_symbols() finds the symbol */
	vm->path = strdup(path);
	if (!vm->path) {
		err = &fgk_enomem;
		goto fail;
	}
	err = fgk__open_regular(path, FGK_ERR_ELF, "vmlinux", &vm->fd, &st);
	if (err)
		goto fail;
	vm->elf = elf_begin(vm->fd, ELF_C_READ_MMAP, NULL);
	if (!vm->elf) {
		err = fgk__error_libelf(FGK_ERR_ELF, path, "cannot read ELF");
		goto fail;
	}
	if (elf_kind(vm->elf) != ELF_K_ELF) {
		err = fgk__error_new(FGK_ERR_ELF, path, "not an ELF file");
		goto fail;
	}
	vm->image = elf_rawfile(vm->elf, &vm->image_size);
	if (!vm->image || !gelf_getehdr(vm->elf, &vm->ehdr)) {
		err = fgk__error_libelf(FGK_ERR_ELF, path, "truncated or corrupt ELF header");
		goto fail;
	}
	if (vm->ehdr.e_ident[EI_CLASS] != ELFCLASS64 ||
	    vm->ehdr.e_ident[EI_DATA] != ELFDATA2LSB) {
		err = fgk__error_new(FGK_ERR_ELF, path,
				     "not a 64-bit little-endian ELF (x86_64 vmlinux expected)");
		goto fail;
	}
	err = load_sections(vm);
	if (!err)
		err = load_symbols(vm);
	if (!err)
		err = load_build_id(vm);
	if (err)
		goto fail;
	load_release(vm);
	*ret = vm;
	return NULL;
fail:
	fgk_vmlinux_close(vm);
	return err;
}

void fgk_vmlinux_close(struct fgk_vmlinux *vm)
{
	if (!vm)
		return;
	if (vm->elf)
		elf_end(vm->elf);
	if (vm->fd >= 0)
		close(vm->fd);
	free(vm->secs);
	free(vm->syms);
	free(vm->by_name);
	free(vm->by_addr);
	free(vm->build_id);
	free(vm->release);
	free(vm->path);
	free(vm);
}

const char *fgk_vmlinux_path(const struct fgk_vmlinux *vm)
{
	return vm->path;
}

const char *fgk_vmlinux_build_id(const struct fgk_vmlinux *vm)
{
	return vm->build_id;
}

const char *fgk_vmlinux_release(const struct fgk_vmlinux *vm)
{
	return vm->release;
}

const void *fgk__section_tail(struct fgk_vmlinux *vm, size_t shndx,
			      uint64_t addr, uint64_t *avail)
{
	const GElf_Shdr *sh;

	if (shndx == 0 || shndx >= vm->shnum)
		return NULL;
	sh = &vm->secs[shndx].shdr;
	if (sh->sh_type == SHT_NOBITS || sh->sh_type == SHT_NULL ||
	    addr < sh->sh_addr ||
	    addr - sh->sh_addr > sh->sh_size)
		return NULL;
	*avail = sh->sh_size - (addr - sh->sh_addr);
	return vm->image + sh->sh_offset + (addr - sh->sh_addr);
}

const void *fgk__section_bytes(struct fgk_vmlinux *vm, size_t shndx,
			       uint64_t addr, uint64_t len)
{
	uint64_t avail;
	const void *p = fgk__section_tail(vm, shndx, addr, &avail);

	return p && avail >= len ? p : NULL;
}

struct fgk_error *fgk__require_symtab(struct fgk_vmlinux *vm, const char *why)
{
	if (vm->syms && vm->nsyms)
		return NULL;
	return fgk__error_new(FGK_ERR_NO_SYMTAB, vm->path,
			      "no symbol table (stripped vmlinux?): needed for %s; use the unstripped vmlinux from the kernel build",
			      why);
}
