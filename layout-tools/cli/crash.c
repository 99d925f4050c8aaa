// SPDX-License-Identifier: GPL-2.0
/* fgk crash: open a crash dump of a shuffled kernel in the crash utility. */
#include <errno.h>
#include <limits.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "crash_run.h"

static const char help[] =
"usage: fgk crash VMCORE [VMLINUX] [-i FILE] [--seed SEED | --seed-file RECORD]\n"
"                 [--modules DIR]... [--no-modules] [--crash PROGRAM] [-n] [-q]\n"
"                 [-- CRASH-ARGS...]\n"
"       fgk crash --info VMCORE [--json | --pretty]\n"
"\n"
"Read the dump's VMCOREINFO (ELF core: the VMCOREINFO PT_NOTE; kdump-\n"
"compressed, flattened or not: via libkdumpfile) for FGKASLR_SEED, BUILD-ID,\n"
"KERNELOFFSET and OSRELEASE; check VMLINUX against the dump's build-id\n"
"(refusing another build); relink it in the dump's function order\n"
"(vmlinux.fgk, cached like 'fgk relink'; without a usable cache in\n"
"$TMPDIR/fgk-crash-UID/, a 0700 directory of this user); then run\n"
"\n"
"    crash --kaslr=0xKERNELOFFSET [-i FILE] [CRASH-ARGS] vmlinux.fgk VMCORE\n"
"\n"
"(--kaslr=auto when the dump does not say).  Without VMLINUX, the vmlinux\n"
"with the dump's build-id is looked for next to the dump, in ./vmlinux,\n"
"where gdb and crash look (/usr/lib/debug/.build-id, /usr/lib/debug/boot/\n"
"vmlinux-RELEASE, /usr/lib/debug/lib/modules/RELEASE/vmlinux and\n"
"/lib/modules/RELEASE/build/vmlinux), then, with $DEBUGINFOD_URLS set, fetched by\n"
"build-id through debuginfod (said on stderr; libdebuginfod's cache and\n"
"timeouts apply).\n"
"\n"
"A dump whose VMCOREINFO has no FGKASLR_SEED (a kernel that does not\n"
"export it) gets its layout from the kallsyms tables in its own memory,\n"
"which the FG-KASLR kernel keeps updated (said on stderr; module symbols\n"
"then need --seed or --seed-file).  A dump without VMCOREINFO needs --seed\n"
"or --seed-file; a vmlinux without .text.* sections is used as it is.\n"
"FGKASLR_SEED=disabled: vmlinux as it is.\n"
"\n"
"Module symbols: crash first runs 'mod -S' on the .ko files found under\n"
"--modules DIR (repeatable, searched recursively, '-' and '_' equal, the\n"
"first NAME.ko wins), else under the 'modules' directory beside VMLINUX\n"
"(build/kernel/modules); each is checked against VMLINUX (vermagic) and a\n"
"module of another build is refused.  crash cannot read where a Linux\n"
"5.8+ kernel put each module section: it places only .text (at the\n"
"module's base), .data, .bss and .rodata.  So a module with .text.*\n"
"sections or with section addresses (6.12) is given to crash relinked in\n"
"the dump's order (shuffled or not): one .text, every section at address\n"
"0, as gdb needs to relocate its DWARF (docs/fgk-crash.1.md, MODULES).\n"
"With $DEBUGINFOD_URLS set, the\n"
"modules loaded in the dump that no directory has are fetched by the\n"
"build-id of their notes in the dump's memory.\n"
"\n"
"-i FILE            crash runs the commands in FILE (then its prompt, unless\n"
"                   FILE ends with 'exit')\n"
"--modules DIR      load module symbols from the .ko files under DIR\n"
"--no-modules       load none (crash's own 'mod' command still works)\n"
"--seed SEED        seed for dumps that do not carry FGKASLR_SEED\n"
"--seed-file RECORD seed record (docs/seed-records.md), ditto; its build-id\n"
"                   must match and its offset is used when the dump has none\n"
"--crash PROGRAM    the crash binary (default: $FGK_CRASH, else crash)\n"
"-n, --dry-run      print the crash command line instead of running it;\n"
"                   nothing is written (no relink, no module directory)\n"
"-q, --quiet        do not describe the dump on stderr\n"
"--info             print what the dump's VMCOREINFO says and exit\n"
"--json, --pretty   with --info: one JSON object (compact, or indented)\n"
"-- CRASH-ARGS      passed to crash before the file names\n";

