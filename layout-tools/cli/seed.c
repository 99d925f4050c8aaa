// SPDX-License-Identifier: GPL-2.0
/* fgk seed: parse, generate, record and show seeds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
"usage: fgk seed parse [--json | --pretty] [TEXT]\n"
"       fgk seed random [--json | --pretty]\n"
"       fgk seed record (--seed SEED | --seed-file RECORD) --vmlinux VMLINUX\n"
"                       [--offset BASE] [--note NOTE] [--json | --pretty] [-o FILE]\n"
"       fgk seed show FILE [--vmlinux VMLINUX | --fetch] [--json | --pretty]\n"
"       fgk seed capture (--vmcore DUMP | --text FILE | --oops FILE --vmlinux VMLINUX)\n"
"                        [--note NOTE] [--json | --pretty] [-o FILE]\n"
"                        (see 'fgk seed capture --help')\n"
"\n"
"parse   check seed text and print it canonically (64 lowercase hex digits).\n"
"        Accepts the /proc/fgkaslr_seed text, 'fgkaslr_seed=<64 hex>', or the\n"
"        digits; reads stdin when TEXT is absent.\n"
"random  print a fresh random seed (getrandom).\n"
"record  write a seed record (docs/seed-records.md) with the build-id and\n"
"        release of VMLINUX; -o FILE is written atomically, mode 0600 (the\n"
"        seed gives every function address), default stdout.\n"
"show    print a record in canonical form; with --vmlinux, refuse it if its\n"
"        build-id differs from VMLINUX's.  --fetch: look the vmlinux of the\n"
"        record's build-id up (/usr/lib/debug, /lib/modules/RELEASE/build,\n"
"        then debuginfod with $DEBUGINFOD_URLS set), check it, name it on\n"
"        stderr.\n"
"--json, --pretty  one JSON object instead of the text (compact, or\n"
"        indented): parse and random {seed}; record, show and capture the\n"
"        record's fields {seed, build_id, release, offset, note, ...}\n"
"        (docs/fgk-seed.1.md).  With -o FILE, FILE still gets the record.\n";

static const struct option json_opts[] = {
	CLI_JSON_OPTIONS,
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

/* parse [TEXT] and random (argv[0]): a seed, as text or JSON. */
static int do_parse_random(int argc, char **argv)
{
	bool parse = !strcmp(argv[0], "parse");
	enum cli_output out = CLI_TEXT;
	char hex[FGK_SEED_HEX_LEN + 1];
	struct fgk_seed seed;
	struct fgk_error *err;
	int opt;

	optind = 1;
	while ((opt = cli_getopt(&cmd_seed, argc, argv, "h", json_opts)) != -1) {
		if (cli_json_option(&out, opt))
			continue;
		if (opt == 'h')
			return cli_help(&cmd_seed);
		return cli_usage_error(&cmd_seed, "bad option");
	}
	if (argc - optind > parse)
		return cli_usage_error(&cmd_seed, parse ? "parse takes one TEXT"
					       : "random takes no arguments");
	if (!parse) {
		err = fgk_seed_random(&seed);
	} else if (optind < argc) {
		err = fgk_seed_parse(argv[optind], &seed);
	} else {
		/* all of it: a seed followed by anything else is not a seed */
		char *buf;
		size_t n;

		if (cli_read_text("-", 1 << 16, &buf, &n))
			return 1;
		err = fgk_seed_parse(buf, &seed);
		free(buf);
		if (err)
			return cli_fail_in(err, "stdin");
	}
	if (err)
		return cli_fail(err);
	if (out != CLI_TEXT) {
		struct json j;

		cli_json_init(&j, out);
		json_start_object(&j);
		cli_json_seed_field(&j, "seed", &seed);
		json_end_object(&j);
	} else {
		fgk_seed_format(&seed, hex);
		puts(hex);
	}
	return cli_finish_stdout(0);
}

enum { OPT_VMLINUX = 0x200, OPT_NOTE, OPT_FETCH };

static int do_record(int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_TARGET_OPTIONS,
		{ "offset", required_argument, NULL, OPT_OFFSET },
		{ "vmlinux", required_argument, NULL, OPT_VMLINUX },
		{ "note", required_argument, NULL, OPT_NOTE },
		{ "output", required_argument, NULL, 'o' },
		CLI_JSON_OPTIONS,
		{ 0 },
	};
	enum cli_output json = CLI_TEXT;
	struct cli_target t = { 0 };
	struct fgk_seed_record rec = { 0 };
	const char *note = NULL, *output = NULL;
	struct fgk_error *err;
	int opt, rc;

	optind = 1;
	while ((opt = cli_getopt(&cmd_seed, argc, argv, "ho:", opts)) != -1) {
		if (cli_target_option(&t, opt, optarg) || cli_json_option(&json, opt))
			continue;
		switch (opt) {
		case 'h':
			return cli_help(&cmd_seed);
		case OPT_VMLINUX:
			t.vmlinux = optarg;
			break;
		case OPT_NOTE:
			note = optarg;
			break;
		case 'o':
			output = optarg;
			break;
		default:
			return cli_usage_error(&cmd_seed, "bad option");
		}
	}
	if (optind < argc)
		return cli_usage_error(&cmd_seed, "unexpected argument '%s'", argv[optind]);
	if (!t.vmlinux)
		return cli_usage_error(&cmd_seed, "record needs --vmlinux VMLINUX");
	{
		const char *inputs[] = { t.vmlinux, t.seed_file };

		if (cli_check_output(output, inputs, 2))
			return 1;
	}
	rc = cli_target_open(&cmd_seed, &t);
	if (rc)
		goto out;
	rec.seed = t.seed;
	rec.build_id = (char *)fgk_vmlinux_build_id(t.vm);
	rec.release = (char *)fgk_vmlinux_release(t.vm);
	rec.has_offset = t.have_offset;
	rec.offset = t.offset;
	rec.note = (char *)(note ? note : t.rec.note);
	if (!rec.build_id)
		fprintf(stderr, "fgk: %s: warning: no GNU build-id note; the record cannot be checked against it\n",
			t.vmlinux);
	if (output) {
		err = fgk_seed_record_write(&rec, output);
		rc = err ? cli_fail(err) : 0;
	}
	if (json != CLI_TEXT && !rc) {
		struct json j;

		cli_json_init(&j, json);
		json_start_object(&j);
		cli_json_record_fields(&j, &rec);
		json_string_field(&j, "vmlinux", t.vmlinux);
		json_string_field(&j, "output", output);
		json_end_object(&j);
		rc = cli_finish_stdout(0);
	} else if (!output) {
		char *text;

		err = fgk_seed_record_format(&rec, &text);
		if (err) {
			rc = cli_fail(err);
		} else {
			fputs(text, stdout);
			free(text);
			rc = cli_finish_stdout(0);
		}
	}
