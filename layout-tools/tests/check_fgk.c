// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of libfgk (Check framework).  Vectors come from RFC 8439 and
 * docs/layout-spec.md §10; ELF fixtures are built from source by
 * fixtures/build.sh into $FGK_FIXTURES before this runs.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>

#include <fgk/fgk.h>

#define OK(expr) do { \
	struct fgk_error *e_ = (expr); \
	char b_[1024]; \
	ck_assert_msg(e_ == NULL, "%s: %s", #expr, fgk_error_string(e_, b_, sizeof(b_))); \
} while (0)

static struct fgk_seed seed_of(const char *hex)
{
	struct fgk_seed s;

	OK(fgk_seed_parse(hex, &s));
	return s;
}

static const char *S0102 = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
static const char *S00 = "0000000000000000000000000000000000000000000000000000000000000000";
static const char *SFF = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";

/* ---- generator --------------------------------------------------------- */

START_TEST(test_rfc8439_block)
{
	uint8_t key[32], out[64];
	static const uint8_t nonce[12] = { 0, 0, 0, 9, 0, 0, 0, 0x4a, 0, 0, 0, 0 };
	static const char *want =
		"10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
		"d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e";
	char hex[129];

	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)i;
	OK(fgk_chacha20_block(key, 1, nonce, out));
	for (int i = 0; i < 64; i++)
		sprintf(hex + 2 * i, "%02x", out[i]);
	ck_assert_str_eq(hex, want);
}
END_TEST

struct spec_vector {
	const char *seed;
	uint32_t u32[8];
	uint32_t below10[8];
	uint32_t perm10[10];
};

static const struct spec_vector vectors[] = {
	{ "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
	  { 0x50b07a64, 0xe6bb5dc1, 0xcac67f4a, 0x45d475df, 0xfaec65eb, 0xf534667a, 0x10372875, 0x70b62a9a },
	  { 8, 3, 6, 1, 7, 6, 3, 0 },
	  { 9, 0, 5, 4, 6, 3, 1, 2, 7, 8 } },
	{ "0000000000000000000000000000000000000000000000000000000000000000",
	  { 0x98e9bdad, 0x06d7c3cd, 0xc29cd4b6, 0xa8557a9f, 0x2af38c44, 0x2e90fe24, 0x76b6a54a, 0xd4c7383e },
	  { 7, 1, 4, 9, 8, 0, 4, 4 },
	  { 8, 9, 1, 2, 0, 4, 5, 6, 3, 7 } },
	{ "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
	  { 0xbf94eae2, 0x67b9608f, 0xdd3ff7aa, 0x34e2ccf1, 0x0b2d7ea2, 0x7c9831fb, 0x7444951f, 0x156bcafc },
	  { 4, 7, 6, 3, 4, 1, 9, 2 },
	  { 5, 9, 6, 3, 1, 7, 0, 2, 8, 4 } },
};

START_TEST(test_spec_u32)
{
	const struct spec_vector *v = &vectors[_i];
	struct fgk_seed s = seed_of(v->seed);
	struct fgk_rng *rng;

	OK(fgk_rng_new(&s, fgk_text_nonce, &rng));
	for (int k = 0; k < 8; k++) {
		uint32_t x;

		OK(fgk_rng_u32(rng, &x));
		ck_assert_uint_eq(x, v->u32[k]);
	}
	fgk_rng_free(rng);
}
END_TEST

START_TEST(test_spec_below)
{
	const struct spec_vector *v = &vectors[_i];
	struct fgk_seed s = seed_of(v->seed);
	struct fgk_rng *rng;

	OK(fgk_rng_new(&s, fgk_text_nonce, &rng));
	for (int k = 0; k < 8; k++) {
		uint32_t x;

		OK(fgk_rng_below(rng, 10, &x));
		ck_assert_uint_eq(x, v->below10[k]);
	}
	fgk_rng_free(rng);
}
END_TEST

START_TEST(test_spec_perm)
{
	const struct spec_vector *v = &vectors[_i];
	struct fgk_seed s = seed_of(v->seed);
	uint32_t order[10], one[1];

	OK(fgk_permutation(&s, fgk_text_nonce, 10, order));
	for (int k = 0; k < 10; k++)
		ck_assert_uint_eq(order[k], v->perm10[k]);
	OK(fgk_permutation(&s, fgk_text_nonce, 1, one));
	ck_assert_uint_eq(one[0], 0);
	OK(fgk_permutation(&s, fgk_text_nonce, 0, NULL));
}
END_TEST

START_TEST(test_keystream_across_chunks)
{
	/* u32 number 16*k is word 0 of block k: compare with the block function */
	struct fgk_seed s = seed_of(S0102);
	struct fgk_rng *rng;
	uint8_t block[64];

	OK(fgk_rng_new(&s, fgk_text_nonce, &rng));
	for (uint32_t i = 0; i < 16 * 200; i++) {
		uint32_t x;

		OK(fgk_rng_u32(rng, &x));
		if (i % 16 == 15 || i % 16 == 0) {
			uint32_t w = i % 16, want;

			OK(fgk_chacha20_block(s.bytes, i / 16, fgk_text_nonce, block));
			want = (uint32_t)block[4 * w] | (uint32_t)block[4 * w + 1] << 8 |
			       (uint32_t)block[4 * w + 2] << 16 | (uint32_t)block[4 * w + 3] << 24;
			ck_assert_uint_eq(x, want);
		}
	}
	fgk_rng_free(rng);
}
END_TEST

START_TEST(test_below_bounds)
{
	struct fgk_seed s = seed_of(S00);
	struct fgk_rng *rng;
	struct fgk_error *err;
	uint32_t x;
	unsigned hist[3] = { 0 };

	OK(fgk_rng_new(&s, fgk_text_nonce, &rng));
	for (int k = 0; k < 100; k++) {
		OK(fgk_rng_below(rng, 1, &x));
		ck_assert_uint_eq(x, 0);
	}
	for (int k = 0; k < 3000; k++) {
		OK(fgk_rng_below(rng, 3, &x));
		ck_assert_uint_lt(x, 3);
		hist[x]++;
	}
	for (int k = 0; k < 3; k++)
		ck_assert_msg(hist[k] > 850 && hist[k] < 1150, "below(3) skewed: %u", hist[k]);
	OK(fgk_rng_below(rng, UINT64_C(1) << 32, &x));	/* 2^32 is allowed */
	err = fgk_rng_below(rng, 0, &x);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, FGK_ERR_INVALID);
	fgk_error_free(err);
	err = fgk_rng_below(rng, (UINT64_C(1) << 32) + 1, &x);
	ck_assert_ptr_nonnull(err);
	fgk_error_free(err);
	fgk_rng_free(rng);
}
END_TEST

START_TEST(test_below_rejection)
{
	/*
	 * below(m) with m = 2^31 + 1: threshold = (2^32 - m) mod m = 2^31 - 1,
	 * so words below it are rejected.  Replay the raw words and check that
	 * below() returns the first accepted word mod m.
	 */
	struct fgk_seed s = seed_of(SFF);
	struct fgk_rng *a, *b;
	uint64_t m = (UINT64_C(1) << 31) + 1;
	uint32_t threshold = (uint32_t)(((UINT64_C(1) << 32) - m) % m);
	int rejected = 0;

	OK(fgk_rng_new(&s, fgk_text_nonce, &a));
	OK(fgk_rng_new(&s, fgk_text_nonce, &b));
	for (int k = 0; k < 200; k++) {
		uint32_t got, r;

		OK(fgk_rng_below(a, m, &got));
		for (;;) {
			OK(fgk_rng_u32(b, &r));
			if (r >= threshold)
				break;
			rejected++;
		}
		ck_assert_uint_eq(got, r % m);
	}
	ck_assert_int_gt(rejected, 50);	/* about half the words */
	fgk_rng_free(a);
	fgk_rng_free(b);
}
END_TEST

START_TEST(test_permutation_is_permutation)
{
	struct fgk_seed s = seed_of(S0102);
	size_t n = 20000;
	uint32_t *order = malloc(n * sizeof(*order));
	uint8_t *seen = calloc(n, 1);

	OK(fgk_permutation(&s, fgk_text_nonce, n, order));
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_lt(order[i], n);
		ck_assert_int_eq(seen[order[i]], 0);
		seen[order[i]] = 1;
	}
	free(order);
	free(seen);
}
END_TEST

START_TEST(test_module_nonce)
{
	uint8_t nonce[12];
	char hex[25];
	uint32_t order[10];
	static const uint32_t want[10] = { 1, 9, 7, 6, 0, 5, 3, 2, 8, 4 };
	struct fgk_seed s = seed_of(S0102);

	fgk_module_nonce("fgk_test", nonce);
	for (int i = 0; i < 12; i++)
		sprintf(hex + 2 * i, "%02x", nonce[i]);
	ck_assert_str_eq(hex, "66676b6df0559de983cfd3f6");
	OK(fgk_permutation(&s, nonce, 10, order));
	for (int k = 0; k < 10; k++)
		ck_assert_uint_eq(order[k], want[k]);
}
END_TEST

