// SPDX-License-Identifier: GPL-2.0
/* The CLI's JSON writer: conventions in json.h. */
#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "json.h"

void json_init(struct json *j, FILE *f, bool pretty)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	j->pretty = pretty;
}

static void indent(struct json *j)
{
	fputc('\n', j->f);
	for (unsigned int i = 0; i < j->depth; i++)
		fputs("  ", j->f);
}

/* Before any value or member name: the separator and the indentation. */
static void before_item(struct json *j)
{
	if (!j->depth)
		return;
	if (j->nonempty[j->depth - 1])
		fputc(',', j->f);
	j->nonempty[j->depth - 1] = true;
	if (j->pretty)
		indent(j);
}

static void before_value(struct json *j)
{
	if (j->named) {
		j->named = false;	/* the member name wrote the separator */
		return;
	}
	before_item(j);
}

/* After a complete value: a top-level value ends its line. */
static void after_value(struct json *j)
{
	if (!j->depth)
		fputc('\n', j->f);
}

static void start(struct json *j, char c)
{
	before_value(j);
	fputc(c, j->f);
	assert(j->depth < JSON_MAX_DEPTH);	/* fgk's schemas nest < 8 deep */
	j->nonempty[j->depth++] = false;
}

static void end(struct json *j, char c)
{
	bool nonempty;

	assert(j->depth > 0 && !j->named);
	nonempty = j->nonempty[--j->depth];
	if (j->pretty && nonempty)
		indent(j);
	fputc(c, j->f);
	after_value(j);
}

void json_start_object(struct json *j) { start(j, '{'); }
void json_end_object(struct json *j) { end(j, '}'); }
void json_start_array(struct json *j) { start(j, '['); }
void json_end_array(struct json *j) { end(j, ']'); }

/*
 * Length of the valid UTF-8 sequence at s (1-4), or 0 when invalid, with
 * *bad the length of its maximal invalid subpart (Unicode 15, 3.9 U+FFFD
 * substitution: what Python's errors="replace" does).
 */
static size_t utf8_seq(const unsigned char *s, size_t left, size_t *bad)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t n, k;

	*bad = 1;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 1;
	else if (c >= 0xe0 && c <= 0xef)
		n = 2, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 3, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	for (k = 1; k <= n; k++) {
		if (k >= left || s[k] < lo || s[k] > hi) {
			*bad = k;
			return 0;
		}
		lo = 0x80, hi = 0xbf;
	}
	return n + 1;
}

/* The escaped body of a string, between the quotes. */
static void put_escaped(FILE *f, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < len) {
		unsigned char c = s[i];
		size_t n, bad;

		switch (c) {
		case '"': fputs("\\\"", f); i++; continue;
		case '\\': fputs("\\\\", f); i++; continue;
		case '\n': fputs("\\n", f); i++; continue;
		case '\t': fputs("\\t", f); i++; continue;
		case '\r': fputs("\\r", f); i++; continue;
		case '\b': fputs("\\b", f); i++; continue;
		case '\f': fputs("\\f", f); i++; continue;
		}
		if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
			i++;
			continue;
		}
		n = utf8_seq(s + i, len - i, &bad);
		if (!n) {
			fputs("\xef\xbf\xbd", f);	/* U+FFFD */
			i += bad;
			continue;
		}
		fwrite(s + i, 1, n, f);
		i += n;
	}
}

static void put_string(FILE *f, const char *s, size_t len)
{
	fputc('"', f);
	put_escaped(f, s, len);
	fputc('"', f);
}

void json_string_len(struct json *j, const char *s, size_t len)
{
	before_value(j);
	put_string(j->f, s, len);
	after_value(j);
}

void json_name(struct json *j, const char *name)
{
	before_item(j);
	put_string(j->f, name, strlen(name));
	fputs(j->pretty ? ": " : ":", j->f);
	j->named = true;
}

void json_string(struct json *j, const char *s)
{
	if (!s) {
		json_null(j);
		return;
	}
	json_string_len(j, s, strlen(s));
}

static void __attribute__((format(printf, 2, 3)))
scalar(struct json *j, const char *fmt, ...)
{
	va_list ap;

	before_value(j);
	va_start(ap, fmt);
	vfprintf(j->f, fmt, ap);
	va_end(ap);
	after_value(j);
}

void json_u64(struct json *j, uint64_t v) { scalar(j, "%" PRIu64, v); }
void json_i64(struct json *j, int64_t v) { scalar(j, "%" PRId64, v); }
void json_bool(struct json *j, bool v) { scalar(j, "%s", v ? "true" : "false"); }
void json_null(struct json *j) { scalar(j, "null"); }
void json_hex(struct json *j, uint64_t v) { scalar(j, "\"0x%" PRIx64 "\"", v); }
void json_addr(struct json *j, uint64_t v) { scalar(j, "\"0x%016" PRIx64 "\"", v); }
void json_fixed(struct json *j, double v, int decimals) { scalar(j, "%.*f", decimals, v); }

/* json_<kind>_field(j, name, v): json_name, then json_<kind>. */
#define FIELD(kind, type)						\
void json_##kind##_field(struct json *j, const char *name, type v)	\
{									\
	json_name(j, name);						\
	json_##kind(j, v);						\
}
FIELD(string, const char *)
FIELD(u64, uint64_t)
FIELD(i64, int64_t)
FIELD(bool, bool)
FIELD(hex, uint64_t)
FIELD(addr, uint64_t)

void json_null_field(struct json *j, const char *name)
{
	json_name(j, name);
	json_null(j);
}
