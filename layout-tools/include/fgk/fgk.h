/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libfgk: recompute the function-granular KASLR layout of a vmlinux.
 *
 * This is the only public header.  The layout algorithm is the one written
 * down in docs/layout-spec.md (version 1); section numbers in comments (§N)
 * refer to that document.
 *
 * Error convention: every fallible function returns a struct fgk_error *,
 * NULL on success.  The caller owns the error and frees it with
 * fgk_error_free().  The library never prints and never exits.
 */
#ifndef FGK_FGK_H
#define FGK_FGK_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ------------------------------------------------------------ */

enum fgk_error_code {
	FGK_ERR_NOMEM = 1,	/* out of memory */
	FGK_ERR_OS,		/* system call failed (errno in ->errnum) */
	FGK_ERR_ELF,		/* not an ELF / corrupt ELF / libelf failure */
	FGK_ERR_NOT_FGKASLR,	/* no .text.* sections, or bad region */
	FGK_ERR_NO_SYMTAB,	/* stripped vmlinux */
	FGK_ERR_NO_FIT,		/* layout does not fit (§7) */
	FGK_ERR_SEED,		/* malformed seed text */
	FGK_ERR_RECORD,		/* malformed seed record */
	FGK_ERR_BUILD_ID,	/* seed record does not match vmlinux */
	FGK_ERR_LOOKUP,		/* symbol / address not found */
	FGK_ERR_KALLSYMS,	/* kallsyms tables missing or corrupt */
	FGK_ERR_CRYPTO,		/* generator backend failure */
	FGK_ERR_INVALID,	/* invalid argument */
	FGK_ERR_VMCORE,		/* not a crash dump / truncated / corrupt dump */
	FGK_ERR_NO_VMCOREINFO,	/* crash dump without a VMCOREINFO note */
};

struct fgk_error {
	enum fgk_error_code code;
	int errnum;		/* errno for FGK_ERR_OS, else 0 */
	char *path;		/* file the error is about, or NULL */
	char *message;		/* the problem, without the file name */
};

/* Statically allocated error returned when allocation itself fails. */
extern struct fgk_error fgk_enomem;

void fgk_error_free(struct fgk_error *err);
/* "<path>: <message>" or "<message>"; written into buf (always terminated). */
const char *fgk_error_string(const struct fgk_error *err, char *buf, size_t len);

/* ---- seed (§2) ----------------------------------------------------------- */

#define FGK_SEED_SIZE 32
#define FGK_SEED_HEX_LEN 64

struct fgk_seed {
	uint8_t bytes[FGK_SEED_SIZE];
};

/*
 * Parse seed text: exactly 64 hex digits (either case), optionally prefixed
 * by "fgkaslr_seed=", surrounding whitespace (e.g. the newline of
 * /proc/fgkaslr_seed) ignored.  Anything else is rejected as a whole.
 */
struct fgk_error *fgk_seed_parse(const char *text, struct fgk_seed *seed);
/* Canonical text: 64 lowercase hex digits + NUL (buf >= 65 bytes). */
void fgk_seed_format(const struct fgk_seed *seed, char buf[FGK_SEED_HEX_LEN + 1]);
/* A fresh random seed from the OS (getrandom). */
struct fgk_error *fgk_seed_random(struct fgk_seed *seed);

/* ---- generator (§4), bounded draw (§5), shuffle (§6) -------------------- */

#define FGK_NONCE_SIZE 12
extern const uint8_t fgk_text_nonce[FGK_NONCE_SIZE]; /* "fgkaslr-text" */
/* Spec §3 (layout version 2): the .sched.text.* domain's nonce. */
extern const uint8_t fgk_sched_nonce[FGK_NONCE_SIZE]; /* "fgkaslr-schd" */
/* Spec §3 (layout version 3): the number of shuffle domains. */
#define FGK_LAYOUT_DOMAINS 6

struct fgk_rng;

struct fgk_error *fgk_rng_new(const struct fgk_seed *seed,
			      const uint8_t nonce[FGK_NONCE_SIZE],
			      struct fgk_rng **ret);
void fgk_rng_free(struct fgk_rng *rng);
struct fgk_error *fgk_rng_u32(struct fgk_rng *rng, uint32_t *ret);
/* §5: uniform in [0, m), 1 <= m <= 2^32. */
struct fgk_error *fgk_rng_below(struct fgk_rng *rng, uint64_t m, uint32_t *ret);

/* Raw RFC 8439 block function (for self tests): out = block(key, counter, nonce). */
struct fgk_error *fgk_chacha20_block(const uint8_t key[32], uint32_t counter,
				     const uint8_t nonce[12], uint8_t out[64]);

/* §8: "fgkm" || FNV-1a-64(name) LE. */
void fgk_module_nonce(const char *name, uint8_t nonce[FGK_NONCE_SIZE]);

/* §6: order[0..n-1] = permutation of 0..n-1 (order[0] is placed first). */
struct fgk_error *fgk_permutation(const struct fgk_seed *seed,
				  const uint8_t nonce[FGK_NONCE_SIZE],
				  size_t n, uint32_t *order);

/* ---- placement (§7) ------------------------------------------------------ */

struct fgk_section {
	size_t index;		/* ELF section header index */
	const char *name;	/* points into the ELF string table (or caller's) */
	uint64_t addr;		/* link address (sh_addr) */
	uint64_t size;		/* sh_size */
	uint64_t align;		/* max(sh_addralign, 1) */
	uint64_t new_addr;	/* computed by fgk_place() */
};

/*
 * §7: place secs[order[k]] one after another from start.  On success every
 * secs[i].new_addr is set and *end receives the final p.  If the final p is
 * beyond limit, returns FGK_ERR_NO_FIT (new_addr values are still set).
 */
struct fgk_error *fgk_place(struct fgk_section *secs, size_t n,
			    const uint32_t *order, uint64_t start,
			    uint64_t limit, uint64_t *end);

/* ---- vmlinux ------------------------------------------------------------- */

struct fgk_vmlinux;

struct fgk_error *fgk_vmlinux_open(const char *path, struct fgk_vmlinux **ret);
void fgk_vmlinux_close(struct fgk_vmlinux *vm);
const char *fgk_vmlinux_path(const struct fgk_vmlinux *vm);
/* NT_GNU_BUILD_ID as lowercase hex, or NULL if the file has none. */
const char *fgk_vmlinux_build_id(const struct fgk_vmlinux *vm);
/* Kernel release parsed from linux_banner ("Linux version X ..."), or NULL. */
const char *fgk_vmlinux_release(const struct fgk_vmlinux *vm);

/* ---- layout --------------------------------------------------------------- */

/*
 * Opaque: reached through the getters below, so that the Python binding
 * (and any other caller) never depends on its fields.
 */
struct fgk_layout;

/* Compute the layout of vm for seed (§3..§7). */
struct fgk_error *fgk_layout_compute(struct fgk_vmlinux *vm,
				     const struct fgk_seed *seed,
				     struct fgk_layout **ret);
void fgk_layout_free(struct fgk_layout *layout);

