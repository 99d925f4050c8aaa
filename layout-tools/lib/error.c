// SPDX-License-Identifier: GPL-2.0
/*
 * Error values: the one error convention of libfgk, and the one wrapper
 * of each library's error messages (libelf, libdwfl, libkdumpfile, OpenSSL).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libelf.h>
#include <elfutils/libdwfl.h>
#include <libkdumpfile/kdumpfile.h>
#include <openssl/err.h>

#include "error.h"

struct fgk_error fgk_enomem = {
	.code = FGK_ERR_NOMEM,
	.errnum = ENOMEM,
	.path = NULL,
	.message = (char *)"out of memory",
};

static struct fgk_error *error_vnew(enum fgk_error_code code, int errnum,
				    const char *path, const char *suffix,
				    const char *fmt, va_list ap)
{
	struct fgk_error *err = calloc(1, sizeof(*err));
	char *msg = NULL;

	if (!err)
		return &fgk_enomem;
	if (vasprintf(&msg, fmt, ap) < 0) {
		free(err);
		return &fgk_enomem;
	}
	if (suffix) {
		char *full;

		if (asprintf(&full, "%s: %s", msg, suffix) < 0) {
			free(msg);
			free(err);
			return &fgk_enomem;
		}
		free(msg);
		msg = full;
	}
	err->code = code;
	err->errnum = errnum;
	err->message = msg;
	if (path) {
		err->path = strdup(path);
		if (!err->path) {
			free(msg);
			free(err);
			return &fgk_enomem;
		}
	}
	return err;
}

struct fgk_error *fgk__error_new(enum fgk_error_code code, const char *path,
				 const char *fmt, ...)
{
	struct fgk_error *err;
	va_list ap;

	va_start(ap, fmt);
	err = error_vnew(code, 0, path, NULL, fmt, ap);
	va_end(ap);
	return err;
}

struct fgk_error *fgk__error_os(int errnum, const char *path, const char *fmt,
				...)
{
	struct fgk_error *err;
	va_list ap;

	if (errnum == ENOMEM)
		return &fgk_enomem;
	va_start(ap, fmt);
	err = error_vnew(FGK_ERR_OS, errnum, path, strerror(errnum), fmt, ap);
	va_end(ap);
	return err;
}

struct fgk_error *fgk__error_libelf(enum fgk_error_code code, const char *path,
				    const char *fmt, ...)
{
	struct fgk_error *err;
	const char *emsg = elf_errmsg(-1);
	va_list ap;

	va_start(ap, fmt);
	err = error_vnew(code, 0, path, emsg ? emsg : "libelf error", fmt, ap);
	va_end(ap);
	return err;
}

struct fgk_error *fgk__error_libdwfl(const char *path, const char *fmt, ...)
{
	struct fgk_error *err;
	const char *emsg = dwfl_errmsg(-1);
	va_list ap;

	va_start(ap, fmt);
	err = error_vnew(FGK_ERR_ELF, 0, path, emsg ? emsg : "libdwfl error",
			 fmt, ap);
	va_end(ap);
	return err;
}

struct fgk_error *fgk__error_libkdumpfile(kdump_ctx_t *ctx, const char *path,
					  const char *fmt, ...)
{
	struct fgk_error *err;
	const char *emsg = ctx ? kdump_get_err(ctx) : "out of memory";
	va_list ap;

	va_start(ap, fmt);
	err = error_vnew(FGK_ERR_VMCORE, 0, path,
			 emsg ? emsg : "libkdumpfile error", fmt, ap);
	va_end(ap);
	return err;
}

struct fgk_error *fgk__error_openssl(const char *fmt, ...)
{
	unsigned long code = ERR_get_error();
	char emsg[256];
	struct fgk_error *err;
	va_list ap;

	if (code)
		ERR_error_string_n(code, emsg, sizeof(emsg));
	else
		snprintf(emsg, sizeof(emsg), "no OpenSSL error reported");
	ERR_clear_error();
	va_start(ap, fmt);
	err = error_vnew(FGK_ERR_CRYPTO, 0, NULL, emsg, fmt, ap);
	va_end(ap);
	return err;
}

void fgk_error_free(struct fgk_error *err)
{
	if (!err || err == &fgk_enomem)
		return;
	free(err->path);
	free(err->message);
	free(err);
}

const char *fgk_error_string(const struct fgk_error *err, char *buf,
			     size_t len)
{
	if (!len)
		return buf;
	if (!err)
		snprintf(buf, len, "success");
	else if (err->path)
		snprintf(buf, len, "%s: %s", err->path, err->message);
	else
		snprintf(buf, len, "%s", err->message);
	return buf;
}