/* ---- placement ----------------------------------------------------------- */

START_TEST(test_spec_placement)
{
	static const uint64_t sz[10] = { 0x35, 0x10, 0x1, 0x81, 0x20, 0x7, 0x40, 0x13, 0x100, 0x2 };
	static const uint64_t al[10] = { 16, 16, 16, 64, 16, 1, 16, 16, 4096, 16 };
	static const uint64_t want[10] = {
		0xffffffff81200010, 0xffffffff81200150, 0xffffffff81200160,
		0xffffffff812000c0, 0xffffffff81200050, 0xffffffff81200045,
		0xffffffff81200070, 0xffffffff81200170, 0xffffffff81201000,
		0xffffffff81200000,
	};
	struct fgk_section secs[10];
	uint32_t order[10];
	uint64_t end;
	struct fgk_seed s = seed_of(S0102);
	struct fgk_error *err;

	memset(secs, 0, sizeof(secs));
	for (int i = 0; i < 10; i++) {
		secs[i].size = sz[i];
		secs[i].align = al[i];
	}
	OK(fgk_permutation(&s, fgk_text_nonce, 10, order));
	OK(fgk_place(secs, 10, order, 0xffffffff81200000, 0xffffffff81202000, &end));
	for (int i = 0; i < 10; i++)
		ck_assert_msg(secs[i].new_addr == want[i], "sec %d: 0x%llx", i,
			      (unsigned long long)secs[i].new_addr);
	ck_assert_uint_eq(end, 0xffffffff81201100);
	/* exactly fitting is fine, one byte less is not */
	OK(fgk_place(secs, 10, order, 0xffffffff81200000, end, NULL));
	err = fgk_place(secs, 10, order, 0xffffffff81200000, end - 1, NULL);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, FGK_ERR_NO_FIT);
	ck_assert_ptr_nonnull(strstr(err->message, "does not fit"));
	ck_assert_ptr_nonnull(strstr(err->message, "beyond the region's end 0xffffffff812010ff by 0x1 bytes"));
	fgk_error_free(err);
}
END_TEST

/* ---- seed text ------------------------------------------------------------ */

START_TEST(test_seed_parse_ok)
{
	struct fgk_seed s;
	char out[65];
	static const char *ok[] = {
		"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		"000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F",
		"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n",
		"fgkaslr_seed=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		"  fgkaslr_seed=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f \n",
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		OK(fgk_seed_parse(ok[i], &s));
		for (int k = 0; k < 32; k++)
			ck_assert_uint_eq(s.bytes[k], k);
		fgk_seed_format(&s, out);
		ck_assert_str_eq(out, S0102);
	}
}
END_TEST

START_TEST(test_seed_parse_bad)
{
	static const char *bad[] = {
		"",
		"00",
		"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1",	/* 63 */
		"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f0",	/* 65 */
		"0x0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1g",
		"00010203040506070809 0a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1fxyz",
		"fgkaslr_seed=",
		"disabled\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fgk_seed s;
		struct fgk_error *err = fgk_seed_parse(bad[i], &s);

		ck_assert_msg(err != NULL, "accepted '%s'", bad[i]);
		ck_assert_int_eq(err->code, FGK_ERR_SEED);
		fgk_error_free(err);
	}
}
END_TEST

START_TEST(test_seed_random)
{
	struct fgk_seed a, b;

	OK(fgk_seed_random(&a));
	OK(fgk_seed_random(&b));
	ck_assert(memcmp(&a, &b, sizeof(a)) != 0);
}
END_TEST

/* ---- seed records ----------------------------------------------------------- */

static const char *example_record =
	"# booted by make demo on 2024-05-01\n"
	"seed: 3f9c0a5e1b7d24c68e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f\n"
	"build-id: 8D2F6C1E0B9A7D5C3E1F2A4B6C8D0E2F4A6B8C0D\n"
	"\n"
	"   # indented comment\n"
	"release: 6.1.192\n"
	"offset: 0x1a000000\n"
	"note: oops in foo_bar() after resume # not a comment\n";

START_TEST(test_record_parse)
{
	struct fgk_seed_record rec;
	char *text;
	char hex[65];

	OK(fgk_seed_record_parse(example_record, "ex.seed", &rec));
	fgk_seed_format(&rec.seed, hex);
	ck_assert_str_eq(hex, "3f9c0a5e1b7d24c68e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f");
	ck_assert_str_eq(rec.build_id, "8d2f6c1e0b9a7d5c3e1f2a4b6c8d0e2f4a6b8c0d");
	ck_assert_str_eq(rec.release, "6.1.192");
	ck_assert(rec.has_offset);
	ck_assert_uint_eq(rec.offset, 0x1a000000);
	ck_assert_str_eq(rec.note, "oops in foo_bar() after resume # not a comment");
	OK(fgk_seed_record_format(&rec, &text));
	ck_assert_str_eq(text,
		"seed: 3f9c0a5e1b7d24c68e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f\n"
		"build-id: 8d2f6c1e0b9a7d5c3e1f2a4b6c8d0e2f4a6b8c0d\n"
		"release: 6.1.192\n"
		"offset: 0x1a000000\n"
		"note: oops in foo_bar() after resume # not a comment\n");
	free(text);
	fgk_seed_record_clear(&rec);

	OK(fgk_seed_record_parse("seed:" "0000000000000000000000000000000000000000000000000000000000000000", NULL, &rec));
	ck_assert_ptr_null(rec.build_id);
	ck_assert(!rec.has_offset);
	fgk_seed_record_clear(&rec);
}
END_TEST

