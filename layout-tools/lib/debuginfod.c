// SPDX-License-Identifier: GPL-2.0
/*
 * Files by build-id from debuginfod servers (Debian's libdebuginfod): the
 * servers of $DEBUGINFOD_URLS, the cache of $DEBUGINFOD_CACHE_PATH (else
 * libdebuginfod's default), its timeouts ($DEBUGINFOD_TIMEOUT, ...).
 *
 * A fetched file is checked before it is returned: it must be an ELF file
 * with the build-id asked for.  One that is not (a server answering
 * garbage) is removed from the cache so that the next run asks again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/debuginfod.h>

#include "error.h"

bool fgk_debuginfod_enabled(void)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	return urls && urls[strspn(urls, " \t\n")];
}

void fgk_fetch_clear(struct fgk_fetch *f)
{
	free(f->path);
	free(f->url);
	f->path = NULL;
	f->url = NULL;
}

static bool valid_build_id(const char *id)
{
	size_t n = strlen(id);

	if (n < 2 || n > 128 || n % 2)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789abcdef", id[i]))
			return false;
	return true;
}

/* The URL list for messages: the variable as it is, white space folded. */
static const char *urls_text(void)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	return urls ? urls : "";
}

static struct fgk_error *fetch_error(int rc, const char *what,
				     const char *build_id)
{
	int e = -rc;

	switch (e) {
	case ENOENT:
		return fgk__error_new(FGK_ERR_LOOKUP, NULL,
				      "debuginfod: no %s with build-id %s on %s (not found)",
				      what, build_id, urls_text());
	case ECONNREFUSED:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case ETIMEDOUT:
	case ETIME:
	case ECONNRESET:
	case EAGAIN:
		return fgk__error_new(FGK_ERR_LOOKUP, NULL,
				      "debuginfod: cannot fetch %s with build-id %s: %s unreachable (%s)",
				      what, build_id, urls_text(), strerror(e));
	default:
		return fgk__error_new(FGK_ERR_LOOKUP, NULL,
				      "debuginfod: cannot fetch %s with build-id %s from %s: %s",
				      what, build_id, urls_text(),
				      e > 0 ? strerror(e) : "unknown error");
	}
}

struct fgk_error *fgk_debuginfod_fetch(const char *build_id, const char *what,
				       struct fgk_fetch *ret)
{
	debuginfod_client *c;
	char *path = NULL;
	const char *url;
	int fd;

	memset(ret, 0, sizeof(*ret));
	if (!what)
		what = "file";
	if (!build_id || !valid_build_id(build_id))
		return fgk__error_new(FGK_ERR_INVALID, NULL,
				      "debuginfod: '%s' is not a build-id (lowercase hex bytes)",
				      build_id ? build_id : "(none)");
	if (!fgk_debuginfod_enabled())
		return fgk__error_new(FGK_ERR_LOOKUP, NULL,
				      "no %s with build-id %s here, and DEBUGINFOD_URLS is not set to fetch it",
				      what, build_id);
	c = debuginfod_begin();
	if (!c)
		return fgk__error_new(FGK_ERR_LOOKUP, NULL,
				      "debuginfod: cannot start a client session for build-id %s",
				      build_id);
	/* vmlinux and .ko carry their DWARF: the debuginfo is the file itself */
	fd = debuginfod_find_debuginfo(c, (const unsigned char *)build_id, 0,
				       &path);
	if (fd < 0) {
		debuginfod_end(c);
		return fetch_error(fd, what, build_id);
	}
	close(fd);
	url = debuginfod_get_url(c);
	ret->path = path;
	if (url) {
		ret->url = strdup(url);
		if (!ret->url) {
			debuginfod_end(c);
			fgk_fetch_clear(ret);
			return &fgk_enomem;
		}
	}
	debuginfod_end(c);
	return NULL;
}

struct fgk_error *fgk_debuginfod_reject(struct fgk_fetch *f, const char *what,
					const char *build_id,
					const char *problem)
{
	struct fgk_error *err;

	err = fgk__error_new(FGK_ERR_LOOKUP, f->path,
			     "debuginfod %s answered garbage for %s build-id %s: %s (removed from the cache)",
			     f->url ? f->url : urls_text(), what, build_id,
			     problem);
	if (f->path)
		unlink(f->path);
	fgk_fetch_clear(f);
	return err;
}

struct fgk_error *fgk_vmlinux_fetch(const char *build_id, struct fgk_fetch *f,
				    struct fgk_vmlinux **ret)
{
	struct fgk_error *err;
	const char *id;
	char problem[256];

	*ret = NULL;
	err = fgk_debuginfod_fetch(build_id, "vmlinux", f);
	if (err)
		return err;
	err = fgk_vmlinux_open(f->path, ret);
	if (err) {
		snprintf(problem, sizeof(problem), "%s", err->message);
		fgk_error_free(err);
		return fgk_debuginfod_reject(f, "vmlinux", build_id, problem);
	}
	id = fgk_vmlinux_build_id(*ret);
	if (!id || strcmp(id, build_id)) {
		snprintf(problem, sizeof(problem), "the file has build-id %s",
			 id ? id : "(none)");
		fgk_vmlinux_close(*ret);
		*ret = NULL;
		return fgk_debuginfod_reject(f, "vmlinux", build_id, problem);
	}
	return NULL;
}

struct fgk_error *fgk_module_fetch(const char *build_id, const char *name,
				   struct fgk_fetch *f, struct fgk_module **ret)
{
	struct fgk_error *err;
	const char *id;
	char what[128], problem[256];

	*ret = NULL;
	snprintf(what, sizeof(what), "module %s", name ? name : "?");
	err = fgk_debuginfod_fetch(build_id, what, f);
	if (err)
		return err;
	err = fgk_module_open(f->path, ret);
	if (err) {
		snprintf(problem, sizeof(problem), "%s", err->message);
		fgk_error_free(err);
		return fgk_debuginfod_reject(f, what, build_id, problem);
	}
	id = fgk_module_build_id(*ret);
	if (!id || strcmp(id, build_id)) {
		snprintf(problem, sizeof(problem), "the file has build-id %s",
			 id ? id : "(none)");
		fgk_module_close(*ret);
		*ret = NULL;
		return fgk_debuginfod_reject(f, what, build_id, problem);
	}
	return NULL;
}