/*
 * A layout rebuilt without the seed, from the addresses the booted kernel's
 * kallsyms gives its symbols (lib/kallsyms_layout.c).  Every randomized
 * section with a kallsyms symbol is placed where its symbols are; the few
 * without one (weak definitions the linker overrode: dead code with no
 * symbol left) are placed by elimination, into the gaps §7's packing leaves
 * between the others.  When such sections are interchangeable (same size
 * and alignment) kallsyms cannot tell their order: they are placed in
 * section index order and named in origin->guessed.  The result is checked
 * against §7: the sections in new-address order must pack exactly.
 */
struct fgk_kallsyms_origin {
	uint64_t offset;	/* base KASLR offset the addresses show */
	size_t by_symbol;	/* sections placed from their symbols */
	size_t by_elimination;	/* sections without a kallsyms symbol */
	size_t guessed;		/* of those, interchangeable ones */
	char *guessed_names;	/* their names, ", "-separated, or NULL */
};
void fgk_kallsyms_origin_clear(struct fgk_kallsyms_origin *o);
/*
 * From a /proc/kallsyms capture read by root (text[0..len), path names it
 * in errors): "ADDR TYPE NAME" lines, module lines ("NAME\t[mod]")
 * ignored.  A capture with zero addresses (not root), truncated, or of
 * another build (symbols vm lacks, counts that differ, inconsistent base
 * offsets) is an error naming path.
 */
struct fgk_error *fgk_layout_from_kallsyms(struct fgk_vmlinux *vm,
					   const char *text, size_t len,
					   const char *path,
					   struct fgk_layout **ret,
					   struct fgk_kallsyms_origin *origin);
/*
 * From the kallsyms tables in a dump's memory (kallsyms_offsets, updated by
 * the FG-KASLR kernel, read through the dump's NUMBER(phys_base) and
 * KERNELOFFSET); info is fgk_vmcore_read() of dump_path.
 */
struct fgk_vmcoreinfo;
/*
 * The modules loaded in a dumped kernel (lib/vmcore_modules.c): the
 * `modules` list in the dump's memory, each module's name and the build-id
 * of its notes (/sys/module/NAME/notes), build_id NULL when it has none.
 * Offsets of struct module come from vm's DWARF; module memory is read
 * through the dump's page tables.
 */
struct fgk_vmcore_module {
	char name[57];		/* MODULE_NAME_LEN + 1 */
	char *build_id;		/* lowercase hex, or NULL */
	/* where its text is (0: unknown, or freed: init_base once loaded) */
	uint64_t core_base, init_base, init_text_size;
};
struct fgk_error *fgk_vmcore_modules(struct fgk_vmlinux *vm, const char *dump,
				     const struct fgk_vmcoreinfo *info,
				     struct fgk_vmcore_module **ret, size_t *n);
void fgk_vmcore_modules_free(struct fgk_vmcore_module *mods, size_t n);
/*
 * The descriptor of the first NT_GNU_BUILD_ID note ("GNU", 1..64 bytes) in
 * notes[0..len), a run of ELF notes (lib/notes.c): *hex is it in lowercase
 * hex (malloc'd), or NULL when there is none or the notes are malformed
 * before it.  Errors only for lack of memory.
 */
struct fgk_error *fgk_notes_build_id(const void *notes, size_t len, char **hex);

/* ---- notes, build-ids and offsets in memory and in text (lib/notes.c) */

#define FGK_NOTES_HEADER	12	/* namesz, descsz, type (u32 each) */
#define FGK_BUILD_ID_MIN	8	/* descriptor sizes of a build-id */
#define FGK_BUILD_ID_MAX	64
#define FGK_NOTES_LOOKBACK	0x10000	/* how far back an ELF header is looked for */

struct fgk_build_id_note {
	uint64_t addr;		/* address of the note header (namesz) */
	size_t size;		/* descriptor bytes */
	char build_id[2 * FGK_BUILD_ID_MAX + 1];	/* lowercase hex */
	bool embedded;		/* inside an ELF image in memory (a vDSO) */
};
/*
 * Every complete GNU build-id note in buf[0..len), a copy of memory at
 * address base, whose header is 4-byte aligned in memory: namesz 4, descsz
 * FGK_BUILD_ID_MIN..FGK_BUILD_ID_MAX, type NT_GNU_BUILD_ID, name "GNU", then
 * the descriptor.  *ret (malloc'd, free()) holds *n notes in address order;
 * embedded marks the notes inside an ELF image whose header (ELF64 or
 * ELF32) starts on a page at most FGK_NOTES_LOOKBACK bytes before them and
 * whose header tables reach past them (the vDSO images the kernel carries
 * as data).  Bytes that would lie past the top of the address space are
 * not looked at.  Errors only for lack of memory.
 */
struct fgk_error *fgk_notes_find_build_ids(const void *buf, size_t len,
					   uint64_t base,
					   struct fgk_build_id_note **ret,
					   size_t *n);
/*
 * A build-id as users type it (surrounding blanks and a 0x prefix allowed):
 * *hex is its lowercase hex (malloc'd), 2*FGK_BUILD_ID_MIN to
 * 2*FGK_BUILD_ID_MAX digits, an even number; else FGK_ERR_INVALID.
 */
struct fgk_error *fgk_build_id_parse(const char *text, char **hex);
/*
 * A KASLR base offset as users type it: hex, 0x optional, at most 64 bits;
 * a multiple of align unless align is 0 (FGK_KASLR_ALIGN for x86_64's
 * CONFIG_PHYSICAL_ALIGN); else FGK_ERR_INVALID.
 */
#define FGK_KASLR_ALIGN		0x200000
struct fgk_error *fgk_offset_parse(const char *text, uint64_t align,
				   uint64_t *offset);

/* ---- the kernel's struct fgkaslr_boot_info (lib/bootinfo.c) */

#define FGK_BOOT_INFO_MAGIC	0x4b474621	/* "!FGK" */
#define FGK_BOOT_INFO_SIZE_MIN	88	/* magic .. seed: every version */
#define FGK_BOOT_INFO_SIZE_MAX	328	/* + mcount, entropy, phase_cycles, sched, dom_* */
#define FGK_BOOT_PHASES		6	/* FGKASLR_NR_PHASES */
#define FGK_BOOT_HAS_MCOUNT	0x1	/* mcount_cycles (size >= 96) */
#define FGK_BOOT_HAS_ENTROPY	0x2	/* entropy_bits, entropy_src (>= 104) */
#define FGK_BOOT_HAS_PHASES	0x4	/* phase_cycles (>= 152) */
#define FGK_BOOT_HAS_SCHED	0x8	/* nr_sched_sections, sched_* (>= 184) */
#define FGK_BOOT_HAS_DOMAINS	0x10	/* dom_* (>= 328) */
#define FGK_BOOT_RANGE_DOMAINS	5	/* FGKASLR_NR_RANGE_DOMAINS */