START_TEST(test_record_bad)
{
	static const struct { const char *text, *needle; } bad[] = {
		{ "# only a comment\n", "no 'seed:' line" },
		{ "seed: 00\n", "seed must be 64 hex digits" },
		{ "seed: 0000000000000000000000000000000000000000000000000000000000000000\nseed: 0000000000000000000000000000000000000000000000000000000000000000\n", "duplicate key 'seed'" },
		{ "sead: 0000000000000000000000000000000000000000000000000000000000000000\n", "unknown key 'sead'" },
		{ "seed 0000000000000000000000000000000000000000000000000000000000000000\n", "expected 'key: value'" },
		{ ": x\n", "expected 'key: value'" },
		{ "seed: 0000000000000000000000000000000000000000000000000000000000000000\noffset: 1a000000\n", "offset must be 0x-prefixed hex" },
		{ "seed: 0000000000000000000000000000000000000000000000000000000000000000\nbuild-id: xyz\n", "build-id must be hex" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fgk_seed_record rec;
		struct fgk_error *err = fgk_seed_record_parse(bad[i].text, "r.seed", &rec);

		ck_assert_msg(err != NULL, "accepted record %zu", i);
		ck_assert_msg(strstr(err->message, bad[i].needle) != NULL,
			      "record %zu: '%s' lacks '%s'", i, err->message, bad[i].needle);
		/* the file in the path field, as every error about a file */
		ck_assert_ptr_nonnull(err->path);
		ck_assert_str_eq(err->path, "r.seed");
		ck_assert_msg(strstr(err->message, "r.seed") == NULL,
			      "file named twice: %s", err->message);
		fgk_error_free(err);
		/* no file: no path, and the message says what was parsed */
		err = fgk_seed_record_parse(bad[i].text, NULL, &rec);
		ck_assert_msg(err != NULL, "accepted record %zu", i);
		ck_assert_ptr_null(err->path);
		ck_assert_msg(strncmp(err->message, "seed record: ", 13) == 0 &&
			      strstr(err->message, bad[i].needle) != NULL,
			      "record %zu without a file: '%s'", i, err->message);
		fgk_error_free(err);
	}

	/* the line is named: "FILE: line N: problem" */
	{
		struct fgk_seed_record rec;
		struct fgk_error *err = fgk_seed_record_parse(
			"# c\n\nseed: 0000000000000000000000000000000000000000000000000000000000000000\nseed: 00\n",
			"r.seed", &rec);
		char buf[256];

		ck_assert_ptr_nonnull(err);
		ck_assert_str_eq(fgk_error_string(err, buf, sizeof(buf)),
				 "r.seed: line 4: duplicate key 'seed'");
		fgk_error_free(err);
	}
}
END_TEST

static char tmpdir[256];

static void make_tmpdir(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/fgk-check-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static int count_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

START_TEST(test_record_write_read)
{
	struct fgk_seed_record rec = { 0 }, back;
	char path[512];
	struct fgk_error *err;

	make_tmpdir();
	snprintf(path, sizeof(path), "%s/x.seed", tmpdir);
	rec.seed = seed_of(SFF);
	rec.build_id = (char *)"abcdef01";
	rec.release = (char *)"6.1.0";
	rec.has_offset = true;
	rec.offset = 0;
	OK(fgk_seed_record_write(&rec, path));
	ck_assert_int_eq(count_files(tmpdir), 1);	/* no temp file left */
	OK(fgk_seed_record_read(path, &back));
	ck_assert_mem_eq(back.seed.bytes, rec.seed.bytes, 32);
	ck_assert_str_eq(back.build_id, "abcdef01");
	ck_assert(back.has_offset && back.offset == 0);
	fgk_seed_record_clear(&back);
	/* a multi-line note is refused and nothing is written */
	rec.note = (char *)"two\nlines";
	snprintf(path, sizeof(path), "%s/y.seed", tmpdir);
	err = fgk_seed_record_write(&rec, path);
	ck_assert_ptr_nonnull(err);
	fgk_error_free(err);
	ck_assert_int_eq(access(path, F_OK), -1);
	ck_assert_int_eq(count_files(tmpdir), 1);
	/* unwritable directory: error, no file */
	err = fgk_seed_record_write(&rec, "/nonexistent-dir/z.seed");
	ck_assert_ptr_nonnull(err);
	fgk_error_free(err);
	err = fgk_seed_record_read("/nonexistent-dir/z.seed", &back);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, FGK_ERR_OS);
	ck_assert_str_eq(err->path, "/nonexistent-dir/z.seed");
	fgk_error_free(err);
	snprintf(path, sizeof(path), "rm -rf %s", tmpdir);
	ck_assert_int_eq(system(path), 0);
}
END_TEST

/* ---- ELF fixtures ----------------------------------------------------------- */

static char *fixture(const char *name)
{
	static char buf[1024];
	const char *dir = getenv("FGK_FIXTURES");

	ck_assert_msg(dir != NULL, "FGK_FIXTURES not set (run via make check)");
	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	return buf;
}

static struct fgk_error *open_fixture(const char *name, struct fgk_vmlinux **vm)
{
	return fgk_vmlinux_open(fixture(name), vm);
}

START_TEST(test_fixture_layout)
{
	struct fgk_vmlinux *vm;
	struct fgk_layout *l;
	struct fgk_symbol sym;
	static const char *seeds[3];

	seeds[0] = S0102;
	seeds[1] = S00;
	seeds[2] = SFF;
	OK(open_fixture("fixture.elf", &vm));
	ck_assert_ptr_nonnull(fgk_vmlinux_build_id(vm));
	ck_assert_uint_eq(strlen(fgk_vmlinux_build_id(vm)), 40);
	ck_assert_str_eq(fgk_vmlinux_release(vm), "6.1.0-fgktest");
	for (int k = 0; k < 3; k++) {
		struct fgk_seed s = seed_of(seeds[k]);

		const struct fgk_section *secs;
		size_t n;

		OK(fgk_layout_compute(vm, &s, &l));
		secs = fgk_layout_sections(l, &n);
		ck_assert_mem_eq(fgk_layout_seed(l)->bytes, s.bytes, sizeof(s.bytes));
		ck_assert_uint_gt(n, 30);
		ck_assert_uint_le(fgk_layout_end(l), fgk_layout_limit(l));
		for (size_t i = 0; i < n; i++) {
			const struct fgk_section *e = &secs[i];
			uint64_t back;

			ck_assert(strncmp(e->name, ".text.", 6) == 0);
			ck_assert_uint_eq(e->new_addr % e->align, 0);
			ck_assert_uint_ge(e->new_addr, fgk_layout_start(l));
			ck_assert_uint_le(e->new_addr + e->size, fgk_layout_limit(l));
			if (i)
				ck_assert_uint_gt(e->index, secs[i - 1].index);
			/* no two placed sections overlap */
			for (size_t j = 0; j < i; j++) {
				const struct fgk_section *f = &secs[j];

				ck_assert(e->new_addr + e->size <= f->new_addr ||
					  f->new_addr + f->size <= e->new_addr);
			}
			/* mapping round trip over every byte's ends */
			ck_assert_uint_eq(fgk_layout_map(l, e->addr), e->new_addr);
			ck_assert_uint_eq(fgk_layout_map(l, e->addr + e->size - 1),
					  e->new_addr + e->size - 1);
			ck_assert(fgk_layout_unmap(l, e->new_addr + e->size - 1, &back));
			ck_assert_uint_eq(back, e->addr + e->size - 1);
			ck_assert_ptr_eq(fgk_layout_section_at(l, e->addr), e);
		}
		/* not randomized: identity */
		OK(fgk_symbol_lookup(vm, "head_func", &sym));
		ck_assert_uint_eq(fgk_layout_map(l, sym.addr), sym.addr);
		OK(fgk_symbol_lookup(vm, "g_counter", &sym));
		ck_assert_uint_eq(fgk_layout_map(l, sym.addr), sym.addr);
		ck_assert_ptr_null(fgk_layout_section_at(l, sym.addr));
		/* a randomized function: symbol lookup by address finds it back */
		OK(fgk_symbol_lookup(vm, "fn_big", &sym));
		{
			struct fgk_symbol at;
			uint64_t link;

			ck_assert(fgk_layout_unmap(l, fgk_layout_map(l, sym.addr + 5), &link));
			OK(fgk_symbol_at(vm, link, &at));
			ck_assert_str_eq(at.name, "fn_big");
			ck_assert_uint_eq(link - at.addr, 5);
		}
		fgk_layout_free(l);
	}
	fgk_vmlinux_close(vm);
}
END_TEST

START_TEST(test_fixture_kallsyms)
{
	struct fgk_vmlinux *vm;
	struct fgk_kallsyms *ks;
	struct fgk_symbol sym;
	bool found_fn = false, found_pcpu = false;

	OK(open_fixture("fixture.elf", &vm));
	OK(fgk_kallsyms_read(vm, &ks));
	ck_assert_uint_gt(ks->n, 40);
	OK(fgk_symbol_lookup(vm, "other_long_name_function_for_kallsyms_token_compression_test", &sym));
	for (size_t i = 0; i < ks->n; i++) {
		if (!strcmp(ks->syms[i].name, sym.name)) {
			ck_assert_uint_eq(ks->syms[i].addr, sym.addr);
			ck_assert_int_eq(ks->syms[i].type, 'T');
			ck_assert(!ks->syms[i].absolute);
			found_fn = true;
		}
		if (!strcmp(ks->syms[i].name, "pcpu_stats")) {
			ck_assert_uint_eq(ks->syms[i].addr, 0x20);
			ck_assert(ks->syms[i].absolute);
			found_pcpu = true;
		}
	}
	ck_assert(found_fn && found_pcpu);
	fgk_kallsyms_free(ks);
	fgk_vmlinux_close(vm);
}
END_TEST

START_TEST(test_fixture_xindex)
{
	/* > 65280 sections: extended numbering, SHN_XINDEX symbols */
	struct fgk_vmlinux *vm;
	struct fgk_layout *l;
	struct fgk_symbol sym, at;
	struct fgk_seed s = seed_of(S0102);
	const struct fgk_section *sec;
	size_t n;

	OK(open_fixture("xindex.elf", &vm));
	OK(fgk_layout_compute(vm, &s, &l));
	ck_assert_uint_gt(fgk_layout_sections(l, &n) ? n : 0, 66000);
	ck_assert_uint_gt(fgk_layout_sections(l, &n)[n - 1].index, 65280);
	/* xfn_65473 sits in a section whose index is 0xfff1 == SHN_ABS */
	for (int k = 65000; k < 66000; k += 7) {
		char name[32];
		uint64_t link;

		snprintf(name, sizeof(name), "xfn_%d", k);
		OK(fgk_symbol_lookup(vm, name, &sym));
		ck_assert(!sym.absolute);
		ck_assert_int_eq(sym.type, 'T');
		sec = fgk_layout_section_at(l, sym.addr);
		ck_assert_ptr_nonnull(sec);
		snprintf(name, sizeof(name), ".text.x%d", k);
		ck_assert_str_eq(sec->name, name);
		ck_assert(fgk_layout_unmap(l, fgk_layout_map(l, sym.addr), &link));
		ck_assert_uint_eq(link, sym.addr);
		OK(fgk_symbol_at(vm, link, &at));
		ck_assert_str_eq(at.name, sym.name);
	}
	fgk_layout_free(l);
	fgk_vmlinux_close(vm);
}
END_TEST

static void expect_error(const char *name, const char *seed_hex,
			 enum fgk_error_code code, const char *needle)
{
	struct fgk_vmlinux *vm = NULL;
	struct fgk_error *err = open_fixture(name, &vm);

	if (!err && seed_hex) {
		struct fgk_seed s = seed_of(seed_hex);
		struct fgk_layout *l = NULL;

		err = fgk_layout_compute(vm, &s, &l);
		if (!err) {
			struct fgk_map *map = NULL;

			err = fgk_map_build(vm, l, FGK_MAP_KALLSYMS, 0, &map);
			fgk_map_free(map);
		}
		fgk_layout_free(l);
	}
	fgk_vmlinux_close(vm);
	ck_assert_msg(err != NULL, "%s: no error", name);
	ck_assert_msg(err->code == code, "%s: code %d, want %d (%s)", name,
		      err->code, code, err->message);
	ck_assert_msg(strstr(err->message, needle) != NULL, "%s: '%s' lacks '%s'",
		      name, err->message, needle);
	ck_assert_ptr_nonnull(err->path);
	ck_assert_ptr_nonnull(strstr(err->path, name));
	fgk_error_free(err);
}

START_TEST(test_fixture_errors)
{
	expect_error("notelf.txt", NULL, FGK_ERR_ELF, "not an ELF");
	expect_error("truncated.elf", NULL, FGK_ERR_ELF, "truncated or corrupt ELF");
	expect_error("does-not-exist.elf", NULL, FGK_ERR_OS, "No such file");
	expect_error("notext.elf", S0102, FGK_ERR_NOT_FGKASLR, "not built with CONFIG_FG_KASLR");
	expect_error("stripped.elf", S0102, FGK_ERR_NO_SYMTAB, "stripped");
	expect_error("nokallsyms.elf", S0102, FGK_ERR_KALLSYMS, "kallsyms_num_syms");
	expect_error("overlap.elf", S0102, FGK_ERR_NOT_FGKASLR, "section .rodata");
	expect_error("overlap.elf", S0102, FGK_ERR_NOT_FGKASLR, "overlaps the randomized region");
	expect_error("short.elf", S0102, FGK_ERR_NOT_FGKASLR, "extends beyond _etext");
	/* the region ends at __fgkaslr_text_end when the vmlinux has it */
	expect_error("entry-short.elf", S0102, FGK_ERR_NOT_FGKASLR,
		     "extends beyond __fgkaslr_text_end 0x");
	/* spec §3 version 2: the .sched.text.* domain's rules */
	expect_error("sched-v4.elf", S0102, FGK_ERR_NOT_FGKASLR,
		     "vmlinux uses FG-KASLR layout version 4; this libfgk knows 1-3");
	expect_error("sched-vrel.elf", S0102, FGK_ERR_NOT_FGKASLR,
		     "__fgkaslr_layout_version is not an absolute symbol");
	expect_error("sched-overlap.elf", S0102, FGK_ERR_NOT_FGKASLR,
		     "overlaps the .text.* region");
	expect_error("sched-nogap.elf", S0102, FGK_ERR_NOT_FGKASLR,
		     "no gap between __sched_text_start");
	expect_error("sched-d1gap.elf", S0102, FGK_ERR_NOT_FGKASLR,
		     "has no gap before the .text.* region");
	/* spec §3 version 3: the range domains' rules */
	expect_error("domains-v4.elf", S0102, FGK_ERR_NOT_FGKASLR,
		     "vmlinux uses FG-KASLR layout version 4; this libfgk knows 1-3");
	expect_error("domains-beyond.elf", S0102, FGK_ERR_NOT_FGKASLR,
		     "section .spinlock.text.kernel/locking/spinlock.o [0x");
	expect_error("domains-beyond.elf", S0102, FGK_ERR_NOT_FGKASLR,
		     "extends beyond __lock_text_end 0x");
	expect_error("domains-nolimit.elf", S0102, FGK_ERR_NOT_FGKASLR,
		     "2 .static_call.text.* sections but no __static_call_text_end symbol");
}
END_TEST

/* spec §10: the nonce fgkaslr-schd's keystream and perm(12) */
static const struct {
	const char *seed;
	uint32_t u32[8];
	uint32_t perm12[12];
} sched_vectors[3] = {
	{ "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
	  { 0x6fd6ea05, 0x676d5be5, 0x979af568, 0xe4b34db8, 0x99bab7f0, 0x05fcaad7,
	    0x1d7a0485, 0x9c8fd4ec },
	  { 5, 10, 6, 1, 8, 3, 11, 0, 2, 4, 7, 9 } },
	{ "0000000000000000000000000000000000000000000000000000000000000000",
	  { 0x8e081b67, 0x9992eed1, 0xd0c35f0c, 0x5c487814, 0x7ce5e516, 0x17459689,
	    0x3580e03b, 0xadb44db5 },
	  { 4, 8, 3, 9, 1, 5, 2, 6, 11, 0, 10, 7 } },
	{ "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
	  { 0xe88afe2f, 0x511e8f0a, 0x4d0d5314, 0x79c59717, 0x76c65424, 0x9137632b,
	    0x66e243be, 0xad59d2af },
	  { 7, 5, 9, 6, 2, 0, 1, 4, 10, 8, 3, 11 } },
};

START_TEST(test_spec_sched_nonce)
{
	struct fgk_seed s = seed_of(sched_vectors[_i].seed);
	struct fgk_rng *rng;
	uint32_t order[12];

	ck_assert_mem_eq(fgk_sched_nonce, "fgkaslr-schd", FGK_NONCE_SIZE);
	OK(fgk_rng_new(&s, fgk_sched_nonce, &rng));
	for (int k = 0; k < 8; k++) {
		uint32_t x;

		OK(fgk_rng_u32(rng, &x));
		ck_assert_uint_eq(x, sched_vectors[_i].u32[k]);
	}
	fgk_rng_free(rng);
	OK(fgk_permutation(&s, fgk_sched_nonce, 12, order));
	for (int k = 0; k < 12; k++)
		ck_assert_uint_eq(order[k], sched_vectors[_i].perm12[k]);
}
END_TEST

/*
 * sched.elf: two domains through the API.  Each domain's sections stay in
 * its own region; D0 is the §6 permutation of its three sections with
 * fgkaslr-schd; fgk_layout_start/limit/end are D1's.
 */
#define TEXT_D (FGK_LAYOUT_DOMAINS - 1)	/* the .text.* domain */

START_TEST(test_fixture_sched_domains)
{
	struct fgk_vmlinux *vm;
	struct fgk_layout *l;
	struct fgk_seed s = seed_of(S0102);
	const struct fgk_section *secs;
	const uint32_t *order;
	uint32_t perm[3];
	uint64_t st, lim, end;
	size_t first, n, total;

	OK(open_fixture("sched.elf", &vm));
	OK(fgk_layout_compute(vm, &s, &l));
	secs = fgk_layout_sections(l, &total);
	order = fgk_layout_order(l);
	ck_assert_uint_eq(fgk_layout_ndomains(l), FGK_LAYOUT_DOMAINS);
	ck_assert_ptr_null(fgk_layout_domain(l, FGK_LAYOUT_DOMAINS, NULL, NULL, NULL, NULL, NULL));
	ck_assert_str_eq(fgk_layout_domain(l, 0, &st, &lim, &end, &first, &n),
			 ".sched.text.");
	ck_assert_uint_eq(first, 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_le(end, lim);
	ck_assert_mem_eq(fgk_layout_domain_nonce(l, 0), fgk_sched_nonce, FGK_NONCE_SIZE);
	ck_assert_mem_eq(fgk_layout_domain_nonce(l, TEXT_D), fgk_text_nonce, FGK_NONCE_SIZE);
	ck_assert_ptr_null(fgk_layout_domain_nonce(l, FGK_LAYOUT_DOMAINS));
	ck_assert_str_eq(fgk_layout_domain_limit_symbol(l, 0), "__sched_text_end");
	ck_assert_str_eq(fgk_layout_domain_limit_symbol(l, TEXT_D), "__fgkaslr_text_end");
	ck_assert_ptr_null(fgk_layout_domain_limit_symbol(l, FGK_LAYOUT_DOMAINS));
	OK(fgk_permutation(&s, fgk_sched_nonce, 3, perm));
	for (size_t k = 0; k < n; k++) {
		const struct fgk_section *e = &secs[k];

		ck_assert(strncmp(e->name, ".sched.text.", 12) == 0);
		ck_assert_uint_eq(order[k], perm[k]);
		ck_assert_uint_ge(e->new_addr, st);
		ck_assert_uint_le(e->new_addr + e->size, lim);
		ck_assert_uint_eq(fgk_layout_map(l, e->addr), e->new_addr);
	}
	ck_assert_str_eq(fgk_layout_domain(l, TEXT_D, &st, &lim, &end, &first, &n), ".text.");
	ck_assert_uint_eq(first, 3);
	ck_assert_uint_eq(first + n, total);
	ck_assert_uint_eq(st, fgk_layout_start(l));
	ck_assert_uint_eq(lim, fgk_layout_limit(l));
	ck_assert_uint_eq(end, fgk_layout_end(l));
	for (size_t k = first; k < total; k++) {
		ck_assert(strncmp(secs[k].name, ".text.", 6) == 0);
		ck_assert_uint_ge(order[k], first);
		ck_assert_uint_ge(secs[k].new_addr, st);
	}
	fgk_layout_free(l);
	fgk_vmlinux_close(vm);
	/* the same link without the version symbol: version 1, D0 empty */
	OK(open_fixture("sched-v1.elf", &vm));
	OK(fgk_layout_compute(vm, &s, &l));
	ck_assert_str_eq(fgk_layout_domain(l, 0, &st, NULL, NULL, NULL, &n), ".sched.text.");
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(st, 0);
	fgk_layout_free(l);
	fgk_vmlinux_close(vm);
}
END_TEST

/*
 * spec §10 (version 3): the range domains' nonces, perm(8) for seeds
 * 000102..1f and 0 (printed by docs/layout_ref.py).
 */
static const struct {
	const char *nonce;
	uint32_t perm8[2][8];
} range_vectors[4] = {
	{ "fgkaslr-lock", { { 1, 4, 6, 2, 5, 0, 7, 3 }, { 0, 3, 5, 1, 7, 2, 4, 6 } } },
	{ "fgkaslr-scal", { { 4, 1, 6, 0, 2, 3, 7, 5 }, { 1, 5, 4, 0, 3, 7, 2, 6 } } },
	{ "fgkaslr-noin", { { 7, 4, 0, 1, 5, 6, 2, 3 }, { 1, 3, 4, 0, 6, 5, 7, 2 } } },
	{ "fgkaslr-idle", { { 2, 5, 6, 0, 7, 3, 1, 4 }, { 5, 6, 0, 1, 7, 4, 2, 3 } } },
};

START_TEST(test_spec_range_nonces)
{
	const char *seeds[2] = {
		"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		"0000000000000000000000000000000000000000000000000000000000000000",
	};

	for (int k = 0; k < 2; k++) {
		struct fgk_seed s = seed_of(seeds[k]);
		uint32_t order[8];

		OK(fgk_permutation(&s, (const uint8_t *)range_vectors[_i].nonce, 8, order));
		for (int j = 0; j < 8; j++)
			ck_assert_uint_eq(order[j], range_vectors[_i].perm8[k][j]);
	}
}
END_TEST

/*
 * domains.elf: every domain of layout version 3 through the API, in
 * address order; each is its §6 permutation with its own nonce, placed in
 * its own [start, limit); fgk_layout_start/limit/end stay the .text.*
 * domain's.
 */
START_TEST(test_fixture_range_domains)
{
	static const struct {
		const char *prefix, *limit_sym, *nonce;
		size_t n;
	} want[FGK_LAYOUT_DOMAINS] = {
		{ ".sched.text.", "__sched_text_end", "fgkaslr-schd", 3 },
		{ ".spinlock.text.", "__lock_text_end", "fgkaslr-lock", 3 },
		{ ".static_call.text.", "__static_call_text_end", "fgkaslr-scal", 2 },
		{ ".noinstr.text.", "__fgkaslr_noinstr_end", "fgkaslr-noin", 4 },
		{ ".cpuidle.text.", "__cpuidle_text_end", "fgkaslr-idle", 2 },
		{ ".text.", "__fgkaslr_text_end", "fgkaslr-text", 0 },
	};
	struct fgk_vmlinux *vm;
	struct fgk_layout *l;
	struct fgk_seed s = seed_of(S0102);
	const struct fgk_section *secs;
	const uint32_t *order;
	uint64_t st, lim, end, prev_lim = 0;
	size_t first, n, total, next = 0;

	OK(open_fixture("domains.elf", &vm));
	OK(fgk_layout_compute(vm, &s, &l));
	secs = fgk_layout_sections(l, &total);
	order = fgk_layout_order(l);
	ck_assert_uint_eq(fgk_layout_ndomains(l), FGK_LAYOUT_DOMAINS);
	for (size_t d = 0; d < FGK_LAYOUT_DOMAINS; d++) {
		uint32_t perm[8];

		ck_assert_str_eq(fgk_layout_domain(l, d, &st, &lim, &end, &first, &n),
				 want[d].prefix);
		ck_assert_str_eq(fgk_layout_domain_limit_symbol(l, d), want[d].limit_sym);
		ck_assert_mem_eq(fgk_layout_domain_nonce(l, d), want[d].nonce, FGK_NONCE_SIZE);
		ck_assert_uint_eq(first, next);
		if (want[d].n)
			ck_assert_uint_eq(n, want[d].n);
		ck_assert_uint_gt(st, prev_lim);	/* a gap after the one before */
		ck_assert_uint_le(end, lim);
		if (n <= 8) {
			OK(fgk_permutation(&s, fgk_layout_domain_nonce(l, d), n, perm));
			for (size_t k = 0; k < n; k++)
				ck_assert_uint_eq(order[first + k], first + perm[k]);
		}
		for (size_t k = first; k < first + n; k++) {
			ck_assert(strncmp(secs[k].name, want[d].prefix, strlen(want[d].prefix)) == 0);
			ck_assert_uint_ge(secs[k].new_addr, st);
			ck_assert_uint_le(secs[k].new_addr + secs[k].size, lim);
			ck_assert_uint_eq(fgk_layout_map(l, secs[k].addr), secs[k].new_addr);
		}
		next = first + n;
		prev_lim = lim;
	}
	ck_assert_uint_eq(next, total);
	fgk_layout_domain(l, TEXT_D, &st, &lim, &end, NULL, NULL);
	ck_assert_uint_eq(st, fgk_layout_start(l));
	ck_assert_uint_eq(lim, fgk_layout_limit(l));
	ck_assert_uint_eq(end, fgk_layout_end(l));
	fgk_layout_free(l);
	fgk_vmlinux_close(vm);
	/* version 3 without sections in the new domains: as version 2 */
	OK(open_fixture("sched-v3.elf", &vm));
	OK(fgk_layout_compute(vm, &s, &l));
	for (size_t d = 1; d < TEXT_D; d++) {
		fgk_layout_domain(l, d, &st, NULL, NULL, NULL, &n);
		ck_assert_uint_eq(n, 0);
		ck_assert_uint_eq(st, 0);
	}
	fgk_layout_domain(l, 0, NULL, NULL, NULL, NULL, &n);
	ck_assert_uint_eq(n, 3);
	fgk_layout_free(l);
	fgk_vmlinux_close(vm);
}
END_TEST

START_TEST(test_fixture_nofit)
{
	struct fgk_vmlinux *vm;
	int fit = 0, nofit = 0;

	OK(open_fixture("nofit.elf", &vm));
	for (int k = 0; k < 64; k++) {
		struct fgk_seed s;
		struct fgk_layout *l = NULL;
		struct fgk_error *err;

		memset(&s, 0, sizeof(s));
		s.bytes[0] = (uint8_t)k;
		err = fgk_layout_compute(vm, &s, &l);
		if (err) {
			ck_assert_int_eq(err->code, FGK_ERR_NO_FIT);
			ck_assert_ptr_nonnull(strstr(err->message, "layout does not fit"));
			ck_assert_ptr_nonnull(strstr(err->message, "beyond _etext 0x"));
			nofit++;
			fgk_error_free(err);
		} else {
			/* if it fits, the 4096-aligned section must come first */
			size_t n;

			ck_assert_uint_eq(fgk_layout_sections(l, &n)[fgk_layout_order(l)[0]].align,
					  4096);
			fit++;
		}
		fgk_layout_free(l);
	}
	ck_assert_int_gt(nofit, 0);
	ck_assert_int_gt(fit, 0);
	fgk_vmlinux_close(vm);
}
END_TEST

START_TEST(test_record_check)
{
	struct fgk_vmlinux *vm;
	struct fgk_seed_record rec;
	struct fgk_error *err;
	char text[512];

	OK(open_fixture("fixture.elf", &vm));
	snprintf(text, sizeof(text), "seed: %s\nbuild-id: %s\n", S00,
		 fgk_vmlinux_build_id(vm));
	OK(fgk_seed_record_parse(text, "a.seed", &rec));
	OK(fgk_seed_record_check(&rec, "a.seed", vm));
	fgk_seed_record_clear(&rec);
	snprintf(text, sizeof(text), "seed: %s\nbuild-id: 0123abcd\n", S00);
	OK(fgk_seed_record_parse(text, "b.seed", &rec));
	err = fgk_seed_record_check(&rec, "b.seed", vm);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, FGK_ERR_BUILD_ID);
	ck_assert_ptr_nonnull(strstr(err->message, "0123abcd"));
	ck_assert_ptr_nonnull(strstr(err->message, fgk_vmlinux_build_id(vm)));
	fgk_error_free(err);
	fgk_seed_record_clear(&rec);
	fgk_vmlinux_close(vm);
}
END_TEST

/* fgk_vmlinux_find looks in the caller's directories, nowhere else of its own. */
START_TEST(test_vmlinux_find)
{
	struct fgk_vmlinux *vm, *found;
	struct fgk_error *err;
	char link[512], cwd[1024], id[128];
	const char *dirs[] = { "/nonexistent-dir", NULL, NULL };

	OK(open_fixture("fixture.elf", &vm));
	snprintf(id, sizeof(id), "%s", fgk_vmlinux_build_id(vm));
	fgk_vmlinux_close(vm);
	make_tmpdir();
	snprintf(link, sizeof(link), "%s/vmlinux", tmpdir);
	ck_assert_int_eq(symlink(fixture("fixture.elf"), link), 0);
	dirs[1] = tmpdir;

	OK(fgk_vmlinux_find(dirs, id, NULL, &found));
	ck_assert_str_eq(fgk_vmlinux_path(found), link);
	fgk_vmlinux_close(found);

	/* another build-id: refused, naming what was found there */
	err = fgk_vmlinux_find(dirs, "0123abcd", "no-such-release", &found);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, FGK_ERR_LOOKUP);
	ck_assert_ptr_null(found);
	ck_assert_ptr_nonnull(strstr(err->message, link));
	ck_assert_ptr_nonnull(strstr(err->message, id));
	fgk_error_free(err);

	/* no directories: not the working directory either */
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	ck_assert_int_eq(chdir(tmpdir), 0);
	err = fgk_vmlinux_find(NULL, id, NULL, &found);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, FGK_ERR_LOOKUP);
	fgk_error_free(err);
	dirs[0] = ".";
	dirs[1] = NULL;
	OK(fgk_vmlinux_find(dirs, id, NULL, &found));
	ck_assert_str_eq(fgk_vmlinux_path(found), "vmlinux");
	fgk_vmlinux_close(found);
	ck_assert_int_eq(chdir(cwd), 0);

	snprintf(link, sizeof(link), "rm -rf %s", tmpdir);
	ck_assert_int_eq(system(link), 0);
}
END_TEST