enum { OPT_CRASH = 0x300, OPT_INFO, OPT_MODULES, OPT_NO_MODULES };

static void print_info(FILE *f, const char *dump, const struct fgk_vmcoreinfo *vi)
{
	char hex[FGK_SEED_HEX_LEN + 1];

	fprintf(f, "dump: %s\n", dump);
	fprintf(f, "format: %s\n", fgk_vmcore_format_name(vi->format));
	fprintf(f, "release: %s\n", vi->osrelease ? vi->osrelease : "-");
	fprintf(f, "build-id: %s\n", vi->build_id ? vi->build_id : "-");
	if (vi->has_offset)
		fprintf(f, "offset: %#llx\n", (unsigned long long)vi->offset);
	else
		fprintf(f, "offset: -\n");
	switch (vi->seed_state) {
	case FGK_VMCORE_SEED_PRESENT:
		fgk_seed_format(&vi->seed, hex);
		fprintf(f, "fgkaslr-seed: %s\n", hex);
		break;
	case FGK_VMCORE_SEED_DISABLED:
		fprintf(f, "fgkaslr-seed: disabled\n");
		break;
	default:
		fprintf(f, "fgkaslr-seed: -\n");
	}
}

/* --info --json: the same fields, JSON (fgk-crash(1), JSON OUTPUT) */
static void print_info_json(enum cli_output out, const char *dump,
			    const struct fgk_vmcoreinfo *vi)
{
	struct json j;

	cli_json_init(&j, out);
	json_start_object(&j);
	json_string_field(&j, "dump", dump);
	json_string_field(&j, "format", fgk_vmcore_format_name(vi->format));
	json_string_field(&j, "release", vi->osrelease);
	json_string_field(&j, "build_id", vi->build_id);
	if (vi->has_offset)
		json_hex_field(&j, "offset", vi->offset);
	else
		json_null_field(&j, "offset");
	if (vi->seed_state == FGK_VMCORE_SEED_DISABLED)
		json_string_field(&j, "fgkaslr_seed", "disabled");
	else
		cli_json_seed_field(&j, "fgkaslr_seed",
				    vi->seed_state == FGK_VMCORE_SEED_PRESENT ? &vi->seed : NULL);
	json_end_object(&j);
}

static void shell_quote(FILE *f, const char *s)
{
	if (*s && !strpbrk(s, " \t\n'\"\\$`*?[]{}()<>|&;#~!")) {
		fputs(s, f);
		return;
	}
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	}
	fputc('\'', f);
}