struct fgk_boot_info {
	size_t size;		/* bytes decoded: 88, 96, 104, 152, 184 or 328 */
	uint32_t has;		/* FGK_BOOT_HAS_*: the appended fields present */
	uint32_t magic;		/* FGK_BOOT_INFO_MAGIC once the decompressor ran */
	uint32_t flags;		/* FGKASLR_F_*: fgk_boot_info_flag_name() */
	uint32_t nr_sections;
	uint32_t heap_used;
	uint64_t heap_size;
	uint64_t cycles;
	uint64_t text_start;	/* link address of the randomized region */
	uint64_t text_end;	/* end of the randomized region: __fgkaslr_text_end, _etext before */
	uint64_t text_used;	/* end of the shuffled packing */
	struct fgk_seed seed;
	uint64_t mcount_cycles;
	uint32_t entropy_bits;
	uint32_t entropy_src;
	uint64_t phase_cycles[FGK_BOOT_PHASES];
	/* the .sched.text.* domain (nr_sections, text_* are the .text.* one) */
	uint32_t nr_sched_sections;
	uint64_t sched_start;	/* link address of its first section */
	uint64_t sched_end;	/* __sched_text_end */
	uint64_t sched_used;	/* end of its shuffled packing */
	/*
	 * The range domains in address order (sched, lock, static call,
	 * noinstr, cpuidle; layout spec v3): sections, link address of the
	 * first (0 if none), limit symbol, end of the shuffled packing.
	 */
	uint32_t dom_sections[FGK_BOOT_RANGE_DOMAINS];
	uint64_t dom_start[FGK_BOOT_RANGE_DOMAINS];
	uint64_t dom_end[FGK_BOOT_RANGE_DOMAINS];
	uint64_t dom_used[FGK_BOOT_RANGE_DOMAINS];
};
/*
 * Decode a copy of the kernel's fgkaslr_boot_info (little-endian) of len
 * bytes: pass the object's size (its symbol's st_size) to get the fields
 * later series versions append; the largest known version that fits in
 * len is decoded, later bytes are ignored.  Fewer than
 * FGK_BOOT_INFO_SIZE_MIN bytes are FGK_ERR_INVALID, with origin (where the
 * bytes came from, or NULL) in the error's path.  The magic is not
 * checked: a kernel booted without FG-KASLR leaves it 0.
 */
struct fgk_error *fgk_boot_info_decode(const void *buf, size_t len,
				       const char *origin,
				       struct fgk_boot_info *ret);
/* "shuffled", "seed given", ... of one FGKASLR_F_* bit; NULL if unknown. */
const char *fgk_boot_info_flag_name(uint32_t bit);
/* "layout", "relocs", ... of phase_cycles[phase]; NULL if out of range. */
const char *fgk_boot_info_phase_name(unsigned phase);
struct fgk_error *fgk_layout_from_vmcore(struct fgk_vmlinux *vm,
					 const char *dump_path,
					 const struct fgk_vmcoreinfo *info,
					 struct fgk_layout **ret,
					 struct fgk_kallsyms_origin *origin);

/* The randomized section containing a link address, or NULL (§7 "belongs to"). */
const struct fgk_section *fgk_layout_section_at(const struct fgk_layout *l,
						 uint64_t link_addr);
/* Link address -> new address (identity outside randomized sections). */
uint64_t fgk_layout_map(const struct fgk_layout *l, uint64_t link_addr);
/*
 * New address -> link address.  Returns false (and leaves *link alone) for
 * an address inside a domain's [start, limit) (any domain, see
 * fgk_layout_domain()) that no placed section covers (int3 padding).
 */
bool fgk_layout_unmap(const struct fgk_layout *l, uint64_t new_addr,
		      uint64_t *link);
/*
 * The seed the layout was computed from, or NULL for a layout rebuilt
 * without one (fgk_layout_from_kallsyms(), fgk_layout_from_vmcore()).
 */
const struct fgk_seed *fgk_layout_seed(const struct fgk_layout *l);
/*
 * Min link address of the .text.* domain's sections (spec §3, the last
 * domain; the range domains, .sched.text.* and the others, lie below it:
 * see fgk_layout_domain()).
 */
uint64_t fgk_layout_start(const struct fgk_layout *l);
/*
 * End of the randomized region [start, limit), spec §3: the link address of
 * __fgkaslr_text_end (the fixed entry text starts there; kernel series patch
 * 22 on 6.1, 23 on 6.12), or of _etext in a vmlinux without that symbol.
 */
uint64_t fgk_layout_limit(const struct fgk_layout *l);
/* Final p of §7 in the .text.* domain (<= limit). */
uint64_t fgk_layout_end(const struct fgk_layout *l);
/*
 * The randomized sections of all domains, domain by domain (in
 * fgk_layout_domain() order, .text.* last) and in section index order inside each,
 * new_addr set: *n of them.
 */
const struct fgk_section *fgk_layout_sections(const struct fgk_layout *l,
					      size_t *n);
/*
 * The §6 permutations (order[0] placed first), as many as the sections:
 * domain by domain (see fgk_layout_domain()), each a permutation of its
 * domain's indices into fgk_layout_sections().
 */
const uint32_t *fgk_layout_order(const struct fgk_layout *l);
/*
 * Spec §3 (version 3): the number of shuffle domains, FGK_LAYOUT_DOMAINS
 * (6, in address order: .sched.text., .spinlock.text., .static_call.text.,
 * .noinstr.text., .cpuidle.text., then .text.).  A vmlinux of layout
 * version 2 has empty range domains but the first; one of version 1 has
 * only .text. sections.
 */
size_t fgk_layout_ndomains(const struct fgk_layout *l);
/*
 * Domain i: its section name prefix (NULL if i is out of range), and,
 * where the pointers are not NULL, its region [start, limit), the final p
 * of its §7 placement, and its sections: fgk_layout_sections()[first ..
 * first + n).  start, limit and end are 0 for an empty domain.
 * fgk_layout_start(), _limit() and _end() are those of the .text.* domain.
 */
const char *fgk_layout_domain(const struct fgk_layout *l, size_t i,
			      uint64_t *start, uint64_t *limit, uint64_t *end,
			      size_t *first, size_t *n);
/*
 * Domain i's §4 nonce, FGK_NONCE_SIZE bytes (fgk_sched_nonce for
 * .sched.text.*, "fgkaslr-lock", "fgkaslr-scal", "fgkaslr-noin",
 * "fgkaslr-idle" for the other range domains, fgk_text_nonce for .text.*),
 * and the symbol its limit is the value of ("__sched_text_end",
 * "__lock_text_end", "__static_call_text_end", "__fgkaslr_noinstr_end",
 * "__cpuidle_text_end"; "__fgkaslr_text_end", or "_etext" in a vmlinux
 * without it); NULL if i is out of range.
 */
const uint8_t *fgk_layout_domain_nonce(const struct fgk_layout *l, size_t i);
const char *fgk_layout_domain_limit_symbol(const struct fgk_layout *l, size_t i);

/* ---- symbols -------------------------------------------------------------- */

struct fgk_symbol {
	const char *name;
	uint64_t addr;		/* link address */
	uint64_t size;
	char type;		/* nm(1) type letter */
	bool absolute;		/* SHN_ABS or per-CPU (not offset by KASLR) */
};

/*
 * Kallsyms (§9): decode the kernel's own kallsyms_* tables.  Entries are in
 * kallsyms index order; ->name storage is owned by the table.
 */
struct fgk_kallsyms {
	size_t n;
	struct fgk_symbol *syms;
	char *strings;
};
struct fgk_error *fgk_kallsyms_read(struct fgk_vmlinux *vm,
				    struct fgk_kallsyms **ret);