/* ---- hostile input (issue 13) ----------------------------------------- */

static void vmci_fails(const char *text, const char *needle)
{
	struct fgk_vmcoreinfo info = { 0 };
	struct fgk_error *err = fgk_vmcoreinfo_parse(text, strlen(text), "t", &info);

	ck_assert_msg(err != NULL, "accepted: %s", text);
	ck_assert_msg(strstr(err->message, needle), "%s: '%s' lacks '%s'", text,
		      err->message, needle);
	ck_assert_ptr_null(info.raw);	/* nothing left to free */
	fgk_error_free(err);
}

START_TEST(test_vmcoreinfo_strict)
{
	struct fgk_vmcoreinfo info = { 0 };
	const char *good = "OSRELEASE=6.1.0\nBUILD-ID=ABcd01\nKERNELOFFSET=1c000000\r\n"
			   "FGKASLR_SEED=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"
			   "OTHER=x\nOTHER=y\n";

	OK(fgk_vmcoreinfo_parse(good, strlen(good), "t", &info));
	ck_assert_str_eq(info.osrelease, "6.1.0");
	ck_assert_str_eq(info.build_id, "abcd01");
	ck_assert(info.has_offset && info.offset == 0x1c000000);
	ck_assert_int_eq(info.seed_state, FGK_VMCORE_SEED_PRESENT);
	fgk_vmcoreinfo_clear(&info);
	vmci_fails("KERNELOFFSET=-1\n", "bad KERNELOFFSET");
	vmci_fails("KERNELOFFSET=+2a\n", "bad KERNELOFFSET");
	vmci_fails("KERNELOFFSET= 10\n", "bad KERNELOFFSET");
	vmci_fails("KERNELOFFSET=10000000000000000\n", "bad KERNELOFFSET");
	vmci_fails("KERNELOFFSET=\n", "bad KERNELOFFSET");
	vmci_fails("FGKASLR_SEED=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"
		   "FGKASLR_SEED=disabled\n", "appears twice");
	vmci_fails("OSRELEASE=a\nOSRELEASE=b\n", "appears twice");
	vmci_fails("FGKASLR_SEED= 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n",
		   "bad FGKASLR_SEED");
	vmci_fails("BUILD-ID=xyz\n", "bad BUILD-ID");
	vmci_fails("BUILD-ID=abc\n", "bad BUILD-ID");
	vmci_fails("OSRELEASE=6.1\x1b[2J\n", "control characters");
	{
		static const char nul[] = "OSRELEASE=6.1\0evil\n";

		struct fgk_error *err = fgk_vmcoreinfo_parse(nul, sizeof(nul) - 1, "t", &info);

		ck_assert_ptr_nonnull(err);
		ck_assert_ptr_nonnull(strstr(err->message, "NUL"));
		fgk_error_free(err);
	}
}
END_TEST