/* The command line; -1 to go on, else the exit status. */
static int parse_args(struct crash_run *c, int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_TARGET_OPTIONS,
		{ "crash", required_argument, NULL, OPT_CRASH },
		{ "info", no_argument, NULL, OPT_INFO },
		{ "modules", required_argument, NULL, OPT_MODULES },
		{ "no-modules", no_argument, NULL, OPT_NO_MODULES },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "quiet", no_argument, NULL, 'q' },
		CLI_JSON_OPTIONS,
		{ 0 },
	};
	int nopt = argc, opt;

	c->crash = getenv("FGK_CRASH");
	if (!c->crash || !*c->crash)
		c->crash = "crash";
	/* everything after "--" goes to crash untouched */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			nopt = i;
			c->extra = argv + i + 1;
			c->nextra = argc - i - 1;
			break;
		}
	}
	optind = 1;
	while ((opt = cli_getopt(&cmd_crash, nopt, argv, "hi:nq", opts)) != -1) {
		if (cli_target_option(&c->t, opt, optarg) || cli_json_option(&c->json, opt))
			continue;
		switch (opt) {
		case 'h':
			return cli_help(&cmd_crash);
		case 'i':
			c->input = optarg;
			break;
		case 'n':
			c->dry = true;
			break;
		case 'q':
			c->quiet = true;
			break;
		case OPT_CRASH:
			c->crash = optarg;
			break;
		case OPT_INFO:
			c->info_only = true;
			break;
		case OPT_MODULES: {
			const char **v = realloc(c->mod_dirs, (c->nmod_dirs + 2) * sizeof(*v));

			if (!v)
				return cli_fail(&fgk_enomem);
			v[c->nmod_dirs++] = optarg;
			v[c->nmod_dirs] = NULL;
			c->mod_dirs = v;
			break;
		}
		case OPT_NO_MODULES:
			c->no_modules = true;
			break;
		default:
			return cli_usage_error(&cmd_crash, "bad option");
		}
	}
	if (optind < nopt)
		c->dump = argv[optind++];
	if (optind < nopt)
		c->t.vmlinux = argv[optind++];
	if (optind < nopt)
		return cli_usage_error(&cmd_crash, "unexpected argument '%s'", argv[optind]);
	if (!c->dump)
		return cli_usage_error(&cmd_crash, "missing VMCORE");
	if (c->t.seed_text && c->t.seed_file)
		return cli_usage_error(&cmd_crash, "give --seed or --seed-file, not both");
	if (c->json != CLI_TEXT && !c->info_only)
		return cli_usage_error(&cmd_crash, "--json and --pretty go with --info");
	if (c->no_modules && c->nmod_dirs)
		return cli_usage_error(&cmd_crash, "give --modules or --no-modules, not both");
	if (c->input && access(c->input, R_OK) != 0)
		return cli_errorf("-i %s: %s", c->input, strerror(errno));
	return -1;
}

/* The dump's VMCOREINFO; a dump without one falls back to the seed options. */
static int read_dump(struct crash_run *c)
{
	struct fgk_error *err = fgk_vmcore_read(c->dump, &c->vi);

	c->have_vmcoreinfo = true;
	if (err && err->code == FGK_ERR_NO_VMCOREINFO && !c->info_only) {
		char buf[1024];

		if (!c->quiet)
			fprintf(stderr, "fgk crash: %s; falling back to --seed/--seed-file\n",
				fgk_error_string(err, buf, sizeof(buf)));
		fgk_error_free(err);
		err = NULL;
		c->have_vmcoreinfo = false;
	}
	return err ? cli_fail(err) : 0;
}

/* The directory of path ("." for a bare name); NULL when out of memory. */
char *crash_dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	return strndup(path, slash == path ? 1 : (size_t)(slash - path));
}

/*
 * The vmlinux with the dump's build-id: fgk_vmlinux_find in the dump's
 * directory and ./, then where gdb and crash look (/usr/lib/debug,
 * /lib/modules/RELEASE/build), then debuginfod (cli_vmlinux_by_build_id).
 * Never "the tree fgk was built in": an installed fgk has none.  0 or the
 * exit status (the error, one line, printed).
 */
static int find_vmlinux(struct crash_run *c)
{
	char *near = crash_dir_of(c->dump);
	const char *dirs[3];
	size_t n = 0;
	int rc;

	if (near)
		dirs[n++] = near;
	dirs[n++] = ".";
	dirs[n] = NULL;
	rc = cli_vmlinux_by_build_id(dirs, c->vi.build_id, c->vi.osrelease,
				     &c->t.vm, &c->t.fetched);
	free(near);
	return rc;
}

/* VMLINUX, or the one with the dump's build-id; checked against the dump. */
static int open_vmlinux(struct crash_run *c)
{
	struct cli_target *t = &c->t;
	struct fgk_error *err;
	const char *id;

	if (t->vmlinux) {
		err = fgk_vmlinux_open(t->vmlinux, &t->vm);
		if (err)
			return cli_fail(err);
	} else if (c->vi.build_id) {
		int rc = find_vmlinux(c);

		if (rc)
			return rc;
		t->vmlinux = t->fetched;
	} else {
		return cli_usage_error(&cmd_crash, "the dump does not name its build-id: give VMLINUX");
	}
	id = fgk_vmlinux_build_id(t->vm);
	if (c->vi.build_id && id && strcmp(id, c->vi.build_id))
		return cli_errorf("vmlinux '%s' (build-id %s) is not the kernel of dump '%s' (build-id %s): give the vmlinux of that build",
				  t->vmlinux, id, c->dump, c->vi.build_id);
	if (!c->quiet && c->have_vmcoreinfo && (!c->vi.build_id || !id))
		fprintf(stderr, "fgk crash: warning: cannot check that '%s' belongs to the dump (%s has no build-id)\n",
			t->vmlinux, !id ? "vmlinux" : "the dump");
	return 0;
}

