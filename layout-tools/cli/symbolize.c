// SPDX-License-Identifier: GPL-2.0
/* fgk symbolize: decode an oops / WARN / stack dump of a shuffled kernel. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char help[] =
"usage: fgk symbolize [VMLINUX] [--seed SEED | --seed-file RECORD | --kallsyms FILE]\n"
"                     [--build-id HEX] [--offset BASE] [--modules DIR]...\n"
"                     [--module-sections CAPTURE]... [--json | --pretty] [FILE]\n"
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
"                         \"0xffffffff........\" (printed when kallsyms cannot\n"
"                         name an address) decodes the same way.\n"
"  Code: .. <xx> ..       gets objdump's disassembly, the faulting instruction\n"
"                         marked, as scripts/decodecode gives it.\n"
"\n"
"\"[<ADDR>] func+0xOFF/0xSIZE\" is checked: ADDR must be func+0xOFF with this\n"
"vmlinux, seed and base offset, and no function of that name may be bigger\n"
"than SIZE; a contradiction is an error (another boot's seed, another\n"
"build's vmlinux).  Already annotated input is kept as it is.\n"
"\n"
"The base offset comes from --offset, else the seed record, else the oops's\n"
"\"Kernel Offset:\" line, else a frame printed with both its address and its\n"
"symbol.  Without a seed, raw addresses inside the shuffled .text.* code\n"
"cannot be decoded (they are left as they are); symbolic frames still are.\n"
"--kallsyms FILE (root's /proc/kallsyms of the boot) stands for the seed.\n"
"\n"
"VMLINUX may be omitted when --build-id HEX or the seed record names the\n"
"build: it is then looked up in /usr/lib/debug, /lib/modules/RELEASE/build\n"
"and, with $DEBUGINFOD_URLS set, fetched through debuginfod (said on\n"
"stderr).  With a seed record, the first argument is VMLINUX only if it is\n"
"an ELF file.\n"
"\n"
"Modules:\n"
"  --modules DIR          where to find MOD.ko (repeatable; searched\n"
"                         recursively, '-' and '_' in names equal), e.g. the\n"
"                         build's build/kernel/modules.  Module frames\n"
"                         \"func+0xOFF/0xSIZE [mod]\" then get their file:line\n"
"                         from MOD.ko's DWARF.  Without --modules, or when\n"
"                         MOD.ko is not found, they are left as they are.  A\n"
"                         .ko of another kernel (vermagic) or build (the\n"
"                         trace's build-id or function size) is an error.\n"
"  --module-sections CAPTURE\n"
"                         the module section addresses, captured as root with\n"
"                           grep -r . /sys/module/*/sections > CAPTURE\n"
"                         (lines MOD/sections/SECTION:0xADDR, or\n"
"                         \"MOD SECTION 0xADDR\").  Raw addresses inside\n"
"                         those modules then decode too:\n"
"                         \"    ADDR = func+0xOFF/0xSIZE [mod] (file:line)\".\n"
"                         With a seed, the capture must match the module's\n"
"                         layout (fgk layout MOD.ko --seed SEED).\n"
"The oops's \"Modules linked in:\" line names the loaded modules but not\n"
"where they are: it does not place raw module addresses (and a \"[<addr>]\n"
"func [mod]\" frame is decoded from its symbol).  A module address in a\n"
"register cannot be decoded without the capture.\n"
"\n"
"The truth for a module frame is addr2line on the function's own section:\n"
"  addr2line -f -i -j .text.FUNC -e MOD.ko OFF\n"
"(OFF = the function's offset in that section + 0xOFF; 0 + 0xOFF in a\n"
"module built with -ffunction-sections).  scripts/decode_stacktrace.sh\n"
"adds 0xOFF to nm's value of FUNC, which in such a module is relative to\n"
"FUNC's section (0 for every function): it asks addr2line for the wrong\n"
"place and prints wrong lines for exactly the modules FG-KASLR shuffles.\n"
"\n"
"Modules printed with their build-id (\"[mod BUILDID]\", CONFIG_STACKTRACE_BUILD_ID)\n"
"whose MOD.ko is not under --modules are fetched by build-id through\n"
"debuginfod when $DEBUGINFOD_URLS is set (a failed fetch is an error).\n"
"\n"
"--json, --pretty  instead of the annotated text, one JSON object: the base\n"
"                  offset and every frame (line, text, address, function,\n"
"                  offset, size, module, build-id, file:line inline chain);\n"
"                  schema in fgk-symbolize(1).\n"
"\n"
"Exit status: 0 when at least one frame or address was decoded, 1 when the\n"
"input held nothing to decode (or on errors), 2 on usage errors.\n";