START_TEST(test_symoff_parse)
{
	struct fgk_symoff so;
	const char *t;

	t = "fn_tiny+0x1c/0x40 [mod]";
	ck_assert_uint_eq(fgk_symoff_parse(t, strlen(t), 0, &so), 17);
	ck_assert(so.name == t && so.name_len == 7 && so.off == 0x1c && so.size == 0x40);
	ck_assert(so.has_off && so.has_size);
	t = "fn_tiny+1c";	/* oops syntax wants 0x and /SIZE */
	ck_assert_uint_eq(fgk_symoff_parse(t, strlen(t), 0, &so), 0);
	ck_assert_uint_eq(fgk_symoff_parse(t, strlen(t), FGK_SYMOFF_LOOSE, &so), 10);
	ck_assert(so.has_off && !so.has_size && so.off == 0x1c);
	t = "name";
	ck_assert_uint_eq(fgk_symoff_parse(t, 4, FGK_SYMOFF_LOOSE, &so), 4);
	ck_assert(!so.has_off);
	t = "f+0x11111111111111111/0x1";	/* 17 digits: no wrap-around */
	ck_assert_uint_eq(fgk_symoff_parse(t, strlen(t), 0, &so), 0);
	t = "f+0x10/0x20";	/* len bounds the match */
	ck_assert_uint_eq(fgk_symoff_parse(t, 6, 0, &so), 0);
	ck_assert_uint_eq(fgk_symoff_parse(t, 6, FGK_SYMOFF_LOOSE, &so), 6);
	ck_assert_uint_eq(fgk_symoff_parse("+0x1/0x2", 8, FGK_SYMOFF_LOOSE, &so), 0);
}
END_TEST

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> 8 * i);
}

