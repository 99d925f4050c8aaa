/* SPDX-License-Identifier: GPL-2.0 */
/* Internal: DWARF of relocatable files (lib/dwarf.c). */
#ifndef FGK_LIB_DWARF_H
#define FGK_LIB_DWARF_H

#include <fgk/fgk.h>

/* The address libdwfl gave section shndx of a .ko (for fgk_dwarf_lookup). */
struct fgk_error *fgk__dwarf_section_address(struct fgk_dwarf *d, size_t shndx,
					     uint64_t *addr);

#endif
