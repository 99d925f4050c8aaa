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

static char *lower_dup(const char *s, size_t len)
{
	char *d = strndup(s, len);

	if (d)
		for (char *p = d; *p; p++)
			*p = (char)tolower((unsigned char)*p);
	return d;
}

struct fgk_error *fgk_seed_record_parse(const char *text, const char *path,
					struct fgk_seed_record *rec)
{
	const char *line = text, *name = path ? path : "<record>";
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
			err = fgk_error_new(FGK_ERR_RECORD, NULL,
					    "%s:%u: expected 'key: value', got '%.*s'",
					    name, lineno, (int)(e - b), b);
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
			err = fgk_error_new(FGK_ERR_RECORD, NULL,
					    "%s:%u: unknown key '%.*s' (known: seed, build-id, release, offset, note)",
					    name, lineno, (int)(ke - kb), kb);
			goto fail;
		}
		if (seen[k]) {
			err = fgk_error_new(FGK_ERR_RECORD, NULL,
					    "%s:%u: duplicate key '%s'",
					    name, lineno, record_keys[k]);
			goto fail;
		}
		seen[k] = true;
		switch (k) {
		case 0:	/* seed */
			if ((size_t)(ve - vb) != FGK_SEED_HEX_LEN ||
			    !all_hex(vb, (size_t)(ve - vb))) {
				err = fgk_error_new(FGK_ERR_RECORD, NULL,
						    "%s:%u: seed must be 64 hex digits, got '%.*s'",
						    name, lineno, (int)(ve - vb), vb);
				goto fail;
			}
			val = strndup(vb, (size_t)(ve - vb));
			if (!val) {
				err = &fgk_enomem;
				goto fail;
			}
			err = fgk_seed_parse(val, &rec->seed);
			free(val);
			if (err)
				goto fail;
			break;
		case 1:	/* build-id */
			if (!all_hex(vb, (size_t)(ve - vb))) {
				err = fgk_error_new(FGK_ERR_RECORD, NULL,
						    "%s:%u: build-id must be hex, got '%.*s'",
						    name, lineno, (int)(ve - vb), vb);
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
				err = fgk_error_new(FGK_ERR_RECORD, NULL,
						    "%s:%u: offset must be 0x-prefixed hex, got '%.*s'",
						    name, lineno, (int)(ve - vb), vb);
				goto fail;
			}
			rec->has_offset = true;
			rec->offset = strtoull(vb + 2, NULL, 16);
			break;
		}
	}
	if (!seen[0]) {
		err = fgk_error_new(FGK_ERR_RECORD, NULL, "%s: no 'seed:' line", name);
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
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	struct fgk_error *err;

	if (!f)
		return fgk_error_os(errno, path, "cannot read seed record");
	for (;;) {
		size_t r;

		if (cap - len < 4096) {
			char *nb;

			if (cap > (1u << 20)) {
				free(buf);
				fclose(f);
				return fgk_error_new(FGK_ERR_RECORD, path,
						     "seed record is larger than 1 MiB");
			}
			nb = realloc(buf, cap + 8192);
			if (!nb) {
				free(buf);
				fclose(f);
				return &fgk_enomem;
			}
			buf = nb;
			cap += 8192;
		}
		r = fread(buf + len, 1, cap - len - 1, f);
		len += r;
		if (r == 0)
			break;
	}
	if (ferror(f)) {
		int e = errno;

		free(buf);
		fclose(f);
		return fgk_error_os(e, path, "cannot read seed record");
	}
	fclose(f);
	buf[len] = '\0';
	if (strlen(buf) != len) {
		free(buf);
		return fgk_error_new(FGK_ERR_RECORD, path,
				     "not a seed record (binary data)");
	}
	err = fgk_seed_record_parse(buf, path, rec);
	free(buf);
	return err;
}

static bool single_line(const char *s)
{
	return !strchr(s, '\n') && !strchr(s, '\r');
}

struct fgk_error *fgk_seed_record_format(const struct fgk_seed_record *rec,
					 char **ret)
{
	char hex[FGK_SEED_HEX_LEN + 1];
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if ((rec->release && !single_line(rec->release)) ||
	    (rec->note && !single_line(rec->note)))
		return fgk_error_new(FGK_ERR_INVALID, NULL,
				     "seed record values must be single lines");
	if (rec->build_id && !all_hex(rec->build_id, strlen(rec->build_id)))
		return fgk_error_new(FGK_ERR_INVALID, NULL,
				     "build-id must be hex");
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

struct fgk_error *fgk_write_file_atomic(const char *path, const void *data,
					size_t len)
{
	char *tmp;
	int fd;
	const char *p = data;
	struct fgk_error *err = NULL;

	if (asprintf(&tmp, "%s.tmp.XXXXXX", path) < 0)
		return &fgk_enomem;
	fd = mkstemp(tmp);
	if (fd < 0) {
		err = fgk_error_os(errno, path, "cannot create");
		free(tmp);
		return err;
	}
	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			err = fgk_error_os(errno, path, "cannot write");
			goto fail;
		}
		p += w;
		len -= (size_t)w;
	}
	if (fchmod(fd, 0644) < 0 || fsync(fd) < 0) {
		err = fgk_error_os(errno, path, "cannot write");
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		err = fgk_error_os(errno, path, "cannot write");
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		err = fgk_error_os(errno, path, "cannot write");
		goto fail;
	}
	free(tmp);
	return NULL;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	free(tmp);
	return err;
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
		return fgk_error_new(FGK_ERR_BUILD_ID, vm->path,
				     "vmlinux has no build-id but seed record %s names build-id %s",
				     record_path, rec->build_id);
	if (strcasecmp(id, rec->build_id))
		return fgk_error_new(FGK_ERR_BUILD_ID, vm->path,
				     "build-id %s does not match the seed record %s (build-id %s): the layout depends on the exact vmlinux; use the vmlinux that booted with this seed",
				     id, record_path, rec->build_id);
	return NULL;
}
