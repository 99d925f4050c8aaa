// SPDX-License-Identifier: GPL-2.0
/*
 * Relinking: write the vmlinux a linker would have produced had it laid the
 * randomized sections out in the shuffled order (base offset 0).
 *
 * vmlinux is linked with --emit-relocs, so every reference the linker
 * resolved is still described by a relocation (.rela.text.*, .rela.data,
 * .rela.debug_info, .rela.debug_line, ...).  Moving section X by dX and
 * knowing that symbol S lives in a section moved by dS, a field changes by
 *
 *	absolute (R_X86_64_64/32/32S):		+dS
 *	PC-relative (PC32/PLT32/PC64):		+dS - dX
 *
 * which is exact: it needs neither the old value nor the addend, and it is
 * the same rule the decompressor applies to the running image.  Section
 * headers and symbol values are updated with the code; the relocation
 * sections, once applied, are left out (see fold_text): the output is for
 * debuggers, and relinking starts from vmlinux.
 *
 * The output is produced in memory from a copy of the input file and
 * written atomically (temp file + rename): it is never half-written.
 *
 * Memory: the output is the one copy held, and it stops where the last
 * section kept ends (about half of vmlinux: the relocation sections come
 * last).  The input is read with pread() (the page cache, not this
 * process's memory) rather than through libelf's mapping of it, whose
 * pages would count against the process as they are touched: peak RSS is
 * about 0.4x objcopy's.
 */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "error.h"
#include "layout.h"
#include "vmlinux.h"

struct relink {
	struct fgk_vmlinux *vm;
	const struct fgk_layout *l;
	unsigned char *buf;		/* the output image */
	size_t size;
	int64_t *delta;			/* per section index */
	struct fgk_relink_stats *st;
	/* tables scripts/sorttable sorted after the link (see fix_sorted_tables) */
	struct sorted_table {
		size_t sec;		/* section index holding it */
		uint64_t start, end;	/* link addresses */
		unsigned entsize;
		bool abs64;		/* one absolute u64 entry, else PC32 fields */
		size_t orc;		/* .orc_unwind_ip: .orc_unwind's index, else 0 */
		bool orc_type3;		/* orc_entry has type:3 (.orc_header, 6.4+) */
	} sorted[3];
	unsigned nsorted;
	Elf64_Rela *chunk;		/* RELA_CHUNK relocations read at a time */
	Elf64_Shdr *sh;			/* the output's headers, by input index */
	/* the fold (plan_fold): output index per input one, 0 = dropped */
	uint32_t *map;
	bool *shuf;			/* randomized */
	size_t first, m;		/* first randomized index; output shnum */
};

/* Relocations read from the input this many at a time. */
#define RELA_CHUNK 8192

/*
 * len bytes of the input file at off into dst (off and len were checked
 * against the file when it was opened), with pread(): the page cache is
 * not mapped into this process, as libelf's image would be.
 */
