// SPDX-License-Identifier: GPL-2.0
/* Shared CLI helpers: errors, numbers, --seed/--seed-file/--offset. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

/*
 * One line on stderr, "fgk: " first: control bytes (ESC, BEL, newlines)
 * of names and values from hostile files are shown as \xNN, never sent to
 * the terminal.
 */
static void put_line(const char *prefix, const char *msg)
{
	fputs(prefix, stderr);
	for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			fprintf(stderr, "\\x%02x", *p);
		else
			fputc(*p, stderr);
	}
	fputc('\n', stderr);
}

int cli_fail(struct fgk_error *err)
{
	char buf[2048];

	put_line("fgk: ", fgk_error_string(err, buf, sizeof(buf)));
	fgk_error_free(err);
	return 1;
}

int cli_fail_in(struct fgk_error *err, const char *path)
{
	if (err && !err->path && err != &fgk_enomem && path)
		err->path = strdup(path);
	return cli_fail(err);
}

int cli_errorf(const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	put_line("fgk: ", n < 0 ? "out of memory" : msg);
	free(msg);
	return 1;
}

int cli_check_output(const char *out, const char *const *inputs, size_t n)
{
	struct stat o, i;

	if (!out || lstat(out, &o) < 0)
		return 0;
	if (S_ISLNK(o.st_mode))
		return cli_errorf("%s: is a symbolic link: refusing to replace it (give the real path)",
				  out);
	for (size_t k = 0; k < n; k++) {
		if (inputs[k] && stat(inputs[k], &i) == 0 &&
		    i.st_dev == o.st_dev && i.st_ino == o.st_ino)
			return cli_errorf("%s: is the input %s: refusing to overwrite it (give another -o)",
					  out, inputs[k]);
	}
	if (!S_ISREG(o.st_mode))
		return cli_errorf("%s: not a regular file: refusing to replace it (omit -o to write to stdout)",
				  out);
	return 0;
}

int cli_read_text(const char *path, size_t max, char **buf, size_t *len)
{
	struct fgk_error *err = fgk_read_file(path, max, true, buf, len);

	return err ? cli_fail(err) : 0;
}

int cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
{
	char *msg = NULL, *line = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n >= 0 && asprintf(&line, "%s (see 'fgk help %s')", msg, cmd->name) < 0)
		line = NULL;
	fprintf(stderr, "fgk %s: ", cmd->name);
	put_line("", line ? line : "out of memory");
	free(line);
	free(msg);
	return 2;
}

/* The option's name as written: "--name" (without "=value") or "-c". */
static char *option_text(const char *arg, int c, char *buf, size_t size)
{
	if (!c || !strncmp(arg, "--", 2))
		snprintf(buf, size, "%.*s", (int)strcspn(arg, "="), arg);
	else
		snprintf(buf, size, "-%c", c);
	return buf;
}

/*
 * How many long options start with name (after "--", up to '='); *val is
 * the value of the last one.
 */
static size_t long_matches(const struct option *opts, const char *name, int *val)
{
	size_t len = strcspn(name, "="), n = 0;

	for (; opts && opts->name; opts++) {
		if (!strncmp(opts->name, name, len)) {
			*val = opts->val;
			if (strlen(opts->name) == len)
				return 1;	/* exact */
			n++;
		}
	}
	return n;
}

int cli_getopt(const struct cli_cmd *cmd, int argc, char **argv,
	       const char *optstring, const struct option *opts)
{
	char colon[64], name[128];
	const char *arg;
	size_t lead = strspn(optstring, "+-"), n = 0;
	bool is_long;
	int opt, val = 0;

	/* a leading ':' (after '+'/'-'): a missing argument returns ':' */
	snprintf(colon, sizeof(colon), "%.*s:%s", (int)lead, optstring,
		 optstring + lead);
	opterr = 0;
	opt = getopt_long(argc, argv, colon, opts, NULL);
	if (opt != '?' && opt != ':')
		return opt;
	/*
	 * glibc: optopt is 0 for an unknown or ambiguous long option, the
	 * option's value for one given an argument it takes none of (or
	 * missing one), the character of an unknown short option (then
	 * argv[optind - 1] may be the previous argument: "-xq").
	 */
	arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
	is_long = !strncmp(arg, "--", 2);
	if (is_long)
		n = long_matches(opts, arg + 2, &val);
	if (!(is_long && (!optopt || (n == 1 && val == optopt))))
		is_long = false, arg = "";
	option_text(arg, optopt, name, sizeof(name));
	if (opt == ':')
		exit(cli_usage_error(cmd, "option '%s' needs an argument", name));
	if (is_long && optopt)
		exit(cli_usage_error(cmd, "option '%s' takes no argument", name));
	if (is_long && n > 1)
		exit(cli_usage_error(cmd, "ambiguous option '%s'", name));
	exit(cli_usage_error(cmd, "unrecognized option '%s'", name));
}

