/* SPDX-License-Identifier: GPL-2.0 */
/* The fgk CLI: shared option handling and the command table. */
#ifndef FGK_CLI_H
#define FGK_CLI_H

#include <getopt.h>
#include <fgk/fgk.h>

#include "json.h"

struct cli_cmd {
	const char *name;
	const char *summary;
	const char *help;	/* full usage text (also docs/fgk-<name>.1.md) */
	int (*run)(int argc, char **argv);
};

extern const struct cli_cmd cmd_layout, cmd_map, cmd_addr, cmd_seed, cmd_relink,
	cmd_symbolize;
extern const struct cli_cmd cmd_crash;	/* cli/crash.c */
extern const struct cli_cmd cmd_audit;	/* cli/audit.c */

/* cli/capture.c: `fgk seed capture ...` (argv[0] == "capture"). */
int cli_seed_capture(int argc, char **argv);

/* Print "fgk: <file>: <problem>" to stderr, free err, return exit status 1. */
int cli_fail(struct fgk_error *err);
/* The same, naming path when the error names no file. */
int cli_fail_in(struct fgk_error *err, const char *path);
/*
 * -o OUT: refuse (message, returns 1) when OUT is one of the n inputs
 * (same file) or exists and is not a regular file.  0 if fine.
 */
int cli_check_output(const char *out, const char *const *inputs, size_t n);
/* The whole text file path ("-": stdin), at most max bytes; 0 or 1. */
int cli_read_text(const char *path, size_t max, char **buf, size_t *len);
#define CLI_TEXT_MAX ((size_t)64 << 20)	/* logs, oopses: 64 MiB */
/* Remove libfgk's temp files on SIGINT/SIGTERM/SIGHUP, then die of it. */
void cli_install_signal_handlers(void);

/* printf-style one-line error; returns 1 (or 2 for usage errors). */
int cli_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int cli_help(const struct cli_cmd *cmd);
/*
 * getopt_long for cmd (main sets opterr = 0): an unknown or ambiguous
 * option, a missing or unexpected option argument is one line on stderr,
 * "fgk CMD: unrecognized option '--bogus' (see 'fgk help CMD')", and the
 * process exits with status 2 (usage), before the command opened anything.
 */
int cli_getopt(const struct cli_cmd *cmd, int argc, char **argv,
	       const char *optstring, const struct option *opts);

/* Hex number, "0x" optional (kernel addresses are written in hex). */
bool cli_parse_hex(const char *s, uint64_t *ret);

/* Options shared by the commands that read a vmlinux. */
struct cli_target {
	const char *vmlinux;
	const char *seed_text;
	const char *seed_file;
	const char *offset_text;
	const char *kallsyms;	/* --kallsyms FILE: layout without the seed */
	const char *build_id;	/* --build-id HEX: the vmlinux to look for */
	/* results */
	char *fetched;		/* vmlinux found or fetched by build-id */
	struct fgk_vmlinux *vm;
	struct fgk_seed seed;
	struct fgk_seed_record rec;
	bool have_offset;
	uint64_t offset;
	const char *offset_from;	/* where offset came from, for messages */
};

enum {
	OPT_SEED = 0x100,
	OPT_SEED_FILE,
	OPT_OFFSET,
	OPT_HELP,
	OPT_KALLSYMS,
	OPT_BUILD_ID,
	OPT_JSON,
	OPT_PRETTY,
};
#define CLI_TARGET_OPTIONS \
	{ "seed", required_argument, NULL, OPT_SEED }, \
	{ "seed-file", required_argument, NULL, OPT_SEED_FILE }, \
	{ "kallsyms", required_argument, NULL, OPT_KALLSYMS }, \
	{ "build-id", required_argument, NULL, OPT_BUILD_ID }, \
	{ "help", no_argument, NULL, 'h' }
/* The help text of the options above, for the commands' usage texts. */
#define CLI_TARGET_HELP \
"--seed SEED         64 hex digits (or fgkaslr_seed=..., or /proc/fgkaslr_seed text)\n" \
"--seed-file RECORD  seed record (docs/seed-records.md); its build-id must match\n" \
"--kallsyms FILE     no seed: rebuild the layout from FILE, root's /proc/kallsyms\n" \
"                    of the booted kernel (cat /proc/kallsyms > FILE as root)\n" \
"--build-id HEX      without VMLINUX: the vmlinux with this build-id (default:\n" \
"                    the seed record's), from /usr/lib/debug, /lib/modules or,\n" \
"                    with $DEBUGINFOD_URLS set, fetched through debuginfod\n"

/* --json / --pretty (bpftool's -j / -p): json.h's conventions. */
#define CLI_JSON_OPTIONS \
	{ "json", no_argument, NULL, OPT_JSON }, \
	{ "pretty", no_argument, NULL, OPT_PRETTY }
enum cli_output { CLI_TEXT, CLI_JSON, CLI_JSON_PRETTY };
/* Handle --json/--pretty; returns true if opt was one of them. */
bool cli_json_option(enum cli_output *out, int opt);
/* A writer on stdout for out (CLI_JSON or CLI_JSON_PRETTY). */
void cli_json_init(struct json *j, enum cli_output out);
/* name: the seed's 64 hex digits, or null. */
void cli_json_seed_field(struct json *j, const char *name,
			 const struct fgk_seed *seed);
/* A seed record's members: seed, build_id, release, offset, note. */
void cli_json_record_fields(struct json *j, const struct fgk_seed_record *rec);

/* Handle a shared option; returns true if it was one. */
bool cli_target_option(struct cli_target *t, int opt, const char *arg);
/*
 * Open vmlinux (without VMLINUX: by build-id, cli_vmlinux_by_build_id),
 * resolve the seed (and offset; none needed with --kallsyms), check the
 * record's build-id.
 */
int cli_target_open(const struct cli_cmd *cmd, struct cli_target *t);
/*
 * The layout: from the seed, or from --kallsyms (saying so on stderr; the
 * base offset is the capture's unless --offset was given).
 */
int cli_target_layout(struct cli_target *t, struct fgk_layout **l);
/*
 * Is arg the VMLINUX argument, for commands whose VMLINUX may be omitted
 * before other positional arguments: not with --build-id; with a seed
 * record, only if arg is an ELF file.
 */
bool cli_vmlinux_positional(const struct cli_target *t, const char *arg);
/* "N sections placed by their symbols, ..., interchangeable: NAMES\n" on stderr. */
void cli_origin_tail(const struct fgk_kallsyms_origin *o);
/*
 * The vmlinux of build_id (release may be NULL): dirs (NULL-terminated, may
 * be NULL) and the system's debug paths (fgk_vmlinux_find), then
 * debuginfod.  Says on stderr what was fetched and from where.  *path is
 * the file used (malloc'd).  0 or 1 (error printed).
 */
int cli_vmlinux_by_build_id(const char *const *dirs, const char *build_id,
			    const char *release, struct fgk_vmlinux **vm,
			    char **path);
void cli_target_close(struct cli_target *t);
/* Flush stdout; report a write error.  Returns exit status. */
int cli_finish_stdout(int status);

#endif