void fgk_kallsyms_free(struct fgk_kallsyms *ks);

/*
 * One line of a randomized map: runtime address, type, name.
 */
struct fgk_map_entry {
	uint64_t addr;
	char type;
	const char *name;
};
struct fgk_map {
	size_t n;
	struct fgk_map_entry *entries;
	void *priv;
};
enum fgk_map_format {
	FGK_MAP_KALLSYMS,	/* what root reads from /proc/kallsyms (vmlinux part) */
	FGK_MAP_SYSTEM_MAP,	/* System.map (nm -n | mksysmap filter) */
};
struct fgk_error *fgk_map_build(struct fgk_vmlinux *vm,
				const struct fgk_layout *l,
				enum fgk_map_format format, uint64_t offset,
				struct fgk_map **ret);
void fgk_map_free(struct fgk_map *map);
/* Write "%016lx %c %s\n" lines; returns an error on write failure. */
struct fgk_error *fgk_map_write(const struct fgk_map *map, FILE *f);

/* ELF symbol table lookups (link addresses). */
/* Best symbol containing (or preceding, within its section) link_addr. */
struct fgk_error *fgk_symbol_at(struct fgk_vmlinux *vm, uint64_t link_addr,
				struct fgk_symbol *ret);
/* First defined symbol called name (prefers functions/objects). */
struct fgk_error *fgk_symbol_lookup(struct fgk_vmlinux *vm, const char *name,
				    struct fgk_symbol *ret);
/* Is the link address inside an allocated section of the image? */
bool fgk_vmlinux_contains(struct fgk_vmlinux *vm, uint64_t link_addr);

/* ---- address translation (fgk addr, fgk-gdb's fgk addr; lib/addr.c) ---- */

/* One item of `fgk addr`, translated. */
struct fgk_addr {
	char *item;		/* as shown: "[<...>]" stripped, SYMBOL[+0xOFF] */
	uint64_t runtime;	/* new address + offset (absolute symbols: link) */
	uint64_t link;		/* the address in vmlinux */
	bool has_symbol;
	struct fgk_symbol sym;	/* the symbol at link, when has_symbol */
	const struct fgk_section *section;	/* randomized section, or NULL */
	/* "ITEM\tRUNTIME\tLINK\tSYMBOL+0xOFF/0xSIZE\tSECTION" ('-' for none) */
	char *line;
};
/* The longest item (white space trimmed) fgk_addr_translate takes. */
#define FGK_ADDR_ITEM_MAX 1023

/*
 * Translate item for the kernel vm booted with layout l at base offset
 * offset.  Surrounding white space and "[<...>]" are stripped.  An item is
 * an ADDRESS (runtime) if it is hex with a 0x prefix or exactly 16 hex
 * digits, else SYMBOL, SYMBOL+OFF or SYMBOL+OFF/SIZE (OFF hex, SIZE
 * ignored).  A blank item gives NULL with ret->item NULL.  An item that
 * cannot be translated (outside the image, in the int3 padding between
 * shuffled functions, unknown symbol) is an error whose message starts
 * with the item (FGK_ERR_LOOKUP; FGK_ERR_INVALID when it is neither form
 * or longer than FGK_ADDR_ITEM_MAX).  Free ret with fgk_addr_clear().
 */
struct fgk_error *fgk_addr_translate(struct fgk_vmlinux *vm,
				     const struct fgk_layout *l, uint64_t offset,
				     const char *item, struct fgk_addr *ret);
void fgk_addr_clear(struct fgk_addr *a);

/* ---- seed records (docs/seed-records.md) ------------------------------- */

struct fgk_seed_record {
	struct fgk_seed seed;
	char *build_id;		/* hex, or NULL */
	char *release;		/* or NULL */
	bool has_offset;
	uint64_t offset;
	char *note;		/* or NULL */
};

/*
 * Parse record text; path is the file it came from (or NULL).  Errors are
 * FGK_ERR_RECORD with path in their path field and "line N: problem" as
 * the message (NULL path: "seed record: line N: problem").
 */
struct fgk_error *fgk_seed_record_parse(const char *text, const char *path,
					struct fgk_seed_record *rec);
struct fgk_error *fgk_seed_record_read(const char *path,
				       struct fgk_seed_record *rec);
/* Serialize (malloc'd string). */
struct fgk_error *fgk_seed_record_format(const struct fgk_seed_record *rec,
					 char **ret);
/*
 * Atomically write (temp file in the same directory + rename), mode 0600
 * (fgk_write_file_atomic).
 */
struct fgk_error *fgk_seed_record_write(const struct fgk_seed_record *rec,
					const char *path);
void fgk_seed_record_clear(struct fgk_seed_record *rec);
/* Refuse a record whose build-id differs from vm's. */
struct fgk_error *fgk_seed_record_check(const struct fgk_seed_record *rec,
					const char *record_path,
					struct fgk_vmlinux *vm);

/* ---- relinking (fgk relink) ------------------------------------------- */

struct fgk_relink_stats {
	size_t sections_moved;		/* randomized sections whose address changed */
	size_t symbols;			/* symbol table entries moved */
	size_t relocations;		/* fields patched (code, data and debug) */
	size_t debug_relocations;	/* of which in non-allocated (DWARF) sections */
};

/*
 * The ELF a linker would have produced with the randomized sections placed
 * as l says (base offset 0): code moved, section headers, symbols and every
 * relocated field (code, data, DWARF) updated, the randomized sections
 * folded into one, the relocation sections left out.  Needs vmlinux's
 * --emit-relocs relocations.  *image is malloc'd.
 */
struct fgk_error *fgk_relink_image(struct fgk_vmlinux *vm,
				   const struct fgk_layout *l,
				   void **image, size_t *size,
				   struct fgk_relink_stats *stats);
/*
 * Same, written atomically to out_path (fgk_write_file_atomic); refuses an
 * out_path that is vm's own file (or a hard link of it).  Malformed
 * relocation sections are errors, never skipped.
 */
struct fgk_error *fgk_relink(struct fgk_vmlinux *vm, const struct fgk_layout *l,
			     const char *out_path, struct fgk_relink_stats *stats);
/*
 * Is path a relink result of vm that can be reused (a cache entry): a
 * regular file (not a symlink), an ELF with vm's build-id and the same
 * sections (names, types, sizes: a debug-stripped copy does not pass)?
 * NULL if so, else an error saying what is wrong.
 */
struct fgk_error *fgk_relink_verify(struct fgk_vmlinux *vm, const char *path);

/* ---- source lines (libdw) and oops symbolization ------------------------ */

/* One frame of an address's inline chain, innermost first. */
struct fgk_srcframe {
	char *function;		/* DWARF name of the (inlined) function */
	char *file;		/* relative to the compilation directory, or NULL */
	int line, column;	/* frame 0: the address; others: the call site */
	bool inlined;		/* inlined into the next frame */
};

struct fgk_dwarf;
struct fgk_error *fgk_dwarf_open(const char *path, struct fgk_dwarf **ret);
void fgk_dwarf_close(struct fgk_dwarf *d);
/* Inline chain of a link address (like addr2line -f -i). */
struct fgk_error *fgk_dwarf_lookup(struct fgk_dwarf *d, uint64_t link_addr,
				   struct fgk_srcframe **frames, size_t *n);