START_TEST(test_boot_info_decode)
{
	uint8_t raw[328];
	struct fgk_boot_info bi;
	struct fgk_error *err;

	for (size_t i = 0; i < sizeof(raw); i++)
		raw[i] = (uint8_t)i;
	put32(raw, FGK_BOOT_INFO_MAGIC);
	put32(raw + 4, 0x03);
	ck_assert_ptr_null(fgk_boot_info_decode(raw, 88, NULL, &bi));
	ck_assert_uint_eq(bi.size, 88);
	ck_assert_uint_eq(bi.has, 0);
	ck_assert_uint_eq(bi.magic, FGK_BOOT_INFO_MAGIC);
	ck_assert_uint_eq(bi.flags, 3);
	ck_assert_uint_eq(bi.nr_sections, 0x0b0a0908);
	ck_assert(bi.text_start == 0x2726252423222120ull);
	ck_assert_uint_eq(bi.seed.bytes[0], 56);
	ck_assert_uint_eq(bi.seed.bytes[31], 87);
	ck_assert(bi.mcount_cycles == 0);
	/* sizes between versions decode the older one */
	ck_assert_ptr_null(fgk_boot_info_decode(raw, 103, NULL, &bi));
	ck_assert_uint_eq(bi.size, 96);
	ck_assert_uint_eq(bi.has, FGK_BOOT_HAS_MCOUNT);
	ck_assert(bi.mcount_cycles == 0x5f5e5d5c5b5a5958ull);
	ck_assert_ptr_null(fgk_boot_info_decode(raw, 104, NULL, &bi));
	ck_assert_uint_eq(bi.has, FGK_BOOT_HAS_MCOUNT | FGK_BOOT_HAS_ENTROPY);
	ck_assert_uint_eq(bi.entropy_bits, 0x63626160);
	ck_assert_uint_eq(bi.entropy_src, 0x67666564);
	ck_assert_ptr_null(fgk_boot_info_decode(raw, 183, NULL, &bi));
	ck_assert_uint_eq(bi.size, 152);
	ck_assert_uint_eq(bi.has, FGK_BOOT_HAS_MCOUNT | FGK_BOOT_HAS_ENTROPY |
			  FGK_BOOT_HAS_PHASES);
	ck_assert(bi.phase_cycles[0] == 0x6f6e6d6c6b6a6968ull);
	ck_assert(bi.phase_cycles[5] == 0x9796959493929190ull);
	ck_assert_uint_eq(bi.nr_sched_sections, 0);
	ck_assert_ptr_null(fgk_boot_info_decode(raw, 327, NULL, &bi));
	ck_assert_uint_eq(bi.size, 184);
	ck_assert_uint_eq(bi.has & FGK_BOOT_HAS_DOMAINS, 0);
	ck_assert_uint_eq(bi.dom_sections[0], 0);
	ck_assert_ptr_null(fgk_boot_info_decode(raw, sizeof(raw), NULL, &bi));
	ck_assert_uint_eq(bi.size, FGK_BOOT_INFO_SIZE_MAX);
	ck_assert_uint_eq(bi.has & FGK_BOOT_HAS_DOMAINS, FGK_BOOT_HAS_DOMAINS);
	/* raw[i] == i (mod 256): the bytes at each field's offset */
	ck_assert_uint_eq(bi.dom_sections[0], 0xbbbab9b8);
	ck_assert_uint_eq(bi.dom_sections[4], 0xcbcac9c8);
	ck_assert(bi.dom_start[0] == 0xd7d6d5d4d3d2d1d0ull);
	ck_assert(bi.dom_start[4] == 0xf7f6f5f4f3f2f1f0ull);
	ck_assert(bi.dom_end[0] == 0xfffefdfcfbfaf9f8ull);
	ck_assert(bi.dom_end[4] == 0x1f1e1d1c1b1a1918ull);
	ck_assert(bi.dom_used[0] == 0x2726252423222120ull);
	ck_assert(bi.dom_used[4] == 0x4746454443424140ull);
	ck_assert_uint_eq(bi.has & FGK_BOOT_HAS_SCHED, FGK_BOOT_HAS_SCHED);
	ck_assert_uint_eq(bi.nr_sched_sections, 0x9b9a9998);
	ck_assert(bi.sched_start == 0xa7a6a5a4a3a2a1a0ull);
	ck_assert(bi.sched_end == 0xafaeadacabaaa9a8ull);
	ck_assert(bi.sched_used == 0xb7b6b5b4b3b2b1b0ull);
	/* too short: one line naming where the bytes came from */
	err = fgk_boot_info_decode(raw, 87, "guest memory", &bi);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, FGK_ERR_INVALID);
	ck_assert_str_eq(err->path, "guest memory");
	ck_assert_ptr_null(strchr(err->message, '\n'));
	fgk_error_free(err);
	err = fgk_boot_info_decode(NULL, 0, NULL, &bi);
	ck_assert_ptr_nonnull(err);
	fgk_error_free(err);
	ck_assert_str_eq(fgk_boot_info_flag_name(0x01), "shuffled");
	ck_assert_str_eq(fgk_boot_info_flag_name(0x40), "bad ELF");
	ck_assert_ptr_null(fgk_boot_info_flag_name(0x100));
	ck_assert_ptr_null(fgk_boot_info_flag_name(0x03));
	ck_assert_str_eq(fgk_boot_info_phase_name(1), "relocs");
	ck_assert_ptr_null(fgk_boot_info_phase_name(FGK_BOOT_PHASES));
}
END_TEST

