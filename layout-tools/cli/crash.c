// SPDX-License-Identifier: GPL-2.0
/* fgk crash: open a crash dump of a shuffled kernel in the crash utility. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char help[] =
"usage: fgk crash VMCORE [VMLINUX] [-i FILE] [--seed SEED | --seed-file RECORD]\n"
"                 [--crash PROGRAM] [-n] [-q] [-- CRASH-ARGS...]\n"
"       fgk crash --info VMCORE\n"
"\n"
"Read the dump's VMCOREINFO (ELF core: the VMCOREINFO PT_NOTE; kdump-\n"
"compressed, flattened or not: via libkdumpfile) for FGKASLR_SEED, BUILD-ID,\n"
"KERNELOFFSET and OSRELEASE; check VMLINUX against the dump's build-id\n"
"(refusing another build); relink it in the dump's function order\n"
"(vmlinux.fgk, cached like 'fgk relink'); then run\n"
"\n"
"    crash --kaslr=0xKERNELOFFSET [-i FILE] [CRASH-ARGS] vmlinux.fgk VMCORE\n"
"\n"
"(--kaslr=auto when the dump does not say).  Without VMLINUX, the vmlinux\n"
"with the dump's build-id is looked for next to the dump, in ./vmlinux,\n"
"build/kernel/vmlinux of the tree fgk was built in, /usr/lib/debug and\n"
"/lib/modules/RELEASE/build.\n"
"\n"
"A dump without VMCOREINFO or without FGKASLR_SEED (a kernel without the\n"
"FG-KASLR series) needs --seed or --seed-file; a vmlinux without .text.*\n"
"sections is used as it is.  FGKASLR_SEED=disabled: vmlinux as it is.\n"
"\n"
"-i FILE            crash runs the commands in FILE (then its prompt, unless\n"
"                   FILE ends with 'exit')\n"
"--seed SEED        seed for dumps that do not carry FGKASLR_SEED\n"
"--seed-file RECORD seed record (docs/seed-records.md), ditto; its build-id\n"
"                   must match and its offset is used when the dump has none\n"
"--crash PROGRAM    the crash binary (default: $FGK_CRASH, else crash)\n"
"-n, --dry-run      print the crash command line instead of running it\n"
"-q, --quiet        do not describe the dump on stderr\n"
"--info             print what the dump's VMCOREINFO says and exit\n"
"-- CRASH-ARGS      passed to crash before the file names\n";

enum { OPT_CRASH = 0x300, OPT_INFO };

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

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	return strndup(path, slash == path ? 1 : (size_t)(slash - path));
}

/*
 * Look for the vmlinux whose build-id is build_id.  Returns the opened
 * vmlinux or NULL; *tried collects the candidates that exist.
 */
static struct fgk_vmlinux *find_vmlinux(const char *dump, const char *build_id,
					const char *release, char *tried,
					size_t tried_len)
{
	char *cands[12] = { 0 }, exe[PATH_MAX];
	size_t n = 0;
	ssize_t len;
	char *d = dir_of(dump);
	struct fgk_vmlinux *found = NULL;

	tried[0] = '\0';
	if (d && asprintf(&cands[n], "%s/vmlinux", d) >= 0)
		n++;
	free(d);
	cands[n++] = strdup("vmlinux");
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len > 0) {
		exe[len] = '\0';
		d = dir_of(exe);	/* build/bin */
		if (d) {
			char *up = strrchr(d, '/');	/* build/bin -> build */

			if (up && up != d) {
				*up = '\0';
				if (asprintf(&cands[n], "%s/kernel/vmlinux", d) >= 0)
					n++;
			}
		}
		free(d);
	}
	if (strlen(build_id) > 2 &&
	    asprintf(&cands[n], "/usr/lib/debug/.build-id/%.2s/%s.debug",
		     build_id, build_id + 2) >= 0)
		n++;
	if (release) {
		if (asprintf(&cands[n], "/usr/lib/debug/boot/vmlinux-%s", release) >= 0)
			n++;
		if (asprintf(&cands[n], "/usr/lib/debug/lib/modules/%s/vmlinux", release) >= 0)
			n++;
		if (asprintf(&cands[n], "/lib/modules/%s/build/vmlinux", release) >= 0)
			n++;
	}
	for (size_t i = 0; i < n && !found; i++) {
		struct fgk_vmlinux *vm;
		struct fgk_error *err;
		const char *id;

		if (!cands[i] || access(cands[i], R_OK) != 0)
			continue;
		err = fgk_vmlinux_open(cands[i], &vm);
		if (err) {
			fgk_error_free(err);
			continue;
		}
		id = fgk_vmlinux_build_id(vm);
		if (id && !strcmp(id, build_id)) {
			found = vm;
			break;
		}
		snprintf(tried + strlen(tried), tried_len - strlen(tried), "%s%s (%s)",
			 tried[0] ? ", " : "", cands[i], id ? id : "no build-id");
		fgk_vmlinux_close(vm);
	}
	for (size_t i = 0; i < n; i++)
		free(cands[i]);
	return found;
}

