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

struct fgk_layout {
	struct fgk_seed seed;
	uint64_t start;		/* min link address of the randomized sections */
	uint64_t limit;		/* link address of _etext */
	uint64_t end;		/* final p of §7 (<= limit) */
	size_t n;
	struct fgk_section *secs;	/* input list, section index order */
	uint32_t *order;		/* §6 permutation */
	/* private lookup tables */
	uint32_t *by_addr;	/* indices sorted by link address */
	uint32_t *by_new;	/* indices sorted by new address */
};

/* Compute the layout of vm for seed (§3..§7). */
struct fgk_error *fgk_layout_compute(struct fgk_vmlinux *vm,
				     const struct fgk_seed *seed,
				     struct fgk_layout **ret);
void fgk_layout_free(struct fgk_layout *layout);

/* The randomized section containing a link address, or NULL (§7 "belongs to"). */
const struct fgk_section *fgk_layout_section_at(const struct fgk_layout *l,
						 uint64_t link_addr);
/* Link address -> new address (identity outside randomized sections). */
uint64_t fgk_layout_map(const struct fgk_layout *l, uint64_t link_addr);
/*
 * New address -> link address.  Returns false (and leaves *link alone) for
 * an address inside [start, limit) that no placed section covers (int3
 * padding).
 */
bool fgk_layout_unmap(const struct fgk_layout *l, uint64_t new_addr,
		      uint64_t *link);

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

/* ---- seed records (docs/seed-records.md) ------------------------------- */

struct fgk_seed_record {
	struct fgk_seed seed;
	char *build_id;		/* hex, or NULL */
	char *release;		/* or NULL */
	bool has_offset;
	uint64_t offset;
	char *note;		/* or NULL */
};

struct fgk_error *fgk_seed_record_parse(const char *text, const char *path,
					struct fgk_seed_record *rec);
struct fgk_error *fgk_seed_record_read(const char *path,
				       struct fgk_seed_record *rec);
/* Serialize (malloc'd string). */
struct fgk_error *fgk_seed_record_format(const struct fgk_seed_record *rec,
					 char **ret);
/* Atomically write (temp file in the same directory + rename). */
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
 * as l says (base offset 0): code moved, section headers, symbols, every
 * relocated field (code, data, DWARF) and the relocations' r_offset
 * updated.  Needs vmlinux's --emit-relocs relocations.  *image is malloc'd.
 */
struct fgk_error *fgk_relink_image(struct fgk_vmlinux *vm,
				   const struct fgk_layout *l,
				   void **image, size_t *size,
				   struct fgk_relink_stats *stats);
/* Same, written atomically to out_path. */
struct fgk_error *fgk_relink(struct fgk_vmlinux *vm, const struct fgk_layout *l,
			     const char *out_path, struct fgk_relink_stats *stats);

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
 */
struct fgk_error *fgk_vmcore_read(const char *path, struct fgk_vmcoreinfo *info);
void fgk_vmcoreinfo_clear(struct fgk_vmcoreinfo *info);
const char *fgk_vmcore_format_name(enum fgk_vmcore_format format);
/* makedumpfile -R: rewrite a flattened kdump file as a regular one. */
struct fgk_error *fgk_vmcore_unflatten(const char *in, const char *out);

/* ---- misc ---------------------------------------------------------------- */

/* Write buf to path atomically (temp + fsync + rename). */
struct fgk_error *fgk_write_file_atomic(const char *path, const void *buf,
					size_t len);

#ifdef __cplusplus
}
#endif
#endif /* FGK_FGK_H */