out:
	cli_target_close(&t);
	return rc;
}

static int do_show(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "vmlinux", required_argument, NULL, OPT_VMLINUX },
		{ "fetch", no_argument, NULL, OPT_FETCH },
		{ "help", no_argument, NULL, 'h' },
		CLI_JSON_OPTIONS,
		{ 0 },
	};
	const char *vmlinux = NULL, *path;
	char *checked = NULL;	/* the vmlinux the record was checked against */
	enum cli_output out = CLI_TEXT;
	struct fgk_seed_record rec;
	bool fetch = false;
	struct fgk_error *err;
	char *text;
	int opt;

	optind = 1;
	while ((opt = cli_getopt(&cmd_seed, argc, argv, "h", opts)) != -1) {
		if (cli_json_option(&out, opt))
			continue;
		if (opt == 'h')
			return cli_help(&cmd_seed);
		if (opt == OPT_VMLINUX)
			vmlinux = optarg;
		else if (opt == OPT_FETCH)
			fetch = true;
		else
			return cli_usage_error(&cmd_seed, "bad option");
	}
	if (optind + 1 != argc)
		return cli_usage_error(&cmd_seed, "show needs exactly one FILE");
	if (fetch && vmlinux)
		return cli_usage_error(&cmd_seed, "give --vmlinux or --fetch, not both");
	path = argv[optind];
	err = fgk_seed_record_read(path, &rec);
	if (err)
		return cli_fail(err);
	if (fetch) {
		struct fgk_vmlinux *vm;
		char *found;
		int rc;

		if (!rec.build_id) {
			fgk_seed_record_clear(&rec);
			return cli_errorf("%s: the record has no build-id to look its vmlinux up by",
					  path);
		}
		rc = cli_vmlinux_by_build_id(NULL, rec.build_id, rec.release, &vm, &found);
		if (rc) {
			fgk_seed_record_clear(&rec);
			return rc;
		}
		err = fgk_seed_record_check(&rec, path, vm);
		fgk_vmlinux_close(vm);
		if (!err)
			fprintf(stderr, "fgk: %s: vmlinux %s matches\n", path, found);
		checked = found;
		if (err) {
			free(checked);
			fgk_seed_record_clear(&rec);
			return cli_fail(err);
		}
	}
	if (vmlinux) {
		struct fgk_vmlinux *vm;

		err = fgk_vmlinux_open(vmlinux, &vm);
		if (!err) {
			err = fgk_seed_record_check(&rec, path, vm);
			fgk_vmlinux_close(vm);
		}
		if (err) {
			fgk_seed_record_clear(&rec);
			return cli_fail(err);
		}
	}
	if (out != CLI_TEXT) {
		struct json j;

		cli_json_init(&j, out);
		json_start_object(&j);
		cli_json_record_fields(&j, &rec);
		json_string_field(&j, "vmlinux", checked ? checked : vmlinux);
		json_end_object(&j);
		free(checked);
		fgk_seed_record_clear(&rec);
		return cli_finish_stdout(0);
	}
	free(checked);
	err = fgk_seed_record_format(&rec, &text);
	fgk_seed_record_clear(&rec);
	if (err)
		return cli_fail(err);
	fputs(text, stdout);
	free(text);
	return cli_finish_stdout(0);
}

static int run(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error(&cmd_seed, "missing subcommand (parse, random, record, show, capture)");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return cli_help(&cmd_seed);
	if (!strcmp(argv[1], "parse") || !strcmp(argv[1], "random"))
		return do_parse_random(argc - 1, argv + 1);
	if (!strcmp(argv[1], "record"))
		return do_record(argc - 1, argv + 1);
	if (!strcmp(argv[1], "show"))
		return do_show(argc - 1, argv + 1);
	if (!strcmp(argv[1], "capture"))	/* cli/capture.c */
		return cli_seed_capture(argc - 1, argv + 1);
	return cli_usage_error(&cmd_seed, "unknown subcommand '%s'", argv[1]);
}

const struct cli_cmd cmd_seed = {
	.name = "seed",
	.summary = "parse, generate, record and show FG-KASLR seeds",
	.help = help,
	.run = run,
};
