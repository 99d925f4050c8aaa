/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fgk CLI's one JSON writer (bpftool's json_writer in spirit): every
 * command's --json output goes through it.
 *
 * Conventions (the stable schema of every command, docs/fgk-*.1.md):
 *  - Addresses, offsets and sizes are strings "0x" + lowercase hex
 *    (json_hex: no padding; json_addr: 16 digits, as /proc/kallsyms prints
 *    them), so that no consumer rounds a 64-bit kernel address through a
 *    double.  Counts, indexes and alignments are JSON numbers (json_u64).
 *  - Absent values are null, never omitted keys.
 *  - Strings are UTF-8 per RFC 8259: '"', '\\' and every control byte
 *    (< 0x20, and 0x7f) are escaped (\n \t \r \b \f, else \u00XX); bytes
 *    that are not valid UTF-8 (stray continuation bytes, overlong forms,
 *    surrogates, > U+10FFFF, truncated sequences) become U+FFFD, one per
 *    maximal invalid subpart (Unicode's recommended practice, what
 *    Python's errors="replace" does), so the output is always valid JSON.
 *  - Usage: json_init, then values; inside an object, json_name before
 *    each value (or the json_*_field shorthands).  Nesting is at most
 *    JSON_MAX_DEPTH (asserted).
 *  - Compact by default (--json: one line per top-level value); pretty
 *    (--pretty) indents by 2 spaces.  Each top-level value ends with "\n",
 *    so several top-level values form JSON Lines.
 *
 * Write errors are left in the FILE (cli_finish_stdout reports them).
 */
#ifndef FGK_CLI_JSON_H
#define FGK_CLI_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

struct json {
	FILE *f;
	bool pretty;
	bool named;		/* a member name was just written */
	unsigned int depth;
	/* per open container: has a first element */
	bool nonempty[JSON_MAX_DEPTH];
};

void json_init(struct json *j, FILE *f, bool pretty);

/* Containers (as a value: after json_name, in an array, or top level). */
void json_start_object(struct json *j);
void json_end_object(struct json *j);
void json_start_array(struct json *j);
void json_end_array(struct json *j);

/* The name of the next member of the current object. */
void json_name(struct json *j, const char *name);

/* Values. */
void json_string(struct json *j, const char *s);	/* NULL: null */
void json_string_len(struct json *j, const char *s, size_t len);
void json_u64(struct json *j, uint64_t v);
void json_i64(struct json *j, int64_t v);
void json_bool(struct json *j, bool v);
void json_null(struct json *j);
void json_hex(struct json *j, uint64_t v);	/* "0x1f" */
void json_addr(struct json *j, uint64_t v);	/* "0xffffffff81000000" */
/* A non-integral number with a fixed number of decimals (fgk audit). */
void json_fixed(struct json *j, double v, int decimals);

/* name + value in one call. */
void json_string_field(struct json *j, const char *name, const char *s);
void json_u64_field(struct json *j, const char *name, uint64_t v);
void json_i64_field(struct json *j, const char *name, int64_t v);
void json_bool_field(struct json *j, const char *name, bool v);
void json_null_field(struct json *j, const char *name);
void json_hex_field(struct json *j, const char *name, uint64_t v);
void json_addr_field(struct json *j, const char *name, uint64_t v);

#endif