/* A vmlinux.fgk given as VMLINUX would be shuffled twice: refused. */
static int check_kind(struct crash_run *c)
{
	enum fgk_vmlinux_kind kind;
	struct fgk_error *err = fgk_vmlinux_kind(c->t.vm, &kind);

	if (err)
		return cli_fail(err);
	if (kind == FGK_VMLINUX_RELINKED)
		return cli_errorf("vmlinux '%s' is already relinked (a vmlinux.fgk): give the original vmlinux, fgk crash relinks it for the dump",
				  c->t.vmlinux);
	c->is_fg = kind == FGK_VMLINUX_FGKASLR;
	return 0;
}

/* --seed / --seed-file (the record's build-id checked against vmlinux). */
static int read_seed_option(struct cli_target *t)
{
	struct fgk_error *err;

	if (t->seed_text) {
		err = fgk_seed_parse(t->seed_text, &t->seed);
	} else {
		err = fgk_seed_record_read(t->seed_file, &t->rec);
		if (!err)
			err = fgk_seed_record_check(&t->rec, t->seed_file, t->vm);
		t->seed = t->rec.seed;
	}
	return err ? cli_fail(err) : 0;
}

/*
 * No seed anywhere: the layout from the kallsyms tables in the dump's
 * memory (which the FG-KASLR kernel keeps updated), said on stderr.
 */
static int layout_from_dump(struct crash_run *c)
{
	struct fgk_kallsyms_origin o;
	struct fgk_error *err;

	err = fgk_layout_from_vmcore(c->t.vm, c->dump, &c->vi, &c->layout, &o);
	if (err) {
		char buf[2048];

		fgk_error_string(err, buf, sizeof(buf));
		fgk_error_free(err);
		return cli_errorf("%s: no FGKASLR_SEED in its VMCOREINFO, and the layout cannot be rebuilt from its kallsyms: %s; give --seed SEED or --seed-file RECORD",
				  c->dump, buf);
	}
	c->shuffle = true;
	c->seed_src = "none: layout rebuilt from the kallsyms in the dump's memory";
	if (!c->quiet) {
		fprintf(stderr, "fgk crash: %s: no FGKASLR_SEED in VMCOREINFO; layout rebuilt from the kallsyms tables in its memory: ",
			c->dump);
		cli_origin_tail(&o);
	}
	fgk_kallsyms_origin_clear(&o);
	return 0;
}

/* The seed: the dump's FGKASLR_SEED, else the options; sets shuffle. */
static int choose_seed(struct crash_run *c)
{
	struct cli_target *t = &c->t;
	bool option = t->seed_text || t->seed_file;
	char hex[FGK_SEED_HEX_LEN + 1];
	int rc;

	if (option && (rc = read_seed_option(t)))
		return rc;
	switch (c->vi.seed_state) {
	case FGK_VMCORE_SEED_PRESENT:
		if (option && memcmp(&t->seed, &c->vi.seed, sizeof(t->seed))) {
			fgk_seed_format(&c->vi.seed, hex);
			return cli_errorf("%s: the dump says FGKASLR_SEED=%s, which differs from %s; drop the option",
					  c->dump, hex, t->seed_text ? "--seed" : "--seed-file");
		}
		t->seed = c->vi.seed;
		c->shuffle = true;
		c->seed_src = "VMCOREINFO";
		return 0;
	case FGK_VMCORE_SEED_DISABLED:
		c->seed_src = "disabled in VMCOREINFO";
		if (!c->quiet && option)
			fprintf(stderr, "fgk crash: FG-KASLR was disabled in that boot (FGKASLR_SEED=disabled); ignoring the seed option\n");
		return 0;
	default:
		break;
	}
	if (option) {
		c->shuffle = true;
		c->seed_src = t->seed_text ? "--seed" : "--seed-file";
		if (!c->quiet)
			fprintf(stderr, "fgk crash: %s: %s; using the seed of %s\n", c->dump,
				c->have_vmcoreinfo ? "no FGKASLR_SEED in VMCOREINFO" : "no VMCOREINFO",
				c->seed_src);
		return 0;
	}
	if (c->is_fg && c->have_vmcoreinfo)
		return layout_from_dump(c);
	if (c->is_fg)
		return cli_errorf("%s: %s, and vmlinux '%s' is an FG-KASLR kernel: give --seed SEED or --seed-file RECORD",
				  c->dump, "no VMCOREINFO", t->vmlinux);
	c->seed_src = "none (vmlinux has no .text.* sections)";
	return 0;
}

