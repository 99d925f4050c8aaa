// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's struct fgkaslr_boot_info (include/linux/fgkaslr.h of the
 * FG-KASLR series), read from a copy of its bytes (guest memory, a dump).
 * The series only ever appends fields, so the struct's size says which
 * version it is:
 *
 *    88  magic .. seed                      (patch 4)
 *    96  + mcount_cycles                    (patch 9)
 *   104  + entropy_bits, entropy_src        (patch 13)
 *   152  + phase_cycles[6]                  (patch 16; 6.1 and 6.12 alike)
 *   184  + nr_sched_sections, pad, sched_start, sched_end, sched_used
 *                                           (6.1 patch 27, 6.12 patch 28)
 *   328  + dom_sections[5], pad2, dom_start[5], dom_end[5], dom_used[5]
 *                                           (6.1 patch 30, 6.12 patch 31)
 */
#include <stdint.h>
#include <string.h>

#include "error.h"

static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return le32(p) | (uint64_t)le32(p + 4) << 32;
}

static const char *const flag_names[] = {
	"shuffled", "seed given", "seed bad", "nofgkaslr", "did not fit",
	"no memory", "bad ELF", "slow sort",
};

static const char *const phase_names[FGK_BOOT_PHASES] = {
	"layout", "relocs", "kallsyms", "mcount", "text", "tables",
};

const char *fgk_boot_info_flag_name(uint32_t bit)
{
	for (unsigned i = 0; i < sizeof(flag_names) / sizeof(flag_names[0]); i++)
		if (bit == 1u << i)
			return flag_names[i];
	return NULL;
}

const char *fgk_boot_info_phase_name(unsigned phase)
{
	return phase < FGK_BOOT_PHASES ? phase_names[phase] : NULL;
}

struct fgk_error *fgk_boot_info_decode(const void *buf, size_t len,
				       const char *origin,
				       struct fgk_boot_info *ret)
{
	const uint8_t *p = buf;

	memset(ret, 0, sizeof(*ret));
	if (!p || len < FGK_BOOT_INFO_SIZE_MIN)
		return fgk__error_new(FGK_ERR_INVALID, origin,
				      "fgkaslr_boot_info: need at least %u bytes, got %zu",
				      FGK_BOOT_INFO_SIZE_MIN, p ? len : 0);
	ret->magic = le32(p);
	ret->flags = le32(p + 4);
	ret->nr_sections = le32(p + 8);
	ret->heap_used = le32(p + 12);
	ret->heap_size = le64(p + 16);
	ret->cycles = le64(p + 24);
	ret->text_start = le64(p + 32);
	ret->text_end = le64(p + 40);
	ret->text_used = le64(p + 48);
	memcpy(ret->seed.bytes, p + 56, sizeof(ret->seed.bytes));
	ret->size = FGK_BOOT_INFO_SIZE_MIN;
	if (len >= 96) {
		ret->mcount_cycles = le64(p + 88);
		ret->has |= FGK_BOOT_HAS_MCOUNT;
		ret->size = 96;
	}
	if (len >= 104) {
		ret->entropy_bits = le32(p + 96);
		ret->entropy_src = le32(p + 100);
		ret->has |= FGK_BOOT_HAS_ENTROPY;
		ret->size = 104;
	}
	if (len >= 104 + 8 * FGK_BOOT_PHASES) {
		for (unsigned i = 0; i < FGK_BOOT_PHASES; i++)
			ret->phase_cycles[i] = le64(p + 104 + 8 * i);
		ret->has |= FGK_BOOT_HAS_PHASES;
		ret->size = 104 + 8 * FGK_BOOT_PHASES;
	}
	if (len >= 184) {
		ret->nr_sched_sections = le32(p + 152);
		ret->sched_start = le64(p + 160);
		ret->sched_end = le64(p + 168);
		ret->sched_used = le64(p + 176);
		ret->has |= FGK_BOOT_HAS_SCHED;
		ret->size = 184;
	}
	if (len >= 328) {
		for (unsigned i = 0; i < FGK_BOOT_RANGE_DOMAINS; i++) {
			ret->dom_sections[i] = le32(p + 184 + 4 * i);
			ret->dom_start[i] = le64(p + 208 + 8 * i);
			ret->dom_end[i] = le64(p + 248 + 8 * i);
			ret->dom_used[i] = le64(p + 288 + 8 * i);
		}
		ret->has |= FGK_BOOT_HAS_DOMAINS;
		ret->size = 328;
	}
	return NULL;
}
