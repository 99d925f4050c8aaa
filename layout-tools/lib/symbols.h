/* SPDX-License-Identifier: GPL-2.0 */
/* Internal: symbol lookups of lib/symbols.c over an opened vmlinux. */
#ifndef FGK_LIB_SYMBOLS_H
#define FGK_LIB_SYMBOLS_H

#include "vmlinux.h"

/* Defined symbol by exact name, preferring global; NULL if none. */
const struct fgk__symbol *fgk__find_symbol(struct fgk_vmlinux *vm,
					   const char *name);
/* kallsyms' size of s: ELF size, else up to the next symbol. */
uint64_t fgk__symbol_extent(struct fgk_vmlinux *vm, const struct fgk__symbol *s,
			    bool sized_too);

#endif
