/* SPDX-License-Identifier: GPL-2.0 */
/* Internal: physical memory of crash dumps (lib/vmcore_mem.c). */
#ifndef FGK_LIB_VMCORE_MEM_H
#define FGK_LIB_VMCORE_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
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
 * A child process for libkdumpfile (a dump that crashes or hangs it must
 * not take fgk along): returns 0 in the child (*fd the pipe's write end;
 * stderr to /dev/null, SIGPIPE default, a 300 s alarm), the child's pid in
 * the parent (*fd the read end), -1 and *err on failure.
 */
pid_t fgk__kdump_fork(const char *path, int *fd, struct fgk_error **err);

/*
 * KEY=number in VMCOREINFO text raw (base 10, or 16 for SYMBOL() values;
 * "-N" wraps, as the kernel prints a negative phys_base); false if absent.
 */
bool fgk__vmcoreinfo_number(const char *raw, const char *key, int base,
			    uint64_t *v);

#endif
