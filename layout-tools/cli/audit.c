// SPDX-License-Identifier: GPL-2.0
/* fgk audit: what moves, what stays and why, entropy, gadget census. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Spec §3 (version 3): the domains' prefixes, fgk_layout_domain() order. */
static const char *const domain_prefix[FGK_LAYOUT_DOMAINS] = {
	".sched.text.", ".spinlock.text.", ".static_call.text.",
	".noinstr.text.", ".cpuidle.text.", ".text.",
};

static const char help[] =
"usage: fgk audit VMLINUX [--seed SEED] [--gadgets FILE] [--json | --pretty]\n"
"\n"
"What FG-KASLR buys on VMLINUX: for every text region (the shuffled .text.*\n"
"sections; the rest of the main .text; the fixed entry text section after\n"
"the shuffled region, from __fgkaslr_text_end; the regions the kernel finds by\n"
"range: .entry.text, .irqentry.text, .softirqentry.text, .noinstr.text,\n"
".sched.text, .cpuidle.text, .lock.text, .kprobes.text, static call and\n"
"indirect thunk text; .init.text and the other executable sections) its\n"
"bytes, its functions (sized STT_FUNC symbols, aliases once), how many of\n"
"those come from assembly (.S, by DWARF), whether it moves with the seed,\n"
"and why it stays if it does not; resident versus init-only text; the\n"
"entropy of the shuffle (n sections: n positions for a function, log2(n!)\n"
"bits of orderings, bounded by the 256-bit seed).  Regions nested in\n"
"another (.irqentry.text in .entry.text, all of them in .text or the\n"
".entry.text section) are subtracted from the enclosing one.\n"
"\n"
"--seed SEED     also lay out SEED: how many sections leave their link address\n"
"--gadgets FILE  a gadget census: FILE is a gadget finder's output, lines\n"
"                '0xADDRESS : insn ; ... ; ret' (ROPgadget --all; '-' = stdin;\n"
"                scripts/gadget-census VMLINUX runs ROPgadget on the text\n"
"                regions); gadgets are counted per region, moving versus\n"
"                fixed versus init-only, ROP (ret) / JOP (jmp, call) / other,\n"
"                and those starting outside every function symbol\n"
"--json          one JSON object (docs/fgk-audit.1.md); --pretty: indented\n";

static const char *const kind_names[FGK_GADGET_KINDS] = { "rop", "jop", "other" };
static const char *const class_names[FGK_AUDIT_CLASSES] = { "moving", "fixed", "init" };

struct totals {
	uint64_t bytes, function_bytes;
	size_t functions, asm_functions;
};

static void sum(const struct fgk_audit *a, struct totals t[FGK_AUDIT_CLASSES])
{
	memset(t, 0, FGK_AUDIT_CLASSES * sizeof(*t));
	for (size_t i = 0; i < a->nregions; i++) {
		const struct fgk_audit_region *r = &a->regions[i];
		struct totals *x = &t[fgk_audit_region_class(r)];

		x->bytes += r->bytes;
		x->function_bytes += r->function_bytes;
		x->functions += r->functions;
		x->asm_functions += r->asm_functions;
	}
}

