// SPDX-License-Identifier: GPL-2.0
/* fgk addr: runtime address <-> link address / symbol+offset. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
"usage: fgk addr [VMLINUX] (--seed SEED | --seed-file RECORD | --kallsyms FILE)\n"
"                [--build-id HEX] [--offset BASE]\n"
"                [--json | --pretty] [ADDR | SYMBOL[+OFF]]...\n"
"\n"
"Translate between the booted kernel's runtime addresses and VMLINUX.\n"
"Items come from the command line, or one per line from stdin if none.\n"
"An item is an ADDRESS if it is hex with a 0x prefix or exactly 16 hex\n"
"digits (as /proc/kallsyms and oopses print them; '[<...>]' is stripped);\n"
"otherwise it is SYMBOL, SYMBOL+OFF or SYMBOL+OFF/SIZE (OFF hex).\n"
"\n"
"Output, one tab-separated line per item:\n"
"  ITEM  RUNTIME  LINK  SYMBOL+0xOFF/0xSIZE  SECTION\n"
"RUNTIME = new address + BASE; LINK = address in VMLINUX; SECTION is the\n"
"randomized .text.* section holding it, or '-' if the address is not moved.\n"
"An item that cannot be translated (outside the kernel, in the int3 padding\n"
"between shuffled functions, unknown symbol) gets a one-line error on stderr\n"
"and the exit status is 1; the other items are still translated.\n"
"\n"
"--json, --pretty  one JSON object per item instead (JSON Lines; compact, or\n"
"         indented): item, runtime, link, symbol, offset, size, section,\n"
"         error (docs/fgk-addr.1.md).  A failed item has its error there\n"
"         too, and still on stderr.\n"
"\n"
"Without VMLINUX (--build-id, or a seed record's build-id) the first item is\n"
"taken as VMLINUX only if it is an ELF file.\n"
"\n"
CLI_TARGET_HELP
"--offset BASE       base KASLR offset (hex); default the record's or the\n"
"                    --kallsyms capture's, else 0\n";

/* The item as one JSON object (docs/fgk-addr.1.md, JSON OUTPUT). */
static void item_json(enum cli_output out, const char *item,
		      const struct fgk_addr *a, const char *err)
{
	struct json j;

	cli_json_init(&j, out);
	json_start_object(&j);
	json_string_field(&j, "item", err ? item : a->item);
	if (err) {
		json_null_field(&j, "runtime");
		json_null_field(&j, "link");
	} else {
		json_addr_field(&j, "runtime", a->runtime);
		json_addr_field(&j, "link", a->link);
	}
	json_string_field(&j, "symbol", !err && a->has_symbol ? a->sym.name : NULL);
	if (!err && a->has_symbol) {
		json_hex_field(&j, "offset", a->link - a->sym.addr);
		json_hex_field(&j, "size", a->sym.size);
	} else {
		json_null_field(&j, "offset");
		json_null_field(&j, "size");
	}
	json_string_field(&j, "section", !err && a->section ? a->section->name : NULL);
	json_string_field(&j, "error", err);
	json_end_object(&j);
}

/* One item: its line on stdout, or a one-line error (returns 1). */
static int one(struct cli_target *t, const struct fgk_layout *l,
	       const char *item, enum cli_output out)
{
	struct fgk_addr a;
	struct fgk_error *err = fgk_addr_translate(t->vm, l, t->offset, item, &a);
	char buf[2048];

	if (out != CLI_TEXT && (err || a.item))
		item_json(out, item, &a,
			  err ? fgk_error_string(err, buf, sizeof(buf)) : NULL);
	if (err)
		return cli_fail(err);
	if (a.line && out == CLI_TEXT)
		puts(a.line);
	fgk_addr_clear(&a);
	return 0;
}

/* A line of stdin: an item, or too long to be one (returns 1). */
static int stdin_item(struct cli_target *t, const struct fgk_layout *l,
		      const char *line, bool overlong, enum cli_output out)
{
	char msg[96];

	if (!overlong)
		return one(t, l, line, out);
	snprintf(msg, sizeof(msg), "stdin: %.40s...: item too long", line);
	if (out != CLI_TEXT)
		item_json(out, line, NULL, msg);
	return cli_errorf("%s", msg);
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_TARGET_OPTIONS,
		{ "offset", required_argument, NULL, OPT_OFFSET },
		CLI_JSON_OPTIONS,
		{ 0 },
	};
	enum cli_output out = CLI_TEXT;
	struct cli_target t = { 0 };
	struct fgk_layout *l = NULL;
	int opt, rc, status = 0;

	/* "+" : stop at the first non-option so "sym+0x10" etc. are items */
	while ((opt = cli_getopt(&cmd_addr, argc, argv, "+h", opts)) != -1) {
		if (cli_target_option(&t, opt, optarg) || cli_json_option(&out, opt))
			continue;
		if (opt == 'h')
			return cli_help(&cmd_addr);
		return cli_usage_error(&cmd_addr, "bad option");
	}
	if (optind < argc && cli_vmlinux_positional(&t, argv[optind]))
		t.vmlinux = argv[optind++];
	/* options may also follow VMLINUX */
	while ((opt = cli_getopt(&cmd_addr, argc, argv, "+h", opts)) != -1) {
		if (cli_target_option(&t, opt, optarg) || cli_json_option(&out, opt))
			continue;
		if (opt == 'h')
			return cli_help(&cmd_addr);
		return cli_usage_error(&cmd_addr, "bad option");
	}
	rc = cli_target_open(&cmd_addr, &t);
	if (rc)
		goto out;
	rc = cli_target_layout(&t, &l);
	if (rc)
		goto out;
	if (optind < argc) {
		for (int i = optind; i < argc; i++)
			if (one(&t, l, argv[i], out))
				status = 1;
	} else {
		/* one item per line, streamed; lines are bounded, NUL is binary */
		char line[1100];
		size_t n = 0;
		bool overlong = false;
		int c;

		while ((c = getchar()) != EOF) {
			if (c == '\0') {
				status = cli_errorf("stdin: binary data (a NUL byte), not addresses or symbols");
				break;
			}
			if (c != '\n') {
				if (n < sizeof(line) - 1)
					line[n++] = (char)c;
				else
					overlong = true;
				continue;
			}
			line[n] = '\0';
			if (stdin_item(&t, l, line, overlong, out))
				status = 1;
			fflush(stdout);
			n = 0;
			overlong = false;
		}
		if (c == EOF && (n || overlong)) {
			line[n] = '\0';
			if (stdin_item(&t, l, line, overlong, out))
				status = 1;
		}
	}
	rc = cli_finish_stdout(status);
out:
	fgk_layout_free(l);
	cli_target_close(&t);
	return rc;
}

const struct cli_cmd cmd_addr = {
	.name = "addr",
	.summary = "translate runtime addresses <-> link addresses and symbols",
	.help = help,
	.run = run,
};
