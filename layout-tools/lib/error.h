/* SPDX-License-Identifier: GPL-2.0 */
/* Internal: building struct fgk_error values. */
#ifndef FGK_LIB_ERROR_H
#define FGK_LIB_ERROR_H

#include <fgk/fgk.h>

#define FGK_PRINTF(a, b) __attribute__((format(printf, a, b)))

struct fgk_error *fgk_error_new(enum fgk_error_code code, const char *path,
				const char *fmt, ...) FGK_PRINTF(3, 4);
/* errno-based error: "<what>: strerror(errnum)". */
struct fgk_error *fgk_error_os(int errnum, const char *path,
			       const char *fmt, ...) FGK_PRINTF(3, 4);
/* libelf error: "<what>: elf_errmsg(-1)". */
struct fgk_error *fgk_error_libelf(const char *path, const char *fmt, ...)
	FGK_PRINTF(2, 3);

#endif