enum { OPT_MODULES = 0x200, OPT_MODSECS };
#define MAX_CODE 256

/*
 * The bytes of a "Code: 48 89 e5 <0f> 0b ..." line (the kernel prints the
 * bytes around the faulting instruction, that one in <>): their count, or
 * 0 when the line is not one; *trap the marked byte's index.
 */
static size_t code_bytes(const char *line, unsigned char *buf, size_t *trap)
{
	const char *p = strstr(line, "Code: ");
	size_t n = 0;
	bool marked = false;

	if (!p)
		return 0;
	for (p += 6; *p;) {
		bool lt = *p == '<';
		unsigned v;

		if (*p == ' ') {
			p++;
			continue;
		}
		p += lt;
		if (!isxdigit((unsigned char)p[0]) || !isxdigit((unsigned char)p[1]) ||
		    n == MAX_CODE || sscanf(p, "%2x", &v) != 1)
			return 0;
		p += 2;
		if (lt) {
			if (*p++ != '>' || marked)
				return 0;
			marked = true;
			*trap = n;
		}
		if (*p && *p != ' ')
			return 0;
		buf[n++] = (unsigned char)v;
	}
	return marked ? n : 0;
}

/*
 * objdump's listing of the Code: bytes, as scripts/decodecode gives it:
 * all the bytes (the faulting instruction marked "*" and "<-- trapping
 * instruction"), then from the faulting instruction on (the bytes before
 * it may start inside an instruction).  Nothing when objdump is missing.
 */
static void decode_code(FILE *out, const unsigned char *buf, size_t n,
			size_t trap)
{
	char path[] = "/tmp/fgk-code-XXXXXX", cmd[160];
	int fd = mkstemp(path);
	bool ok = fd >= 0 && write(fd, buf, n) == (ssize_t)n;

	if (fd >= 0)
		close(fd);
	for (int pass = 0; ok && pass < 2; pass++) {
		FILE *p;
		char line[512], *lines[MAX_CODE];
		size_t n_lines = 0, mark = 0;
		bool body = false;

		snprintf(cmd, sizeof(cmd),
			 "objdump -D -b binary -m i386:x86-64 --start-address=0x%zx %s 2>/dev/null",
			 pass ? trap : 0, path);
		p = popen(cmd, "r");
		if (!p)
			break;
		while (fgets(line, sizeof(line), p)) {
			unsigned long off;

			if (strstr(line, " <.data") && strstr(line, ">:\n")) {
				body = true;
				continue;
			}
			if (!body || !strchr(line, ':') || sscanf(line, " %lx:", &off) != 1 ||
			    n_lines == MAX_CODE)
				continue;
			line[strcspn(line, "\n")] = '\0';
			/* the instruction holding the faulting byte */
			if (off <= trap)
				mark = n_lines;
			if (!(lines[n_lines] = strdup(line)))
				break;
			n_lines++;
		}
		pclose(p);
		fprintf(out, "%s\n%s\n", pass ? "Code starting with the faulting instruction"
			: "All code", pass ? "===========================================" : "========");
		for (size_t i = 0; i < n_lines; i++) {
			char *colon = strchr(lines[i], ':');

			if (!pass && i == mark)
				fprintf(out, "%.*s*%s\t\t<-- trapping instruction\n",
					(int)(colon + 1 - lines[i]), lines[i], colon + 1);
			else
				fprintf(out, "%s\n", lines[i]);
			free(lines[i]);
		}
	}
	unlink(path);
}

#define MAX_MODARGS 64

static const char *const source_names[] = {
	[FGK_SYMFRAME_SYMBOL] = "symbol",
	[FGK_SYMFRAME_ADDRESS] = "address",
	[FGK_SYMFRAME_CAPTURE] = "module-sections",
};