void fgk_srcframes_free(struct fgk_srcframe *frames, size_t n);

/*
 * Annotates oops/WARN/stack-dump text.  l may be NULL (no seed): symbolic
 * frames (func+0xoff/0xsize) still decode; raw addresses only outside the
 * randomized sections.  dwarf may be NULL (symbols only).
 */
struct fgk_symbolizer;
struct fgk_error *fgk_symbolizer_new(struct fgk_vmlinux *vm,
				     const struct fgk_layout *l,
				     struct fgk_dwarf *dwarf,
				     struct fgk_symbolizer **ret);
void fgk_symbolizer_free(struct fgk_symbolizer *s);
void fgk_symbolizer_set_offset(struct fgk_symbolizer *s, uint64_t offset,
			       const char *source);
bool fgk_symbolizer_get_offset(const struct fgk_symbolizer *s,
			       uint64_t *offset, const char **source);
/* Learn the base offset from a line ("Kernel Offset:", "[<addr>] sym+off"). */
void fgk_symbolizer_learn(struct fgk_symbolizer *s, const char *text);
/* The line with sources appended; raw addresses explained on extra lines. */
struct fgk_error *fgk_symbolize_line(struct fgk_symbolizer *s, const char *line,
				     char **out);
/* Frames and addresses decoded so far. */
size_t fgk_symbolizer_decoded(const struct fgk_symbolizer *s);

/* Where a frame of fgk_symbolizer_frames() comes from. */
enum fgk_symframe_source {
	FGK_SYMFRAME_SYMBOL,	/* "func+0xOFF/0xSIZE [mod]" as the kernel printed it */
	FGK_SYMFRAME_ADDRESS,	/* a raw vmlinux address: seed, layout, base offset */
	FGK_SYMFRAME_CAPTURE,	/* a raw module address: the sections capture */
};

/* A frame or raw address of the line last given to fgk_symbolize_line(). */
struct fgk_symframe {
	size_t column, length;	/* its text: line[column .. column + length) */
	int source;		/* enum fgk_symframe_source */
	bool reliable;		/* false: printed after "? " (a stale stack word) */
	bool has_address, has_link;
	uint64_t address;	/* runtime address (raw, or the "[<ADDR>]" beside it) */
	uint64_t link;		/* vmlinux: link address; module: offset in section */
	char *symbol;		/* function; NULL for none */
	uint64_t offset, size;	/* into symbol; size: the trace's /0xSIZE or the ELF's */
	char *module;		/* NULL: vmlinux */
	char *section;		/* the module section holding it, or NULL */
	char *build_id;		/* module: the trace's build-id, else the .ko's */
	struct fgk_srcframe *src;	/* inline chain, innermost first; NULL if none */
	size_t nsrc;
};
/*
 * The frames of the last fgk_symbolize_line() call, in line order: every
 * "func+0xOFF/0xSIZE" (decoded or not: src NULL) and every raw address that
 * was decoded.  Valid until the next call or fgk_symbolizer_free().
 */
size_t fgk_symbolizer_frames(const struct fgk_symbolizer *s,
			     const struct fgk_symframe **frames);
/*
 * on: a module frame "[mod BUILDID]" whose mod.ko is not under the module
 * directories is fetched by its build-id with fgk_module_fetch()
 * ($DEBUGINFOD_URLS); a failed fetch is an error of fgk_symbolize_line().
 */
void fgk_symbolizer_fetch_modules(struct fgk_symbolizer *s, bool on);

/* ---- crash dumps: VMCOREINFO (lib/vmcore.c) ---------------------------- */

enum fgk_vmcore_format {
	FGK_VMCORE_TEXT = 0,	/* VMCOREINFO text given directly */
	FGK_VMCORE_ELF,		/* ELF core (QEMU dump-guest-memory, /proc/vmcore) */
	FGK_VMCORE_KDUMP,	/* kdump-compressed (diskdump "KDUMP   ") */
	FGK_VMCORE_KDUMP_FLAT,	/* the same in makedumpfile's flattened format */
};

enum fgk_vmcore_seed_state {
	FGK_VMCORE_SEED_ABSENT,		/* no FGKASLR_SEED line */
	FGK_VMCORE_SEED_DISABLED,	/* FGKASLR_SEED=disabled */
	FGK_VMCORE_SEED_PRESENT,	/* FGKASLR_SEED=<64 hex> */
};

struct fgk_vmcoreinfo {
	enum fgk_vmcore_format format;
	char *raw;			/* the VMCOREINFO text (NUL-terminated) */
	char *osrelease;		/* OSRELEASE=, or NULL */
	char *build_id;			/* BUILD-ID=, lowercase hex, or NULL */
	bool has_offset;		/* KERNELOFFSET= present */
	uint64_t offset;
	enum fgk_vmcore_seed_state seed_state;
	struct fgk_seed seed;		/* when FGK_VMCORE_SEED_PRESENT */
};

/* Parse VMCOREINFO text (KEY=VALUE lines). */
struct fgk_error *fgk_vmcoreinfo_parse(const char *text, size_t len,
				       const char *path,
				       struct fgk_vmcoreinfo *info);
/*
 * Read the VMCOREINFO of a crash dump: the "VMCOREINFO" PT_NOTE of an ELF
 * core, or (via libkdumpfile) the vmcoreinfo of a kdump-compressed file,
 * flattened or not.  Truncated dumps are refused (FGK_ERR_VMCORE); a dump
 * without VMCOREINFO gives FGK_ERR_NO_VMCOREINFO (with info->format set).
 * On any error info holds nothing to free (only ->format is kept).  The
 * input is untrusted: a FIFO or device is refused without blocking, kdump
 * headers are checked against the file size, and libkdumpfile runs in a
 * child process, so a dump that crashes it gives FGK_ERR_VMCORE.
 */
struct fgk_error *fgk_vmcore_read(const char *path, struct fgk_vmcoreinfo *info);
void fgk_vmcoreinfo_clear(struct fgk_vmcoreinfo *info);
const char *fgk_vmcore_format_name(enum fgk_vmcore_format format);
/*
 * makedumpfile -R: rewrite a flattened kdump file as a regular one.  out is
 * written through a temp file + rename, mode 0600 (the dump holds the seed).
 */
struct fgk_error *fgk_vmcore_unflatten(const char *in, const char *out);

/* ---- queries for the tools and the Python binding (lib/query.c, cache.c) */

struct fgk_section_info {
	size_t index;		/* ELF section header index */
	const char *name;	/* owned by the vmlinux */
	uint32_t type;		/* sh_type */
	uint64_t flags;		/* sh_flags */
	uint64_t addr;		/* link address (sh_addr) */
	uint64_t size;		/* sh_size */
	uint64_t align;		/* max(sh_addralign, 1) */
	uint64_t entsize;	/* sh_entsize */
};

/* The first section called name; FGK_ERR_LOOKUP if there is none. */
struct fgk_error *fgk_vmlinux_section(struct fgk_vmlinux *vm, const char *name,
				      struct fgk_section_info *ret);