/* crash's --kaslr=: the dump's KERNELOFFSET, else the record's offset, else auto. */
static void choose_kaslr(struct crash_run *c)
{
	if (c->vi.has_offset)
		snprintf(c->kaslr, sizeof(c->kaslr), "--kaslr=%#llx",
			 (unsigned long long)c->vi.offset);
	else if (c->t.seed_file && c->t.rec.has_offset)
		snprintf(c->kaslr, sizeof(c->kaslr), "--kaslr=%#llx",
			 (unsigned long long)c->t.rec.offset);
	else
		snprintf(c->kaslr, sizeof(c->kaslr), "--kaslr=auto");
	if (!strcmp(c->kaslr, "--kaslr=0"))
		snprintf(c->kaslr, sizeof(c->kaslr), "--kaslr=0x0");
}

/* $TMPDIR/fgk-crash-<uid> (made private by its users), or NULL. */
char *crash_private_tmp_dir(void)
{
	const char *tmp = getenv("TMPDIR");
	char *dir;

	if (asprintf(&dir, "%s/fgk-crash-%u", tmp && *tmp ? tmp : "/tmp",
		     (unsigned)geteuid()) < 0)
		return NULL;
	return dir;
}

/*
 * The vmlinux crash gets: vmlinux itself, or its relink for the seed (or
 * the layout from the dump's kallsyms) through the relink cache
 * (fgk_relink_through_cache).  Without a usable cache, or without a seed:
 * $TMPDIR/fgk-crash-<uid>/, a 0700 directory of this user (the name is
 * the seed; /tmp is world-readable).  With -n nothing is written: the
 * path is where it would be.
 */
static int relink_target(struct crash_run *c)
{
	struct fgk_relink_result res;
	struct fgk_layout *seeded = NULL;
	struct fgk_error *err = NULL;
	char *fallback;

	c->target = c->t.vmlinux;
	if (!c->shuffle)
		return 0;
	fallback = crash_private_tmp_dir();
	if (!fallback)
		return cli_fail(&fgk_enomem);
	if (!c->layout)
		err = fgk_layout_compute(c->t.vm, &c->t.seed, &seeded);
	if (!err)
		err = fgk_relink_through_cache(c->t.vm, c->layout ? c->layout : seeded,
					       fallback, c->dry ? FGK_RELINK_DRY_RUN : 0,
					       &res);
	free(fallback);
	fgk_layout_free(seeded);
	if (err)
		return cli_fail(err);
	c->fgk_path = res.path;
	c->cached = res.cached;
	res.path = NULL;
	fgk_relink_result_clear(&res);
	c->target = c->fgk_path;
	return 0;
}

/* What was found, on stderr (unless -q). */
static void describe(const struct crash_run *c)
{
	const struct fgk_vmcoreinfo *vi = &c->vi;
	char hex[FGK_SEED_HEX_LEN + 1];

	if (c->quiet)
		return;
	if (c->shuffle)
		fgk_seed_format(&c->t.seed, hex);
	if (c->layout)
		snprintf(hex, sizeof(hex), "unknown");
	fprintf(stderr, "fgk crash: %s (%s): release %s, build-id %s, seed %s (%s), %s\n",
		c->dump, fgk_vmcore_format_name(vi->format),
		vi->osrelease ? vi->osrelease : "?", vi->build_id ? vi->build_id : "?",
		c->shuffle ? hex : "-", c->seed_src, c->kaslr + 2);
	fprintf(stderr, "fgk crash: vmlinux %s%s%s%s\n", c->target,
		!c->shuffle ? "" : c->cached ? " (cached relink of " :
		c->dry ? " (not written, -n: a relink of " : " (relinked from ",
		c->shuffle ? c->t.vmlinux : "", c->shuffle ? ")" : "");
}

