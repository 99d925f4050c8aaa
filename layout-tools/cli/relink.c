// SPDX-License-Identifier: GPL-2.0
/* fgk relink: write vmlinux.fgk, the vmlinux relinked in the shuffled order. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli.h"

static const char help[] =
"usage: fgk relink VMLINUX (--seed SEED | --seed-file RECORD) [-o OUT]\n"
"                  [--no-cache] [--stats]\n"
"\n"
"Write the ELF a linker would have produced had it laid the randomized\n"
"functions out in the order SEED gives (base offset 0): moved code, section\n"
"headers, symbols, every relocated reference in code and data, and every\n"
"DWARF address (.debug_info, .debug_line, .debug_addr, .debug_rnglists,\n"
".debug_loclists, .debug_aranges, .debug_frame) moved to match.  Stock gdb,\n"
"crash, drgn, addr2line and objdump then understand the shuffled kernel; use\n"
"the base KASLR offset as their single offset (gdb: symbol-file -o OFFSET).\n"
"The build-id note and linux_banner are kept.\n"
"\n"
"The result is cached by (build-id, seed) in $FGK_CACHE_DIR, else\n"
"$XDG_CACHE_HOME/fgk, else ~/.cache/fgk; a second run reuses it.  The path of\n"
"the relinked file is printed on stdout.\n"
"\n"
"-o OUT       also (or, with --no-cache, only) write the result to OUT\n"
"--no-cache   neither read nor write the cache\n"
"--stats      print what was moved on stderr\n"
"--seed SEED         64 hex digits (or fgkaslr_seed=..., or /proc/fgkaslr_seed text)\n"
"--seed-file RECORD  seed record (docs/seed-records.md); its build-id must match\n";

static int mkdirs(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	return mkdir(path, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

/* <cache>/<build-id>/<seed>.vmlinux.fgk, or NULL when no cache applies. */
static char *cache_path(const char *build_id, const struct fgk_seed *seed,
			char **dir_out)
{
	const char *base = getenv("FGK_CACHE_DIR");
	char hex[FGK_SEED_HEX_LEN + 1], *dir = NULL, *path = NULL;

	if (!build_id)
		return NULL;
	fgk_seed_format(seed, hex);
	if (base && *base) {
		if (asprintf(&dir, "%s/%s", base, build_id) < 0)
			return NULL;
	} else if ((base = getenv("XDG_CACHE_HOME")) && *base) {
		if (asprintf(&dir, "%s/fgk/%s", base, build_id) < 0)
			return NULL;
	} else if ((base = getenv("HOME")) && *base) {
		if (asprintf(&dir, "%s/.cache/fgk/%s", base, build_id) < 0)
			return NULL;
	} else {
		return NULL;
	}
	if (asprintf(&path, "%s/%s.vmlinux.fgk", dir, hex) < 0) {
		free(dir);
		return NULL;
	}
	*dir_out = dir;
	return path;
}

