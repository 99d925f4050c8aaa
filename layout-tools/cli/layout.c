// SPDX-License-Identifier: GPL-2.0
/* fgk layout: the randomized sections and their new addresses. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char help[] =
"usage: fgk layout [VMLINUX] (--seed SEED | --seed-file RECORD | --kallsyms FILE)\n"
"                 [--build-id HEX] [--json | --pretty]\n"
"       fgk layout MODULE.ko [--seed SEED | --seed-file RECORD] [--json | --pretty]\n"
"                 [--relink OUT]\n"
"\n"
"Print the FG-KASLR layout of VMLINUX for SEED (docs/layout-spec.md): one\n"
"line per randomized section, domain by domain (the range domains\n"
".sched.text.*, .spinlock.text.*, .static_call.text.*, .noinstr.text.*,\n"
".cpuidle.text.* first, .text.* last), in section header index order\n"
"within each.\n"
"\n"
"TSV output (default): a header line, then tab-separated columns\n"
"  index  name  link  new  size  align\n"
"index = ELF section header index; link/new = link-time and new address\n"
"(0x + 16 hex digits; new is the address with base offset 0); size =\n"
"0x hex; align = decimal.\n"
"\n"
"--json   one JSON object: seed, start, limit, end, domains[] (spec section 3:\n"
"         the six domains, .text. last: prefix, sections, log2_orderings as in\n"
"         fgk audit --json, start, limit, end, limit_symbol, nonce, first),\n"
"         sections[] with the same fields as the TSV (addresses and sizes as\n"
"         \"0x...\" strings); --pretty: the same, indented\n"
"         (docs/fgk-layout.1.md).\n"
CLI_TARGET_HELP
"\n"
"MODULE.ko (a file whose name ends in .ko): the module's core text as the\n"
"module loader lays it out for SEED (docs/layout-spec.md section 8): one\n"
"line per executable core section in layout order, the other sections in\n"
"index order first, then the shuffled .text.* ones in the order drawn from\n"
"SEED with the module's nonce.  Columns\n"
"  index  name  offset  size  align  randomized\n"
"offset = 0x hex from the start of the module's core text (where the\n"
"kernel puts that is itself random: add the address of any one section in\n"
"/sys/module/NAME/sections minus its offset); randomized = yes/no.\n"
"Without a seed: the order of a kernel without FG-KASLR.  --json: module,\n"
"vermagic, build_id, seed, size and sections[] with the same fields.  A\n"
"record's release must be the module's vermagic release.\n"
"--relink OUT  (MODULE.ko, with a seed) also write OUT (mode 0600): the\n"
"         module with its core text sections merged into one .text at these\n"
"         offsets, symbols and DWARF moved along, for debuggers that place\n"
"         only a module's .text at its base (crash: mod -s NAME OUT).\n";

/*
 * Spec §3: one object per shuffle domain, fgk_layout_domain() order
 * (the five range domains, then .text.), with fgk audit --json's entropy.domains
 * fields (prefix, sections, log2_orderings) and where it lies: start,
 * limit, end (null for an empty domain), limit_symbol, nonce, first (its
 * first entry in sections[]).
 */
static void json_domains(struct json *j, const struct fgk_layout *l)
{
	json_name(j, "domains");
	json_start_array(j);
	for (size_t d = 0; d < fgk_layout_ndomains(l); d++) {
		uint64_t start, limit, end;
		size_t first, n;
		const char *prefix = fgk_layout_domain(l, d, &start, &limit, &end, &first, &n);

		json_start_object(j);
		json_string_field(j, "prefix", prefix);
		json_u64_field(j, "sections", n);
		json_name(j, "log2_orderings");
		json_fixed(j, n ? lgamma((double)n + 1) / log(2.0) : 0, 1);
		if (n) {
			json_addr_field(j, "start", start);
			json_addr_field(j, "limit", limit);
			json_addr_field(j, "end", end);
			json_string_field(j, "limit_symbol",
					  fgk_layout_domain_limit_symbol(l, d));
		} else {
			json_null_field(j, "start");
			json_null_field(j, "limit");
			json_null_field(j, "end");
			json_null_field(j, "limit_symbol");
		}
		json_name(j, "nonce");
		json_string_len(j, (const char *)fgk_layout_domain_nonce(l, d), FGK_NONCE_SIZE);
		json_u64_field(j, "first", first);
		json_end_object(j);
	}
	json_end_array(j);
}

static bool is_module(const char *path)
{
	size_t n = strlen(path);

	return n > 3 && !strcmp(path + n - 3, ".ko");
}