/*
 * crash as a child, when fgk has files to remove afterwards (the module
 * links): its exit status, 128 + the signal that killed it.  The terminal's
 * ^C and ^\\ are crash's: fgk ignores them while it waits.
 */
static int run_crash(struct crash_run *c, char **av)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_int, old_quit;
	int status, rc;
	pid_t pid;

	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	pid = fork();
	if (pid == 0) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGQUIT, &old_quit, NULL);
		execvp(c->crash, av);
		fprintf(stderr, "fgk: cannot run '%s': %s (install the Debian package crash, or set --crash/FGK_CRASH)\n",
			c->crash, strerror(errno));
		_exit(1);
	}
	if (pid < 0) {
		rc = cli_errorf("cannot run '%s': %s", c->crash, strerror(errno));
	} else {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	return rc;
}

/* Run crash (or, with -n, print its command line); returns on failure only. */
static int exec_crash(struct crash_run *c)
{
	char **av = calloc(c->nextra + 8, sizeof(*av));
	int n = 0, rc;

	if (!av)
		return cli_fail(&fgk_enomem);
	av[n++] = (char *)c->crash;
	av[n++] = c->kaslr;
	if (c->input) {
		av[n++] = (char *)"-i";
		av[n++] = (char *)c->input;
	}
	for (int i = 0; i < c->nextra; i++)
		av[n++] = c->extra[i];
	av[n++] = (char *)c->target;
	av[n++] = (char *)c->dump;
	av[n] = NULL;
	if (c->dry) {
		for (int i = 0; i < n; i++) {
			if (i)
				putchar(' ');
			shell_quote(stdout, av[i]);
		}
		putchar('\n');
		free(av);
		return cli_finish_stdout(0);
	}
	fflush(stdout);
	fflush(stderr);
	if (c->mod_tmp) {
		rc = run_crash(c, av);
		free(av);
		return rc;
	}
	execvp(c->crash, av);
	rc = cli_errorf("cannot run '%s': %s (install the Debian package crash, or set --crash/FGK_CRASH)",
			c->crash, strerror(errno));
	free(av);
	return rc;
}

static int run(int argc, char **argv)
{
	struct crash_run c = { 0 };
	int rc = parse_args(&c, argc, argv);

	if (rc >= 0)
		return rc;
	rc = read_dump(&c);
	if (rc)
		return rc;
	if (c.info_only) {
		if (c.json != CLI_TEXT)
			print_info_json(c.json, c.dump, &c.vi);
		else
			print_info(stdout, c.dump, &c.vi);
		fgk_vmcoreinfo_clear(&c.vi);
		return cli_finish_stdout(0);
	}
	rc = open_vmlinux(&c);
	if (!rc)
		rc = check_kind(&c);
	if (!rc)
		rc = choose_seed(&c);
	if (!rc) {
		choose_kaslr(&c);
		rc = relink_target(&c);
	}
	if (!rc)
		rc = crash_prepare_modules(&c);
	if (!rc) {
		describe(&c);
		rc = exec_crash(&c);
	}
	crash_cleanup_modules(&c);
	free(c.fgk_path);
	fgk_layout_free(c.layout);
	fgk_vmcoreinfo_clear(&c.vi);
	if (c.t.vmlinux && c.t.vm && c.t.vmlinux == fgk_vmlinux_path(c.t.vm))
		c.t.vmlinux = NULL;
	cli_target_close(&c.t);
	return rc;
}

const struct cli_cmd cmd_crash = {
	.name = "crash",
	.summary = "open a crash dump of a shuffled kernel in crash(8)",
	.help = help,
	.run = run,
};