/* The number of section headers (extended numbering resolved), index 0 too. */
size_t fgk_vmlinux_shnum(const struct fgk_vmlinux *vm);
/* The ELF header's e_machine (EM_X86_64 = 62 for a vmlinux or .ko fgk reads). */
unsigned int fgk_vmlinux_machine(const struct fgk_vmlinux *vm);
/* Section header index; FGK_ERR_LOOKUP when index >= fgk_vmlinux_shnum(). */
struct fgk_error *fgk_vmlinux_section_at(struct fgk_vmlinux *vm, size_t index,
					 struct fgk_section_info *ret);
/*
 * len bytes of the file's image at link address link_addr, all from one
 * allocated section with contents; FGK_ERR_LOOKUP if no section holds them.
 */
struct fgk_error *fgk_vmlinux_read(struct fgk_vmlinux *vm, uint64_t link_addr,
				   void *buf, size_t len);

enum fgk_vmlinux_kind {
	FGK_VMLINUX_PLAIN = 0,	/* no randomized (§3) sections */
	FGK_VMLINUX_FGKASLR,	/* randomized sections in link order */
	FGK_VMLINUX_RELINKED,	/* a vmlinux.fgk: already relinked */
};
/* What kind of image vm is, from its section headers only (no layout). */
struct fgk_error *fgk_vmlinux_kind(struct fgk_vmlinux *vm,
				   enum fgk_vmlinux_kind *ret);

/*
 * The vmlinux whose build-id is build_id (lowercase hex), looked for in this
 * order: <dir>/vmlinux for each directory of dirs (NULL-terminated, may be
 * NULL; "." is the working directory), then /usr/lib/debug/.build-id/NN/REST.debug
 * and, with release, /usr/lib/debug/boot/vmlinux-RELEASE,
 * /usr/lib/debug/lib/modules/RELEASE/vmlinux and /lib/modules/RELEASE/build/vmlinux.
 * The library looks nowhere else: the places only the caller knows (the
 * dump's directory, the working directory) come in dirs.  `fgk crash`
 * passes the dump's directory and ".".
 * The first readable ELF with that build-id is opened into *ret; else
 * FGK_ERR_LOOKUP, whose one-line message lists every path looked at, with
 * the build-id of each one that exists.
 */
struct fgk_error *fgk_vmlinux_find(const char *const *dirs,
				   const char *build_id, const char *release,
				   struct fgk_vmlinux **ret);

/*
 * debuginfod (lib/debuginfod.c, Debian's libdebuginfod): files by build-id
 * from the servers of $DEBUGINFOD_URLS, kept in libdebuginfod's cache
 * ($DEBUGINFOD_CACHE_PATH; timeouts from its variables as well).
 */
struct fgk_fetch {
	char *path;	/* the file, in the debuginfod cache */
	char *url;	/* where it was downloaded from; NULL: from the cache */
};
/* Is $DEBUGINFOD_URLS set (and not blank)? */
bool fgk_debuginfod_enabled(void);
/*
 * The debuginfo file of build_id (lowercase hex); what names it in errors
 * ("vmlinux", "module fgk_test").  Unset $DEBUGINFOD_URLS, not found (404),
 * unreachable servers are FGK_ERR_LOOKUP errors naming the build-id.  The
 * file is not checked: see fgk_vmlinux_fetch() and fgk_module_fetch().
 */
struct fgk_error *fgk_debuginfod_fetch(const char *build_id, const char *what,
				       struct fgk_fetch *ret);
/*
 * A fetched file that is not what was asked for: remove it from the cache
 * (the next run asks again), clear f, and return the error naming the
 * server, the build-id and the problem.
 */
struct fgk_error *fgk_debuginfod_reject(struct fgk_fetch *f, const char *what,
					const char *build_id,
					const char *problem);
void fgk_fetch_clear(struct fgk_fetch *f);
/*
 * fgk_debuginfod_fetch() of a vmlinux, opened and checked: an ELF vmlinux
 * with that build-id, else rejected (garbage from the server).
 */
struct fgk_error *fgk_vmlinux_fetch(const char *build_id, struct fgk_fetch *f,
				    struct fgk_vmlinux **ret);

/*
 * The base offset from kernel console text: the last "Kernel Offset: 0x<hex>"
 * (at most 16 digits) or "Kernel Offset: disabled" (0) in text[0..len).
 * Returns false (and leaves *offset alone) if there is none.
 */
bool fgk_kernel_offset_scan(const char *text, size_t len, uint64_t *offset);
/*
 * The seed in text[0..len) (lib/scan.c): words separated by white space
 * that are 64 hex digits, optionally prefixed by "fgkaslr_seed=" (any case);
 * "FGKASLR_SEED=disabled" / "fgkaslr_seed=disabled" set *disabled.
 * Returns 1 (*seed set), 0 (none) or -1 (several different seeds).
 */
int fgk_seed_scan(const char *text, size_t len, struct fgk_seed *seed,
		  bool *disabled);

/*
 * The relink cache: <dir>/<build-id>/<seed>.vmlinux.fgk, <dir> being
 * $FGK_CACHE_DIR, else $XDG_CACHE_HOME/fgk, else $HOME/.cache/fgk.
 * *path is NULL (and no error) when no cache applies (no build-id, none of
 * the variables set).
 */
struct fgk_error *fgk_relink_cache_path(struct fgk_vmlinux *vm,
					const struct fgk_seed *seed,
					char **path);
/*
 * The cached vmlinux.fgk for l (*cached = true), or relink into the cache
 * now.  *path is malloc'd.  FGK_ERR_INVALID when no cache applies.
 */
struct fgk_error *fgk_relink_cached(struct fgk_vmlinux *vm,
				    const struct fgk_layout *l,
				    char **path, bool *cached);
/*
 * The same; stats (may be NULL) is filled when it relinks.  Cache entries
 * are checked with fgk_relink_verify() before use and replaced when they
 * fail it; temp files of killed relinks in the entry's directory are
 * removed, and a failed relink leaves no new empty directory.
 *
 * The cache is private (an entry's name is its seed, its content the
 * layout): entries are 0600, <build-id> is a 0700 directory owned by the
 * effective uid (a looser one of ours is tightened to 0700, one of another
 * user is an FGK_ERR_OS error, EPERM, and not used), and the directories
 * created on the way are 0700; an existing <dir> is left as it is.
 */
struct fgk_error *fgk_relink_cached_stats(struct fgk_vmlinux *vm,
					  const struct fgk_layout *l,
					  char **path, bool *cached,
					  struct fgk_relink_stats *stats);

/*
 * The cache is bounded as libdebuginfod's client cache is
 * (debuginfod-client-config(7)): <dir>/cache_clean_interval_s and
 * <dir>/max_unused_age_s hold seconds (created with these defaults when
 * missing).  A use of the cache at least cache_clean_interval_s after the
 * last cleaning (the mtime of that file) removes the entries not used
 * (atime, set on each hit) for max_unused_age_s and the empty <build-id>
 * directories that old; a negative max_unused_age_s keeps everything.
 */
#define FGK_CACHE_CLEAN_INTERVAL_S	86400
#define FGK_CACHE_MAX_UNUSED_AGE_S	604800

/* fgk_relink_through_cache(): compute the path, write nothing */
#define FGK_RELINK_DRY_RUN	0x1