bool cli_json_option(enum cli_output *out, int opt)
{
	if (opt == OPT_JSON) {
		if (*out == CLI_TEXT)
			*out = CLI_JSON;
		return true;
	}
	if (opt == OPT_PRETTY) {
		*out = CLI_JSON_PRETTY;
		return true;
	}
	return false;
}

void cli_json_init(struct json *j, enum cli_output out)
{
	json_init(j, stdout, out == CLI_JSON_PRETTY);
}

void cli_json_seed_field(struct json *j, const char *name,
			 const struct fgk_seed *seed)
{
	char hex[FGK_SEED_HEX_LEN + 1];

	json_name(j, name);
	if (!seed) {
		json_null(j);
		return;
	}
	fgk_seed_format(seed, hex);
	json_string(j, hex);
}

void cli_json_record_fields(struct json *j, const struct fgk_seed_record *rec)
{
	cli_json_seed_field(j, "seed", &rec->seed);
	json_string_field(j, "build_id", rec->build_id);
	json_string_field(j, "release", rec->release);
	if (rec->has_offset)
		json_hex_field(j, "offset", rec->offset);
	else
		json_null_field(j, "offset");
	json_string_field(j, "note", rec->note);
}

int cli_help(const struct cli_cmd *cmd)
{
	fputs(cmd->help, stdout);
	return cli_finish_stdout(0);
}

bool cli_parse_hex(const char *s, uint64_t *ret)
{
	struct fgk_error *err = fgk_offset_parse(s, 0, ret);

	fgk_error_free(err);
	return !err;
}

bool cli_target_option(struct cli_target *t, int opt, const char *arg)
{
	switch (opt) {
	case OPT_SEED:
		t->seed_text = arg;
		return true;
	case OPT_SEED_FILE:
		t->seed_file = arg;
		return true;
	case OPT_OFFSET:
		t->offset_text = arg;
		return true;
	case OPT_KALLSYMS:
		t->kallsyms = arg;
		return true;
	case OPT_BUILD_ID:
		t->build_id = arg;
		return true;
	}
	return false;
}

static int by_build_id(const char *const *dirs, const char *build_id,
		       const char *release, struct fgk_vmlinux **vm,
		       char **path);

int cli_vmlinux_by_build_id(const char *const *dirs, const char *build_id,
			    const char *release, struct fgk_vmlinux **vm,
			    char **path)
{
	*vm = NULL;
	*path = NULL;
	if (strlen(build_id) < 2 || strlen(build_id) % 2 ||
	    strspn(build_id, "0123456789abcdefABCDEF") != strlen(build_id) ||
	    strlen(build_id) >= 256)
		return cli_errorf("build-id '%s': not hex bytes", build_id);
	{
		char low[256];

		for (size_t i = 0; i <= strlen(build_id); i++)
			low[i] = (char)tolower((unsigned char)build_id[i]);
		return by_build_id(dirs, low, release, vm, path);
	}
}

static int by_build_id(const char *const *dirs, const char *build_id,
		       const char *release, struct fgk_vmlinux **vm,
		       char **path)
{
	struct fgk_error *err, *ferr;
	struct fgk_fetch f = { 0 };
	char buf[4096], fbuf[1024];

	err = fgk_vmlinux_find(dirs, build_id, release, vm);
	if (!err) {
		*path = strdup(fgk_vmlinux_path(*vm));
		if (!*path) {
			fgk_vmlinux_close(*vm);
			*vm = NULL;
			return cli_fail(&fgk_enomem);
		}
		return 0;
	}
	if (!fgk_debuginfod_enabled()) {
		fgk_error_string(err, buf, sizeof(buf));
		fgk_error_free(err);
		return cli_errorf("%s; set DEBUGINFOD_URLS to fetch it through debuginfod, or give its path",
				  buf);
	}
	ferr = fgk_vmlinux_fetch(build_id, &f, vm);
	if (ferr) {
		/* one line: every place looked at, debuginfod's answer last */
		fgk_error_string(err, buf, sizeof(buf));
		fgk_error_string(ferr, fbuf, sizeof(fbuf));
		fgk_error_free(err);
		fgk_error_free(ferr);
		return cli_errorf("%s; %s", buf, fbuf);
	}
	fgk_error_free(err);
	if (f.url)
		fprintf(stderr, "fgk: fetched vmlinux (build-id %s) from %s into %s\n",
			build_id, f.url, f.path);
	else
		fprintf(stderr, "fgk: vmlinux (build-id %s) from the debuginfod cache: %s\n",
			build_id, f.path);
	*path = f.path;
	f.path = NULL;
	fgk_fetch_clear(&f);
	return 0;
}