/*
 * Is vm laid out for FG-KASLR (has randomized .text.* sections)?  And was
 * it relinked already (a vmlinux.fgk: the linker leaves the .text.*
 * sections in increasing address order by section index, a relink does
 * not)?
 */
static struct fgk_error *is_fgkaslr(struct fgk_vmlinux *vm, bool *ret,
				    bool *relinked)
{
	struct fgk_seed zero = { { 0 } };
	struct fgk_layout *l = NULL;
	struct fgk_error *err = fgk_layout_compute(vm, &zero, &l);

	*ret = true;
	*relinked = false;
	if (l) {
		for (size_t i = 1; i < l->n; i++) {
			if (l->secs[i].addr < l->secs[i - 1].addr) {
				*relinked = true;
				break;
			}
		}
	}
	fgk_layout_free(l);
	if (err && err->code == FGK_ERR_NOT_FGKASLR) {
		fgk_error_free(err);
		*ret = false;
		return NULL;
	}
	if (err && err->code == FGK_ERR_NO_FIT) {	/* laid out, just not this seed */
		fgk_error_free(err);
		return NULL;
	}
	return err;
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

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_TARGET_OPTIONS,
		{ "crash", required_argument, NULL, OPT_CRASH },
		{ "info", no_argument, NULL, OPT_INFO },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "quiet", no_argument, NULL, 'q' },
		{ 0 },
	};
	struct cli_target t = { 0 };
	struct fgk_vmcoreinfo vi = { 0 };
	struct fgk_error *err;
	const char *dump = NULL, *input = NULL, *crash = getenv("FGK_CRASH");
	const char *seed_src = NULL, *target;
	char **extra = NULL, *fgk_path = NULL, *fallback = NULL;
	char kaslr[64], hex[FGK_SEED_HEX_LEN + 1], tried[4096];
	bool info_only = false, dry = false, quiet = false, have_vmcoreinfo = true;
	bool shuffle = false, cached = false, is_fg = false;
	int nopt = argc, nextra = 0, opt, rc = 1;

	if (!crash || !*crash)
		crash = "crash";
	/* everything after "--" goes to crash untouched */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			nopt = i;
			extra = argv + i + 1;
			nextra = argc - i - 1;
			break;
		}
	}
	optind = 1;
	while ((opt = getopt_long(nopt, argv, "hi:nq", opts, NULL)) != -1) {
		if (cli_target_option(&t, opt, optarg))
			continue;
		switch (opt) {
		case 'h':
			return cli_help(&cmd_crash);
		case 'i':
			input = optarg;
			break;
		case 'n':
			dry = true;
			break;
		case 'q':
			quiet = true;
			break;
		case OPT_CRASH:
			crash = optarg;
			break;
		case OPT_INFO:
			info_only = true;
			break;
		default:
			return cli_usage_error(&cmd_crash, "bad option");
		}
	}
	if (optind < nopt)
		dump = argv[optind++];
	if (optind < nopt)
		t.vmlinux = argv[optind++];
	if (optind < nopt)
		return cli_usage_error(&cmd_crash, "unexpected argument '%s'", argv[optind]);
	if (!dump)
		return cli_usage_error(&cmd_crash, "missing VMCORE");
	if (t.seed_text && t.seed_file)
		return cli_usage_error(&cmd_crash, "give --seed or --seed-file, not both");
	if (input && access(input, R_OK) != 0)
		return cli_errorf("-i %s: %s", input, strerror(errno));

	err = fgk_vmcore_read(dump, &vi);
	if (err && err->code == FGK_ERR_NO_VMCOREINFO && !info_only) {
		char buf[1024];

		if (!quiet)
			fprintf(stderr, "fgk crash: %s; falling back to --seed/--seed-file\n",
				fgk_error_string(err, buf, sizeof(buf)));
		fgk_error_free(err);
		err = NULL;
		have_vmcoreinfo = false;
	}
	if (err)
		return cli_fail(err);
	if (info_only) {
		print_info(stdout, dump, &vi);
		fgk_vmcoreinfo_clear(&vi);
		return cli_finish_stdout(0);
	}

	/* the vmlinux, checked against the dump's build-id */
	if (t.vmlinux) {
		err = fgk_vmlinux_open(t.vmlinux, &t.vm);
		if (err) {
			rc = cli_fail(err);
			goto out;
		}
	} else if (vi.build_id) {
		t.vm = find_vmlinux(dump, vi.build_id, vi.osrelease, tried, sizeof(tried));
		if (!t.vm) {
			rc = cli_errorf("%s: no vmlinux with the dump's build-id %s found%s%s; give VMLINUX",
					dump, vi.build_id, tried[0] ? "; tried " : "", tried);
			goto out;
		}
		t.vmlinux = fgk_vmlinux_path(t.vm);
	} else {
		rc = cli_usage_error(&cmd_crash, "the dump does not name its build-id: give VMLINUX");
		goto out;
	}
	{
		const char *id = fgk_vmlinux_build_id(t.vm);

		if (vi.build_id && id && strcmp(id, vi.build_id)) {
			rc = cli_errorf("vmlinux '%s' (build-id %s) is not the kernel of dump '%s' (build-id %s): give the vmlinux of that build",
					t.vmlinux, id, dump, vi.build_id);
			goto out;
		}
		if (!quiet && have_vmcoreinfo && (!vi.build_id || !id))
			fprintf(stderr, "fgk crash: warning: cannot check that '%s' belongs to the dump (%s has no build-id)\n",
				t.vmlinux, !id ? "vmlinux" : "the dump");
	}

	/* a vmlinux.fgk given as VMLINUX would be shuffled twice */
	{
		bool fg, relinked;

		err = is_fgkaslr(t.vm, &fg, &relinked);
		if (err) {
			rc = cli_fail(err);
			goto out;
		}
		if (fg && relinked) {
			rc = cli_errorf("vmlinux '%s' is already relinked (a vmlinux.fgk): give the original vmlinux, fgk crash relinks it for the dump",
					t.vmlinux);
			goto out;
		}
		is_fg = fg;
	}

	/* the seed */
	if (t.seed_text || t.seed_file) {
		if (t.seed_text) {
			err = fgk_seed_parse(t.seed_text, &t.seed);
		} else {
			err = fgk_seed_record_read(t.seed_file, &t.rec);
			if (!err)
				err = fgk_seed_record_check(&t.rec, t.seed_file, t.vm);
			t.seed = t.rec.seed;
		}
		if (err) {
			rc = cli_fail(err);
			goto out;
		}
	}
	if (vi.seed_state == FGK_VMCORE_SEED_PRESENT) {
		if ((t.seed_text || t.seed_file) &&
		    memcmp(&t.seed, &vi.seed, sizeof(t.seed))) {
			fgk_seed_format(&vi.seed, hex);
			rc = cli_errorf("%s: the dump says FGKASLR_SEED=%s, which differs from %s; drop the option",
					dump, hex, t.seed_text ? "--seed" : "--seed-file");
			goto out;
		}
		t.seed = vi.seed;
		shuffle = true;
		seed_src = "VMCOREINFO";
	} else if (vi.seed_state == FGK_VMCORE_SEED_DISABLED) {
		seed_src = "disabled in VMCOREINFO";
		if (!quiet && (t.seed_text || t.seed_file))
			fprintf(stderr, "fgk crash: FG-KASLR was disabled in that boot (FGKASLR_SEED=disabled); ignoring the seed option\n");
	} else if (t.seed_text || t.seed_file) {
		shuffle = true;
		seed_src = t.seed_text ? "--seed" : "--seed-file";
		if (!quiet)
			fprintf(stderr, "fgk crash: %s: %s; using the seed of %s\n", dump,
				have_vmcoreinfo ? "no FGKASLR_SEED in VMCOREINFO" : "no VMCOREINFO",
				seed_src);
	} else {
		if (is_fg) {
			rc = cli_errorf("%s: %s, and vmlinux '%s' is an FG-KASLR kernel: give --seed SEED or --seed-file RECORD",
					dump, have_vmcoreinfo ? "no FGKASLR_SEED in its VMCOREINFO" : "no VMCOREINFO",
					t.vmlinux);
			goto out;
		}
		seed_src = "none (vmlinux has no .text.* sections)";
	}

	/* the base offset */
	if (vi.has_offset)
		snprintf(kaslr, sizeof(kaslr), "--kaslr=%#llx", (unsigned long long)vi.offset);
	else if (t.seed_file && t.rec.has_offset)
		snprintf(kaslr, sizeof(kaslr), "--kaslr=%#llx", (unsigned long long)t.rec.offset);
	else
		snprintf(kaslr, sizeof(kaslr), "--kaslr=auto");
	if (!strcmp(kaslr, "--kaslr=0"))
		snprintf(kaslr, sizeof(kaslr), "--kaslr=0x0");

	target = t.vmlinux;
	if (shuffle) {
		const char *tmp = getenv("TMPDIR");

		fgk_seed_format(&t.seed, hex);
		if (asprintf(&fallback, "%s/fgk-crash-%s.vmlinux.fgk",
			     tmp && *tmp ? tmp : "/tmp", hex) < 0) {
			rc = cli_fail(&fgk_enomem);
			goto out;
		}
		rc = cli_relink_cached(t.vm, &t.seed, fallback, &fgk_path, &cached);
		if (rc)
			goto out;
		target = fgk_path;
	}
	if (!quiet) {
		if (shuffle)
			fgk_seed_format(&t.seed, hex);
		fprintf(stderr, "fgk crash: %s (%s): release %s, build-id %s, seed %s (%s), %s\n",
			dump, fgk_vmcore_format_name(vi.format),
			vi.osrelease ? vi.osrelease : "?", vi.build_id ? vi.build_id : "?",
			shuffle ? hex : "-", seed_src, kaslr + 2);
		fprintf(stderr, "fgk crash: vmlinux %s%s%s%s\n", target,
			shuffle ? (cached ? " (cached relink of " : " (relinked from ") : "",
			shuffle ? t.vmlinux : "", shuffle ? ")" : "");
	}

	{
		char **av = calloc(nextra + 8, sizeof(*av));
		int n = 0;

		if (!av) {
			rc = cli_fail(&fgk_enomem);
			goto out;
		}
		av[n++] = (char *)crash;
		av[n++] = kaslr;
		if (input) {
			av[n++] = (char *)"-i";
			av[n++] = (char *)input;
		}
		for (int i = 0; i < nextra; i++)
			av[n++] = extra[i];
		av[n++] = (char *)target;
		av[n++] = (char *)dump;
		av[n] = NULL;
		if (dry) {
			for (int i = 0; i < n; i++) {
				if (i)
					putchar(' ');
				shell_quote(stdout, av[i]);
			}
			putchar('\n');
			free(av);
			rc = cli_finish_stdout(0);
			goto out;
		}
		fflush(stdout);
		fflush(stderr);
		execvp(crash, av);
		rc = cli_errorf("cannot run '%s': %s (install the Debian package crash, or set --crash/FGK_CRASH)",
				crash, strerror(errno));
		free(av);
	}
out:
	free(fgk_path);
	free(fallback);
	fgk_vmcoreinfo_clear(&vi);
	if (t.vmlinux && t.vm && t.vmlinux == fgk_vmlinux_path(t.vm))
		t.vmlinux = NULL;
	cli_target_close(&t);
	return rc;
}

const struct cli_cmd cmd_crash = {
	.name = "crash",
	.summary = "open a crash dump of a shuffled kernel in crash(8)",
	.help = help,
	.run = run,
};