struct fgk_relink_result {
	char *path;		/* the vmlinux.fgk (malloc'd) */
	char *cache_error;	/* why the cache was not used (or NULL) */
	bool cached;		/* it was in the cache already */
	bool in_cache;		/* path is a cache entry (else in fallback_dir) */
	bool written;		/* relinked now (stats filled) */
	struct fgk_relink_stats stats;
};

/*
 * The one relink through the cache, for every tool: the cache entry of
 * (vm's build-id, l's seed), reused or relinked now
 * (fgk_relink_cached_stats); when no cache applies, the cache cannot be
 * written (FGK_ERR_OS), or l has no seed (a layout from kallsyms),
 * fallback_dir/<seed>.vmlinux.fgk (or <build-id>.kallsyms.vmlinux.fgk),
 * fallback_dir made private first (fgk_private_dir).  fallback_dir NULL:
 * those cases are errors.  FGK_RELINK_DRY_RUN: res->path is where it
 * would be, res->cached whether a usable entry is there; nothing is
 * written or removed.  Free res with fgk_relink_result_clear().
 */
struct fgk_error *fgk_relink_through_cache(struct fgk_vmlinux *vm,
					   const struct fgk_layout *l,
					   const char *fallback_dir,
					   unsigned int flags,
					   struct fgk_relink_result *res);
void fgk_relink_result_clear(struct fgk_relink_result *res);

/* ---- misc ---------------------------------------------------------------- */

/*
 * Write buf to path atomically (temp "<path>.tmp.<pid>.XXXXXX" + fsync +
 * rename).  Refuses to replace anything but a regular file (a symlink, a
 * device, a directory); removes stale temp files of path left by a killed
 * run first.  The file is mode 0600, set on the temp file before the first
 * byte whatever the umask: everything libfgk writes (seed records, maps,
 * vmlinux.fgk, dumps) holds a seed or the layout it gives.
 */
struct fgk_error *fgk_write_file_atomic(const char *path, const void *buf,
					size_t len);
/*
 * A private directory for files that hold a seed or a layout: mkdir -p
 * path, the directories it creates mode 0700 (whatever the umask); then
 * path must be a directory (not a symlink) owned by the effective uid, and
 * its mode is tightened to 0700 if looser.  Another user's directory is an
 * FGK_ERR_OS error (EPERM).
 */
struct fgk_error *fgk_private_dir(const char *path);
/*
 * Remove the temp files libfgk is writing at this moment.  Async-signal-
 * safe: for SIGINT/SIGTERM handlers, which then re-raise the signal.
 */
void fgk_remove_temp_files(void);
/*
 * Remove temp files ("*.tmp.<pid>.XXXXXX", names starting with prefix
 * unless it is NULL) in dir whose writer process no longer exists (a
 * SIGKILL).  *removed (may be NULL) receives how many.
 */
struct fgk_error *fgk_clean_stale_temp_files(const char *dir, const char *prefix,
					     size_t *removed);
/*
 * Read a whole file ("-" = standard input), at most max bytes; with text,
 * a NUL byte is an error ("binary data").  *buf is NUL-terminated, malloc'd.
 */
struct fgk_error *fgk_read_file(const char *path, size_t max, bool text,
				char **buf, size_t *len);

/*
 * "NAME+0xOFF/0xSIZE" as oopses print frames.  With FGK_SYMOFF_LOOSE also
 * "NAME", "NAME+OFF" (0x optional) and a missing /SIZE.  NAME ends at
 * whitespace, '+', '(' or '['.  Returns the length matched at text (at most
 * len bytes are looked at), or 0.
 */
#define FGK_SYMOFF_LOOSE 1
struct fgk_symoff {
	const char *name;
	size_t name_len;
	bool has_off, has_size;
	uint64_t off, size;
};
size_t fgk_symoff_parse(const char *text, size_t len, int flags,
			struct fgk_symoff *ret);

/* ---- kernel modules (docs/layout-spec.md §8; lib/module.c) -------------- */

struct fgk_module;
/*
 * Open a module (.ko: a relocatable ELF with .modinfo name=).  Truncated
 * or corrupt files are FGK_ERR_ELF errors naming path.
 */
struct fgk_error *fgk_module_open(const char *path, struct fgk_module **ret);
void fgk_module_close(struct fgk_module *m);
const char *fgk_module_path(const struct fgk_module *m);
/* struct module::name (.modinfo name=, '-' already '_'). */
const char *fgk_module_name(const struct fgk_module *m);
/* .modinfo vermagic= ("6.1.192 SMP mod_unload "), or NULL. */
const char *fgk_module_vermagic(const struct fgk_module *m);
/* The .ko's own NT_GNU_BUILD_ID (not vmlinux's), or NULL. */
const char *fgk_module_build_id(const struct fgk_module *m);
/*
 * Refuse a module not built for vm (FGK_ERR_BUILD_ID, path = the .ko):
 * no vermagic, a vermagic whose release is not vm's, or one that differs
 * from vm's own VERMAGIC_STRING (its "vermagic" object).
 */
struct fgk_error *fgk_module_check(struct fgk_module *m, struct fgk_vmlinux *vm);

/* One section of a module's core text, as the module loader places it. */
struct fgk_module_section {
	size_t index;		/* ELF section header index */
	const char *name;	/* owned by the module */
	uint64_t size;
	uint64_t align;		/* max(sh_addralign, 1) */
	bool randomized;	/* §3 rules: shuffled by §8 */
	uint64_t offset;	/* from the start of the module's core text */
};
struct fgk_module_layout {
	struct fgk_seed seed;
	bool shuffled;		/* false: no seed, section index order */
	size_t n;		/* core text sections, in layout order */
	struct fgk_module_section *secs;
	size_t nrandomized;	/* how many of them §8 shuffled */
	uint64_t size;		/* end of the last one */
};
/*
 * §8: the module's executable core sections (not .init*, nor .exit* when
 * vermagic lacks "mod_unload") in the order the loader lays them out: the
 * others in index order, then the randomized ones in the §6 order drawn
 * with the module's nonce, each at align_up(end, align) from offset 0.
 * seed NULL: the loader's order without FG-KASLR (index order).
 */
struct fgk_error *fgk_module_layout_compute(struct fgk_module *m,
					    const struct fgk_seed *seed,
					    struct fgk_module_layout **ret);
void fgk_module_layout_free(struct fgk_module_layout *l);
/*
 * The module relinked in layout l (lib/module_relink.c), written atomically
 * to out_path (mode 0600: it gives the layout): its core text sections are
 * one .text, each at its layout offset, with its symbols and DWARF moved
 * along, so that a debugger which places only .text at the module's base
 * (crash) finds every function where the kernel put it.
 */
struct fgk_error *fgk_module_relink(struct fgk_module *m,
				    const struct fgk_module_layout *l,
				    const char *out_path);

/* A function symbol of a module: st_value is relative to its section. */
struct fgk_module_symbol {
	const char *name;
	size_t shndx;
	const char *section;
	uint64_t value;		/* offset in the section */
	uint64_t size;
};
/* The function called name[0..len) (the one of that size, if several). */
struct fgk_error *fgk_module_symbol(struct fgk_module *m, const char *name,
				    size_t len, uint64_t size,
				    struct fgk_module_symbol *ret);
