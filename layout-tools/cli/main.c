// SPDX-License-Identifier: GPL-2.0
/* fgk: the command table (bpftool style: one do_<cmd> per file). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

/*
 * fgk --version: the package, the layout specification (docs/layout-spec.md
 * title) and libfgk's ABI (the number of SONAME libfgk.so.N, libfgk.map's
 * FGK_N).  Packaging may set FGK_PACKAGE_VERSION (-D).
 */
#ifndef FGK_PACKAGE_VERSION
#define FGK_PACKAGE_VERSION "0.9"
#endif
#define FGK_SPEC_VERSION 3
#ifndef FGK_ABI_VERSION
#define FGK_ABI_VERSION 1
#endif

static const struct cli_cmd *const commands[] = {
	&cmd_layout, &cmd_map, &cmd_addr, &cmd_seed, &cmd_relink, &cmd_symbolize,
	&cmd_crash, &cmd_audit,
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct cli_cmd *find(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i]->name, name))
			return commands[i];
	return NULL;
}

static int usage(FILE *f)
{
	fputs("usage: fgk COMMAND [ARGS...]\n"
	      "\n"
	      "Recompute the function-granular KASLR layout of a vmlinux from its seed\n"
	      "(docs/layout-spec.md) and translate between link-time and runtime views.\n"
	      "\n"
	      "commands:\n", f);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
	fprintf(f, "  %-10s %s\n", "help", "show this text, or 'fgk help COMMAND'");
	fputs("\n"
	      "Every command accepts --help; 'fgk --version' names the versions of fgk,\n"
	      "the layout spec and the libfgk ABI.  Man pages: docs/fgk.1.md,\n"
	      "docs/fgk-COMMAND.1.md.\n",
	      f);
	return 0;
}

static void on_signal(int sig)
{
	fgk_remove_temp_files();
	signal(sig, SIG_DFL);
	raise(sig);
}

void cli_install_signal_handlers(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction old;

		/* keep an inherited SIG_IGN (nohup, background jobs) */
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		sigaction(sigs[i], &sa, NULL);
	}
}

int main(int argc, char **argv)
{
	const struct cli_cmd *cmd;

	cli_install_signal_handlers();
	opterr = 0;	/* option errors: cli_getopt's one line */

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "-h")) {
		if (argc > 2) {
			cmd = find(argv[2]);
			if (!cmd) {
				cli_errorf("help: unknown command '%s' (see 'fgk help')",
					   argv[2]);
				return 2;
			}
			if (argc > 3) {
				cli_errorf("help: unexpected argument '%s' (see 'fgk help')",
					   argv[3]);
				return 2;
			}
			return cli_help(cmd);
		}
		usage(stdout);
		return cli_finish_stdout(0);
	}
	if (!strcmp(argv[1], "--version")) {
		printf("fgk %s (layout spec version %d, libfgk ABI %d: libfgk.so.%d)\n",
		       FGK_PACKAGE_VERSION, FGK_SPEC_VERSION, FGK_ABI_VERSION,
		       FGK_ABI_VERSION);
		return cli_finish_stdout(0);
	}
	cmd = find(argv[1]);
	if (!cmd) {
		cli_errorf("unknown command '%s' (see 'fgk help')", argv[1]);
		return 2;
	}
	return cmd->run(argc - 1, argv + 1);
}
