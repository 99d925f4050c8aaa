// SPDX-License-Identifier: GPL-2.0
/*
 * Drives cli/json.c for tests/test_json.py: json_driver [--pretty] HEX...
 * writes one object holding each HEX argument (raw bytes, hex-encoded)
 * as a string, every scalar kind at its extremes and nested empty and
 * non-empty containers, then a second top-level value (JSON Lines).
 */
#include <stdlib.h>
#include <string.h>

#include "../cli/json.h"

static size_t unhex(const char *h, char *out)
{
	size_t n = 0;

	for (; h[0] && h[1]; h += 2) {
		char b[3] = { h[0], h[1], 0 };

		out[n++] = (char)strtoul(b, NULL, 16);
	}
	return n;
}

int main(int argc, char **argv)
{
	struct json j;
	int i = 1;

	json_init(&j, stdout, argc > 1 && !strcmp(argv[1], "--pretty"));
	if (j.pretty)
		i++;
	json_start_object(&j);
	json_name(&j, "strings");
	json_start_array(&j);
	for (; i < argc; i++) {
		/* exactly the bytes: ASan sees any read past a string's end */
		char *buf = malloc(strlen(argv[i]) / 2 + !argv[i][0]);
		size_t n = unhex(argv[i], buf);

		json_string_len(&j, buf, n);
		free(buf);
	}
	json_end_array(&j);
	json_u64_field(&j, "u64_max", UINT64_MAX);
	json_u64_field(&j, "u64_zero", 0);
	json_i64_field(&j, "i64_min", INT64_MIN);
	json_hex_field(&j, "hex", 0x1f);
	json_hex_field(&j, "hex_zero", 0);
	json_addr_field(&j, "addr", 0xffffffff81000000ull);
	json_addr_field(&j, "addr_low", 0x1000);
	json_bool_field(&j, "yes", true);
	json_bool_field(&j, "no", false);
	json_null_field(&j, "nothing");
	json_string_field(&j, "null_string", NULL);
	json_string_field(&j, "we\"ird\nname", "v");
	json_name(&j, "empty_object");
	json_start_object(&j);
	json_end_object(&j);
	json_name(&j, "empty_array");
	json_start_array(&j);
	json_end_array(&j);
	json_name(&j, "nested");
	json_start_array(&j);
	json_start_array(&j);
	json_start_object(&j);
	json_name(&j, "a");
	json_start_array(&j);
	json_u64(&j, 1);
	json_null(&j);
	json_end_array(&j);
	json_end_object(&j);
	json_end_array(&j);
	json_start_object(&j);
	json_end_object(&j);
	json_end_array(&j);
	json_end_object(&j);
	json_start_array(&j);
	json_string(&j, "second");
	json_end_array(&j);
	json_u64(&j, 3);
	return fflush(stdout) || ferror(stdout);
}