static struct fgk_error *read_input(const struct fgk_vmlinux *vm, uint64_t off,
				    size_t len, void *dst)
{
	unsigned char *p = dst;

	if (vm->fd < 0) {
		memcpy(dst, vm->image + off, len);
		return NULL;
	}
	while (len) {
		ssize_t n = pread(vm->fd, p, len > (1u << 30) ? (1u << 30) : len,
				  (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fgk__error_os(errno, vm->path, "cannot read");
		if (n == 0)
			return fgk__error_new(FGK_ERR_ELF, vm->path,
					      "shorter than when it was opened: changed while relinking");
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return NULL;
}

/* File offset of link address addr inside the PT_LOAD segment holding it. */
static bool addr_to_offset(struct fgk_vmlinux *vm, uint64_t addr, uint64_t *off)
{
	size_t n;

	if (elf_getphdrnum(vm->elf, &n) != 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(vm->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (addr >= ph.p_vaddr && addr - ph.p_vaddr <= ph.p_filesz &&
		    ph.p_offset <= vm->image_size &&
		    addr - ph.p_vaddr <= vm->image_size - ph.p_offset) {
			*off = ph.p_offset + (addr - ph.p_vaddr);
			return true;
		}
	}
	return false;
}

/* The output's section header i, by its index in the input. */
static void get_shdr(const struct relink *r, size_t i, Elf64_Shdr *sh)
{
	*sh = r->sh[i];
}

static void put_shdr(struct relink *r, size_t i, const Elf64_Shdr *sh)
{
	r->sh[i] = *sh;
}

/*
 * Move the code of one domain (spec §3): int3 over its [start, limit), then
 * every section of it at its new place.
 */
static struct fgk_error *move_domain(struct relink *r, const struct fgk__domain *D)
{
	const struct fgk_layout *l = r->l;
	uint64_t off_start, off_limit;
	unsigned char *old_text;
	struct fgk_error *err = NULL;

	if (!addr_to_offset(r->vm, D->start, &off_start) ||
	    !addr_to_offset(r->vm, D->limit, &off_limit) ||
	    off_limit < off_start || off_limit > r->size)
		return fgk__error_new(FGK_ERR_NOT_FGKASLR, r->vm->path,
				      "the randomized region 0x%llx-0x%llx is not inside one loadable segment",
				      (unsigned long long)D->start,
				      (unsigned long long)D->limit);
	/* the region as it was: the sources of the moves (it holds them) */
	old_text = malloc(off_limit - off_start ? off_limit - off_start : 1);
	if (!old_text)
		return &fgk_enomem;
	memcpy(old_text, r->buf + off_start, off_limit - off_start);
	memset(r->buf + off_start, 0xcc, off_limit - off_start);
	for (size_t i = D->first; i < D->first + D->n && !err; i++) {
		const struct fgk_section *s = &l->secs[i];
		const GElf_Shdr *old = &r->vm->secs[s->index].shdr;
		uint64_t dst = old->sh_offset + (s->new_addr - s->addr);
		Elf64_Shdr sh;

		if (dst < off_start || dst > off_limit ||
		    old->sh_size > off_limit - dst) {
			err = fgk__error_new(FGK_ERR_NOT_FGKASLR, r->vm->path,
					     "section %s does not map into the randomized region of the file",
					     s->name);
			break;
		}
		if (old->sh_offset >= off_start && old->sh_offset <= off_limit &&
		    old->sh_size <= off_limit - old->sh_offset)
			memcpy(r->buf + dst, old_text + (old->sh_offset - off_start),
			       old->sh_size);
		else
			err = read_input(r->vm, old->sh_offset, old->sh_size,
					 r->buf + dst);
		get_shdr(r, s->index, &sh);
		sh.sh_addr = s->new_addr;
		sh.sh_offset = dst;
		put_shdr(r, s->index, &sh);
	}
	free(old_text);
	return err;
}

static struct fgk_error *move_text(struct relink *r)
{
	for (int d = 0; d < FGK__NDOMAINS; d++) {
		struct fgk_error *err;

		if (!r->l->dom[d].n)
			continue;
		err = move_domain(r, &r->l->dom[d]);
		if (err)
			return err;
	}
	return NULL;
}

/* The SHT_SYMTAB_SHNDX table of symbol table symndx (in the input), if any: its
 * entries in *nx, its section index in *sec if sec. */
static const unsigned char *find_xindex(struct fgk_vmlinux *vm, size_t symndx,
					size_t *nx, size_t *sec)
{
	for (size_t i = 1; i < vm->shnum; i++) {
		const GElf_Shdr *sh = &vm->secs[i].shdr;

		if (sh->sh_type == SHT_SYMTAB_SHNDX && sh->sh_link == symndx) {
			*nx = sh->sh_size / sizeof(Elf32_Word);
			if (sec)
				*sec = i;
			return (const unsigned char *)vm->image + sh->sh_offset;
		}
	}
	*nx = 0;
	return NULL;
}

static uint64_t shndx_of(const Elf64_Sym *sym, const unsigned char *xindex,
			 size_t i, size_t nx)
{
	Elf32_Word x;

	if (sym->st_shndx == SHN_XINDEX) {
		if (!xindex || i >= nx)
			return SHN_UNDEF;
		memcpy(&x, xindex + i * sizeof(x), sizeof(x));
		return x;
	}
	if (sym->st_shndx >= SHN_LORESERVE)
		return SHN_UNDEF;	/* SHN_ABS, SHN_COMMON: never moved */
	return sym->st_shndx;
}

/*
 * Move every symbol defined in a randomized section and record, per symbol,
 * the displacement of its section (the relocation pass needs it for S).
 * Symbols are copied in and out: the file's alignment is untrusted.
 */
static struct fgk_error *fix_symtab(struct relink *r, size_t symndx,
				    int64_t **symdelta, size_t *nsyms)
{
	const GElf_Shdr *sh = &r->vm->secs[symndx].shdr;
	unsigned char *base = r->buf + sh->sh_offset;
	size_t n = sh->sh_size / sizeof(Elf64_Sym), nx;
	const unsigned char *xindex = find_xindex(r->vm, symndx, &nx, NULL);
	int64_t *d = calloc(n ? n : 1, sizeof(*d));

	if (!d)
		return &fgk_enomem;
	for (size_t i = 1; i < n; i++) {
		Elf64_Sym sym;
		uint64_t shndx;

		memcpy(&sym, base + i * sizeof(sym), sizeof(sym));
		shndx = shndx_of(&sym, xindex, i, nx);
		/*
		 * §7: a symbol moves with the section its address lies in.  A
		 * bounds symbol in the gap before a domain (__sched_text_end
		 * before the first .text.* section) has the following
		 * section's index but not its address: it stays.
		 */
		if (shndx < r->vm->shnum && r->delta[shndx] &&
		    sym.st_value - r->vm->secs[shndx].shdr.sh_addr <
		    r->vm->secs[shndx].shdr.sh_size) {
			d[i] = r->delta[shndx];
			sym.st_value += (uint64_t)d[i];
			memcpy(base + i * sizeof(sym), &sym, sizeof(sym));
			r->st->symbols++;
		}
	}
	*symdelta = d;
	*nsyms = n;
	return NULL;
}

/* Bytes a relocation of this type patches, or 0 if unsupported. */
static unsigned field_size(uint32_t type)
{
	switch (type) {
	case R_X86_64_64:
	case R_X86_64_PC64:
		return 8;
	case R_X86_64_32:
	case R_X86_64_32S:
	case R_X86_64_PC32:
	case R_X86_64_PLT32:
		return 4;
	default:
		return 0;
	}
}

/* Add change to the field (unsigned arithmetic: no signed overflow). */
static struct fgk_error *patch(struct relink *r, unsigned char *field,
			       uint32_t type, int64_t change, uint64_t where,
			       const char *secname)
{
	switch (type) {
	case R_X86_64_64:
	case R_X86_64_PC64: {
		uint64_t v;

		memcpy(&v, field, 8);
		v += (uint64_t)change;
		memcpy(field, &v, 8);
		return NULL;
	}
	case R_X86_64_32: {
		uint32_t v;
		uint64_t nv;

		memcpy(&v, field, 4);
		nv = (uint64_t)v + (uint64_t)change;
		if (nv > UINT32_MAX)
			goto overflow;
		v = (uint32_t)nv;
		memcpy(field, &v, 4);
		return NULL;
	}
	case R_X86_64_32S:
	case R_X86_64_PC32:
	case R_X86_64_PLT32: {
		int32_t v;
		int64_t nv;

		memcpy(&v, field, 4);
		/* |change| < 2^63 - 2^31 keeps v + change in range */
		if (change > INT64_MAX - INT32_MAX || change < INT64_MIN - INT32_MIN)
			goto overflow;
		nv = (int64_t)v + change;
		if (nv < INT32_MIN || nv > INT32_MAX)
			goto overflow;
		v = (int32_t)nv;
		memcpy(field, &v, 4);
		return NULL;
	}
	default:
		return fgk__error_new(FGK_ERR_ELF, r->vm->path,
				      "unsupported relocation type %u at 0x%llx in %s against moved code",
				      type, (unsigned long long)where, secname);
	}
overflow:
	return fgk__error_new(FGK_ERR_ELF, r->vm->path,
			      "relocation type %u at 0x%llx in %s overflows after relinking",
			      type, (unsigned long long)where, secname);
}

static bool is_pcrel(uint32_t type)
{
	return type == R_X86_64_PC32 || type == R_X86_64_PLT32 ||
	       type == R_X86_64_PC64;
}

/* Is link address p inside one of the tables sorted after the link? */
static bool in_sorted_table(const struct relink *r, uint64_t p)
{
	for (unsigned t = 0; t < r->nsorted; t++)
		if (p >= r->sorted[t].start && p < r->sorted[t].end)
			return true;
	return false;
}

static void add_sorted_table(struct relink *r, size_t sec, uint64_t start,
			     uint64_t end, unsigned entsize, bool abs64)
{
	const GElf_Shdr *sh = &r->vm->secs[sec].shdr;

	if (r->nsorted >= sizeof(r->sorted) / sizeof(r->sorted[0]) ||
	    sh->sh_type != SHT_PROGBITS || start > end || start < sh->sh_addr ||
	    end - sh->sh_addr > sh->sh_size || (end - start) % entsize)
		return;		/* not a table this rule knows: left as relocated */
	r->sorted[r->nsorted++] = (struct sorted_table){ sec, start, end, entsize, abs64, 0, false };
}

/*
 * .orc_unwind_ip's entries name their struct orc_entry in .orc_unwind by
 * index.  A section terminator (an entry that ends the unwind data of the
 * section before it) points at the end of that section, one past its last
 * byte: the kernel's relocs tool and boot code move it with the section
 * holding the byte before it, and so must relink (fix_sorted_tables).
 * struct orc_entry is 6 bytes: sp_offset, bp_offset, then, since Linux 6.4
 * (which added .orc_header), sp_reg:4 bp_reg:4 type:3 signal:1, a
 * terminator being type ORC_TYPE_UNDEFINED (0); before, sp_reg:4 bp_reg:4
 * type:2 end:1, a terminator being sp_reg ORC_REG_UNDEFINED (0) and !end.
 * With the kernel series' objtool --orc-sec-start, a function section
 * (.text.<name>) has no terminator and starts with an entry of its own; an
 * undefined one there is marked (6.4+: sp_reg ORC_REG_SP (5); before:
 * bp_reg ORC_REG_PREV_SP (1)) and, not being a terminator, moves with the
 * section it starts, as the relocs tool and the boot code move it.  Files
 * built without the option have no marked entries.
 */
static void find_orc_entries(struct relink *r, struct sorted_table *st)
{
	struct fgk_vmlinux *vm = r->vm;
	uint64_t n = (st->end - st->start) / 4;
	bool header = false;
	size_t orc = 0;

	for (size_t i = 1; i < vm->shnum; i++) {
		const GElf_Shdr *sh = &vm->secs[i].shdr;
		const char *name = vm->secs[i].name;

		if (!name)
			continue;
		if (!strcmp(name, ".orc_header"))
			header = true;
		else if (!strcmp(name, ".orc_unwind") && sh->sh_type == SHT_PROGBITS &&
			 sh->sh_size == 6 * n && sh->sh_offset + sh->sh_size <= vm->image_size)
			orc = i;
	}
	st->orc = orc;		/* no table of the right size: no terminators */
	st->orc_type3 = header;
}

static bool orc_terminator(const struct relink *r, const struct sorted_table *st,
			   uint64_t k)
{
	const unsigned char *e = (const unsigned char *)r->vm->image +
				 r->vm->secs[st->orc].shdr.sh_offset + 6 * k;

	if (st->orc_type3)
		return (e[5] & 0x7) == 0 && (e[4] & 0xf) != 5;
	return (e[4] & 0xf) == 0 && !(e[5] & 0x4) && (e[4] >> 4) != 1;
}

/*
 * scripts/sorttable sorts __ex_table, .orc_unwind_ip and __mcount_loc in
 * vmlinux after the linker wrote the relocations, so their relocations no
 * longer describe their entries (it zaps those of __ex_table; the others
 * name the target of whatever entry a slot held before the sort).  As the
 * kernel's relocs tool and the decompressor do, take each target from the
 * contents: a PC32 field points at P + value, an absolute entry at its
 * value.  fix_relocations() skips relocations inside these tables.
 */
static void find_sorted_tables(struct relink *r)
{
	struct fgk_vmlinux *vm = r->vm;
	struct fgk_symbol a, b;
	struct fgk_error *ea, *eb;

	for (size_t i = 1; i < vm->shnum; i++) {
		const GElf_Shdr *sh = &vm->secs[i].shdr;
		const char *name = vm->secs[i].name;

		if (!name || !(sh->sh_flags & SHF_ALLOC))
			continue;
		if (!strcmp(name, "__ex_table"))	/* insn, fixup, data */
			add_sorted_table(r, i, sh->sh_addr, sh->sh_addr + sh->sh_size, 12, false);
		else if (!strcmp(name, ".orc_unwind_ip")) {
			unsigned before = r->nsorted;

			add_sorted_table(r, i, sh->sh_addr, sh->sh_addr + sh->sh_size, 4, false);
			if (r->nsorted > before)
				find_orc_entries(r, &r->sorted[before]);
		}
	}
	ea = fgk_symbol_lookup(vm, "__start_mcount_loc", &a);
	eb = ea ? NULL : fgk_symbol_lookup(vm, "__stop_mcount_loc", &b);
	if (!ea && !eb) {
		for (size_t i = 1; i < vm->shnum; i++) {
			const GElf_Shdr *sh = &vm->secs[i].shdr;

			if ((sh->sh_flags & SHF_ALLOC) && sh->sh_type == SHT_PROGBITS &&
			    a.addr >= sh->sh_addr && a.addr - sh->sh_addr < sh->sh_size) {
				add_sorted_table(r, i, a.addr, b.addr, 8, true);
				break;
			}
		}
	}
	fgk_error_free(ea);
	fgk_error_free(eb);
}

static struct fgk_error *fix_sorted_tables(struct relink *r)
{
	for (unsigned t = 0; t < r->nsorted; t++) {
		const struct sorted_table *st = &r->sorted[t];
		const GElf_Shdr *sh = &r->vm->secs[st->sec].shdr;
		const unsigned char *in = (const unsigned char *)r->vm->image + sh->sh_offset;
		int64_t dx = r->delta[st->sec];
		Elf64_Shdr out;

		get_shdr(r, st->sec, &out);
		for (uint64_t p = st->start; p < st->end; p += st->entsize) {
			uint64_t off = p - sh->sh_addr, target;
			unsigned nfields = st->abs64 ? 1 : (st->entsize == 12 ? 2 : 1);

			for (unsigned f = 0; f < nfields; f++) {
				uint64_t at = off + 4 * f;
				struct fgk_error *err;
				int64_t change;

				if (st->abs64) {
					memcpy(&target, in + at, 8);
					change = (int64_t)(fgk_layout_map(r->l, target) - target);
				} else {
					int32_t v;

					uint64_t moved;

					memcpy(&v, in + at, 4);
					target = p + 4 * f + (uint64_t)(int64_t)v;
					if (st->orc && orc_terminator(r, st, (p - st->start) / 4))
						moved = fgk_layout_map(r->l, target - 1) + 1;
					else
						moved = fgk_layout_map(r->l, target);
					change = (int64_t)(moved - target - (uint64_t)dx);
				}
				if (!change)
					continue;
				err = patch(r, r->buf + out.sh_offset + at,
					    st->abs64 ? R_X86_64_64 : R_X86_64_PC32, change,
					    p + 4 * f, r->vm->secs[st->sec].name);
				if (err)
					return err;
				r->st->relocations++;
			}
		}
	}
	return NULL;
}

/*
 * Which relocation sections relink applies: those against the symbol
 * table.  Dynamic ones (against .dynsym) are skipped; anything else that
 * does not make sense is an error, never silently ignored.
 */
static struct fgk_error *check_rela_section(struct fgk_vmlinux *vm, size_t i,
					    size_t symndx, bool *apply)
{
	const GElf_Shdr *rs = &vm->secs[i].shdr;
	const char *name = vm->secs[i].name;
	size_t link = rs->sh_link, x = rs->sh_info;

	*apply = false;
	if (link == 0 || link >= vm->shnum)
		return fgk__error_new(FGK_ERR_ELF, vm->path,
				      "corrupt ELF: relocation section %s links to section %zu of %zu",
				      name, link, vm->shnum);
	if (vm->secs[link].shdr.sh_type == SHT_DYNSYM)
		return NULL;	/* dynamic relocations: not relinked */
	if (link != symndx)
		return fgk__error_new(FGK_ERR_ELF, vm->path,
				      "corrupt ELF: relocation section %s links to section %zu, not to the symbol table %zu",
				      name, link, symndx);
	if (x == 0 || x >= vm->shnum)
		return fgk__error_new(FGK_ERR_ELF, vm->path,
				      "corrupt ELF: relocation section %s applies to section %zu of %zu",
				      name, x, vm->shnum);
	if (rs->sh_entsize != sizeof(Elf64_Rela) && rs->sh_size)
		return fgk__error_new(FGK_ERR_ELF, vm->path,
				      "corrupt ELF: relocation section %s has entry size %llu, not %zu",
				      name, (unsigned long long)rs->sh_entsize,
				      sizeof(Elf64_Rela));
	if (rs->sh_size % sizeof(Elf64_Rela))
		return fgk__error_new(FGK_ERR_ELF, vm->path,
				      "corrupt ELF: relocation section %s is not a whole number of entries",
				      name);
	switch (vm->secs[x].shdr.sh_type) {
	case SHT_NULL:
	case SHT_NOBITS:
		if (!rs->sh_size)
			return NULL;
		return fgk__error_new(FGK_ERR_ELF, vm->path,
				      "corrupt ELF: relocation section %s applies to section %s, which has no file contents",
				      name, vm->secs[x].name);
	}
	*apply = true;
	return NULL;
}

static struct fgk_error *fix_relocations(struct relink *r, const int64_t *symdelta,
					 size_t nsyms, size_t symndx)
{
	struct fgk_vmlinux *vm = r->vm;

	for (size_t i = 1; i < vm->shnum; i++) {
		const GElf_Shdr *rs = &vm->secs[i].shdr;
		size_t x = rs->sh_info;
		const GElf_Shdr *xs;
		Elf64_Shdr xout;
		bool alloc, apply, keep;
		size_t n;
		int64_t dx;
		struct fgk_error *err;

		if (rs->sh_type == SHT_REL)
			return fgk__error_new(FGK_ERR_ELF, vm->path,
					      "section %s: SHT_REL relocations are not supported on x86_64",
					      vm->secs[i].name);
		if (rs->sh_type != SHT_RELA)
			continue;
		err = check_rela_section(vm, i, symndx, &apply);
		if (err)
			return err;
		if (!apply)
			continue;
		xs = &vm->secs[x].shdr;
		get_shdr(r, x, &xout);	/* the new file offset, if x moved */
		keep = r->map[x] != 0;	/* else x is not in the output */
		alloc = xs->sh_flags & SHF_ALLOC;
		dx = r->delta[x];
		n = rs->sh_size / sizeof(Elf64_Rela);
		for (size_t k = 0; k < n; k++) {
			Elf64_Rela rela;
			uint32_t type;
			size_t sym;
			uint64_t off;
			int64_t ds, change;
			unsigned fsz;

			if (k % RELA_CHUNK == 0) {
				err = read_input(vm, rs->sh_offset + k * sizeof(rela),
						 (n - k < RELA_CHUNK ? n - k : RELA_CHUNK) *
						 sizeof(rela), r->chunk);
				if (err)
					return err;
			}
			memcpy(&rela, &r->chunk[k % RELA_CHUNK], sizeof(rela));
			type = ELF64_R_TYPE(rela.r_info);
			sym = ELF64_R_SYM(rela.r_info);
			off = alloc ? rela.r_offset - xs->sh_addr : rela.r_offset;
			if (type == R_X86_64_NONE)
				continue;
			if (sym >= nsyms)
				return fgk__error_new(FGK_ERR_ELF, vm->path,
						      "corrupt ELF: relocation %zu of %s refers to symbol %zu of %zu",
						      k, vm->secs[i].name, sym, nsyms);
			fsz = field_size(type);
			ds = symdelta[sym];
			change = is_pcrel(type) ? (int64_t)((uint64_t)ds - (uint64_t)dx) : ds;
			if (off >= xs->sh_size || xs->sh_size - off < (fsz ? fsz : 1))
				return fgk__error_new(FGK_ERR_ELF, vm->path,
						      "corrupt ELF: relocation %zu of %s points outside %s",
						      k, vm->secs[i].name, vm->secs[x].name);
			if (alloc && in_sorted_table(r, rela.r_offset))
				continue;	/* fix_sorted_tables() */
			/* the relocation section itself is not in the output */
			if (!change || !keep)
				continue;
			if (!fsz)
				return fgk__error_new(FGK_ERR_ELF, vm->path,
						      "unsupported relocation type %u at 0x%llx in %s against moved code",
						      type, (unsigned long long)(xs->sh_addr + off),
						      vm->secs[x].name);
			/* xout.sh_offset is already the new file offset */
			err = patch(r, r->buf + xout.sh_offset + off, type,
				    change, xs->sh_addr + off, vm->secs[x].name);
			if (err)
				return err;
			r->st->relocations++;
			if (!alloc)
				r->st->debug_relocations++;
		}
	}
	return NULL;
}

static uint64_t round_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

/*
 * Fold the randomized sections into one, as a linker would have emitted
 * them had it placed them in this order: one section FGK_FOLDED_TEXT over
 * [start, end), the shuffled code and its int3 padding.  The relocation
 * sections go (vmlinux.fgk is for debuggers; relinking starts from
 * vmlinux), the other section indexes are renumbered in order, and the
 * section name table and header table are written anew after the last
 * section kept: the file ends there (--emit-relocs puts the relocation
 * sections, the old name table and the old header table after everything
 * else).
 *
 * Why: gdb keeps a symbol's section index in a 'short'.  Debian's kernel
 * has 38,922 function sections, which put .data, .bss and every section
 * after them past index 32767: gdb then adds garbage to the address of
 * every variable ('p &init_task' reads host memory) and lx-dmesg fails.
 * And without relocation sections, gdb maps the DWARF sections instead of
 * reading them into memory (BFD marks a section that relocations apply to
 * SEC_RELOC, and gdb reads those itself), and the file is half the size:
 * gdb and crash load it as fast as a vmlinux built without FG-KASLR.
 *
 * plan_fold() decides which sections stay and where the kept bytes end
 * (*keep_end), before the output is read in; fold_text() writes the result.
 */
static struct fgk_error *plan_fold(struct relink *r, uint64_t *keep_end)
{
	struct fgk_vmlinux *vm = r->vm;
	const struct fgk_layout *l = r->l;
	const struct fgk__domain *D1 = &l->dom[FGK__D_TEXT];
	size_t n = vm->shnum, t, nph, old_str = 0;
	uint64_t end = sizeof(Elf64_Ehdr);

	r->map = calloc(n, sizeof(*r->map));
	r->shuf = calloc(n, sizeof(*r->shuf));
	if (!r->map || !r->shuf)
		return &fgk_enomem;
	r->first = 0;
	r->m = 1;
	/*
	 * The .text.* domain is folded into one section; the sections of the
	 * range domains (.sched.text.* and the spec §3 version 3 ones, a few
	 * dozen) stay sections of their own, at their new addresses
	 * (move_domain()).
	 */
	for (size_t k = D1->first; k < D1->first + D1->n; k++) {
		r->shuf[l->secs[k].index] = true;
		if (!r->first || l->secs[k].index < r->first)
			r->first = l->secs[k].index;
	}
	if (!r->first) {		/* nothing to fold: the whole file */
		*keep_end = vm->image_size;
		return NULL;
	}
	/* the name table is not kept where it was: fold_text() appends it */
	if (elf_getshdrstrndx(vm->elf, &old_str) != 0)
		old_str = 0;
	for (size_t i = 1; i < n; i++) {
		const GElf_Shdr *sh = &vm->secs[i].shdr;

		if (r->shuf[i])
			r->map[i] = i == r->first ? (uint32_t)r->m++ : 0;
		else if (fgk__section_relocates(vm, i, &t))
			r->map[i] = 0;		/* relocations: dropped */
		else
			r->map[i] = (uint32_t)r->m++;
		if ((r->map[i] || r->shuf[i]) && sh->sh_type != SHT_NOBITS &&
		    i != old_str && sh->sh_offset + sh->sh_size > end)
			end = sh->sh_offset + sh->sh_size;	/* checked at open */
	}
	for (size_t k = D1->first; k < D1->first + D1->n; k++)
		r->map[l->secs[k].index] = r->map[r->first];
	/* the program headers and what they load */
	if (elf_getphdrnum(vm->elf, &nph) == 0) {
		if (vm->ehdr.e_phoff <= vm->image_size &&
		    nph * sizeof(Elf64_Phdr) <= vm->image_size - vm->ehdr.e_phoff &&
		    vm->ehdr.e_phoff + nph * sizeof(Elf64_Phdr) > end)
			end = vm->ehdr.e_phoff + nph * sizeof(Elf64_Phdr);
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(vm->elf, (int)i, &ph) &&
			    ph.p_offset <= vm->image_size &&
			    ph.p_filesz <= vm->image_size - ph.p_offset &&
			    ph.p_offset + ph.p_filesz > end)
				end = ph.p_offset + ph.p_filesz;
		}
	}
	*keep_end = end < vm->image_size ? end : vm->image_size;
	return NULL;
}

static struct fgk_error *fold_text(struct relink *r, size_t symndx)
{
	struct fgk_vmlinux *vm = r->vm;
	const struct fgk_layout *l = r->l;
	size_t n = vm->shnum, m = r->m, first = r->first, old_str, new_str = 0;
	const uint32_t *map = r->map;
	const bool *shuf = r->shuf;
	Elf64_Shdr *nh = NULL, sh;
	struct fgk_error *err = NULL;
	uint64_t off_start, align = 1, str_off, sh_off, folded_name;
	size_t str_len, total;
	unsigned char *buf;
	Elf64_Ehdr eh;

	if (!first)
		return NULL;
	if (elf_getshdrstrndx(vm->elf, &old_str) != 0 || old_str >= n || !map[old_str])
		return fgk__error_new(FGK_ERR_ELF, vm->path, "no section name table");
	for (size_t k = l->dom[FGK__D_TEXT].first;
	     k < l->dom[FGK__D_TEXT].first + l->dom[FGK__D_TEXT].n; k++) {
		const GElf_Shdr *in = &vm->secs[l->secs[k].index].shdr;

		if (in->sh_addralign > align)
			align = in->sh_addralign;
	}
	while (align > 1 && l->start % align)
		align >>= 1;
	if (!addr_to_offset(vm, l->start, &off_start) || l->end < l->start ||
	    off_start > r->size || l->end - l->start > r->size - off_start)
		return fgk__error_new(FGK_ERR_NOT_FGKASLR, vm->path,
				      "the randomized region is not inside one loadable segment");

	/* headers: the folded one in place of the first randomized section */
	nh = calloc(m, sizeof(*nh));
	if (!nh) {
		err = &fgk_enomem;
		goto out;
	}
	str_len = vm->secs[old_str].shdr.sh_size;
	folded_name = str_len;
	for (size_t i = 0; i < n; i++) {
		if (i && !map[i])
			continue;
		if (i && shuf[i] && i != first)
			continue;
		get_shdr(r, i, &sh);
		if (i == first) {
			sh.sh_name = (Elf64_Word)folded_name;
			sh.sh_addr = l->start;
			sh.sh_offset = off_start;
			sh.sh_size = l->end - l->start;
			sh.sh_addralign = align;
			sh.sh_link = 0;
			sh.sh_info = 0;
			sh.sh_entsize = 0;
		} else if (i) {
			if (sh.sh_link < n)
				sh.sh_link = map[sh.sh_link];
			if ((sh.sh_type == SHT_RELA || sh.sh_type == SHT_REL ||
			     (sh.sh_flags & SHF_INFO_LINK)) && sh.sh_info < n)
				sh.sh_info = map[sh.sh_info];
		}
		nh[i ? map[i] : 0] = sh;
	}
	new_str = map[old_str];
	nh[0].sh_size = m >= SHN_LORESERVE ? m : 0;
	nh[0].sh_link = new_str >= SHN_LORESERVE ? (Elf64_Word)new_str : 0;

	/*
	 * symbols: section indexes renumbered (and .symtab_shndx with them);
	 * the section symbols of the sections that are gone (every randomized
	 * one but the first, now the folded one, and the relocation sections)
	 * are left out, as a linker emits one per output section: crash's
	 * start-up read 19,898 of them on the default 6.1 kernel (about 15 %
	 * of its time).  Nothing in vmlinux.fgk refers to a symbol by index
	 * (its relocation sections are gone); the table is shortened in place.
	 */
	{
		const GElf_Shdr *st = &vm->secs[symndx].shdr;
		unsigned char *base = r->buf + st->sh_offset;
		size_t ns = st->sh_size / sizeof(Elf64_Sym), nx = 0, kept = 1;
		size_t nlocal = st->sh_info, locals_dropped = 0;
		size_t xsec = 0;
		const unsigned char *xin = find_xindex(vm, symndx, &nx, &xsec);
		unsigned char *xout = xin ? r->buf + (xin - (const unsigned char *)vm->image) : NULL;

		for (size_t i = 1; i < ns; i++) {
			Elf64_Sym sym;
			uint64_t x;
			Elf32_Word w = 0;
			size_t o = kept++;

			memcpy(&sym, base + i * sizeof(sym), sizeof(sym));
			if (xout && i < nx)
				memcpy(&w, xin + i * sizeof(w), sizeof(w));
			x = shndx_of(&sym, xin, i, nx);
			if (ELF64_ST_TYPE(sym.st_info) == STT_SECTION && x != SHN_UNDEF &&
			    x < n && (!map[x] || (shuf[x] && x != first))) {
				kept--;
				locals_dropped += i < nlocal;
				continue;
			}
			if (x == first && ELF64_ST_TYPE(sym.st_info) == STT_SECTION)
				sym.st_value = l->start;	/* the folded section's */
			/* renumbered unless it names no section of the input */
			if (!(sym.st_shndx == SHN_UNDEF ||
			      (sym.st_shndx >= SHN_LORESERVE && sym.st_shndx != SHN_XINDEX) ||
			      x == SHN_UNDEF || x >= n)) {
				w = 0;
				x = map[x];
				if (x < SHN_LORESERVE) {
					sym.st_shndx = (Elf64_Half)x;
				} else if (xout && i < nx) {
					sym.st_shndx = SHN_XINDEX;
					w = (Elf32_Word)x;
				} else {
					err = fgk__error_new(FGK_ERR_ELF, vm->path,
							     "corrupt ELF: symbol %zu needs .symtab_shndx", i);
					goto out;
				}
			}
			if (xout && o < nx)
				memcpy(xout + o * sizeof(w), &w, sizeof(w));
			memcpy(base + o * sizeof(sym), &sym, sizeof(sym));
		}
		/* the table's tail, zeroed; its header (and .symtab_shndx's) shortened */
		memset(base + kept * sizeof(Elf64_Sym), 0, (ns - kept) * sizeof(Elf64_Sym));
		nh[map[symndx]].sh_size = kept * sizeof(Elf64_Sym);
		nh[map[symndx]].sh_info = (Elf64_Word)(nlocal - locals_dropped);
		if (xout && nx == ns && map[xsec]) {
			memset(xout + kept * sizeof(Elf32_Word), 0,
			       (nx - kept) * sizeof(Elf32_Word));
			nh[map[xsec]].sh_size = kept * sizeof(Elf32_Word);
		}
	}

	/* the new name table and header table, appended */
	str_off = round_up(r->size, 8);
	sh_off = round_up(str_off + str_len + sizeof(FGK_FOLDED_TEXT), 8);
	total = sh_off + m * sizeof(Elf64_Shdr);
	buf = realloc(r->buf, total);
	if (!buf) {
		err = &fgk_enomem;
		goto out;
	}
	r->buf = buf;
	memset(buf + r->size, 0, total - r->size);
	err = read_input(vm, vm->secs[old_str].shdr.sh_offset, str_len, buf + str_off);
	if (err)
		goto out;
	memcpy(buf + str_off + str_len, FGK_FOLDED_TEXT, sizeof(FGK_FOLDED_TEXT));
	nh[new_str].sh_offset = str_off;
	nh[new_str].sh_size = str_len + sizeof(FGK_FOLDED_TEXT);
	memcpy(buf + sh_off, nh, m * sizeof(*nh));
	memcpy(&eh, buf, sizeof(eh));
	eh.e_shoff = sh_off;
	eh.e_shnum = m >= SHN_LORESERVE ? 0 : (Elf64_Half)m;
	eh.e_shstrndx = new_str >= SHN_LORESERVE ? SHN_XINDEX : (Elf64_Half)new_str;
	memcpy(buf, &eh, sizeof(eh));
	r->size = total;
out:
	free(nh);
	return err;
}

struct fgk_error *fgk_relink_image(struct fgk_vmlinux *vm,
				   const struct fgk_layout *l,
				   void **image, size_t *size,
				   struct fgk_relink_stats *stats)
{
	struct relink r = { .vm = vm, .l = l };
	struct fgk_relink_stats dummy = { 0 };
	struct fgk_error *err = NULL;
	size_t nsyms = 0, symndx = 0, nrela = 0;
	int64_t *symdelta = NULL;
	uint64_t keep_end;

	r.st = stats ? stats : &dummy;
	memset(r.st, 0, sizeof(*r.st));
	if (vm->ehdr.e_ident[EI_CLASS] != ELFCLASS64 ||
	    vm->ehdr.e_ident[EI_DATA] != ELFDATA2LSB ||
	    vm->ehdr.e_machine != EM_X86_64 ||
	    vm->ehdr.e_shentsize != sizeof(Elf64_Shdr))
		return fgk__error_new(FGK_ERR_ELF, vm->path,
				      "not a little-endian x86_64 ELF64 vmlinux");
	err = fgk__require_symtab(vm, "relinking");
	if (err)
		return err;
	for (size_t i = 1; i < vm->shnum; i++) {
		const GElf_Shdr *sh = &vm->secs[i].shdr;

		if (sh->sh_type == SHT_SYMTAB) {
			if (symndx)
				return fgk__error_new(FGK_ERR_ELF, vm->path,
						      "corrupt ELF: more than one symbol table (sections %zu and %zu)",
						      symndx, i);
			symndx = i;
		}
		if (sh->sh_type == SHT_RELA && sh->sh_info < vm->shnum &&
		    (vm->secs[sh->sh_info].shdr.sh_flags & SHF_EXECINSTR))
			nrela++;
	}
	if (vm->secs[symndx].shdr.sh_entsize != sizeof(Elf64_Sym))
		return fgk__error_new(FGK_ERR_ELF, vm->path,
				      "corrupt ELF: bad .symtab entry size");
	if (!nrela)
		return fgk__error_new(FGK_ERR_ELF, vm->path,
				      "no relocations for the code (.rela.text*): vmlinux must be linked with --emit-relocs, as x86_64 vmlinux normally is");

	if (vm->ehdr.e_shoff > vm->image_size ||
	    vm->shnum > (vm->image_size - vm->ehdr.e_shoff) / sizeof(Elf64_Shdr))
		return fgk__error_new(FGK_ERR_ELF, vm->path,
				      "corrupt ELF: the section header table is outside the file");
	r.sh = malloc(vm->shnum * sizeof(*r.sh));
	r.delta = calloc(vm->shnum, sizeof(*r.delta));
	r.chunk = malloc(RELA_CHUNK * sizeof(*r.chunk));
	if (!r.sh || !r.delta || !r.chunk) {
		err = &fgk_enomem;
		goto out;
	}
	err = read_input(vm, vm->ehdr.e_shoff, vm->shnum * sizeof(*r.sh), r.sh);
	if (!err)
		err = plan_fold(&r, &keep_end);
	if (err)
		goto out;
	/* what the output keeps of the input: up to the last section kept */
	r.size = keep_end;
	r.buf = malloc(r.size ? r.size : 1);
	if (!r.buf) {
		err = &fgk_enomem;
		goto out;
	}
	err = read_input(vm, 0, r.size, r.buf);
	if (err)
		goto out;
	find_sorted_tables(&r);
	for (size_t i = 0; i < l->n; i++) {
		r.delta[l->secs[i].index] = (int64_t)(l->secs[i].new_addr - l->secs[i].addr);
		if (r.delta[l->secs[i].index])
			r.st->sections_moved++;
	}
	err = move_text(&r);
	if (err)
		goto out;
	err = fix_symtab(&r, symndx, &symdelta, &nsyms);
	if (err)
		goto out;
	err = fix_relocations(&r, symdelta, nsyms, symndx);
	if (err)
		goto out;
	err = fix_sorted_tables(&r);
	if (err)
		goto out;
	err = fold_text(&r, symndx);
	if (err)
		goto out;
	*image = r.buf;
	*size = r.size;
	r.buf = NULL;
out:
	free(symdelta);
	free(r.chunk);
	free(r.delta);
	free(r.sh);
	free(r.map);
	free(r.shuf);
	free(r.buf);
	return err;
}

/* Never write over the input (-o VMLINUX, a hard link of it). */
static struct fgk_error *same_file(struct fgk_vmlinux *vm, const char *out)
{
	struct stat a, b;

	if (fstat(vm->fd, &a) == 0 && stat(out, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		return fgk__error_new(FGK_ERR_INVALID, out,
				      "is the input vmlinux %s: refusing to overwrite it",
				      vm->path);
	return NULL;
}

struct fgk_error *fgk_relink(struct fgk_vmlinux *vm, const struct fgk_layout *l,
			     const char *out_path, struct fgk_relink_stats *stats)
{
	void *image;
	size_t size;
	struct fgk_error *err;

	err = same_file(vm, out_path);
	if (err)
		return err;
	err = fgk_relink_image(vm, l, &image, &size, stats);
	if (err)
		return err;
	err = fgk_write_file_atomic(out_path, image, size);
	free(image);
	return err;
}
