// SPDX-License-Identifier: GPL-2.0
/* fgk seed capture: a seed record from a dump, /proc/fgkaslr_seed text or an oops. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
"usage: fgk seed capture --vmcore DUMP [--vmlinux VMLINUX] [--note NOTE] [--json | --pretty] [-o FILE]\n"
"       fgk seed capture --text FILE [--vmlinux VMLINUX] [--offset BASE] [--note NOTE] [--json | --pretty] [-o FILE]\n"
"       fgk seed capture --oops FILE --vmlinux VMLINUX [--note NOTE] [--json | --pretty] [-o FILE]\n"
"\n"
"Write the seed record (docs/seed-records.md) of a boot that already happened.\n"
"\n"
"--vmcore DUMP  from the dump's VMCOREINFO: FGKASLR_SEED, BUILD-ID, OSRELEASE,\n"
"               KERNELOFFSET (ELF or kdump-compressed).  With --vmlinux, its\n"
"               build-id must be the dump's.\n"
"--text FILE    from text holding what the guest's /proc/fgkaslr_seed said (a\n"
"               serial log, a script's output; '-' is stdin): a word of 64 hex\n"
"               digits, or fgkaslr_seed=/FGKASLR_SEED= followed by one.  A\n"
"               'Kernel Offset:' line gives the offset and 'Linux version' the\n"
"               release; --vmlinux adds its build-id and release.\n"
"--oops FILE    an oops or panic log and the vmlinux it came from.  The seed\n"
"               itself is only derivable when the log contains it (a 256-bit\n"
"               ChaCha20 key cannot be recovered from function addresses);\n"
"               the base offset comes from 'Kernel Offset:' or from a stack\n"
"               frame of an unshuffled function.\n"
"--offset BASE  base KASLR offset to record (overrides what the input says)\n"
"-o FILE        write the record atomically to FILE, mode 0600 (default:\n"
"               stdout)\n"
"--json, --pretty  print the record as one JSON object instead (compact, or\n"
"               indented): seed, build_id, release, offset, note, source\n"
"               (docs/fgk-seed.1.md); with -o FILE, FILE still gets the\n"
"               record and stdout the JSON.\n";

enum { OPT_VMCORE = 0x400, OPT_TEXT, OPT_OOPS, OPT_VMLINUX, OPT_NOTE };

static char *scan_release(const char *text)
{
	const char *p = strstr(text, "Linux version ");
	size_t n;

	if (!p)
		return NULL;
	p += strlen("Linux version ");
	for (n = 0; p[n] && p[n] != ' ' && (unsigned char)p[n] >= 0x20 && p[n] != 0x7f; n++)
		;	/* up to a space or a control character (CR of serial logs) */
	return n ? strndup(p, n) : NULL;
}