/* One frame of input line lineno (docs/fgk-symbolize.1.md, JSON OUTPUT). */
static void frame_json(struct json *j, size_t lineno, const char *line,
		       const struct fgk_symframe *f)
{
	json_start_object(j);
	json_u64_field(j, "line", lineno);
	json_u64_field(j, "column", f->column);
	json_name(j, "text");
	json_string_len(j, line + f->column, f->length);
	json_string_field(j, "source", source_names[f->source]);
	json_bool_field(j, "reliable", f->reliable);
	if (f->has_address)
		json_addr_field(j, "address", f->address);
	else
		json_null_field(j, "address");
	if (f->has_link && f->module)
		json_hex_field(j, "link", f->link);
	else if (f->has_link)
		json_addr_field(j, "link", f->link);
	else
		json_null_field(j, "link");
	json_string_field(j, "function", f->symbol);
	if (f->symbol) {
		json_hex_field(j, "offset", f->offset);
		json_hex_field(j, "size", f->size);
	} else {
		json_null_field(j, "offset");
		json_null_field(j, "size");
	}
	json_string_field(j, "module", f->module);
	json_string_field(j, "section", f->section);
	json_string_field(j, "build_id", f->build_id);
	json_name(j, "locations");
	json_start_array(j);
	for (size_t i = 0; i < f->nsrc; i++) {
		const struct fgk_srcframe *s = &f->src[i];

		json_start_object(j);
		/* dwarf.c's "??": no DWARF name (assembler code) */
		json_string_field(j, "function", s->function &&
				  strcmp(s->function, "??") ? s->function : NULL);
		json_string_field(j, "file", s->file);
		json_u64_field(j, "line", (uint64_t)(s->line > 0 ? s->line : 0));
		json_u64_field(j, "column", (uint64_t)(s->column > 0 ? s->column : 0));
		json_bool_field(j, "inlined", s->inlined);
		json_end_object(j);
	}
	json_end_array(j);
	json_end_object(j);
}

