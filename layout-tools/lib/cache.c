// SPDX-License-Identifier: GPL-2.0
/*
 * The relink cache: <cache>/<build-id>/<seed>.vmlinux.fgk, where <cache> is
 * $FGK_CACHE_DIR, else $XDG_CACHE_HOME/fgk, else ~/.cache/fgk.
 *
 * Private: an entry is the layout of its seed and its name is the seed, so
 * entries are 0600 and <build-id> is a 0700 directory of this user, checked
 * (and tightened, for a cache of an older fgk) on every use; the
 * directories made for it are 0700 too.  An existing <cache> itself is left
 * as it is (it may be a directory the user chose, $FGK_CACHE_DIR=/tmp).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "error.h"
#include "file.h"
#include "vmlinux.h"

/* 0 and *dir set, 0 and *dir NULL (no cache applies), or -1 (no memory). */
static int cache_dir(const char *build_id, char **dir)
{
	const char *base;

	*dir = NULL;
	if ((base = getenv("FGK_CACHE_DIR")) && *base)
		return asprintf(dir, "%s/%s", base, build_id) < 0 ? -1 : 0;
	if ((base = getenv("XDG_CACHE_HOME")) && *base)
		return asprintf(dir, "%s/fgk/%s", base, build_id) < 0 ? -1 : 0;
	if ((base = getenv("HOME")) && *base)
		return asprintf(dir, "%s/.cache/fgk/%s", base, build_id) < 0 ? -1 : 0;
	return 0;
}

struct fgk_error *fgk_relink_cache_path(struct fgk_vmlinux *vm,
					const struct fgk_seed *seed,
					char **ret)
{
	const char *build_id = fgk_vmlinux_build_id(vm);
	char hex[FGK_SEED_HEX_LEN + 1], *dir;
	int r;

	*ret = NULL;
	if (!build_id)
		return NULL;
	if (cache_dir(build_id, &dir) < 0)
		return &fgk_enomem;
	if (!dir)
		return NULL;
	fgk_seed_format(seed, hex);
	r = asprintf(ret, "%s/%s.vmlinux.fgk", dir, hex);
	free(dir);
	if (r < 0) {
		*ret = NULL;
		return &fgk_enomem;
	}
	return NULL;
}

struct fgk_error *fgk_relink_verify(struct fgk_vmlinux *vm, const char *path)
{
	struct fgk_vmlinux *c;
	struct fgk_error *err;
	const char *id = fgk_vmlinux_build_id(vm), *cid;
	struct stat st;

	if (lstat(path, &st) < 0)
		return fgk_error_os(errno, path, "cannot use relinked file");
	if (!S_ISREG(st.st_mode))
		return fgk_error_new(FGK_ERR_INVALID, path,
				     "relinked file is not a regular file");
	if (st.st_size == 0)
		return fgk_error_new(FGK_ERR_INVALID, path, "relinked file is empty");
	err = fgk_vmlinux_open(path, &c);
	if (err)
		return err;
	cid = fgk_vmlinux_build_id(c);
	if (!id || !cid || strcmp(id, cid)) {
		err = fgk_error_new(FGK_ERR_BUILD_ID, path,
				    "relinked file has build-id %s, not %s's %s",
				    cid ? cid : "(none)", vm->path, id ? id : "(none)");
		goto out;
	}
	/*
	 * Section by section as fgk_relink() writes them: the randomized
	 * ones folded into one FGK_FOLDED_TEXT where the first was, their
	 * relocation sections gone, every other one as in vmlinux.
	 */
	{
		size_t j = 1;
		bool folded = false;

		for (size_t i = 1; i < vm->shnum; i++) {
			const GElf_Shdr *a = &vm->secs[i].shdr, *b;
			bool rnd = vm_section_randomized(&vm->secs[i]);
			size_t t;

			if (rnd && folded)
				continue;
			if (vm_section_relocates(vm, i, &t) &&
			    vm_section_randomized(&vm->secs[t]))
				continue;
			if (j >= c->shnum) {
				err = fgk_error_new(FGK_ERR_INVALID, path,
						    "relinked file has %zu sections, too few for %s (stripped or another file)",
						    c->shnum, vm->path);
				goto out;
			}
			b = &c->secs[j].shdr;
			if (rnd ? strcmp(c->secs[j].name, FGK_FOLDED_TEXT) != 0 ||
				  b->sh_type != SHT_PROGBITS :
			    strcmp(vm->secs[i].name, c->secs[j].name) ||
			    a->sh_type != b->sh_type || a->sh_flags != b->sh_flags ||
			    (a->sh_size != b->sh_size &&	/* + FGK_FOLDED_TEXT */
			     (strcmp(c->secs[j].name, ".shstrtab") ||
			      b->sh_size != a->sh_size + sizeof(FGK_FOLDED_TEXT)))) {
				err = fgk_error_new(FGK_ERR_INVALID, path,
						    "relinked file: section %zu (%s) differs from %s's (%s): stripped, another file or an older fgk's",
						    j, c->secs[j].name, vm->path,
						    rnd ? FGK_FOLDED_TEXT : vm->secs[i].name);
				goto out;
			}
			folded |= rnd;
			j++;
		}
		if (j != c->shnum)
			err = fgk_error_new(FGK_ERR_INVALID, path,
					    "relinked file has %zu sections, %zu expected from %s",
					    c->shnum, j, vm->path);
	}
out:
	fgk_vmlinux_close(c);
	return err;
}