int cli_seed_capture(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "vmcore", required_argument, NULL, OPT_VMCORE },
		{ "text", required_argument, NULL, OPT_TEXT },
		{ "oops", required_argument, NULL, OPT_OOPS },
		{ "vmlinux", required_argument, NULL, OPT_VMLINUX },
		{ "note", required_argument, NULL, OPT_NOTE },
		{ "offset", required_argument, NULL, OPT_OFFSET },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		CLI_JSON_OPTIONS,
		{ 0 },
	};
	enum cli_output json = CLI_TEXT;
	const char *vmcore = NULL, *textfile = NULL, *vmlinux = NULL;
	const char *note = NULL, *output = NULL, *offset_text = NULL;
	struct fgk_seed_record rec = { 0 };
	struct fgk_vmcoreinfo vi = { 0 };
	struct fgk_vmlinux *vm = NULL;
	struct fgk_error *err = NULL;
	char *text = NULL, *release = NULL;
	bool oops = false;
	int opt, rc = 1, sources = 0;

	optind = 1;
	while ((opt = cli_getopt(&cmd_seed, argc, argv, "ho:", opts)) != -1) {
		if (cli_json_option(&json, opt))
			continue;
		switch (opt) {
		case 'h':
			fputs(help, stdout);
			return cli_finish_stdout(0);
		case OPT_VMCORE:
			vmcore = optarg;
			sources++;
			break;
		case OPT_OOPS:
			oops = true;
			/* fall through */
		case OPT_TEXT:
			textfile = optarg;
			sources++;
			break;
		case OPT_VMLINUX:
			vmlinux = optarg;
			break;
		case OPT_NOTE:
			note = optarg;
			break;
		case OPT_OFFSET:
			offset_text = optarg;
			break;
		case 'o':
			output = optarg;
			break;
		default:
			return cli_usage_error(&cmd_seed, "capture: bad option");
		}
	}
	if (optind < argc)
		return cli_usage_error(&cmd_seed, "capture: unexpected argument '%s'", argv[optind]);
	if (sources != 1)
		return cli_usage_error(&cmd_seed, "capture needs exactly one of --vmcore, --text, --oops");
	if (oops && !vmlinux)
		return cli_usage_error(&cmd_seed, "capture --oops needs --vmlinux VMLINUX");
	if (offset_text) {
		if (!cli_parse_hex(offset_text, &rec.offset))
			return cli_errorf("--offset '%s': not a hex number (e.g. 0x1a000000)",
					  offset_text);
		rec.has_offset = true;
	}
	{
		const char *inputs[] = { vmcore, textfile, vmlinux };

		if (cli_check_output(output, inputs, 3))
			return 1;
	}
	if (vmlinux) {
		err = fgk_vmlinux_open(vmlinux, &vm);
		if (err)
			return cli_fail(err);
	}

	if (vmcore) {
		err = fgk_vmcore_read(vmcore, &vi);
		if (err)
			goto fail;
		if (vi.seed_state != FGK_VMCORE_SEED_PRESENT) {
			rc = cli_errorf("%s: %s: no seed to record", vmcore,
					vi.seed_state == FGK_VMCORE_SEED_DISABLED
					? "FG-KASLR was disabled in that boot (FGKASLR_SEED=disabled)"
					: "no FGKASLR_SEED in its VMCOREINFO (a kernel without the FG-KASLR series?)");
			goto out;
		}
		if (vm && vi.build_id && fgk_vmlinux_build_id(vm) &&
		    strcmp(vi.build_id, fgk_vmlinux_build_id(vm))) {
			rc = cli_errorf("vmlinux '%s' (build-id %s) is not the kernel of dump '%s' (build-id %s)",
					vmlinux, fgk_vmlinux_build_id(vm), vmcore, vi.build_id);
			goto out;
		}
		rec.seed = vi.seed;
		rec.build_id = vi.build_id;
		rec.release = vi.osrelease;
		if (!rec.has_offset && vi.has_offset) {
			rec.has_offset = true;
			rec.offset = vi.offset;
		}
	} else {
		bool disabled;
		int n;

		size_t len;

		rc = cli_read_text(textfile, CLI_TEXT_MAX, &text, &len);
		if (rc)
			goto out;
		rc = 1;
		n = fgk_seed_scan(text, len, &rec.seed, &disabled);
		if (n < 0) {
			rc = cli_errorf("%s: several different seeds in the text; cut it to one boot",
					textfile);
			goto out;
		}
		if (n == 0) {
			rc = cli_errorf(disabled
					? "%s: FG-KASLR was disabled in that boot: no seed to record"
					: oops
					? "%s: the log does not contain the seed (/proc/fgkaslr_seed or FGKASLR_SEED=); it cannot be derived from function addresses: capture it from the guest or a dump"
					: "%s: no seed found (expected the 64 hex digits of /proc/fgkaslr_seed)",
					textfile);
			goto out;
		}
		if (!rec.has_offset)
			rec.has_offset = fgk_kernel_offset_scan(text, len, &rec.offset);
		if (!rec.has_offset && vm) {
			/* an unshuffled frame (func+off/size) gives the base offset */
			struct fgk_symbolizer *s;
			uint64_t off;
			const char *src;

			err = fgk_symbolizer_new(vm, NULL, NULL, &s);
			if (err)
				goto fail;
			for (char *line = text, *nl; line && *line; line = nl) {
				nl = strchr(line, '\n');
				if (nl)
					*nl = '\0';
				fgk_symbolizer_learn(s, line);
				if (nl)
					*nl++ = '\n';
			}
			if (fgk_symbolizer_get_offset(s, &off, &src)) {
				rec.has_offset = true;
				rec.offset = off;
			}
			fgk_symbolizer_free(s);
		}
		release = scan_release(text);
		rec.release = release;
	}
	if (vm) {
		if (!rec.build_id)
			rec.build_id = (char *)fgk_vmlinux_build_id(vm);
		if (fgk_vmlinux_release(vm))
			rec.release = (char *)fgk_vmlinux_release(vm);
	}
	rec.note = (char *)note;
	if (output) {
		err = fgk_seed_record_write(&rec, output);
		if (err)
			goto fail;
		rc = 0;
	}
	if (json != CLI_TEXT) {
		struct json j;

		cli_json_init(&j, json);
		json_start_object(&j);
		cli_json_record_fields(&j, &rec);
		json_name(&j, "source");
		json_start_object(&j);
		json_string_field(&j, "kind", vmcore ? "vmcore" : oops ? "oops" : "text");
		json_string_field(&j, "path", vmcore ? vmcore : textfile);
		json_end_object(&j);
		json_string_field(&j, "output", output);
		json_end_object(&j);
		rc = cli_finish_stdout(0);
	} else if (!output) {
		char *out;

		err = fgk_seed_record_format(&rec, &out);
		if (err) {
			rc = cli_fail_in(err, vmcore ? vmcore : textfile);
			goto out;
		}
		fputs(out, stdout);
		free(out);
		rc = cli_finish_stdout(0);
	}
	goto out;
fail:
	rc = cli_fail_in(err, vmcore ? vmcore : textfile);
out:
	free(text);
	free(release);
	fgk_vmcoreinfo_clear(&vi);
	fgk_vmlinux_close(vm);
	return rc;
}