/* The function holding offset off of section shndx. */
struct fgk_error *fgk_module_symbol_at(struct fgk_module *m, size_t shndx,
				       uint64_t off,
				       struct fgk_module_symbol *ret);
size_t fgk_module_section_count(const struct fgk_module *m);
struct fgk_error *fgk_module_section_info(struct fgk_module *m, size_t shndx,
					  struct fgk_section_info *ret);
/* The first section called name (FGK_ERR_LOOKUP if none). */
struct fgk_error *fgk_module_section(struct fgk_module *m, const char *name,
				     struct fgk_section_info *ret);
/*
 * Inline chain at offset off of section shndx (what
 * addr2line -f -i -j SECTION -e MODULE.ko OFF prints), from the .ko's DWARF
 * (relocated by libdwfl).  The DWARF handle is opened on first use and
 * owned by m (fgk_module_dwarf).
 */
struct fgk_error *fgk_module_lookup(struct fgk_module *m, size_t shndx,
				    uint64_t off, struct fgk_srcframe **frames,
				    size_t *n);
struct fgk_error *fgk_module_dwarf(struct fgk_module *m, struct fgk_dwarf **ret);
/* Module names are equal with '-' and '_' taken as the same character. */
bool fgk_module_name_eq(const char *a, size_t alen, const char *b, size_t blen);
/*
 * NAME.ko under dirs (NULL-terminated), each searched recursively (symlinks
 * not followed), '-' and '_' equal.  *path is malloc'd; FGK_ERR_LOOKUP if
 * none has it.  Compressed modules (.ko.xz, ...) are not looked at.
 */
struct fgk_error *fgk_module_find(const char *const *dirs, const char *name,
				  char **path);
/*
 * Module name (for messages) by build_id through debuginfod, opened and
 * checked like fgk_vmlinux_fetch(): a .ko with that build-id.
 */
struct fgk_error *fgk_module_fetch(const char *build_id, const char *name,
				   struct fgk_fetch *f, struct fgk_module **ret);
/*
 * Every module under dirs once: fn(path, name, arg) for each NAME.ko (name
 * with '_' for '-'), directories in the order given, searched as
 * fgk_module_find does; the first file of a name wins, as there.  An error
 * of fn stops the walk and is returned.
 */
typedef struct fgk_error *(*fgk_module_each_fn)(const char *path, const char *name,
						 void *arg);
struct fgk_error *fgk_module_each(const char *const *dirs, fgk_module_each_fn fn,
				  void *arg);

/*
 * Module frames in the symbolizer.  Module frames ("func+0xOFF/0xSIZE
 * [mod]") are decoded from mod.ko found under the directories given here;
 * every module opened is checked with fgk_module_check() and a mismatch is
 * an error of fgk_symbolize_line().
 */
struct fgk_error *fgk_symbolizer_add_module_dir(struct fgk_symbolizer *s,
						const char *dir);
/*
 * Runtime addresses of module sections, from a capture of
 * /sys/module/<mod>/sections (docs/fgk-symbolize.1.md): lines
 * "[/sys/module/]MOD/sections/SECTION:0xADDR" (what
 * `grep -r . /sys/module/MOD/sections` prints) or "MOD SECTION 0xADDR";
 * blank lines and '#' comments ignored.  path names the capture in errors.
 * Raw addresses inside those sections then decode.  Each module of the
 * capture must be found (fgk_symbolizer_add_module_dir first) and pass
 * fgk_module_check(), and each captured section must exist in its .ko.
 */
struct fgk_error *fgk_symbolizer_module_sections(struct fgk_symbolizer *s,
						 const char *text, size_t len,
						 const char *path);

/* ---- audit (lib/audit.c, docs/fgk-audit.1.md) ------------------------------ */

enum fgk_gadget_kind {
	FGK_GADGET_ROP,		/* ends in ret */
	FGK_GADGET_JOP,		/* ends in jmp or call */
	FGK_GADGET_SYS,		/* anything else (syscall, int, ...) */
	FGK_GADGET_KINDS,
};
enum fgk_audit_class {
	FGK_AUDIT_MOVING,	/* shuffled with the seed */
	FGK_AUDIT_FIXED,	/* resident, fixed offset from the base */
	FGK_AUDIT_INIT,		/* fixed, freed after boot */
	FGK_AUDIT_CLASSES,
};
/* One text region: [start, end) minus the regions nested in it. */
struct fgk_audit_region {
	const char *name;
	const char *start_sym, *end_sym;	/* bounds symbols, or NULL */
	uint64_t start, end;		/* link addresses */
	uint64_t bytes;			/* end - start minus nested regions */
	size_t functions;		/* sized STT_FUNC, aliases once */
	uint64_t function_bytes;
	size_t asm_functions;		/* fixed ones from .S files (DWARF) */
	bool moves, init;
	const char *why;		/* why it stays; NULL if it moves */
	uint64_t gadgets[FGK_GADGET_KINDS];
	/*
	 * Of those, the gadgets that start outside every function symbol's
	 * [value, value + size) (sized STT_FUNC, any section): code without
	 * function symbols (SYM_CODE entry stubs, .irqentry.text), padding.
	 */
	uint64_t gadgets_outside_functions;
};
struct fgk_audit {
	size_t nregions;
	struct fgk_audit_region *regions;	/* by start, enclosing first */
	size_t sections;		/* §3 randomized sections */
	double log2_orderings;		/* log2(sections!) */
	bool asm_known;			/* DWARF read: asm_functions valid */
	bool seeded;			/* fgk_audit_compute had a seed: */
	struct fgk_seed seed;
	size_t moved_sections;		/* not at their link address */
	uint64_t moved_bytes;
	uint64_t layout_end;
	bool have_gadgets;		/* fgk_audit_gadgets ran: */
	uint64_t gadgets[FGK_AUDIT_CLASSES][FGK_GADGET_KINDS];
	uint64_t unique[FGK_AUDIT_CLASSES];	/* distinct instruction texts */
	uint64_t gadgets_outside;	/* not in any text region */
	/*
	 * Per shuffle domain (spec §3, fgk_layout_domain() order:
	 * .sched.text.*, ..., .text.*): sections and log2(n!);
	 * log2_orderings is their sum.
	 */
	size_t domain_sections[FGK_LAYOUT_DOMAINS];
	double domain_log2_orderings[FGK_LAYOUT_DOMAINS];
	/* fgk_audit_gadgets: per class, the regions' gadgets_outside_functions */
	uint64_t gadgets_outside_functions[FGK_AUDIT_CLASSES];
};
/* Regions, functions, entropy of vm; seed may be NULL. */
struct fgk_error *fgk_audit_compute(struct fgk_vmlinux *vm,
				    const struct fgk_seed *seed,
				    struct fgk_audit **ret);
void fgk_audit_free(struct fgk_audit *a);
enum fgk_audit_class fgk_audit_region_class(const struct fgk_audit_region *r);
/*
 * Count a gadget finder's output ("0xADDRESS : insn ; insn ; ret" lines, as
 * ROPgadget prints them; other lines not starting with 0x are skipped) into
 * a's regions.  path names the text in errors.
 */
struct fgk_error *fgk_audit_gadgets(struct fgk_audit *a, const char *text,
				    size_t len, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* FGK_FGK_H */
