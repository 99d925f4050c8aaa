/* SPDX-License-Identifier: GPL-2.0 */
/* Internal: an opened vmlinux (libelf handle, sections, symbol table). */
#ifndef FGK_LIB_VMLINUX_H
#define FGK_LIB_VMLINUX_H

#include <gelf.h>
#include <fgk/fgk.h>

struct fgk__section {
	GElf_Shdr shdr;
	const char *name;
};

struct fgk__symbol {
	const char *name;
	uint64_t value;
	uint64_t size;
	size_t shndx;		/* resolved through SHT_SYMTAB_SHNDX, or: */
#define VM_SHN_ABS ((size_t)-1)		/* st_shndx == SHN_ABS */
#define VM_SHN_COMMON ((size_t)-2)	/* st_shndx == SHN_COMMON */
#define VM_SHN_OTHER ((size_t)-3)	/* another reserved index */
	unsigned char bind, type;
	char nmtype;		/* nm(1) letter, computed at load */
};

struct fgk_vmlinux {
	char *path;
	int fd;
	Elf *elf;
	const char *image;	/* whole file (elf_rawfile) */
	size_t image_size;
	GElf_Ehdr ehdr;
	size_t shnum;
	struct fgk__section *secs;
	/* symbol table (index 0 = null symbol skipped); NULL if stripped */
	size_t nsyms;
	struct fgk__symbol *syms;
	uint32_t *by_name;	/* sorted indices (lazy) */
	uint32_t *by_addr;	/* lookup candidates sorted by address (lazy) */
	size_t nby_addr;
	char *build_id;
	char *release;
	/*
	 * Spec §3: the absolute symbol __fgkaslr_layout_version, 1 when
	 * vmlinux does not define it (set by fgk_vmlinux_open()).
	 */
	uint64_t layout_version;
	int layout_version_seen;
	/* Why __fgkaslr_layout_version cannot be read, or NULL. */
	const char *layout_version_bad;
};

/* Pointer to len bytes of section shndx at link address addr, or NULL. */
const void *fgk__section_bytes(struct fgk_vmlinux *vm, size_t shndx,
			       uint64_t addr, uint64_t len);
/* Bytes from addr to the end of the section (for unsized symbols). */
const void *fgk__section_tail(struct fgk_vmlinux *vm, size_t shndx,
			      uint64_t addr, uint64_t *avail);
struct fgk_error *fgk__require_symtab(struct fgk_vmlinux *vm, const char *why);
/* The one section vmlinux.fgk has in place of the randomized ones. */
#define FGK_FOLDED_TEXT ".text.fgkaslr"

#endif