static size_t put_note(uint8_t *p, uint32_t type, size_t descsz, uint8_t fill)
{
	put32(p, 4);
	put32(p + 4, (uint32_t)descsz);
	put32(p + 8, type);
	memcpy(p + 12, "GNU", 4);
	memset(p + 16, fill, descsz);
	return 16 + descsz;
}

START_TEST(test_notes_find_build_ids)
{
	uint8_t mem[0x3000];
	struct fgk_build_id_note *notes;
	size_t n;
	const uint64_t base = 0xffffffff81000000ull;

	memset(mem, 0xcc, sizeof(mem));
	put_note(mem + 0x0c8, 3, 20, 0xab);	/* found */
	put_note(mem + 0x202, 3, 20, 0x01);	/* misaligned in memory */
	put_note(mem + 0x400, 3, 65, 0x02);	/* too long for a build-id */
	put_note(mem + 0x600, 1, 20, 0x03);	/* not NT_GNU_BUILD_ID */
	put_note(mem + 0x800, 3, 8, 0x04);	/* the shortest accepted */
	/* an ELF64 image at 0x1000 whose section headers end at 0x1000 + 0xe00 */
	memset(mem + 0x1000, 0, 64);
	memcpy(mem + 0x1000, "\x7f" "ELF\x02\x01\x01", 7);
	put32(mem + 0x1000 + 0x20, 64);			/* e_phoff */
	put32(mem + 0x1000 + 0x28, 0xc00);		/* e_shoff */
	mem[0x1000 + 0x36] = 56;			/* e_phentsize */
	mem[0x1000 + 0x38] = 4;				/* e_phnum */
	mem[0x1000 + 0x3a] = 64;			/* e_shentsize */
	mem[0x1000 + 0x3c] = 8;				/* e_shnum */
	put_note(mem + 0x1400, 3, 20, 0x05);		/* in the image */
	put_note(mem + 0x2000, 3, 20, 0x06);		/* after its extent */
	ck_assert_ptr_null(fgk_notes_find_build_ids(mem, sizeof(mem), base, &notes, &n));
	ck_assert_uint_eq(n, 4);
	ck_assert(notes[0].addr == base + 0x0c8 && !notes[0].embedded);
	ck_assert_str_eq(notes[0].build_id, "abababababababababababababababababababab");
	ck_assert(notes[1].addr == base + 0x800 && notes[1].size == 8);
	ck_assert_str_eq(notes[1].build_id, "0404040404040404");
	ck_assert(notes[2].addr == base + 0x1400 && notes[2].embedded);
	ck_assert(notes[3].addr == base + 0x2000 && !notes[3].embedded);
	free(notes);
	/* alignment is the memory's: at base + 2 the note at 0x202 is aligned */
	ck_assert_ptr_null(fgk_notes_find_build_ids(mem, 0x300, base + 2, &notes, &n));
	ck_assert_uint_eq(n, 1);
	ck_assert(notes[0].addr == base + 2 + 0x202);
	free(notes);
	/* a note cut at the end is not reported; nothing and NULL are fine */
	ck_assert_ptr_null(fgk_notes_find_build_ids(mem, 0x0c8 + 35, base, &notes, &n));
	ck_assert_uint_eq(n, 0);
	ck_assert_ptr_null(fgk_notes_find_build_ids(NULL, 0, 0, &notes, &n));
	ck_assert_uint_eq(n, 0);
	/* an image header near address 0 and a huge header table: no wrap */
	memset(mem, 0, 0x100);
	memcpy(mem, "\x7f" "ELF\x02", 5);
	memset(mem + 0x20, 0xff, 16);
	memset(mem + 0x36, 0xff, 8);
	put_note(mem + 0x80, 3, 20, 0x07);
	ck_assert_ptr_null(fgk_notes_find_build_ids(mem, 0x100, 0, &notes, &n));
	ck_assert_uint_eq(n, 1);
	ck_assert(notes[0].embedded);
	free(notes);
	/* at the top of the address space: nothing past it (no wrap) */
	ck_assert_ptr_null(fgk_notes_find_build_ids(mem, sizeof(mem), -(uint64_t)0x1000,
						    &notes, &n));
	ck_assert_uint_eq(n, 2);
	ck_assert(notes[0].addr == -(uint64_t)0x1000 + 0x80);
	ck_assert(notes[1].addr == -(uint64_t)0x1000 + 0x800);
	free(notes);
}
END_TEST

START_TEST(test_build_id_and_offset_parse)
{
	char *hex;
	uint64_t v = 7;
	struct fgk_error *err;

	ck_assert_ptr_null(fgk_build_id_parse(" 0xABCDEF0123456789 \n", &hex));
	ck_assert_str_eq(hex, "abcdef0123456789");
	free(hex);
	static const char *const bad_ids[] = {
		"", "0x", "abc", "abcdef01234567", "zz23456789abcdef",
		"0123456789abcdef 0", NULL,
	};
	for (int i = 0; bad_ids[i]; i++) {
		err = fgk_build_id_parse(bad_ids[i], &hex);
		ck_assert_ptr_nonnull(err);
		ck_assert_ptr_null(hex);
		ck_assert_int_eq(err->code, FGK_ERR_INVALID);
		ck_assert_ptr_null(strchr(err->message, '\n'));
		fgk_error_free(err);
	}
	ck_assert_ptr_null(fgk_offset_parse("0x1e000000", FGK_KASLR_ALIGN, &v));
	ck_assert(v == 0x1e000000);
	ck_assert_ptr_null(fgk_offset_parse("0", FGK_KASLR_ALIGN, &v));
	ck_assert(v == 0);
	ck_assert_ptr_null(fgk_offset_parse("ffffffffffffffff", 0, &v));
	ck_assert(v == UINT64_MAX);
	ck_assert_ptr_null(fgk_offset_parse("0X1000", 0, &v));
	ck_assert(v == 0x1000);
	err = fgk_offset_parse("0x1000", FGK_KASLR_ALIGN, &v);
	ck_assert_ptr_nonnull(err);
	ck_assert_str_eq(err->message, "offset 0x1000 is not a multiple of 0x200000");
	fgk_error_free(err);
	static const char *const bad_offsets[] = {
		"", "0x", "zz", "0x10000000000000000", "1 ", "-1", NULL,
	};
	for (int i = 0; bad_offsets[i]; i++) {
		v = 7;
		err = fgk_offset_parse(bad_offsets[i], 0, &v);
		ck_assert_ptr_nonnull(err);
		ck_assert(v == 7);
		ck_assert_int_eq(err->code, FGK_ERR_INVALID);
		fgk_error_free(err);
	}
}
END_TEST

