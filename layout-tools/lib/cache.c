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
 *
 * Bounded as libdebuginfod bounds its client cache (debuginfod-client-
 * config(7)): <cache>/cache_clean_interval_s (default 86400) and
 * <cache>/max_unused_age_s (default 604800), each a number of seconds,
 * created with the default when missing.  When the interval file's mtime
 * is at least the interval old, the cache is cleaned: every entry whose
 * atime is at least max_unused_age_s old is removed, then every empty
 * <build-id> directory whose mtime is that old, and the interval file's
 * mtime is set to now.  Only names of this cache are touched
 * (<hex>/<64 hex>.vmlinux.fgk), never other files of a shared <cache>.
 * A hit sets the entry's atime (noatime and relatime mounts do not).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/stat.h>

#include "error.h"
#include "file.h"
#include "layout.h"
#include "vmlinux.h"

/* <cache> itself: 0 and *dir set, 0 and *dir NULL (none), or -1 (no memory). */
static int cache_root(char **dir)
{
	const char *base;

	*dir = NULL;
	if ((base = getenv("FGK_CACHE_DIR")) && *base)
		return (*dir = strdup(base)) ? 0 : -1;
	if ((base = getenv("XDG_CACHE_HOME")) && *base)
		return asprintf(dir, "%s/fgk", base) < 0 ? -1 : 0;
	if ((base = getenv("HOME")) && *base)
		return asprintf(dir, "%s/.cache/fgk", base) < 0 ? -1 : 0;
	return 0;
}

