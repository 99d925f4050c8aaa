/* SPDX-License-Identifier: GPL-2.0 */
/* Internal: building struct fgk_error values. */
#ifndef FGK_LIB_ERROR_H
#define FGK_LIB_ERROR_H

#include <fgk/fgk.h>

#define FGK_PRINTF(a, b) __attribute__((format(printf, a, b)))

struct fgk_error *fgk__error_new(enum fgk_error_code code, const char *path,
				 const char *fmt, ...) FGK_PRINTF(3, 4);
/* errno-based error: "<what>: strerror(errnum)". */
struct fgk_error *fgk__error_os(int errnum, const char *path,
				const char *fmt, ...) FGK_PRINTF(3, 4);
/*
 * The one wrapper of each library fgk calls: "<what>: <the library's own
 * message>", path the file it is about (or NULL).  Nothing else in lib/ or
 * cli/ formats these libraries' error messages.
 */
/* libelf: elf_errmsg(-1); code FGK_ERR_ELF (vmlinux) or FGK_ERR_VMCORE (dumps). */
struct fgk_error *fgk__error_libelf(enum fgk_error_code code, const char *path,
				    const char *fmt, ...) FGK_PRINTF(3, 4);
/* libdw/libdwfl: dwfl_errmsg(-1); FGK_ERR_ELF. */
struct fgk_error *fgk__error_libdwfl(const char *path, const char *fmt, ...)
	FGK_PRINTF(2, 3);
/*
 * libkdumpfile: kdump_get_err(ctx) (ctx NULL: kdump_new() failed, "out of
 * memory"); FGK_ERR_VMCORE.
 */
struct _kdump_ctx;
struct fgk_error *fgk__error_libkdumpfile(struct _kdump_ctx *ctx,
					  const char *path, const char *fmt, ...)
	FGK_PRINTF(3, 4);
/*
 * OpenSSL (libcrypto): the oldest error of the thread's queue, which is
 * then cleared; FGK_ERR_CRYPTO.
 */
struct fgk_error *fgk__error_openssl(const char *fmt, ...) FGK_PRINTF(1, 2);

#endif