static int run(int argc, char **argv)
{
	const char *moddirs[MAX_MODARGS], *modsecs[MAX_MODARGS];
	size_t nmoddirs = 0, nmodsecs = 0;
	static const struct option opts[] = {
		CLI_TARGET_OPTIONS,
		{ "offset", required_argument, NULL, OPT_OFFSET },
		{ "modules", required_argument, NULL, OPT_MODULES },
		{ "module-sections", required_argument, NULL, OPT_MODSECS },
		CLI_JSON_OPTIONS,
		{ 0 },
	};
	struct cli_target t = { 0 };
	struct fgk_layout *l = NULL;
	struct fgk_dwarf *dwarf = NULL;
	struct fgk_symbolizer *sym = NULL;
	struct fgk_error *err = NULL;
	const char *input = NULL, *src;
	char *text = NULL, *line, *next, *outbuf = NULL;
	size_t outlen = 0;
	FILE *outf = NULL;
	size_t len;
	uint64_t off;
	int opt, rc = 1;
	enum cli_output fmt = CLI_TEXT;
	struct json j;
	size_t lineno = 0;

	while ((opt = cli_getopt(&cmd_symbolize, argc, argv, "h", opts)) != -1) {
		if (cli_target_option(&t, opt, optarg) || cli_json_option(&fmt, opt))
			continue;
		if (opt == 'h')
			return cli_help(&cmd_symbolize);
		if (opt == OPT_MODULES || opt == OPT_MODSECS) {
			size_t *n = opt == OPT_MODULES ? &nmoddirs : &nmodsecs;

			if (*n == MAX_MODARGS)
				return cli_usage_error(&cmd_symbolize, "more than %d --%s",
						       MAX_MODARGS, opt == OPT_MODULES
						       ? "modules" : "module-sections");
			(opt == OPT_MODULES ? moddirs : modsecs)[(*n)++] = optarg;
			continue;
		}
		return cli_usage_error(&cmd_symbolize, "bad option");
	}
	if (optind < argc && cli_vmlinux_positional(&t, argv[optind]))
		t.vmlinux = argv[optind++];
	if (optind < argc)
		input = argv[optind++];
	if (optind < argc)
		return cli_usage_error(&cmd_symbolize, "unexpected argument '%s'", argv[optind]);
	if (!t.vmlinux && !t.build_id && !t.seed_file)
		return cli_usage_error(&cmd_symbolize, "missing VMLINUX (or --build-id, or a seed record with one, to look it up)");
	err = NULL;
	if (t.seed_text || t.seed_file || t.kallsyms) {
		rc = cli_target_open(&cmd_symbolize, &t);
		if (rc)
			goto out;
		rc = cli_target_layout(&t, &l);
		if (rc)
			goto out;
	} else {
		if (t.offset_text) {
			if (!cli_parse_hex(t.offset_text, &t.offset)) {
				rc = cli_errorf("--offset '%s': not a hex number (e.g. 0x1a000000)",
						t.offset_text);
				goto out;
			}
			t.have_offset = true;
		}
		if (t.vmlinux) {
			err = fgk_vmlinux_open(t.vmlinux, &t.vm);
		} else {
			rc = cli_vmlinux_by_build_id(NULL, t.build_id, NULL, &t.vm,
						     &t.fetched);
			if (rc)
				goto out;
			t.vmlinux = t.fetched;
		}
	}
	if (!err)
		err = fgk_dwarf_open(t.vmlinux, &dwarf);
	if (!err)
		err = fgk_symbolizer_new(t.vm, l, dwarf, &sym);
	if (err) {
		rc = cli_fail(err);
		goto out;
	}
	for (size_t i = 0; i < nmoddirs && !err; i++)
		err = fgk_symbolizer_add_module_dir(sym, moddirs[i]);
	if (nmodsecs && !nmoddirs && !err) {
		rc = cli_usage_error(&cmd_symbolize, "--module-sections needs --modules DIR (where MOD.ko is)");
		goto out;
	}
	for (size_t i = 0; i < nmodsecs && !err; i++) {
		char *cap;
		size_t caplen;

		rc = cli_read_text(modsecs[i], CLI_TEXT_MAX, &cap, &caplen);
		if (rc)
			goto out;
		err = fgk_symbolizer_module_sections(sym, cap, caplen, modsecs[i]);
		free(cap);
	}
	if (err) {
		rc = cli_fail(err);
		goto out;
	}
	fgk_symbolizer_fetch_modules(sym, fgk_debuginfod_enabled());
	if (t.have_offset)
		fgk_symbolizer_set_offset(sym, t.offset,
					  t.offset_from ? t.offset_from : "--offset");

	rc = cli_read_text(input ? input : "-", CLI_TEXT_MAX, &text, &len);
	if (rc)
		goto out;
	rc = 1;
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
	/*
	 * Every line, blank ones included, comes out in order, and only when
	 * all decoded: an error (a module of another build) leaves no
	 * half-decoded output behind.
	 */
	outf = open_memstream(&outbuf, &outlen);
	if (!outf) {
		rc = cli_errorf("out of memory");
		goto out;
	}
	if (fmt != CLI_TEXT) {
		json_init(&j, outf, fmt == CLI_JSON_PRETTY);
		json_start_object(&j);
		json_string_field(&j, "vmlinux", t.vmlinux);
		json_bool_field(&j, "seeded", l != NULL);
		json_name(&j, "frames");
		json_start_array(&j);
	}
	for (line = text; *line; line = next) {
		char *nl = strchr(line, '\n'), *outl;

		next = nl ? nl + 1 : line + strlen(line);
		if (nl)
			*nl = '\0';
		err = fgk_symbolize_line(sym, line, &outl);
		if (err) {
			rc = cli_fail(err);
			goto out;
		}
		lineno++;
		if (fmt != CLI_TEXT) {
			const struct fgk_symframe *fr;
			size_t nfr = fgk_symbolizer_frames(sym, &fr);

			for (size_t i = 0; i < nfr; i++)
				frame_json(&j, lineno, line, &fr[i]);
			free(outl);
			continue;
		}
		fputs(outl, outf);
		free(outl);
		{
			unsigned char code[MAX_CODE];
			size_t trap = 0, n = code_bytes(line, code, &trap);

			/* decoded already when fgk's own output comes back */
			if (n && strncmp(next, "All code\n", 9))
				decode_code(outf, code, n, trap);
		}
	}
	if (fmt != CLI_TEXT) {
		bool have = fgk_symbolizer_get_offset(sym, &off, &src);

		json_end_array(&j);
		json_name(&j, "base_offset");
		if (have)
			json_hex(&j, off);
		else
			json_null(&j);
		json_string_field(&j, "base_offset_source", have ? src : NULL);
		json_u64_field(&j, "decoded", fgk_symbolizer_decoded(sym));
		json_end_object(&j);
	}
	if (fclose(outf)) {
		outf = NULL;
		rc = cli_errorf("out of memory");
		goto out;
	}
	outf = NULL;
	fwrite(outbuf, 1, outlen, stdout);
	if (fgk_symbolizer_get_offset(sym, &off, &src))
		fprintf(stderr, "fgk symbolize: base offset 0x%llx (from %s)%s\n",
			(unsigned long long)off, src,
			l ? "" : "; no seed: raw addresses in shuffled code not decoded");
	else
		fprintf(stderr, "fgk symbolize: base offset unknown (no \"Kernel Offset:\" line; pass --offset): raw vmlinux addresses not decoded\n");
	if (!fgk_symbolizer_decoded(sym)) {
		rc = cli_finish_stdout(1);
		cli_errorf("%s: no kernel frames or addresses found to decode",
			   input ? input : "stdin");
		goto out;
	}
	rc = cli_finish_stdout(0);
out:
	if (outf)
		fclose(outf);
	free(outbuf);
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