bool cli_vmlinux_positional(const struct cli_target *t, const char *arg)
{
	char magic[4];
	FILE *f;
	bool elf;

	if (t->build_id)
		return false;
	if (!t->seed_file)
		return true;
	f = fopen(arg, "rb");
	if (!f)
		return false;
	elf = fread(magic, 1, 4, f) == 4 && !memcmp(magic, "\x7f" "ELF", 4);
	fclose(f);
	return elf;
}

int cli_target_layout(struct cli_target *t, struct fgk_layout **l)
{
	struct fgk_kallsyms_origin o;
	struct fgk_error *err;
	size_t len;
	char *text;
	int rc;

	*l = NULL;
	if (!t->kallsyms) {
		err = fgk_layout_compute(t->vm, &t->seed, l);
		return err ? cli_fail(err) : 0;
	}
	rc = cli_read_text(t->kallsyms, CLI_TEXT_MAX, &text, &len);
	if (rc)
		return rc;
	err = fgk_layout_from_kallsyms(t->vm, text, len, t->kallsyms, l, &o);
	free(text);
	if (err)
		return cli_fail(err);
	if (!t->have_offset) {
		t->offset = o.offset;
		t->have_offset = true;
		t->offset_from = "the --kallsyms capture";
	}
	fprintf(stderr, "fgk: layout rebuilt from %s (no seed): base offset 0x%llx, ",
		t->kallsyms, (unsigned long long)o.offset);
	cli_origin_tail(&o);
	fgk_kallsyms_origin_clear(&o);
	return 0;
}

void cli_origin_tail(const struct fgk_kallsyms_origin *o)
{
	fprintf(stderr, "%zu sections placed by their symbols, %zu without a kallsyms symbol by elimination",
		o->by_symbol, o->by_elimination);
	if (o->guessed)
		fprintf(stderr, "; %zu sections are interchangeable (kallsyms cannot tell them apart: same size and alignment, or copies of one function that pack either way; placed in section order): %s",
			o->guessed, o->guessed_names);
	fputc('\n', stderr);
}

int cli_target_open(const struct cli_cmd *cmd, struct cli_target *t)
{
	struct fgk_error *err;

	if (t->kallsyms && (t->seed_text || t->seed_file))
		return cli_usage_error(cmd, "give --kallsyms or a seed, not both");
	if (!t->kallsyms && !t->seed_text && !t->seed_file)
		return cli_usage_error(cmd, "missing --seed SEED, --seed-file RECORD or --kallsyms FILE");
	if (t->seed_text && t->seed_file)
		return cli_usage_error(cmd, "give --seed or --seed-file, not both");
	if (!t->vmlinux && !t->build_id && !t->seed_file)
		return cli_usage_error(cmd, "missing VMLINUX (or --build-id, or a seed record with one, to look it up)");
	if (t->vmlinux && t->build_id)
		return cli_usage_error(cmd, "give VMLINUX or --build-id, not both");
	if (t->offset_text) {
		if (!cli_parse_hex(t->offset_text, &t->offset))
			return cli_errorf("--offset '%s': not a hex number (e.g. 0x1a000000)",
					  t->offset_text);
		t->have_offset = true;
		t->offset_from = "--offset";
	}
	if (t->seed_text) {
		err = fgk_seed_parse(t->seed_text, &t->seed);
		if (err)
			return cli_fail(err);
	} else if (t->seed_file) {
		err = fgk_seed_record_read(t->seed_file, &t->rec);
		if (err)
			return cli_fail(err);
		t->seed = t->rec.seed;
		if (!t->have_offset && t->rec.has_offset) {
			t->offset = t->rec.offset;
			t->have_offset = true;
			t->offset_from = "the seed record";
		}
	}
	if (!t->vmlinux) {
		const char *id = t->build_id ? t->build_id : t->rec.build_id;
		int rc;

		if (!id)
			return cli_errorf("%s: the record has no build-id: give VMLINUX",
					  t->seed_file);
		rc = cli_vmlinux_by_build_id(NULL, id, t->build_id ? NULL : t->rec.release,
					     &t->vm, &t->fetched);
		if (rc)
			return rc;
		t->vmlinux = t->fetched;
	} else {
		err = fgk_vmlinux_open(t->vmlinux, &t->vm);
		if (err)
			return cli_fail(err);
	}
	if (t->seed_file) {
		err = fgk_seed_record_check(&t->rec, t->seed_file, t->vm);
		if (err)
			return cli_fail(err);
	}
	return 0;
}

void cli_target_close(struct cli_target *t)
{
	fgk_vmlinux_close(t->vm);
	t->vm = NULL;
	fgk_seed_record_clear(&t->rec);
	free(t->fetched);
	t->fetched = NULL;
}

int cli_finish_stdout(int status)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		int e = errno;

		fprintf(stderr, "fgk: stdout: write error: %s\n",
			strerror(e ? e : EIO));
		return 1;
	}
	return status;
}
