// SPDX-License-Identifier: GPL-2.0
/* Seed records (docs/seed-records.md) and atomic file writes. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "error.h"
#include "vmlinux.h"

static const char *const record_keys[] = {
	"seed", "build-id", "release", "offset", "note",
};
#define NKEYS (sizeof(record_keys) / sizeof(record_keys[0]))

void fgk_seed_record_clear(struct fgk_seed_record *rec)
{
	free(rec->build_id);
	free(rec->release);
	free(rec->note);
	memset(rec, 0, sizeof(*rec));
}

static bool all_hex(const char *s, size_t len)
{
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* One line of printable text (tabs allowed): no terminal control bytes. */
static bool printable_line(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return false;
	}
	return true;
}

static char *lower_dup(const char *s, size_t len)
{
	char *d = strndup(s, len);

	if (d)
		for (char *p = d; *p; p++)
			*p = (char)tolower((unsigned char)*p);
	return d;
}

/*
 * An error at line lineno of the record at path (NULL: text from no file):
 * the file goes in the error's path field and the message is "line N:
 * problem", so that fgk_error_string() reads "FILE: line N: problem".
 */
#define RECORD_WHERE(path) ((path) ? "" : "seed record: ")
#define record_error(path, lineno, fmt, ...)				\
	fgk__error_new(FGK_ERR_RECORD, path, "%sline %u: " fmt,		\
		       RECORD_WHERE(path), lineno, ##__VA_ARGS__)

struct fgk_error *fgk_seed_record_parse(const char *text, const char *path,
					struct fgk_seed_record *rec)
{
	const char *line = text;
	bool seen[NKEYS] = { false };
	struct fgk_error *err = NULL;
	unsigned lineno = 0;

	memset(rec, 0, sizeof(*rec));
	while (*line) {
		const char *eol = strchr(line, '\n');
		const char *b, *e, *colon, *kb, *ke, *vb, *ve;
		size_t k;
		char *val;

		if (!eol)
			eol = line + strlen(line);
		lineno++;
		b = line;
		e = eol;
		line = *eol ? eol + 1 : eol;
		while (b < e && isspace((unsigned char)*b))
			b++;
		while (e > b && isspace((unsigned char)e[-1]))
			e--;
		if (b == e || *b == '#')
			continue;
		colon = memchr(b, ':', (size_t)(e - b));
		kb = b;
		ke = colon ? colon : e;
		while (ke > kb && isspace((unsigned char)ke[-1]))
			ke--;
		if (!colon || ke == kb) {
			err = record_error(path, lineno,
					   "expected 'key: value', got '%.*s'",
					   (int)(e - b), b);
			goto fail;
		}
		vb = colon + 1;
		ve = e;
		while (vb < ve && isspace((unsigned char)*vb))
			vb++;
		for (k = 0; k < NKEYS; k++)
			if (strlen(record_keys[k]) == (size_t)(ke - kb) &&
			    !memcmp(record_keys[k], kb, (size_t)(ke - kb)))
				break;
		if (k == NKEYS) {
			err = record_error(path, lineno,
					   "unknown key '%.*s' (known: seed, build-id, release, offset, note)",
					   (int)(ke - kb), kb);
			goto fail;
		}
		if (seen[k]) {
			err = record_error(path, lineno,
					   "duplicate key '%s'",
					   record_keys[k]);
			goto fail;
		}
		seen[k] = true;
		switch (k) {
		case 0:	/* seed */
			if ((size_t)(ve - vb) != FGK_SEED_HEX_LEN ||
			    !all_hex(vb, (size_t)(ve - vb))) {
				err = record_error(path, lineno,
						   "seed must be 64 hex digits, got '%.*s'",
						   (int)(ve - vb), vb);
				goto fail;
			}
			val = strndup(vb, (size_t)(ve - vb));
			if (!val) {
				err = &fgk_enomem;
				goto fail;
			}
			err = fgk_seed_parse(val, &rec->seed);
			free(val);
			if (err) {
				struct fgk_error *e2 = record_error(path, lineno, "%s",
								    err->message);

				fgk_error_free(err);
				err = e2;
				goto fail;
			}
			break;
		case 1:	/* build-id */
			if (!all_hex(vb, (size_t)(ve - vb)) || (ve - vb) % 2) {
				err = record_error(path, lineno,
						   "build-id must be hex bytes (an even number of hex digits), got '%.*s'",
						   (int)(ve - vb), vb);
				goto fail;
			}
			rec->build_id = lower_dup(vb, (size_t)(ve - vb));
			if (!rec->build_id) {
				err = &fgk_enomem;
				goto fail;
			}
			break;
		case 2:	/* release */
		case 4:	/* note */
			if (!printable_line(vb, (size_t)(ve - vb))) {
				err = record_error(path, lineno,
						   "%s contains control characters",
						   record_keys[k]);
				goto fail;
			}
			val = strndup(vb, (size_t)(ve - vb));
			if (!val) {
				err = &fgk_enomem;
				goto fail;
			}
			if (k == 2)
				rec->release = val;
			else
				rec->note = val;
			break;
		case 3:	/* offset */
			if (ve - vb < 3 || vb[0] != '0' || vb[1] != 'x' ||
			    !all_hex(vb + 2, (size_t)(ve - vb - 2)) ||
			    ve - vb - 2 > 16) {
				err = record_error(path, lineno,
						   "offset must be 0x-prefixed hex, got '%.*s'",
						   (int)(ve - vb), vb);
				goto fail;
			}
			rec->has_offset = true;
			rec->offset = strtoull(vb + 2, NULL, 16);
			break;
		}
	}
	if (!seen[0]) {
		err = fgk__error_new(FGK_ERR_RECORD, path, "%sno 'seed:' line",
				     RECORD_WHERE(path));
		goto fail;
	}
	return NULL;
fail:
	fgk_seed_record_clear(rec);
	return err;
}

struct fgk_error *fgk_seed_record_read(const char *path,
				       struct fgk_seed_record *rec)
{
	struct fgk_error *err;
	size_t len;
	char *buf;

	err = fgk_read_file(path, 1 << 20, false, &buf, &len);
	if (err) {
		if (err->code == FGK_ERR_INVALID) {
			struct fgk_error *e2 = fgk__error_new(FGK_ERR_RECORD, path,
							      "seed record %s", err->message);

			fgk_error_free(err);
			return e2;
		}
		return err;
	}
	if (strlen(buf) != len) {
		free(buf);
		return fgk__error_new(FGK_ERR_RECORD, path,
				      "not a seed record (binary data)");
	}
	err = fgk_seed_record_parse(buf, path, rec);
	free(buf);
	return err;
}

struct fgk_error *fgk_seed_record_format(const struct fgk_seed_record *rec,
					 char **ret)
{
	char hex[FGK_SEED_HEX_LEN + 1];
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (rec->release && !printable_line(rec->release, strlen(rec->release)))
		return fgk__error_new(FGK_ERR_INVALID, NULL,
				      "seed record: release '%s' is not one line of printable text",
				      rec->release);
	if (rec->note && !printable_line(rec->note, strlen(rec->note)))
		return fgk__error_new(FGK_ERR_INVALID, NULL,
				      "seed record: note '%s' is not one line of printable text (no newlines or control characters)",
				      rec->note);
	if (rec->build_id && (!all_hex(rec->build_id, strlen(rec->build_id)) ||
			      strlen(rec->build_id) % 2))
		return fgk__error_new(FGK_ERR_INVALID, NULL,
				      "seed record: build-id '%s' is not hex bytes (an even number of hex digits)",
				      rec->build_id);
	f = open_memstream(&buf, &len);
	if (!f)
		return &fgk_enomem;
	fgk_seed_format(&rec->seed, hex);
	fprintf(f, "seed: %s\n", hex);
	if (rec->build_id) {
		fputs("build-id: ", f);
		for (const char *p = rec->build_id; *p; p++)
			fputc(tolower((unsigned char)*p), f);
		fputc('\n', f);
	}
	if (rec->release && *rec->release)
		fprintf(f, "release: %s\n", rec->release);
	if (rec->has_offset)
		fprintf(f, "offset: 0x%llx\n", (unsigned long long)rec->offset);
	if (rec->note && *rec->note)
		fprintf(f, "note: %s\n", rec->note);
	if (fclose(f) != 0) {
		free(buf);
		return &fgk_enomem;
	}
	*ret = buf;
	return NULL;
}

struct fgk_error *fgk_seed_record_write(const struct fgk_seed_record *rec,
					const char *path)
{
	char *text;
	struct fgk_error *err = fgk_seed_record_format(rec, &text);

	if (err)
		return err;
	err = fgk_write_file_atomic(path, text, strlen(text));
	free(text);
	return err;
}

struct fgk_error *fgk_seed_record_check(const struct fgk_seed_record *rec,
					const char *record_path,
					struct fgk_vmlinux *vm)
{
	const char *id = fgk_vmlinux_build_id(vm);

	if (!rec->build_id)
		return NULL;
	if (!id)
		return fgk__error_new(FGK_ERR_BUILD_ID, vm->path,
				      "vmlinux has no build-id but seed record %s names build-id %s",
				      record_path, rec->build_id);
	if (strcasecmp(id, rec->build_id))
		return fgk__error_new(FGK_ERR_BUILD_ID, vm->path,
				      "build-id %s does not match the seed record %s (build-id %s): the layout depends on the exact vmlinux; use the vmlinux that booted with this seed",
				      id, record_path, rec->build_id);
	return NULL;
}
