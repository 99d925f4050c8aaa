/* SPDX-License-Identifier: GPL-2.0 */
/* Internal: DWARF of relocatable files (lib/dwarf.c). */
#ifndef FGK_LIB_MODULE_H
#define FGK_LIB_MODULE_H

#include <fgk/fgk.h>

/* The address libdwfl gave section shndx of a .ko (for fgk_dwarf_lookup). */
struct fgk_error *fgk__dwarf_section_address(struct fgk_dwarf *d, size_t shndx,
					     uint64_t *addr);

/* The .ko's ELF, read like a vmlinux (lib/module_relink.c). */
struct fgk_vmlinux *fgk__module_elf(struct fgk_module *m);

#endif
