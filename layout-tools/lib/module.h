/* SPDX-License-Identifier: GPL-2.0 */
/* Internal: kernel modules (lib/module.c). */
#ifndef FGK_LIB_MODULE_H
#define FGK_LIB_MODULE_H

#include <fgk/fgk.h>

/* The .ko's ELF, read like a vmlinux (for lib/module_relink.c). */
struct fgk_vmlinux *fgk__module_elf(struct fgk_module *m);

#endif
