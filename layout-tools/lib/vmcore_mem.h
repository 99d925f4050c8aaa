/* SPDX-License-Identifier: GPL-2.0 */
/* Internal: physical memory of crash dumps (lib/vmcore_mem.c). */
#ifndef FGK_LIB_VMCORE_MEM_H
#define FGK_LIB_VMCORE_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <fgk/fgk.h>

struct fgk__phys_range {
	uint64_t addr;		/* physical address */
	size_t len;
	void *buf;		/* filled on success */
};

/* Read every range of r[0..n) from the dump at path (all or an error). */
struct fgk_error *fgk__vmcore_read_phys(const char *path,
					const struct fgk__phys_range *r,
					size_t n);

/*
 * KEY=number in VMCOREINFO text raw (base 10, or 16 for SYMBOL() values;
 * "-N" wraps, as the kernel prints a negative phys_base); false if absent.
 */
bool fgk__vmcoreinfo_number(const char *raw, const char *key, int base,
			    uint64_t *v);

#endif
