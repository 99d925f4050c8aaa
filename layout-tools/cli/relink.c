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
	struct fgk_relink_result res = { 0 };
	struct fgk_layout *l = NULL;
	struct fgk_error *err;
	const char *out = NULL;
	bool use_cache = true, stats = false;
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
	if (use_cache) {
		/* no fallback: without a usable cache, -o OUT alone */
		err = fgk_relink_through_cache(t.vm, l, NULL, 0, &res);
		if (err && out && (err->code == FGK_ERR_OS ||
				   err->code == FGK_ERR_INVALID)) {
			/* unwritable, another user's, or none applies */
			char buf[1024];

			if (err->code == FGK_ERR_OS)
				fprintf(stderr, "fgk: %s; not caching\n",
					fgk_error_string(err, buf, sizeof(buf)));
			fgk_error_free(err);
			err = NULL;
		} else if (err) {
			if (err->code == FGK_ERR_INVALID) {
				char buf[1024];

				rc = cli_errorf("%s: give -o OUT",
						fgk_error_string(err, buf, sizeof(buf)));
				fgk_error_free(err);
			} else {
				rc = cli_fail(err);
			}
			goto done;
		}
	}
	if (!res.path) {
		err = fgk_relink(t.vm, l, out, &res.stats);
		if (err) {
			rc = cli_fail(err);
			goto done;
		}
		res.written = true;
	}
	if (stats && res.cached)
		fprintf(stderr, "fgk relink: cached %s\n", res.path);
	else if (stats)
		fprintf(stderr,
			"fgk relink: %zu sections moved, %zu symbols, %zu relocated fields (%zu in debug sections)\n",
			res.stats.sections_moved, res.stats.symbols,
			res.stats.relocations, res.stats.debug_relocations);
	if (res.path && out) {
		rc = copy_file(res.path, out);
		if (rc)
			goto done;
	}
	printf("%s\n", out ? out : res.path);
	rc = cli_finish_stdout(0);
done:
	fgk_layout_free(l);
	fgk_relink_result_clear(&res);
	cli_target_close(&t);
	return rc;
}

const struct cli_cmd cmd_relink = {
	.name = "relink",
	.summary = "write vmlinux.fgk: vmlinux relinked in the shuffled order",
	.help = help,
	.run = run,
};
