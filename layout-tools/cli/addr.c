// SPDX-License-Identifier: GPL-2.0
/* fgk addr: runtime address <-> link address / symbol+offset. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
"usage: fgk addr VMLINUX (--seed SEED | --seed-file RECORD) [--offset BASE]\n"
"                [ADDR | SYMBOL[+OFF]]...\n"
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
"and the exit status is 1; the other items are still translated.\n";

static bool is_address(const char *s, uint64_t *v)
{
	size_t len = strlen(s);

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return cli_parse_hex(s, v);
	if (len != 16)
		return false;
	return cli_parse_hex(s, v);
}

static void print_line(struct cli_target *t, const struct fgk_layout *l,
		       const char *item, uint64_t runtime, uint64_t link,
		       const struct fgk_symbol *sym)
{
	const struct fgk_section *sec = fgk_layout_section_at(l, link);

	(void)t;
	printf("%s\t0x%016llx\t0x%016llx\t", item, (unsigned long long)runtime,
	       (unsigned long long)link);
	if (sym)
		printf("%s+0x%llx/0x%llx", sym->name,
		       (unsigned long long)(link - sym->addr),
		       (unsigned long long)sym->size);
	else
		putchar('-');
	printf("\t%s\n", sec ? sec->name : "-");
}

static int one(struct cli_target *t, const struct fgk_layout *l,
	       const char *raw)
{
	char item[1024], *p, *plus, *slash;
	uint64_t v, link, off = 0;
	struct fgk_symbol sym;
	struct fgk_error *err;
	size_t len;

	while (isspace((unsigned char)*raw))
		raw++;
	len = strlen(raw);
	while (len && isspace((unsigned char)raw[len - 1]))
		len--;
	if (len >= sizeof(item))
		return cli_errorf("%.40s...: item too long", raw);
	memcpy(item, raw, len);
	item[len] = '\0';
	p = item;
	if (!strncmp(p, "[<", 2) && len > 4 && !strcmp(p + len - 2, ">]")) {
		p += 2;
		p[strlen(p) - 2] = '\0';
	}
	if (!*p)
		return 0;
	if (is_address(p, &v)) {
		uint64_t newaddr;

		if (v < t->offset)
			return cli_errorf("%s: address outside the kernel image (below the base offset 0x%llx)",
					  p, (unsigned long long)t->offset);
		newaddr = v - t->offset;
		if (!fgk_layout_unmap(l, newaddr, &link))
			return cli_errorf("%s: address in the int3 padding between shuffled functions (no function there with this seed)",
					  p);
		if (!fgk_vmlinux_contains(t->vm, link))
			return cli_errorf("%s: address outside the kernel image %s (base offset 0x%llx)",
					  p, fgk_vmlinux_path(t->vm),
					  (unsigned long long)t->offset);
		err = fgk_symbol_at(t->vm, link, &sym);
		if (err) {
			fgk_error_free(err);
			print_line(t, l, p, v, link, NULL);
		} else {
			print_line(t, l, p, v, link, &sym);
		}
		return 0;
	}
	slash = strchr(p, '/');
	if (slash)
		*slash = '\0';	/* sym+off/size: size ignored */
	plus = strchr(p, '+');
	if (plus) {
		*plus = '\0';
		if (!cli_parse_hex(plus + 1, &off))
			return cli_errorf("%s+%s: bad offset (hex expected)", p, plus + 1);
	}
	err = fgk_symbol_lookup(t->vm, p, &sym);
	if (err) {
		fgk_error_free(err);
		return cli_errorf("%s: no such symbol in %s", p,
				  fgk_vmlinux_path(t->vm));
	}
	link = sym.addr + off;
	{
		char shown[1100];

		if (plus)
			snprintf(shown, sizeof(shown), "%s+0x%llx", p, (unsigned long long)off);
		else
			snprintf(shown, sizeof(shown), "%s", p);
		v = sym.absolute ? link : fgk_layout_map(l, link) + t->offset;
		print_line(t, l, shown, v, link, &sym);
	}
	return 0;
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
	struct fgk_error *err;
	int opt, rc, status = 0;

	/* "+" : stop at the first non-option so "sym+0x10" etc. are items */
	while ((opt = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (cli_target_option(&t, opt, optarg))
			continue;
		if (opt == 'h')
			return cli_help(&cmd_addr);
		return cli_usage_error(&cmd_addr, "bad option");
	}
	if (optind < argc)
		t.vmlinux = argv[optind++];
	/* options may also follow VMLINUX */
	while ((opt = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (cli_target_option(&t, opt, optarg))
			continue;
		if (opt == 'h')
			return cli_help(&cmd_addr);
		return cli_usage_error(&cmd_addr, "bad option");
	}
	rc = cli_target_open(&cmd_addr, &t);
	if (rc)
		goto out;
	err = fgk_layout_compute(t.vm, &t.seed, &l);
	if (err) {
		rc = cli_fail(err);
		goto out;
	}
	if (optind < argc) {
		for (int i = optind; i < argc; i++)
			if (one(&t, l, argv[i]))
				status = 1;
	} else {
		char *line = NULL;
		size_t cap = 0;

		while (getline(&line, &cap, stdin) > 0) {
			if (one(&t, l, line))
				status = 1;
			fflush(stdout);
		}
		free(line);
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
