// SPDX-License-Identifier: GPL-2.0
/* fgk map: the randomized symbol list (kallsyms or System.map). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
"usage: fgk map [VMLINUX] (--seed SEED | --seed-file RECORD | --kallsyms FILE)\n"
"               [--build-id HEX] [--offset BASE]\n"
"               [--format kallsyms|system-map] [--json | --pretty] [-o FILE]\n"
"\n"
"Print the symbols of VMLINUX at the addresses the kernel booted with SEED\n"
"gives them, one '%016lx %c %s' line each.\n"
"\n"
"--format kallsyms    (default) exactly what root reads from /proc/kallsyms\n"
"                     (the vmlinux part): the kernel's own kallsyms tables\n"
"                     decoded from VMLINUX, sorted by (runtime address, index).\n"
"--format system-map  System.map: the ELF symbol table filtered like\n"
"                     scripts/mksysmap (nm -n), with new addresses.\n"
"--offset BASE        base KASLR offset (hex) added to every address except\n"
"                     absolute and per-CPU symbols; default 0, or the record's.\n"
"-o FILE              write FILE atomically (temp file + rename), mode 0600,\n"
"                     instead of stdout.\n"
"--json, --pretty     one JSON object (compact, or indented): format, seed,\n"
"                     offset and symbols[], each {address, type, name}, in\n"
"                     the same order (docs/fgk-map.1.md).\n"
"\n"
CLI_TARGET_HELP;

/* The map as one JSON object (docs/fgk-map.1.md, JSON OUTPUT). */
static void write_json(FILE *f, enum cli_output out, const struct fgk_map *map,
		       const struct fgk_layout *l, enum fgk_map_format format,
		       uint64_t offset)
{
	struct json j;

	json_init(&j, f, out == CLI_JSON_PRETTY);
	json_start_object(&j);
	json_string_field(&j, "format",
			  format == FGK_MAP_KALLSYMS ? "kallsyms" : "system-map");
	cli_json_seed_field(&j, "seed", fgk_layout_seed(l));
	json_hex_field(&j, "offset", offset);
	json_name(&j, "symbols");
	json_start_array(&j);
	for (size_t i = 0; i < map->n; i++) {
		const struct fgk_map_entry *e = &map->entries[i];

		json_start_object(&j);
		json_addr_field(&j, "address", e->addr);
		json_name(&j, "type");
		json_string_len(&j, &e->type, 1);
		json_string_field(&j, "name", e->name);
		json_end_object(&j);
	}
	json_end_array(&j);
	json_end_object(&j);
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_TARGET_OPTIONS,
		{ "offset", required_argument, NULL, OPT_OFFSET },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		CLI_JSON_OPTIONS,
		{ 0 },
	};
	struct cli_target t = { 0 };
	enum fgk_map_format format = FGK_MAP_KALLSYMS;
	enum cli_output out = CLI_TEXT;
	const char *output = NULL;
	struct fgk_layout *l = NULL;
	struct fgk_map *map = NULL;
	struct fgk_error *err = NULL;
	int opt, rc;

	while ((opt = cli_getopt(&cmd_map, argc, argv, "ho:f:", opts)) != -1) {
		if (cli_target_option(&t, opt, optarg) || cli_json_option(&out, opt))
			continue;
		switch (opt) {
		case 'h':
			return cli_help(&cmd_map);
		case 'o':
			output = optarg;
			break;
		case 'f':
			if (!strcmp(optarg, "kallsyms"))
				format = FGK_MAP_KALLSYMS;
			else if (!strcmp(optarg, "system-map"))
				format = FGK_MAP_SYSTEM_MAP;
			else
				return cli_usage_error(&cmd_map, "unknown --format '%s' (kallsyms or system-map)", optarg);
			break;
		default:
			return cli_usage_error(&cmd_map, "bad option");
		}
	}
	if (optind < argc)
		t.vmlinux = argv[optind++];
	if (optind < argc)
		return cli_usage_error(&cmd_map, "unexpected argument '%s'", argv[optind]);
	{
		const char *inputs[] = { t.vmlinux, t.seed_file, t.kallsyms };

		if (cli_check_output(output, inputs, 3))
			return 1;
	}
	rc = cli_target_open(&cmd_map, &t);
	if (rc)
		goto out;
	rc = cli_target_layout(&t, &l);
	if (rc)
		goto out;
	err = fgk_map_build(t.vm, l, format, t.offset, &map);
	if (err) {
		rc = cli_fail(err);
		goto out;
	}
	if (output) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		if (!f) {
			rc = cli_errorf("out of memory");
			goto out;
		}
		if (out != CLI_TEXT)
			write_json(f, out, map, l, format, t.offset);
		else
			err = fgk_map_write(map, f);
		if (fclose(f) != 0 && !err)
			err = NULL, rc = cli_errorf("out of memory");
		if (!err && !rc)
			err = fgk_write_file_atomic(output, buf, len);
		free(buf);
		if (err)
			rc = cli_fail(err);
	} else {
		static char obuf[1 << 16];

		setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
		if (out != CLI_TEXT)
			write_json(stdout, out, map, l, format, t.offset);
		else
			err = fgk_map_write(map, stdout);
		if (err)
			rc = cli_fail(err);
		else
			rc = cli_finish_stdout(0);
	}
out:
	fgk_map_free(map);
	fgk_layout_free(l);
	cli_target_close(&t);
	return rc;
}

const struct cli_cmd cmd_map = {
	.name = "map",
	.summary = "randomized symbol list: /proc/kallsyms or System.map format",
	.help = help,
	.run = run,
};