START_TEST(test_outputs_and_temp_files)
{
	char dir[] = "/tmp/fgk-check-XXXXXX", path[256], link[256], stale[300], live[300];
	struct fgk_error *err;
	size_t removed, len;
	char *buf;
	pid_t dead = 4194303;
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/out", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	OK(fgk_write_file_atomic(path, "abc", 3));
	ck_assert_int_eq(symlink(path, link), 0);
	err = fgk_write_file_atomic(link, "x", 1);	/* never through a symlink */
	ck_assert_ptr_nonnull(err);
	ck_assert_ptr_nonnull(strstr(err->message, "symbolic link"));
	fgk_error_free(err);
	err = fgk_write_file_atomic(dir, "x", 1);
	ck_assert_ptr_nonnull(err);
	fgk_error_free(err);
	OK(fgk_read_file(path, 16, true, &buf, &len));
	ck_assert(len == 3 && !strcmp(buf, "abc"));
	free(buf);
	err = fgk_read_file(path, 2, true, &buf, &len);
	ck_assert_ptr_nonnull(err);
	ck_assert_ptr_nonnull(strstr(err->message, "larger than 2 bytes"));
	fgk_error_free(err);
	/* a temp file of a dead writer goes, one of a live writer stays */
	while (kill(dead, 0) == 0 || errno != ESRCH)
		dead--;
	snprintf(stale, sizeof(stale), "%s/out.tmp.%d.AbCdEf", dir, (int)dead);
	snprintf(live, sizeof(live), "%s/out.tmp.%d.AbCdEf", dir, (int)getppid());
	ck_assert_ptr_nonnull(f = fopen(stale, "w"));
	fclose(f);
	ck_assert_ptr_nonnull(f = fopen(live, "w"));
	fclose(f);
	OK(fgk_clean_stale_temp_files(dir, NULL, &removed));
	ck_assert_uint_eq(removed, 1);
	ck_assert_int_ne(access(stale, F_OK), 0);
	ck_assert_int_eq(access(live, F_OK), 0);
	unlink(live);
	unlink(link);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* ---- private outputs: 0600 files, 0700 directories, whatever the umask - */

static unsigned mode_of(const char *path)
{
	struct stat st;

	ck_assert_msg(lstat(path, &st) == 0, "%s: %s", path, strerror(errno));
	return (unsigned)(st.st_mode & 07777);
}

#define ck_assert_mode(path, want) do { \
	unsigned m_ = mode_of(path); \
	ck_assert_msg(m_ == (want), "%s: mode %04o, want %04o", (path), m_, (unsigned)(want)); \
} while (0)

START_TEST(test_private_outputs)
{
	char dir[] = "/tmp/fgk-check-XXXXXX", path[256], sub[256], deep[300], link[300];
	struct fgk_seed_record rec = { 0 };
	struct fgk_error *err;
	mode_t old = umask(022);	/* a default-mode create would be 0644 */
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	/* a new file */
	snprintf(path, sizeof(path), "%s/out", dir);
	OK(fgk_write_file_atomic(path, "abc", 3));
	ck_assert_mode(path, 0600);
	/* replacing a 0644 file */
	ck_assert_int_eq(chmod(path, 0644), 0);
	OK(fgk_write_file_atomic(path, "abcd", 4));
	ck_assert_mode(path, 0600);
	/* seed records go the same way */
	snprintf(path, sizeof(path), "%s/x.seed", dir);
	rec.seed = seed_of(SFF);
	OK(fgk_seed_record_write(&rec, path));
	ck_assert_mode(path, 0600);
	/* a umask that takes the owner's bits away does not either */
	umask(0277);
	snprintf(path, sizeof(path), "%s/y.seed", dir);
	OK(fgk_seed_record_write(&rec, path));
	ck_assert_mode(path, 0600);
	snprintf(sub, sizeof(sub), "%s/a", dir);
	snprintf(deep, sizeof(deep), "%s/a/b", dir);
	OK(fgk_private_dir(deep));
	ck_assert_mode(sub, 0700);
	ck_assert_mode(deep, 0700);
	umask(022);
	/* an existing looser directory of ours is tightened */
	ck_assert_int_eq(chmod(deep, 0755), 0);
	OK(fgk_private_dir(deep));
	ck_assert_mode(deep, 0700);
	/* a symlink in its place is refused */
	snprintf(link, sizeof(link), "%s/a/l", dir);
	ck_assert_int_eq(symlink(deep, link), 0);
	err = fgk_private_dir(link);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, FGK_ERR_OS);
	fgk_error_free(err);
	/* a file is not a directory */
	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	fclose(f);
	err = fgk_private_dir(path);
	ck_assert_ptr_nonnull(err);
	fgk_error_free(err);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	ck_assert_int_eq(system(path), 0);
	umask(old);
}
END_TEST

START_TEST(test_private_relink_cache)
{
	char dir[] = "/tmp/fgk-check-XXXXXX", cache[300], bdir[600], cmd[400], *path = NULL, *p2 = NULL;
	struct fgk_seed seed = seed_of(S0102);
	struct fgk_layout *l = NULL;
	struct fgk_vmlinux *vm;
	const char *old_env = getenv("FGK_CACHE_DIR");
	mode_t old = umask(022);
	bool cached;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(cache, sizeof(cache), "%s/new/cache", dir);	/* made by fgk */
	setenv("FGK_CACHE_DIR", cache, 1);
	OK(open_fixture("relocs.elf", &vm));
	OK(fgk_layout_compute(vm, &seed, &l));
	OK(fgk_relink_cached(vm, l, &path, &cached));
	ck_assert(!cached);
	snprintf(bdir, sizeof(bdir), "%s/%s", cache, fgk_vmlinux_build_id(vm));
	ck_assert_mode(path, 0600);
	ck_assert_mode(bdir, 0700);
	ck_assert_mode(cache, 0700);
	snprintf(cmd, sizeof(cmd), "%s/new", dir);
	ck_assert_mode(cmd, 0700);
	/* a cache of an older fgk (0755 directory, 0644 entry): tightened on use */
	ck_assert_int_eq(chmod(path, 0644), 0);
	ck_assert_int_eq(chmod(bdir, 0755), 0);
	OK(fgk_relink_cached(vm, l, &p2, &cached));
	ck_assert(cached);
	ck_assert_str_eq(p2, path);
	ck_assert_mode(path, 0600);
	ck_assert_mode(bdir, 0700);
	free(p2);
	free(path);
	fgk_layout_free(l);
	fgk_vmlinux_close(vm);
	if (old_env)
		setenv("FGK_CACHE_DIR", old_env, 1);
	else
		unsetenv("FGK_CACHE_DIR");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
	umask(old);
}
END_TEST

static Suite *fgk_suite(void)
{
	Suite *s = suite_create("libfgk");
	TCase *tc;

	tc = tcase_create("generator");
	tcase_add_test(tc, test_rfc8439_block);
	tcase_add_loop_test(tc, test_spec_u32, 0, 3);
	tcase_add_loop_test(tc, test_spec_below, 0, 3);
	tcase_add_loop_test(tc, test_spec_perm, 0, 3);
	tcase_add_test(tc, test_keystream_across_chunks);
	tcase_add_test(tc, test_below_bounds);
	tcase_add_test(tc, test_below_rejection);
	tcase_add_test(tc, test_permutation_is_permutation);
	tcase_add_test(tc, test_module_nonce);
	tcase_add_loop_test(tc, test_spec_sched_nonce, 0, 3);
	tcase_add_loop_test(tc, test_spec_range_nonces, 0, 4);
	suite_add_tcase(s, tc);

	tc = tcase_create("placement");
	tcase_add_test(tc, test_spec_placement);
	suite_add_tcase(s, tc);

	tc = tcase_create("seed");
	tcase_add_test(tc, test_seed_parse_ok);
	tcase_add_test(tc, test_seed_parse_bad);
	tcase_add_test(tc, test_seed_random);
	suite_add_tcase(s, tc);

	tc = tcase_create("records");
	tcase_add_test(tc, test_record_parse);
	tcase_add_test(tc, test_record_bad);
	tcase_add_test(tc, test_record_write_read);
	suite_add_tcase(s, tc);

	tc = tcase_create("elf");
	tcase_add_test(tc, test_fixture_layout);
	tcase_add_test(tc, test_fixture_kallsyms);
	tcase_add_test(tc, test_fixture_xindex);
	tcase_add_test(tc, test_fixture_errors);
	tcase_add_test(tc, test_fixture_sched_domains);
	tcase_add_test(tc, test_fixture_range_domains);
	tcase_add_test(tc, test_fixture_nofit);
	tcase_add_test(tc, test_record_check);
	tcase_add_test(tc, test_vmlinux_find);
	suite_add_tcase(s, tc);

	tc = tcase_create("hostile");
	tcase_add_test(tc, test_vmcoreinfo_strict);
	tcase_add_test(tc, test_symoff_parse);
	tcase_add_test(tc, test_boot_info_decode);
	tcase_add_test(tc, test_notes_find_build_ids);
	tcase_add_test(tc, test_build_id_and_offset_parse);
	tcase_add_test(tc, test_outputs_and_temp_files);
	suite_add_tcase(s, tc);

	tc = tcase_create("private");
	tcase_add_test(tc, test_private_outputs);
	tcase_add_test(tc, test_private_relink_cache);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(fgk_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