static uint64_t kinds_total(const uint64_t *g)
{
	uint64_t n = 0;

	for (int k = 0; k < FGK_GADGET_KINDS; k++)
		n += g[k];
	return n;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static void json_gadgets(struct json *j, const uint64_t *g, uint64_t outside_functions)
{
	json_start_object(j);
	for (int k = 0; k < FGK_GADGET_KINDS; k++)
		json_u64_field(j, kind_names[k], g[k]);
	json_u64_field(j, "total", kinds_total(g));
	json_u64_field(j, "outside_functions", outside_functions);
	json_end_object(j);
}

static void print_json(struct fgk_vmlinux *vm, const struct fgk_audit *a,
		       enum cli_output out)
{
	struct totals t[FGK_AUDIT_CLASSES];
	struct json j;
	uint64_t resident;

	sum(a, t);
	resident = t[FGK_AUDIT_MOVING].function_bytes + t[FGK_AUDIT_FIXED].function_bytes;
	cli_json_init(&j, out);
	json_start_object(&j);
	json_string_field(&j, "vmlinux", fgk_vmlinux_path(vm));
	json_string_field(&j, "build_id", fgk_vmlinux_build_id(vm));
	json_string_field(&j, "release", fgk_vmlinux_release(vm));
	json_name(&j, "regions");
	json_start_array(&j);
	for (size_t i = 0; i < a->nregions; i++) {
		const struct fgk_audit_region *r = &a->regions[i];

		json_start_object(&j);
		json_string_field(&j, "name", r->name);
		json_string_field(&j, "class", class_names[fgk_audit_region_class(r)]);
		json_addr_field(&j, "start", r->start);
		json_addr_field(&j, "end", r->end);
		json_string_field(&j, "start_symbol", r->start_sym);
		json_string_field(&j, "end_symbol", r->end_sym);
		json_u64_field(&j, "bytes", r->bytes);
		json_u64_field(&j, "functions", r->functions);
		json_u64_field(&j, "function_bytes", r->function_bytes);
		if (a->asm_known && !r->moves)
			json_u64_field(&j, "asm_functions", r->asm_functions);
		else
			json_null_field(&j, "asm_functions");
		json_bool_field(&j, "moves", r->moves);
		json_bool_field(&j, "init", r->init);
		json_string_field(&j, "why", r->why);
		json_name(&j, "gadgets");
		if (a->have_gadgets)
			json_gadgets(&j, r->gadgets, r->gadgets_outside_functions);
		else
			json_null(&j);
		json_end_object(&j);
	}
	json_end_array(&j);
	json_name(&j, "totals");
	json_start_object(&j);
	for (int c = 0; c < FGK_AUDIT_CLASSES; c++) {
		json_name(&j, class_names[c]);
		json_start_object(&j);
		json_u64_field(&j, "bytes", t[c].bytes);
		json_u64_field(&j, "functions", t[c].functions);
		json_u64_field(&j, "function_bytes", t[c].function_bytes);
		json_end_object(&j);
	}
	json_name(&j, "resident_moving_percent");
	json_fixed(&j, pct(t[FGK_AUDIT_MOVING].function_bytes, resident), 2);
	json_end_object(&j);
	json_name(&j, "entropy");
	json_start_object(&j);
	json_u64_field(&j, "sections", a->sections);
	json_u64_field(&j, "positions", a->sections);
	json_name(&j, "log2_orderings");
	json_fixed(&j, a->log2_orderings, 1);
	json_name(&j, "bits");
	json_fixed(&j, a->log2_orderings < 256 ? a->log2_orderings : 256.0, 1);
	json_name(&j, "domains");
	json_start_array(&j);
	for (int d = 0; d < FGK_LAYOUT_DOMAINS; d++) {
		json_start_object(&j);
		json_string_field(&j, "prefix", domain_prefix[d]);
		json_u64_field(&j, "sections", a->domain_sections[d]);
		json_name(&j, "log2_orderings");
		json_fixed(&j, a->domain_log2_orderings[d], 1);
		json_end_object(&j);
	}
	json_end_array(&j);
	json_end_object(&j);
	json_name(&j, "seed");
	if (a->seeded) {
		json_start_object(&j);
		cli_json_seed_field(&j, "seed", &a->seed);
		json_u64_field(&j, "moved_sections", a->moved_sections);
		json_u64_field(&j, "moved_bytes", a->moved_bytes);
		json_addr_field(&j, "layout_end", a->layout_end);
		json_end_object(&j);
	} else {
		json_null(&j);
	}
	json_name(&j, "gadgets");
	if (a->have_gadgets) {
		json_start_object(&j);
		for (int c = 0; c < FGK_AUDIT_CLASSES; c++) {
			json_name(&j, class_names[c]);
			json_gadgets(&j, a->gadgets[c], a->gadgets_outside_functions[c]);
		}
		json_name(&j, "unique");
		json_start_object(&j);
		for (int c = 0; c < FGK_AUDIT_CLASSES; c++)
			json_u64_field(&j, class_names[c], a->unique[c]);
		json_end_object(&j);
		json_u64_field(&j, "outside_text", a->gadgets_outside);
		json_end_object(&j);
	} else {
		json_null(&j);
	}
	json_end_object(&j);
}

static void print_text(struct fgk_vmlinux *vm, const struct fgk_audit *a)
{
	struct totals t[FGK_AUDIT_CLASSES];
	uint64_t resident;
	size_t rfuncs;

	sum(a, t);
	resident = t[FGK_AUDIT_MOVING].function_bytes + t[FGK_AUDIT_FIXED].function_bytes;
	rfuncs = t[FGK_AUDIT_MOVING].functions + t[FGK_AUDIT_FIXED].functions;
	printf("vmlinux %s (release %s, build-id %s)\n\n", fgk_vmlinux_path(vm),
	       fgk_vmlinux_release(vm) ? fgk_vmlinux_release(vm) : "?",
	       fgk_vmlinux_build_id(vm) ? fgk_vmlinux_build_id(vm) : "none");
	printf("%-22s %-7s %10s %7s %10s %5s%s\n", "region", "class", "bytes", "funcs",
	       "func-bytes", "asm",
	       a->have_gadgets ? "  gadgets (rop/jop/other), outside functions" : "");
	for (size_t i = 0; i < a->nregions; i++) {
		const struct fgk_audit_region *r = &a->regions[i];
		char asmn[24];

		if (a->asm_known && !r->moves)
			snprintf(asmn, sizeof(asmn), "%zu", r->asm_functions);
		else
			snprintf(asmn, sizeof(asmn), "-");
		printf("%-22s %-7s %10llu %7zu %10llu %5s", r->name,
		       class_names[fgk_audit_region_class(r)],
		       (unsigned long long)r->bytes, r->functions,
		       (unsigned long long)r->function_bytes, asmn);
		if (a->have_gadgets)
			printf("  %llu (%llu/%llu/%llu), %llu",
			       (unsigned long long)kinds_total(r->gadgets),
			       (unsigned long long)r->gadgets[0],
			       (unsigned long long)r->gadgets[1],
			       (unsigned long long)r->gadgets[2],
			       (unsigned long long)r->gadgets_outside_functions);
		putchar('\n');
	}
	printf("\nwhy the fixed regions stay:\n");
	for (size_t i = 0; i < a->nregions; i++)
		if (a->regions[i].why && (a->regions[i].bytes || a->regions[i].functions))
			printf("  %s: %s\n", a->regions[i].name, a->regions[i].why);
	printf("\nresident functions: %zu, %llu bytes; moving %zu (%.1f%%), %llu bytes (%.2f%%); fixed %zu, %llu bytes (%.2f%%)\n",
	       rfuncs, (unsigned long long)resident,
	       t[FGK_AUDIT_MOVING].functions, pct(t[FGK_AUDIT_MOVING].functions, rfuncs),
	       (unsigned long long)t[FGK_AUDIT_MOVING].function_bytes,
	       pct(t[FGK_AUDIT_MOVING].function_bytes, resident),
	       t[FGK_AUDIT_FIXED].functions,
	       (unsigned long long)t[FGK_AUDIT_FIXED].function_bytes,
	       pct(t[FGK_AUDIT_FIXED].function_bytes, resident));
	if (a->asm_known)
		printf("fixed resident functions from assembly (.S): %zu\n",
		       t[FGK_AUDIT_FIXED].asm_functions);
	printf("init-only text (freed after boot): %llu bytes, %zu functions, %llu function bytes\n",
	       (unsigned long long)t[FGK_AUDIT_INIT].bytes, t[FGK_AUDIT_INIT].functions,
	       (unsigned long long)t[FGK_AUDIT_INIT].function_bytes);
	if (a->sections && a->domain_sections[FGK_LAYOUT_DOMAINS - 1] != a->sections) {
		int ndom = 0;

		/* §3: one line per domain with sections, range domains first */
		for (int d = 0; d < FGK_LAYOUT_DOMAINS; d++) {
			if (!a->domain_sections[d])
				continue;
			ndom++;
			if (d < FGK_LAYOUT_DOMAINS - 1)
				printf("entropy: %s* shuffled per object: %zu sections, log2(%zu!) = %.1f bits\n",
				       domain_prefix[d], a->domain_sections[d],
				       a->domain_sections[d], a->domain_log2_orderings[d]);
			else
				printf("entropy: .text.*: %zu sections, log2(%zu!) = %.1f bits\n",
				       a->domain_sections[d], a->domain_sections[d],
				       a->domain_log2_orderings[d]);
		}
		printf("entropy: %zu shuffled sections in %d domains: ", a->sections, ndom);
		for (int d = 0, k = 0; d < FGK_LAYOUT_DOMAINS; d++)
			if (a->domain_sections[d])
				printf("%slog2(%zu!)", k++ ? " + " : "", a->domain_sections[d]);
		printf(" = %.1f bits of orderings (%.1f bits: the 256-bit seed bounds it)\n",
		       a->log2_orderings,
		       a->log2_orderings < 256 ? a->log2_orderings : 256.0);
	}
	else if (a->sections)
		printf("entropy: %zu shuffled sections: a function takes any of %zu positions in the order; log2(%zu!) = %.1f bits of orderings (%.1f bits: the 256-bit seed bounds it)\n",
		       a->sections, a->sections, a->sections, a->log2_orderings,
		       a->log2_orderings < 256 ? a->log2_orderings : 256.0);
	else
		printf("entropy: no shuffled sections (not built with CONFIG_FG_KASLR): 0 bits\n");
	if (a->seeded)
		printf("seed: %zu of %zu sections (%llu bytes) leave their link address; the layout ends at 0x%016llx\n",
		       a->moved_sections, a->sections,
		       (unsigned long long)a->moved_bytes,
		       (unsigned long long)a->layout_end);
	if (a->have_gadgets) {
		uint64_t mv = kinds_total(a->gadgets[FGK_AUDIT_MOVING]);
		uint64_t fx = kinds_total(a->gadgets[FGK_AUDIT_FIXED]);
		uint64_t in = kinds_total(a->gadgets[FGK_AUDIT_INIT]);

		printf("gadgets: moving %llu (%llu unique), fixed resident %llu (%llu unique), init-only %llu, outside text %llu\n",
		       (unsigned long long)mv, (unsigned long long)a->unique[FGK_AUDIT_MOVING],
		       (unsigned long long)fx, (unsigned long long)a->unique[FGK_AUDIT_FIXED],
		       (unsigned long long)in, (unsigned long long)a->gadgets_outside);
		printf("one leaked base or fixed-code pointer gives %llu gadgets (%.1f%% of the resident %llu); without FG-KASLR it gives all %llu\n",
		       (unsigned long long)fx, pct(fx, mv + fx),
		       (unsigned long long)(mv + fx), (unsigned long long)(mv + fx));
		{
			uint64_t mo = a->gadgets_outside_functions[FGK_AUDIT_MOVING];
			uint64_t fo = a->gadgets_outside_functions[FGK_AUDIT_FIXED];

			printf("gadgets outside any function symbol (code without one: SYM_CODE entry stubs, padding): moving %llu (%.1f%%), fixed resident %llu (%.1f%%); inside functions the fixed share is %llu of %llu (%.1f%%; of function bytes %.2f%%)\n",
			       (unsigned long long)mo, pct(mo, mv),
			       (unsigned long long)fo, pct(fo, fx),
			       (unsigned long long)(fx - fo),
			       (unsigned long long)(mv - mo + fx - fo),
			       pct(fx - fo, mv - mo + fx - fo),
			       pct(t[FGK_AUDIT_FIXED].function_bytes, resident));
		}
	}
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "gadgets", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		CLI_JSON_OPTIONS,
		{ 0 },
	};
	const char *path = NULL, *seed_text = NULL, *gadgets = NULL;
	enum cli_output out = CLI_TEXT;
	struct fgk_vmlinux *vm = NULL;
	struct fgk_audit *a = NULL;
	struct fgk_seed seed;
	struct fgk_error *err;
	int opt;

	while ((opt = cli_getopt(&cmd_audit, argc, argv, "h", opts)) != -1) {
		if (cli_json_option(&out, opt))
			continue;
		if (opt == 'h')
			return cli_help(&cmd_audit);
		if (opt == OPT_SEED)
			seed_text = optarg;
		else if (opt == 'g')
			gadgets = optarg;
		else
			return cli_usage_error(&cmd_audit, "bad option");
	}
	if (optind < argc)
		path = argv[optind++];
	if (optind < argc)
		return cli_usage_error(&cmd_audit, "unexpected argument '%s'", argv[optind]);
	if (!path)
		return cli_usage_error(&cmd_audit, "VMLINUX missing");
	if (seed_text) {
		err = fgk_seed_parse(seed_text, &seed);
		if (err)
			return cli_fail(err);
	}
	err = fgk_vmlinux_open(path, &vm);
	if (!err)
		err = fgk_audit_compute(vm, seed_text ? &seed : NULL, &a);
	if (!err && gadgets) {
		char *buf;
		size_t len;

		if (cli_read_text(gadgets, (size_t)1 << 30, &buf, &len)) {
			fgk_audit_free(a);
			fgk_vmlinux_close(vm);
			return 1;
		}
		err = fgk_audit_gadgets(a, buf, len, strcmp(gadgets, "-") ? gadgets : "<stdin>");
		free(buf);
	}
	if (err) {
		fgk_audit_free(a);
		fgk_vmlinux_close(vm);
		return cli_fail_in(err, path);
	}
	if (out != CLI_TEXT)
		print_json(vm, a, out);
	else
		print_text(vm, a);
	fgk_audit_free(a);
	fgk_vmlinux_close(vm);
	return cli_finish_stdout(0);
}

const struct cli_cmd cmd_audit = {
	.name = "audit",
	.summary = "what moves and what stays, entropy, gadget census",
	.help = help,
	.run = run,
};
