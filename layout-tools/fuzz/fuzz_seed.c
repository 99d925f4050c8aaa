// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer: seed text (fgk_seed_parse) and seed records
 * (fgk_seed_record_parse, fgk_seed_record_format).  A record that parses
 * must format, and the formatted text must parse to the same record.
 */
#include "fuzz.h"

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_string(data, size);
	struct fgk_seed seed;
	struct fgk_seed_record rec, again;
	struct fgk_error *err;
	char *out;

	err = fgk_seed_parse(text, &seed);
	if (!err) {
		char hex[FGK_SEED_HEX_LEN + 1];
		struct fgk_seed s2;

		fgk_seed_format(&seed, hex);
		if (fgk_seed_parse(hex, &s2) || memcmp(&s2, &seed, sizeof(seed)))
			abort();
	}
	fuzz_check_error(err);
	err = fgk_seed_record_parse(text, "fuzz", &rec);
	if (!err) {
		err = fgk_seed_record_format(&rec, &out);
		if (err)
			abort();	/* what parses must be writable */
		if (fgk_seed_record_parse(out, "fuzz", &again))
			abort();
		if (memcmp(&again.seed, &rec.seed, sizeof(rec.seed)) ||
		    !same(again.build_id, rec.build_id) ||
		    again.has_offset != rec.has_offset ||
		    (rec.has_offset && again.offset != rec.offset) ||
		    !same(again.release, rec.release && *rec.release ? rec.release : NULL) ||
		    !same(again.note, rec.note && *rec.note ? rec.note : NULL))
			abort();
		fgk_seed_record_clear(&again);
		free(out);
		fgk_seed_record_clear(&rec);
	}
	fuzz_check_error(err);
	free(text);
	return 0;
}
