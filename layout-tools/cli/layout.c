// SPDX-License-Identifier: GPL-2.0
/* fgk layout: the randomized sections and their new addresses. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char help[] =
"usage: fgk layout VMLINUX (--seed SEED | --seed-file RECORD) [--json]\n"
"\n"
"Print the FG-KASLR layout of VMLINUX for SEED (docs/layout-spec.md): one\n"
"line per randomized section, in section header index order.\n"
"\n"
"TSV output (default): a header line, then tab-separated columns\n"
"  index  name  link  new  size  align\n"
"index = ELF section header index; link/new = link-time and new address\n"
"(0x + 16 hex digits; new is the address with base offset 0); size =\n"
"0x hex; align = decimal.\n"
"\n"
"--json   one JSON object: seed, start, limit, end, sections[] with the same\n"
"         fields (addresses and sizes as \"0x...\" strings).\n"
"--seed SEED         64 hex digits (or fgkaslr_seed=..., or /proc/fgkaslr_seed text)\n"
"--seed-file RECORD  seed record (docs/seed-records.md); its build-id must match\n";

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_TARGET_OPTIONS,
		{ "json", no_argument, NULL, 'j' },
		{ 0 },
	};
	struct cli_target t = { 0 };
	struct fgk_layout *l;
	struct fgk_error *err;
	bool json = false;
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (cli_target_option(&t, opt, optarg))
			continue;
		if (opt == 'h')
			return cli_help(&cmd_layout);
		if (opt == 'j')
			json = true;
		else
			return cli_usage_error(&cmd_layout, "bad option");
	}
	if (optind < argc)
		t.vmlinux = argv[optind++];
	if (optind < argc)
		return cli_usage_error(&cmd_layout, "unexpected argument '%s'", argv[optind]);
	rc = cli_target_open(&cmd_layout, &t);
	if (rc) {
		cli_target_close(&t);
		return rc;
	}
	err = fgk_layout_compute(t.vm, &t.seed, &l);
	if (err) {
		cli_target_close(&t);
		return cli_fail(err);
	}
	if (json) {
		char hex[FGK_SEED_HEX_LEN + 1];

		fgk_seed_format(&l->seed, hex);
		printf("{\"seed\": \"%s\", \"start\": \"0x%016llx\", \"limit\": \"0x%016llx\", \"end\": \"0x%016llx\", \"sections\": [",
		       hex, (unsigned long long)l->start,
		       (unsigned long long)l->limit, (unsigned long long)l->end);
		for (size_t i = 0; i < l->n; i++) {
			const struct fgk_section *e = &l->secs[i];

			printf("%s\n  {\"index\": %zu, \"name\": ", i ? "," : "", e->index);
			json_string(e->name);
			printf(", \"link\": \"0x%016llx\", \"new\": \"0x%016llx\", \"size\": \"0x%llx\", \"align\": %llu}",
			       (unsigned long long)e->addr,
			       (unsigned long long)e->new_addr,
			       (unsigned long long)e->size,
			       (unsigned long long)e->align);
		}
		printf("\n]}\n");
	} else {
		printf("index\tname\tlink\tnew\tsize\talign\n");
		for (size_t i = 0; i < l->n; i++) {
			const struct fgk_section *e = &l->secs[i];

			printf("%zu\t%s\t0x%016llx\t0x%016llx\t0x%llx\t%llu\n",
			       e->index, e->name, (unsigned long long)e->addr,
			       (unsigned long long)e->new_addr,
			       (unsigned long long)e->size,
			       (unsigned long long)e->align);
		}
	}
	fgk_layout_free(l);
	cli_target_close(&t);
	return cli_finish_stdout(0);
}

const struct cli_cmd cmd_layout = {
	.name = "layout",
	.summary = "randomized sections with link and new addresses (TSV/JSON)",
	.help = help,
	.run = run,
};