/* 0 and *dir set, 0 and *dir NULL (no cache applies), or -1 (no memory). */
static int cache_dir(const char *build_id, char **dir)
{
	char *root;
	int r;

	*dir = NULL;
	if (cache_root(&root) < 0)
		return -1;
	if (!root)
		return 0;
	r = asprintf(dir, "%s/%s", root, build_id) < 0 ? -1 : 0;
	free(root);
	if (r < 0)
		*dir = NULL;
	return r;
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

/*
 * The section symbols vm has that its vmlinux.fgk leaves out (relink.c,
 * fold_text): those of every randomized section but the first (index
 * first, the folded one) and of the relocation sections.
 */
static size_t dropped_section_symbols(const struct fgk_vmlinux *vm, size_t first)
{
	const unsigned char *sym = NULL, *xin = NULL;
	size_t ns = 0, nx = 0, n = 0, t;

	for (size_t i = 1; i < vm->shnum; i++) {
		const GElf_Shdr *sh = &vm->secs[i].shdr;

		if (sh->sh_type == SHT_SYMTAB) {
			sym = (const unsigned char *)vm->image + sh->sh_offset;
			ns = sh->sh_size / sizeof(Elf64_Sym);
		}
	}
	for (size_t i = 1; i < vm->shnum && sym; i++) {
		const GElf_Shdr *sh = &vm->secs[i].shdr;

		if (sh->sh_type == SHT_SYMTAB_SHNDX &&
		    (const unsigned char *)vm->image + vm->secs[sh->sh_link].shdr.sh_offset == sym) {
			xin = (const unsigned char *)vm->image + sh->sh_offset;
			nx = sh->sh_size / sizeof(Elf32_Word);
		}
	}
	for (size_t i = 1; i < ns; i++) {
		Elf64_Sym s;
		Elf32_Word x;

		memcpy(&s, sym + i * sizeof(s), sizeof(s));
		if (ELF64_ST_TYPE(s.st_info) != STT_SECTION)
			continue;
		x = s.st_shndx;
		if (x == SHN_XINDEX && xin && i < nx)
			memcpy(&x, xin + i * sizeof(x), sizeof(x));
		else if (x >= SHN_LORESERVE)
			continue;
		if (x == SHN_UNDEF || x >= vm->shnum)
			continue;
		if ((fgk__section_domain(vm, &vm->secs[x]) == FGK__D_TEXT && x != first) ||
		    fgk__section_relocates(vm, x, &t))
			n++;
	}
	return n;
}

/*
 * fgk_relink_verify(), and with l (the seed's layout) also the new
 * addresses of the range domains' sections (.sched.text.* and the spec §3
 * version 3 ones), which vmlinux.fgk keeps as sections of their own: an
 * entry written by an fgk that did not know a domain left them at their
 * link addresses.
 */
static struct fgk_error *relink_verify(struct fgk_vmlinux *vm, const char *path,
				       const struct fgk_layout *l);

struct fgk_error *fgk_relink_verify(struct fgk_vmlinux *vm, const char *path)
{
	return relink_verify(vm, path, NULL);
}

static struct fgk_error *relink_verify(struct fgk_vmlinux *vm, const char *path,
				       const struct fgk_layout *l)
{
	struct fgk_vmlinux *c;
	struct fgk_error *err;
	const char *id = fgk_vmlinux_build_id(vm), *cid;
	struct stat st;

	if (lstat(path, &st) < 0)
		return fgk__error_os(errno, path, "cannot use relinked file");
	if (!S_ISREG(st.st_mode))
		return fgk__error_new(FGK_ERR_INVALID, path,
				      "relinked file is not a regular file");
	if (st.st_size == 0)
		return fgk__error_new(FGK_ERR_INVALID, path, "relinked file is empty");
	err = fgk_vmlinux_open(path, &c);
	if (err)
		return err;
	cid = fgk_vmlinux_build_id(c);
	if (!id || !cid || strcmp(id, cid)) {
		err = fgk__error_new(FGK_ERR_BUILD_ID, path,
				     "relinked file has build-id %s, not %s's %s",
				     cid ? cid : "(none)", vm->path, id ? id : "(none)");
		goto out;
	}
	/*
	 * Section by section as fgk_relink() writes them: the randomized
	 * ones folded into one FGK_FOLDED_TEXT where the first was, the
	 * relocation sections gone, every other one as in vmlinux, the
	 * symbol table without the section symbols of those gone (an entry
	 * of an older fgk, with them, is relinked).
	 */
	{
		size_t j = 1, first = 0, dropped = 0;
		bool folded = false;

		for (size_t i = 1; i < vm->shnum && !first; i++)
			if (fgk__section_domain(vm, &vm->secs[i]) == FGK__D_TEXT)
				first = i;
		if (first)	/* and shorter symbol tables by these */
			dropped = dropped_section_symbols(vm, first);
		for (size_t i = 1; i < vm->shnum; i++) {
			const GElf_Shdr *a = &vm->secs[i].shdr, *b;
			/* folded: .text.*; the range domains' stay (relink.c) */
			bool rnd = fgk__section_domain(vm, &vm->secs[i]) == FGK__D_TEXT;
			uint64_t size = a->sh_size;
			size_t t;

			if (a->sh_type == SHT_SYMTAB)
				size -= dropped * sizeof(Elf64_Sym);
			else if (a->sh_type == SHT_SYMTAB_SHNDX)
				size -= dropped * sizeof(Elf32_Word);

			if (rnd && folded)
				continue;
			if (fgk__section_relocates(vm, i, &t))
				continue;	/* relocations: not in vmlinux.fgk */
			if (j >= c->shnum) {
				err = fgk__error_new(FGK_ERR_INVALID, path,
						     "relinked file has %zu sections, too few for %s (stripped or another file)",
						     c->shnum, vm->path);
				goto out;
			}
			b = &c->secs[j].shdr;
			if (rnd ? strcmp(c->secs[j].name, FGK_FOLDED_TEXT) != 0 ||
				  b->sh_type != SHT_PROGBITS :
			    strcmp(vm->secs[i].name, c->secs[j].name) ||
			    a->sh_type != b->sh_type || a->sh_flags != b->sh_flags ||
			    (size != b->sh_size &&	/* + FGK_FOLDED_TEXT */
			     (strcmp(c->secs[j].name, ".shstrtab") ||
			      b->sh_size != size + sizeof(FGK_FOLDED_TEXT)))) {
				err = fgk__error_new(FGK_ERR_INVALID, path,
						     "relinked file: section %zu (%s) differs from %s's (%s): stripped, another file or an older fgk's",
						     j, c->secs[j].name, vm->path,
						     rnd ? FGK_FOLDED_TEXT : vm->secs[i].name);
				goto out;
			}
			if (l && fgk__section_domain(vm, &vm->secs[i]) >= 0 &&
			    fgk__section_domain(vm, &vm->secs[i]) != FGK__D_TEXT) {
				const struct fgk__domain *D =
					&l->dom[fgk__section_domain(vm, &vm->secs[i])];

				for (size_t k = D->first; k < D->first + D->n; k++)
					if (l->secs[k].index == i &&
					    l->secs[k].new_addr != b->sh_addr) {
						err = fgk__error_new(FGK_ERR_INVALID, path,
								     "relinked file: section %s at 0x%llx, not at its new address 0x%llx (an older fgk's)",
								     c->secs[j].name,
								     (unsigned long long)b->sh_addr,
								     (unsigned long long)l->secs[k].new_addr);
						goto out;
					}
			}
			folded |= rnd;
			j++;
		}
		if (j != c->shnum)
			err = fgk__error_new(FGK_ERR_INVALID, path,
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

/*
 * fgk-gdb keeps gdb's index of an entry beside it, as <entry>.gdb-index
 * (fgk-gdb/fgkgdb/symbols.py); it goes with its entry.
 */
#define GDB_INDEX_SUFFIX ".gdb-index"

static void unlink_gdb_index(int dirfd, const char *entry)
{
	char *idx;

	if (asprintf(&idx, "%s" GDB_INDEX_SUFFIX, entry) >= 0) {
		unlinkat(dirfd, idx, 0);
		free(idx);
	}
}

/*
 * fgk-gdb's writer of an index works in a temporary directory beside the
 * entry, .gdb-index.XXXXXXXX, holding its pid in writer.pid, and renames
 * the index out of it (fgk-gdb/fgkgdb/symbols.py).  A writer that was
 * killed leaves it behind: it goes once its writer is gone or it is as old
 * as fgk-gdb's lock of a writer may be (INDEX_LOCK_STALE_S there), after
 * which another writer may start anyway.
 */
#define GDB_INDEX_TEMP_PREFIX GDB_INDEX_SUFFIX "."
#define GDB_INDEX_WRITER_STALE_S 600

static bool index_writer_gone(int tmpfd)
{
	char buf[32];
	ssize_t n;
	long pid;
	char *end;
	int fd = openat(tmpfd, "writer.pid", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return false;	/* not written yet: the age decides */
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	errno = 0;
	pid = strtol(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n') || pid <= 0 ||
	    pid == (long)getpid())
		return false;
	return kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

/* Directory name under atfd, open for reading (extra: O_NOFOLLOW or 0), or NULL. */
static DIR *opendir_at(int atfd, const char *name, int extra)
{
	int fd = openat(atfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | extra);
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

/* The files of one stale temporary directory, then it (nothing below it is followed). */
static void remove_index_temp(int parent, const char *name)
{
	DIR *d = opendir_at(parent, name, O_NOFOLLOW);
	struct dirent *de;
	struct stat st;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    !S_ISDIR(st.st_mode))
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	unlinkat(parent, name, AT_REMOVEDIR);	/* fails if a directory is left */
}

/* Stale temporary directories of killed index writers in a <build-id> directory. */
static void clean_index_temps(int atfd, const char *dir, time_t now)
{
	DIR *d = opendir_at(atfd, dir, 0);
	struct dirent *de;
	struct stat st;

	if (!d)
		return;
	while ((de = readdir(d))) {
		int fd;
		bool stale;

		if (strncmp(de->d_name, GDB_INDEX_TEMP_PREFIX,
			    sizeof(GDB_INDEX_TEMP_PREFIX) - 1))
			continue;
		fd = openat(dirfd(d), de->d_name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		stale = fstat(fd, &st) == 0 &&
			(now - st.st_mtime >= GDB_INDEX_WRITER_STALE_S ||
			 index_writer_gone(fd));
		close(fd);
		if (stale)
			remove_index_temp(dirfd(d), de->d_name);
	}
	closedir(d);
}

/* A cache entry that failed verification: out of the way, or an error. */
static struct fgk_error *drop_entry(const char *cache)
{
	struct stat st;

	unlink_gdb_index(AT_FDCWD, cache);

	if (lstat(cache, &st) < 0)
		return errno == ENOENT ? NULL :
		       fgk__error_os(errno, cache, "cannot replace cache entry");
	if (S_ISDIR(st.st_mode) ? rmdir(cache) < 0 : unlink(cache) < 0)
		return fgk__error_os(errno, cache,
				     "bad cache entry (%s) that cannot be removed; remove it by hand",
				     S_ISDIR(st.st_mode) ? "a directory" : "not a usable relinked vmlinux");
	return NULL;
}

/* ---- bounded, as libdebuginfod's client cache --------------------------- */

/*
 * The number of seconds in root/name; a missing file is created holding
 * def (its mtime, now, is then *mtime); an unreadable one counts as def.
 */
static long long control_value(const char *root, const char *name,
			       long long def, time_t *mtime)
{
	long long v = def;
	struct stat st;
	char *path;
	FILE *f;
	int fd;

	if (asprintf(&path, "%s/%s", root, name) < 0)
		return def;
	if (mtime)
		*mtime = time(NULL);
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = def;
		if (mtime && fstat(fileno(f), &st) == 0)
			*mtime = st.st_mtime;
		fclose(f);
	} else if (errno == ENOENT) {
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd >= 0) {
			dprintf(fd, "%lld\n", def);
			close(fd);
		}
	}
	free(path);
	return v;
}

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789abcdef", s[i]))
			return false;
	return n > 0;
}

/* <64 hex>.vmlinux.fgk: a name of this cache (not a temp file, not a stranger's) */
static bool entry_name(const char *name)
{
	static const char suffix[] = ".vmlinux.fgk";

	return strlen(name) == FGK_SEED_HEX_LEN + sizeof(suffix) - 1 &&
	       all_hex(name, FGK_SEED_HEX_LEN) &&
	       !strcmp(name + FGK_SEED_HEX_LEN, suffix);
}

/* Entries of one <build-id> directory unused for max_age; then it, if empty and old. */
static void clean_build_id_dir(int rootfd, const char *name, time_t now,
			       long long max_age)
{
	DIR *d = opendir_at(rootfd, name, O_NOFOLLOW);
	struct dirent *de;
	struct stat st, dst;
	int fd;

	/* its mtime before its entries go (libdebuginfod: fts's pre-order stat) */
	if (!d)
		return;
	fd = dirfd(d);
	if (fstat(fd, &dst) < 0) {
		closedir(d);
		return;
	}
	while ((de = readdir(d)))
		if (entry_name(de->d_name) &&
		    fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode) && now - st.st_atime >= max_age) {
			unlinkat(fd, de->d_name, 0);
			unlink_gdb_index(fd, de->d_name);
		}
	closedir(d);
	clean_index_temps(rootfd, name, now);
	/* rmdir fails on a non-empty one; the mtime check weakens the race
	 * with a relink that just made it (as libdebuginfod does) */
	if (now - dst.st_mtime >= max_age)
		unlinkat(rootfd, name, AT_REMOVEDIR);
}

/*
 * Clean <cache> when cache_clean_interval_s has passed since the last
 * cleaning (the interval file's mtime).  Best effort: a cache that cannot
 * be cleaned is still used.
 */
static void clean_cache(void)
{
	long long interval, max_age;
	time_t last, now = time(NULL);
	struct dirent *de;
	char *root, *ipath;
	DIR *d;

	if (cache_root(&root) < 0 || !root)
		return;
	interval = control_value(root, "cache_clean_interval_s",
				 FGK_CACHE_CLEAN_INTERVAL_S, &last);
	max_age = control_value(root, "max_unused_age_s",
				FGK_CACHE_MAX_UNUSED_AGE_S, NULL);
	if (now - last < interval || max_age < 0 || !(d = opendir(root))) {
		free(root);
		return;
	}
	while ((de = readdir(d)))
		if (all_hex(de->d_name, strlen(de->d_name)))
			clean_build_id_dir(dirfd(d), de->d_name, now, max_age);
	closedir(d);
	if (asprintf(&ipath, "%s/cache_clean_interval_s", root) >= 0) {
		utimensat(AT_FDCWD, ipath, NULL, 0);
		free(ipath);
	}
	free(root);
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
		return fgk__error_new(FGK_ERR_INVALID, NULL,
				      "a layout rebuilt from kallsyms has no seed: not cached");
	err = fgk_relink_cache_path(vm, &l->seed, &cache);
	if (err)
		return err;
	if (!cache)
		return fgk__error_new(FGK_ERR_INVALID, fgk_vmlinux_path(vm),
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
		/* temp files of relinks that were SIGKILLed, and of index writers */
		fgk_error_free(fgk_clean_stale_temp_files(dir, NULL, NULL));
		clean_index_temps(AT_FDCWD, dir, time(NULL));
	}
	if (lstat(cache, &st) == 0) {
		err = relink_verify(vm, cache, l);
		if (!err)	/* an entry of an older fgk: 0600 now */
			err = fgk__private_file(cache, "cache entry");
		if (!err) {
			/* used now: what max_unused_age_s counts from */
			struct timespec ts[2] = { { .tv_nsec = UTIME_NOW },
						  { .tv_nsec = UTIME_OMIT } };

			utimensat(AT_FDCWD, cache, ts, 0);
			free(dir);
			clean_cache();
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
	clean_cache();
	*path = cache;
	return NULL;
fail:
	if (made_dir)
		rmdir(dir);	/* no empty directory left behind */
	free(dir);
	free(cache);
	return err;
}

/* <fallback>/<seed>.vmlinux.fgk, or <build-id>.kallsyms.vmlinux.fgk for a seedless layout. */
static struct fgk_error *fallback_path(struct fgk_vmlinux *vm,
				       const struct fgk_layout *l,
				       const char *fallback_dir, char **path)
{
	char hex[FGK_SEED_HEX_LEN + 1];
	const char *id = fgk_vmlinux_build_id(vm);
	int r;

	if (l->seedless) {
		r = asprintf(path, "%s/%s.kallsyms.vmlinux.fgk", fallback_dir,
			     id ? id : "no-build-id");
	} else {
		fgk_seed_format(&l->seed, hex);
		r = asprintf(path, "%s/%s.vmlinux.fgk", fallback_dir, hex);
	}
	if (r < 0) {
		*path = NULL;
		return &fgk_enomem;
	}
	return NULL;
}

void fgk_relink_result_clear(struct fgk_relink_result *res)
{
	free(res->path);
	free(res->cache_error);
	memset(res, 0, sizeof(*res));
}

struct fgk_error *fgk_relink_through_cache(struct fgk_vmlinux *vm,
					   const struct fgk_layout *l,
					   const char *fallback_dir,
					   unsigned int flags,
					   struct fgk_relink_result *res)
{
	bool dry = flags & FGK_RELINK_DRY_RUN;
	struct fgk_error *err = NULL;
	char *cache = NULL;

	memset(res, 0, sizeof(*res));
	if (!l->seedless)
		err = fgk_relink_cache_path(vm, &l->seed, &cache);
	if (err)
		return err;
	if (cache && dry) {
		res->in_cache = true;
		res->cached = relink_verify(vm, cache, l) == NULL;
		res->path = cache;
		return NULL;
	}
	if (cache) {
		free(cache);
		err = fgk_relink_cached_stats(vm, l, &res->path, &res->cached,
					      &res->stats);
		if (!err) {
			res->in_cache = true;
			res->written = !res->cached;
			return NULL;
		}
		/* an unwritable cache, or another user's: as if none applied */
		if (err->code != FGK_ERR_OS || !fallback_dir)
			return err;
		{
			char buf[1024];

			res->cache_error = strdup(fgk_error_string(err, buf, sizeof(buf)));
		}
		fgk_error_free(err);
		if (!res->cache_error)
			return &fgk_enomem;
	}
	if (!fallback_dir)
		return fgk__error_new(FGK_ERR_INVALID, fgk_vmlinux_path(vm),
				      l->seedless ?
				      "a layout rebuilt from kallsyms has no seed: not cached, and no other place to write it was given" :
				      "no relink cache applies (no build-id, or none of $FGK_CACHE_DIR, $XDG_CACHE_HOME, $HOME set)");
	err = fallback_path(vm, l, fallback_dir, &res->path);
	if (!err && !dry)
		err = fgk_private_dir(fallback_dir);
	if (!err && !dry)
		err = fgk_relink(vm, l, res->path, &res->stats);
	if (err) {
		fgk_relink_result_clear(res);
		return err;
	}
	res->written = !dry;
	return NULL;
}