static char *dir_part(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path))
		     : strdup(".");
}

/* A cache entry that failed verification: out of the way, or an error. */
static struct fgk_error *drop_entry(const char *cache)
{
	struct stat st;

	if (lstat(cache, &st) < 0)
		return errno == ENOENT ? NULL :
		       fgk_error_os(errno, cache, "cannot replace cache entry");
	if (S_ISDIR(st.st_mode) ? rmdir(cache) < 0 : unlink(cache) < 0)
		return fgk_error_os(errno, cache,
				    "bad cache entry (%s) that cannot be removed; remove it by hand",
				    S_ISDIR(st.st_mode) ? "a directory" : "not a usable relinked vmlinux");
	return NULL;
}

struct fgk_error *fgk_relink_cached(struct fgk_vmlinux *vm,
				    const struct fgk_layout *l,
				    char **path, bool *cached)
{
	return fgk_relink_cached_stats(vm, l, path, cached, NULL);
}

struct fgk_error *fgk_relink_cached_stats(struct fgk_vmlinux *vm,
					  const struct fgk_layout *l,
					  char **path, bool *cached,
					  struct fgk_relink_stats *stats)
{
	struct fgk_error *err;
	char *cache, *dir;
	struct stat st;
	bool made_dir;

	*path = NULL;
	*cached = false;
	if (l->seedless)	/* the cache is keyed by seed */
		return fgk_error_new(FGK_ERR_INVALID, NULL,
				     "a layout rebuilt from kallsyms has no seed: not cached");
	err = fgk_relink_cache_path(vm, &l->seed, &cache);
	if (err)
		return err;
	if (!cache)
		return fgk_error_new(FGK_ERR_INVALID, fgk_vmlinux_path(vm),
				     "no relink cache applies (no build-id, or none of $FGK_CACHE_DIR, $XDG_CACHE_HOME, $HOME set)");
	dir = dir_part(cache);
	if (!dir) {
		free(cache);
		return &fgk_enomem;
	}
	made_dir = lstat(dir, &st) < 0;
	if (!made_dir) {
		/* another user's directory is not used; ours is made 0700 */
		err = fgk__private_dir(dir, "cache directory");
		if (err)
			goto fail;
		/* temp files of relinks that were SIGKILLed */
		fgk_error_free(fgk_clean_stale_temp_files(dir, NULL, NULL));
	}
	if (lstat(cache, &st) == 0) {
		err = fgk_relink_verify(vm, cache);
		if (!err)	/* an entry of an older fgk: 0600 now */
			err = fgk__private_file(cache, "cache entry");
		if (!err) {
			free(dir);
			*path = cache;
			*cached = true;
			return NULL;
		}
		fgk_error_free(err);
		err = drop_entry(cache);
		if (err)
			goto fail;
	}
	err = fgk__mkdirs_private(dir, "cache directory");
	if (!err)	/* made now by us, or by someone else meanwhile */
		err = fgk__private_dir(dir, "cache directory");
	if (!err)
		err = fgk_relink(vm, l, cache, stats);
	if (err)
		goto fail;
	free(dir);
	*path = cache;
	return NULL;
fail:
	if (made_dir)
		rmdir(dir);	/* no empty directory left behind */
	free(dir);
	free(cache);
	return err;
}