static int copy_file(const char *from, const char *to)
{
	struct fgk_error *err;
	struct stat st;
	void *buf;
	int fd = open(from, O_RDONLY);
	ssize_t got = 0;

	if (fd < 0 || fstat(fd, &st) < 0)
		return cli_errorf("%s: cannot read: %s", from, strerror(errno));
	buf = malloc(st.st_size ? st.st_size : 1);
	if (!buf) {
		close(fd);
		return cli_fail(&fgk_enomem);
	}
	while (got < st.st_size) {
		ssize_t r = read(fd, (char *)buf + got, st.st_size - got);

		if (r <= 0) {
			free(buf);
			close(fd);
			return cli_errorf("%s: read error", from);
		}
		got += r;
	}
	close(fd);
	err = fgk_write_file_atomic(to, buf, st.st_size);
	free(buf);
	return err ? cli_fail(err) : 0;
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_TARGET_OPTIONS,
		{ "output", required_argument, NULL, 'o' },
		{ "no-cache", no_argument, NULL, 'n' },
		{ "stats", no_argument, NULL, 's' },
		{ 0 },
	};
	struct cli_target t = { 0 };
	struct fgk_relink_stats st;
	struct fgk_layout *l = NULL;
	struct fgk_error *err;
	const char *out = NULL;
	char *cache = NULL, *cdir = NULL;
	bool use_cache = true, stats = false;
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
		if (cli_target_option(&t, opt, optarg))
			continue;
		switch (opt) {
		case 'h':
			return cli_help(&cmd_relink);
		case 'o':
			out = optarg;
			break;
		case 'n':
			use_cache = false;
			break;
		case 's':
			stats = true;
			break;
		default:
			return cli_usage_error(&cmd_relink, "bad option");
		}
	}
	if (optind < argc)
		t.vmlinux = argv[optind++];
	if (optind < argc)
		return cli_usage_error(&cmd_relink, "unexpected argument '%s'", argv[optind]);
	if (!use_cache && !out)
		return cli_usage_error(&cmd_relink, "--no-cache needs -o OUT");
	rc = cli_target_open(&cmd_relink, &t);
	if (rc)
		goto done;
	if (use_cache)
		cache = cache_path(fgk_vmlinux_build_id(t.vm), &t.seed, &cdir);
	if (cache && access(cache, R_OK) == 0) {
		if (stats)
			fprintf(stderr, "fgk relink: cached %s\n", cache);
	} else {
		err = fgk_layout_compute(t.vm, &t.seed, &l);
		if (!err && cache && mkdirs(cdir) < 0) {
			fprintf(stderr, "fgk: %s: cannot create cache directory (%s); not caching\n",
				cdir, strerror(errno));
			free(cache);
			cache = NULL;
		}
		if (!err)
			err = fgk_relink(t.vm, l, cache ? cache : out, &st);
		if (err) {
			rc = cli_fail(err);
			goto done;
		}
		if (stats)
			fprintf(stderr,
				"fgk relink: %zu sections moved, %zu symbols, %zu relocated fields (%zu in debug sections)\n",
				st.sections_moved, st.symbols, st.relocations,
				st.debug_relocations);
	}
	if (cache && out) {
		rc = copy_file(cache, out);
		if (rc)
			goto done;
	}
	printf("%s\n", out ? out : cache);
	rc = cli_finish_stdout(0);
done:
	fgk_layout_free(l);
	free(cache);
	free(cdir);
	cli_target_close(&t);
	return rc;
}

const struct cli_cmd cmd_relink = {
	.name = "relink",
	.summary = "write vmlinux.fgk: vmlinux relinked in the shuffled order",
	.help = help,
	.run = run,
};

/*
 * For other commands (fgk crash): the cached vmlinux.fgk of (vm, seed),
 * relinked now if missing, exactly as `fgk relink` does.  Without a usable
 * cache (no build-id, no cache directory) it is written to fallback_out.
 * *path is malloc'd; *cached says whether it was already there.
 */
int cli_relink_cached(struct fgk_vmlinux *vm, const struct fgk_seed *seed,
		      const char *fallback_out, char **path, bool *cached)
{
	struct fgk_layout *l = NULL;
	struct fgk_error *err;
	char *cache, *cdir = NULL;

	cache = cache_path(fgk_vmlinux_build_id(vm), seed, &cdir);
	*cached = false;
	if (cache && access(cache, R_OK) == 0) {
		free(cdir);
		*path = cache;
		*cached = true;
		return 0;
	}
	if (cache && mkdirs(cdir) < 0) {
		free(cache);
		cache = NULL;
	}
	free(cdir);
	if (!cache && !(cache = strdup(fallback_out)))
		return cli_fail(&fgk_enomem);
	err = fgk_layout_compute(vm, seed, &l);
	if (!err)
		err = fgk_relink(vm, l, cache, NULL);
	fgk_layout_free(l);
	if (err) {
		free(cache);
		return cli_fail(err);
	}
	*path = cache;
	return 0;
}
