// SPDX-License-Identifier: GPL-2.0
/*
 * Where the vmlinux of a build-id is looked for (fgk crash without
 * VMLINUX): the caller's directories, in its order, then where gdb and
 * crash look: the distribution's debug paths and the release's build tree
 * (/lib/modules/RELEASE/build).  The library itself looks nowhere else: not
 * at the working directory, not next to the program it runs in (that may be
 * python or gdb, or an installed /usr/bin/fgk).  The error names every
 * place looked at, in one line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"

/* Candidates besides the caller's directories. */
#define SYSTEM_CANDIDATES 4

/* <dir>/vmlinux ("." gives "vmlinux"); NULL when out of memory. */
static char *in_dir(const char *dir)
{
	char *p;

	if (!strcmp(dir, "."))
		return strdup("vmlinux");
	if (asprintf(&p, "%s%svmlinux", dir,
		     *dir && dir[strlen(dir) - 1] == '/' ? "" : "/") < 0)
		return NULL;
	return p;
}

/* Add p to c[0..*n) unless it is NULL or already there (then it is freed). */
static void add(char **c, size_t *n, char *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < *n; i++) {
		if (c[i] && !strcmp(c[i], p)) {
			free(p);
			return;
		}
	}
	c[(*n)++] = p;
}

/* The candidate paths in search order; returns how many. */
static size_t candidates(const char *const *dirs, const char *build_id,
			 const char *release, char **c)
{
	size_t n = 0;
	char *p;

	for (size_t i = 0; dirs && dirs[i]; i++)
		add(c, &n, in_dir(dirs[i]));
	if (strlen(build_id) > 2 &&
	    asprintf(&p, "/usr/lib/debug/.build-id/%.2s/%s.debug",
		     build_id, build_id + 2) >= 0)
		add(c, &n, p);
	if (release) {
		if (asprintf(&p, "/usr/lib/debug/boot/vmlinux-%s", release) >= 0)
			add(c, &n, p);
		if (asprintf(&p, "/usr/lib/debug/lib/modules/%s/vmlinux", release) >= 0)
			add(c, &n, p);
		if (asprintf(&p, "/lib/modules/%s/build/vmlinux", release) >= 0)
			add(c, &n, p);
	}
	return n;
}

struct fgk_error *fgk_vmlinux_find(const char *const *dirs,
				   const char *build_id, const char *release,
				   struct fgk_vmlinux **ret)
{
	size_t ndirs = 0, n;
	char **cands, tried[4096] = "";
	struct fgk_error *err = NULL;

	*ret = NULL;
	while (dirs && dirs[ndirs])
		ndirs++;
	cands = calloc(ndirs + SYSTEM_CANDIDATES, sizeof(*cands));
	if (!cands)
		return &fgk_enomem;
	n = candidates(dirs, build_id, release, cands);
	for (size_t i = 0; i < n && !*ret; i++) {
		struct fgk_vmlinux *vm;
		const char *id, *why = NULL;	/* absent: only named */
		size_t used = strlen(tried);
		char idbuf[300];

		if (access(cands[i], R_OK) != 0) {
			/* absent or unreadable */
		} else if ((err = fgk_vmlinux_open(cands[i], &vm))) {
			fgk_error_free(err);
			err = NULL;
			why = "not a readable ELF";
		} else {
			id = fgk_vmlinux_build_id(vm);
			if (id && !strcmp(id, build_id)) {
				*ret = vm;
				break;
			}
			snprintf(idbuf, sizeof(idbuf), "build-id %s", id ? id : "none");
			why = idbuf;
			fgk_vmlinux_close(vm);
		}
		snprintf(tried + used, sizeof(tried) - used, "%s%s%s%s%s",
			 used ? ", " : "", cands[i], why ? " (" : "",
			 why ? why : "", why ? ")" : "");
	}
	for (size_t i = 0; i < n; i++)
		free(cands[i]);
	free(cands);
	if (!*ret)
		err = fgk__error_new(FGK_ERR_LOOKUP, NULL,
				     "no vmlinux with build-id %s in %s",
				     build_id, tried);
	return err;
}