static int run_module(struct cli_target *t, enum cli_output out,
		      const char *relink)
{
	struct fgk_module *m;
	struct fgk_module_layout *ml = NULL;
	struct fgk_error *err;
	bool have_seed = false;
	const char *vmagic;

	err = fgk_module_open(t->vmlinux, &m);
	if (err)
		return cli_fail(err);
	vmagic = fgk_module_vermagic(m);
	if (t->seed_text) {
		err = fgk_seed_parse(t->seed_text, &t->seed);
		if (err) {
			fgk_module_close(m);
			return cli_fail(err);
		}
		have_seed = true;
	} else if (t->seed_file) {
		err = fgk_seed_record_read(t->seed_file, &t->rec);
		if (!err && t->rec.release && vmagic &&
		    (strncmp(vmagic, t->rec.release, strlen(t->rec.release)) ||
		     (vmagic[strlen(t->rec.release)] != ' ' &&
		      vmagic[strlen(t->rec.release)] != '\0'))) {
			fgk_module_close(m);
			return cli_errorf("%s: module built for kernel %.*s, the seed record %s is of %s",
					  t->vmlinux, (int)strcspn(vmagic, " "), vmagic,
					  t->seed_file, t->rec.release);
		}
		if (err) {
			fgk_module_close(m);
			return cli_fail(err);
		}
		t->seed = t->rec.seed;
		have_seed = true;
	}
	if (relink && !have_seed) {
		fgk_module_close(m);
		return cli_usage_error(&cmd_layout, "--relink needs --seed or --seed-file");
	}
	err = fgk_module_layout_compute(m, have_seed ? &t->seed : NULL, &ml);
	if (!err && relink)
		err = fgk_module_relink(m, ml, relink);
	if (err) {
		fgk_module_layout_free(ml);
		fgk_module_close(m);
		return cli_fail(err);
	}
	if (out != CLI_TEXT) {
		struct json j;

		cli_json_init(&j, out);
		json_start_object(&j);
		json_string_field(&j, "module", fgk_module_name(m));
		json_string_field(&j, "vermagic", vmagic);
		json_string_field(&j, "build_id", fgk_module_build_id(m));
		cli_json_seed_field(&j, "seed", have_seed ? &ml->seed : NULL);
		json_hex_field(&j, "size", ml->size);
		json_name(&j, "sections");
		json_start_array(&j);
		for (size_t i = 0; i < ml->n; i++) {
			const struct fgk_module_section *e = &ml->secs[i];

			json_start_object(&j);
			json_u64_field(&j, "index", e->index);
			json_string_field(&j, "name", e->name);
			json_hex_field(&j, "offset", e->offset);
			json_hex_field(&j, "size", e->size);
			json_u64_field(&j, "align", e->align);
			json_bool_field(&j, "randomized", e->randomized);
			json_end_object(&j);
		}
		json_end_array(&j);
		json_end_object(&j);
	} else {
		printf("index\tname\toffset\tsize\talign\trandomized\n");
		for (size_t i = 0; i < ml->n; i++) {
			const struct fgk_module_section *e = &ml->secs[i];

			printf("%zu\t%s\t0x%llx\t0x%llx\t%llu\t%s\n", e->index,
			       e->name, (unsigned long long)e->offset,
			       (unsigned long long)e->size,
			       (unsigned long long)e->align,
			       e->randomized ? "yes" : "no");
		}
	}
	fgk_module_layout_free(ml);
	fgk_module_close(m);
	return cli_finish_stdout(0);
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_TARGET_OPTIONS,
		CLI_JSON_OPTIONS,
		{ "relink", required_argument, NULL, 'r' },
		{ 0 },
	};
	const char *relink = NULL;
	struct cli_target t = { 0 };
	struct fgk_layout *l;
	const struct fgk_section *secs;
	size_t n;
	enum cli_output out = CLI_TEXT;
	int opt, rc;

	while ((opt = cli_getopt(&cmd_layout, argc, argv, "h", opts)) != -1) {
		if (cli_target_option(&t, opt, optarg) || cli_json_option(&out, opt))
			continue;
		if (opt == 'h')
			return cli_help(&cmd_layout);
		if (opt == 'r')
			relink = optarg;
		else
			return cli_usage_error(&cmd_layout, "bad option");
	}
	if (optind < argc)
		t.vmlinux = argv[optind++];
	if (optind < argc)
		return cli_usage_error(&cmd_layout, "unexpected argument '%s'", argv[optind]);
	if (relink && !(t.vmlinux && is_module(t.vmlinux)))
		return cli_usage_error(&cmd_layout, "--relink is for a MODULE.ko");
	if (t.vmlinux && is_module(t.vmlinux)) {
		const char *inputs[] = { t.vmlinux, t.seed_file };

		if (t.seed_text && t.seed_file)
			return cli_usage_error(&cmd_layout, "--seed and --seed-file exclude each other");
		if (relink && cli_check_output(relink, inputs, 2))
			return 1;
		rc = run_module(&t, out, relink);
		fgk_seed_record_clear(&t.rec);
		return rc;
	}
	rc = cli_target_open(&cmd_layout, &t);
	if (rc) {
		cli_target_close(&t);
		return rc;
	}
	rc = cli_target_layout(&t, &l);
	if (rc) {
		cli_target_close(&t);
		return rc;
	}
	secs = fgk_layout_sections(l, &n);
	if (out != CLI_TEXT) {
		struct json j;

		cli_json_init(&j, out);
		json_start_object(&j);
		cli_json_seed_field(&j, "seed", fgk_layout_seed(l));
		json_addr_field(&j, "start", fgk_layout_start(l));
		json_addr_field(&j, "limit", fgk_layout_limit(l));
		json_addr_field(&j, "end", fgk_layout_end(l));
		json_domains(&j, l);
		json_name(&j, "sections");
		json_start_array(&j);
		for (size_t i = 0; i < n; i++) {
			const struct fgk_section *e = &secs[i];

			json_start_object(&j);
			json_u64_field(&j, "index", e->index);
			json_string_field(&j, "name", e->name);
			json_addr_field(&j, "link", e->addr);
			json_addr_field(&j, "new", e->new_addr);
			json_hex_field(&j, "size", e->size);
			json_u64_field(&j, "align", e->align);
			json_end_object(&j);
		}
		json_end_array(&j);
		json_end_object(&j);
	} else {
		printf("index\tname\tlink\tnew\tsize\talign\n");
		for (size_t i = 0; i < n; i++) {
			const struct fgk_section *e = &secs[i];

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
