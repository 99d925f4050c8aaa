// SPDX-License-Identifier: GPL-2.0
/* fgk symbolize: decode an oops / WARN / stack dump of a shuffled kernel. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
"usage: fgk symbolize VMLINUX [--seed SEED | --seed-file RECORD]\n"
"                     [--offset BASE] [FILE]\n"
"\n"
"Decode a kernel oops, WARN or stack dump (FILE, or standard input) the way\n"
"scripts/decode_stacktrace.sh does, for a kernel whose functions were\n"
"shuffled by FG-KASLR:\n"
"\n"
"  func+0xOFF/0xSIZE      gets \" (file:line file:line ...)\": the source line\n"
"                         of the address and, for inlined code, the call\n"
"                         sites outward (addr2line -i order).  The /0xSIZE\n"
"                         picks the right one of same-named static functions.\n"
"  ffffffff........       raw kernel text addresses (register values, \"[<..>]\"\n"
"                         frames, %px prints, traces without kallsyms) are\n"
"                         mapped through the seed's layout and the base offset\n"
"                         and explained on a line of their own:\n"
"                         \"    ADDR = func+0xOFF/0xSIZE (file:line)\".\n"
"\n"
"The base offset comes from --offset, else the seed record, else the oops's\n"
"\"Kernel Offset:\" line, else a frame printed with both its address and its\n"
"symbol.  Without a seed, raw addresses inside the shuffled .text.* code\n"
"cannot be decoded (they are left as they are); symbolic frames still are.\n"
"Module frames (\"func+0x1/0x2 [mod]\") are left as they are.\n"
"\n"
"Exit status: 0 when at least one frame or address was decoded, 1 when the\n"
"input held nothing to decode (or on errors), 2 on usage errors.\n";

static char *read_all(FILE *f, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);

	if (!buf)
		return NULL;
	for (;;) {
		size_t r;

		if (n + 1 >= cap) {
			char *nb = realloc(buf, cap *= 2);

			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
		}
		r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
		if (r == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_TARGET_OPTIONS,
		{ "offset", required_argument, NULL, OPT_OFFSET },
		{ 0 },
	};
	struct cli_target t = { 0 };
	struct fgk_layout *l = NULL;
	struct fgk_dwarf *dwarf = NULL;
	struct fgk_symbolizer *sym = NULL;
	struct fgk_error *err = NULL;
	const char *input = NULL, *src;
	char *text = NULL, *line, *save;
	size_t len;
	uint64_t off;
	FILE *f;
	int opt, rc = 1;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (cli_target_option(&t, opt, optarg))
			continue;
		if (opt == 'h')
			return cli_help(&cmd_symbolize);
		return cli_usage_error(&cmd_symbolize, "bad option");
	}
	if (optind < argc)
		t.vmlinux = argv[optind++];
	if (optind < argc)
		input = argv[optind++];
	if (optind < argc)
		return cli_usage_error(&cmd_symbolize, "unexpected argument '%s'", argv[optind]);
	if (!t.vmlinux)
		return cli_usage_error(&cmd_symbolize, "missing VMLINUX");
	if (t.seed_text || t.seed_file) {
		rc = cli_target_open(&cmd_symbolize, &t);
		if (rc)
			goto out;
		err = fgk_layout_compute(t.vm, &t.seed, &l);
	} else {
		if (t.offset_text) {
			if (!cli_parse_hex(t.offset_text, &t.offset)) {
				rc = cli_errorf("--offset '%s': not a hex number (e.g. 0x1a000000)",
						t.offset_text);
				goto out;
			}
			t.have_offset = true;
		}
		err = fgk_vmlinux_open(t.vmlinux, &t.vm);
	}
	if (!err)
		err = fgk_dwarf_open(t.vmlinux, &dwarf);
	if (!err)
		err = fgk_symbolizer_new(t.vm, l, dwarf, &sym);
	if (err) {
		rc = cli_fail(err);
		goto out;
	}
	if (t.have_offset)
		fgk_symbolizer_set_offset(sym, t.offset,
					  t.offset_text ? "--offset" : "the seed record");

	f = input ? fopen(input, "r") : stdin;
	if (!f) {
		rc = cli_errorf("%s: cannot open: %s", input, strerror(errno));
		goto out;
	}
	text = read_all(f, &len);
	if (input)
		fclose(f);
	if (!text) {
		rc = cli_errorf("%s: read error", input ? input : "stdin");
		goto out;
	}
	if (memchr(text, '\0', len)) {
		rc = cli_errorf("%s: binary data, not oops text", input ? input : "stdin");
		goto out;
	}
	/* First pass: the base offset, wherever the oops states it. */
	for (char *p = text; p && *p;) {
		char *nl = strchr(p, '\n');

		if (nl)
			*nl = '\0';
		fgk_symbolizer_learn(sym, p);
		if (nl)
			*nl = '\n';
		p = nl ? nl + 1 : NULL;
	}
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *outl;

		err = fgk_symbolize_line(sym, line, &outl);
		if (err) {
			rc = cli_fail(err);
			goto out;
		}
		fputs(outl, stdout);
		free(outl);
	}
	if (fgk_symbolizer_get_offset(sym, &off, &src))
		fprintf(stderr, "fgk symbolize: base offset 0x%llx (from %s)%s\n",
			(unsigned long long)off, src,
			l ? "" : "; no seed: raw addresses in shuffled code not decoded");
	else
		fprintf(stderr, "fgk symbolize: base offset unknown (no \"Kernel Offset:\" line; pass --offset): raw addresses not decoded\n");
	if (!fgk_symbolizer_decoded(sym)) {
		rc = cli_finish_stdout(1);
		cli_errorf("%s: no kernel frames or addresses found to decode",
			   input ? input : "stdin");
		goto out;
	}
	rc = cli_finish_stdout(0);
out:
	free(text);
	fgk_symbolizer_free(sym);
	fgk_dwarf_close(dwarf);
	fgk_layout_free(l);
	cli_target_close(&t);
	return rc;
}

const struct cli_cmd cmd_symbolize = {
	.name = "symbolize",
	.summary = "decode an oops/WARN/stack dump (file:line, inline chains, raw addresses)",
	.help = help,
	.run = run,
};
