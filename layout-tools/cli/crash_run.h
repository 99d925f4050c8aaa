/* SPDX-License-Identifier: GPL-2.0 */
/* fgk crash: what cli/crash.c and cli/crash_modules.c share. */
#ifndef FGK_CLI_CRASH_RUN_H
#define FGK_CLI_CRASH_RUN_H

#include "cli.h"

/* One 'fgk crash' invocation: its options, then what each step found. */
struct crash_run {
	struct cli_target t;
	struct fgk_vmcoreinfo vi;
	const char *dump, *input, *crash;
	char **extra;			/* after "--": passed to crash */
	int nextra;
	bool info_only, dry, quiet;
	enum cli_output json;		/* --info --json / --pretty */
	bool have_vmcoreinfo;		/* false: --seed/--seed-file fallback */
	bool is_fg;			/* vmlinux has randomized sections */
	bool shuffle;			/* relink vmlinux for t.seed */
	bool cached;			/* the relink was in the cache */
	const char *seed_src;		/* where the seed came from (reported on stderr) */
	const char *target;		/* the vmlinux crash gets */
	char *fgk_path;			/* the relinked vmlinux.fgk */
	struct fgk_layout *layout;	/* rebuilt from the dump's kallsyms */
	char kaslr[64];			/* crash's --kaslr= option */
	const char **mod_dirs;		/* --modules, NULL-terminated */
	int nmod_dirs;
	bool no_modules;
	char *default_mod_dir;		/* VMLINUX's directory + /modules */
	char *mod_tmp;			/* private: links to the .ko files, crash's input */
	char *mod_input;		/* "mod -S" + the -i FILE */
	size_t nmodules, nrelinked, nfetched;
	struct fgk_vmcore_module *dmods;	/* the dump's module list */
	size_t ndmods;
	bool dmods_listed;
	char dmods_error[1024];		/* why it could not be listed */
};

/* cli/crash.c */
char *crash_dir_of(const char *path);
char *crash_private_tmp_dir(void);

/*
 * cli/crash_modules.c: the .ko files crash loads with 'mod -S' (checked
 * against vmlinux, relinked in the dump's order, fetched by build-id), and
 * their removal after crash.
 */
int crash_prepare_modules(struct crash_run *c);
void crash_cleanup_modules(struct crash_run *c);

#endif
