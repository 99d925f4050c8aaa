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
"usage: fgk relink [VMLINUX] (--seed SEED | --seed-file RECORD | --kallsyms FILE)\n"
"                  [--build-id HEX] [-o OUT] [--no-cache] [--stats]\n"
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
"the relinked file is printed on stdout.  The cache is private (0600 files in\n"
"a 0700 <build-id> directory of this user; another user's is not used), and\n"
"so is -o OUT (0600): the file is the layout of the seed.\n"
"\n"
"-o OUT       also (or, with --no-cache, only) write the result to OUT\n"
"--no-cache   neither read nor write the cache\n"
"--stats      print what was moved on stderr\n"
"\n"
"With --kallsyms FILE (no seed) the layout comes from root's /proc/kallsyms\n"
"of the boot; the result is the same file the seed gives.  It is not cached\n"
"(the cache is keyed by seed): -o OUT is required.\n"
"\n"
CLI_TARGET_HELP;

/* -o OUT as well as the cache: a copy of the cached file. */
static int copy_file(const char *from, const char *to)
{
	struct fgk_error *err;
	size_t len;
	char *buf;

	err = fgk_read_file(from, SIZE_MAX - 2, false, &buf, &len);
	if (!err) {
		err = fgk_write_file_atomic(to, buf, len);
		free(buf);
	}
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
	char *cache = NULL;
	bool use_cache = true, stats = false, cached = false;
	int opt, rc;

	while ((opt = cli_getopt(&cmd_relink, argc, argv, "ho:", opts)) != -1) {
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
	if (t.kallsyms && !out)
		return cli_usage_error(&cmd_relink, "--kallsyms needs -o OUT (the cache is keyed by seed)");
	if (t.kallsyms)
		use_cache = false;
	{
		const char *inputs[] = { t.vmlinux, t.seed_file, t.kallsyms };

		if (cli_check_output(out, inputs, 3))
			return 1;
	}
	rc = cli_target_open(&cmd_relink, &t);
	if (rc)
		goto done;
	rc = cli_target_layout(&t, &l);
	if (rc)
		goto done;
	err = NULL;
	if (use_cache)
		err = fgk_relink_cache_path(t.vm, &t.seed, &cache);
	if (err) {
		rc = cli_fail(err);
		goto done;
	}
	memset(&st, 0, sizeof(st));
	if (cache) {
		char *path;

		free(cache);
		cache = NULL;
		err = fgk_relink_cached_stats(t.vm, l, &path, &cached, &st);
		if (err && err->code == FGK_ERR_OS && out) {
			char buf[1024];

			fprintf(stderr, "fgk: %s; not caching\n",
				fgk_error_string(err, buf, sizeof(buf)));
			fgk_error_free(err);
			err = fgk_relink(t.vm, l, out, &st);
			path = NULL;
		}
		if (err) {
			rc = cli_fail(err);
			goto done;
		}
		cache = path;
	} else if (!out) {
		rc = cli_errorf("%s: no relink cache applies (no build-id, or none of $FGK_CACHE_DIR, $XDG_CACHE_HOME, $HOME set): give -o OUT",
				t.vmlinux);
		goto done;
	} else {
		err = fgk_relink(t.vm, l, out, &st);
		if (err) {
			rc = cli_fail(err);
			goto done;
		}
	}
	if (stats && cached)
		fprintf(stderr, "fgk relink: cached %s\n", cache);
	else if (stats)
		fprintf(stderr,
			"fgk relink: %zu sections moved, %zu symbols, %zu relocated fields (%zu in debug sections)\n",
			st.sections_moved, st.symbols, st.relocations,
			st.debug_relocations);
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
 * relinked now if missing or unusable, exactly as `fgk relink` does.
 * Without a usable cache (no build-id, no cache directory) it is written
 * to fallback_dir/<seed>.vmlinux.fgk; fallback_dir is made private first
 * (fgk_private_dir: the file's name is the seed, its content the layout).
 * *path is malloc'd; *cached says whether it was there.
 */
int cli_relink_cached(struct fgk_vmlinux *vm, const struct fgk_seed *seed,
		      const char *fallback_dir, char **path, bool *cached)
{
	char hex[FGK_SEED_HEX_LEN + 1];
	struct fgk_layout *l = NULL;
	struct fgk_error *err;
	char *cache = NULL;

	*cached = false;
	*path = NULL;
	err = fgk_layout_compute(vm, seed, &l);
	if (!err)
		err = fgk_relink_cache_path(vm, seed, &cache);
	if (!err && cache) {
		free(cache);
		err = fgk_relink_cached(vm, l, path, cached);
		if (err && err->code == FGK_ERR_OS) {
			/* an unwritable cache: fall back, like no cache */
			fgk_error_free(err);
			err = NULL;
			*path = NULL;
		}
	}
	if (!err && !*path) {
		fgk_seed_format(seed, hex);
		err = fgk_private_dir(fallback_dir);
		if (!err && asprintf(path, "%s/%s.vmlinux.fgk", fallback_dir, hex) < 0) {
			*path = NULL;
			err = &fgk_enomem;
		}
		if (!err)
			err = fgk_relink(vm, l, *path, NULL);
	}
	fgk_layout_free(l);
	if (err) {
		free(*path);
		*path = NULL;
		return cli_fail(err);
	}
	return 0;
}
