// SPDX-License-Identifier: GPL-2.0
/*
 * Source lines and inline chains of link addresses, through libdw.
 *
 * The lookups run on the original vmlinux at link addresses: translating a
 * runtime address through the layout first makes the DWARF of the unshuffled
 * file exact for the shuffled kernel (a function moves as a whole).
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf.h"
#include "error.h"
#include "lineprog.h"

struct fgk_dwarf {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	char *path;
	Elf_Data *debug_line;	/* found on first need (see seq_line) */
	bool debug_line_looked;
};

static const Dwfl_Callbacks callbacks = {
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

struct fgk_error *fgk_dwarf_open(const char *path, struct fgk_dwarf **ret)
{
	struct fgk_dwarf *d = calloc(1, sizeof(*d));
	Dwarf_Addr bias;

	if (!d || !(d->path = strdup(path))) {
		free(d);
		return &fgk_enomem;
	}
	d->dwfl = dwfl_begin(&callbacks);
	if (!d->dwfl) {
		fgk_dwarf_close(d);
		return fgk__error_libdwfl(path, "cannot start libdwfl");
	}
	d->mod = dwfl_report_offline(d->dwfl, "vmlinux", path, -1);
	if (!d->mod || dwfl_report_end(d->dwfl, NULL, NULL) != 0) {
		struct fgk_error *err =
			fgk__error_libdwfl(path, "cannot load for DWARF lookups");

		fgk_dwarf_close(d);
		return err;
	}
	if (!dwfl_module_getdwarf(d->mod, &bias)) {
		fgk_dwarf_close(d);
		return fgk__error_new(FGK_ERR_ELF, path,
				      "no DWARF debug information (build with CONFIG_DEBUG_INFO)");
	}
	*ret = d;
	return NULL;
}

void fgk_dwarf_close(struct fgk_dwarf *d)
{
	if (!d)
		return;
	if (d->dwfl)
		dwfl_end(d->dwfl);
	free(d->path);
	free(d);
}

/* Strip the compilation directory so paths read like the kernel tree's. */
static char *relpath(const char *file, const char *comp_dir)
{
	size_t n = comp_dir ? strlen(comp_dir) : 0;

	if (n && !strncmp(file, comp_dir, n) && file[n] == '/')
		file += n + 1;
	return strdup(file);
}

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name;

	name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
	return name ? name : "??";
}

static int push(struct fgk_srcframe **v, size_t *n, const char *fn,
		char *file, int line, int column)
{
	struct fgk_srcframe *nv = realloc(*v, (*n + 1) * sizeof(**v));

	if (!nv || !(nv[*n].function = strdup(fn))) {
		if (nv)
			*v = nv;
		free(file);
		return -1;
	}
	nv[*n].file = file;
	nv[*n].line = line;
	nv[*n].column = column;
	nv[*n].inlined = false;
	*v = nv;
	(*n)++;
	return 0;
}

/* The .debug_line bytes libdw reads (relocated by libdwfl in a .ko). */
static Elf_Data *debug_line(struct fgk_dwarf *d)
{
	Dwarf_Addr bias;
	Dwarf *dw;
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (d->debug_line_looked)
		return d->debug_line;
	d->debug_line_looked = true;
	dw = dwfl_module_getdwarf(d->mod, &bias);
	elf = dw ? dwarf_getelf(dw) : NULL;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".debug_line")) {
			d->debug_line = elf_getdata(scn, NULL);
			break;
		}
	}
	return d->debug_line;
}

/*
 * libdw's row for addr is at an address where a sequence of the CU ends
 * (see lib/lineprog.c): its sorted table cannot tell that sequence's
 * zero-length last rows from the first rows of the one starting there.
 */
static bool at_sequence_end(Dwarf_Die *cu, Dwarf_Addr a)
{
	Dwarf_Lines *lines;
	size_t n, lo = 0, hi;

	if (dwarf_getsrclines(cu, &lines, &n) != 0 || !n)
		return false;
	hi = n;
	while (lo < hi) {		/* first row at or after a */
		size_t mid = lo + (hi - lo) / 2;
		Dwarf_Addr m;

		if (dwarf_lineaddr(dwarf_onesrcline(lines, mid), &m) != 0)
			return false;
		if (m < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n; lo++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, lo);
		Dwarf_Addr m;
		bool end;

		if (dwarf_lineaddr(l, &m) != 0 || m != a)
			break;
		if (dwarf_lineendsequence(l, &end) == 0 && end)
			return true;
	}
	return false;
}

/*
 * The row of addr read from the CU's line program sequence by sequence,
 * where libdw's merged table is ambiguous.  false: keep libdw's row.
 */
static bool seq_line(struct fgk_dwarf *d, Dwarf_Die *cu, Dwfl_Line *line,
		     Dwarf_Addr addr, Dwarf_Addr bias, const char **file,
		     int *lineno, int *col)
{
	Dwarf_Line *dl = dwfl_dwarf_line(line, &(Dwarf_Addr){ 0 });
	Elf_Data *data;
	Dwarf_Addr la;
	Dwarf_Attribute attr;
	Dwarf_Word off;
	Dwarf_Files *files;
	size_t nfiles;
	struct fgk_line_row row;
	const char *f;

	if (!dl || dwarf_lineaddr(dl, &la) != 0 || !at_sequence_end(cu, la))
		return false;
	data = debug_line(d);
	if (!data || !data->d_buf ||
	    dwarf_formudata(dwarf_attr(cu, DW_AT_stmt_list, &attr), &off) != 0 ||
	    fgk__lineprog_find(data->d_buf, data->d_size, off, addr - bias, &row) != 1 ||
	    dwarf_getsrcfiles(cu, &files, &nfiles) != 0 || row.file >= nfiles)
		return false;
	f = dwarf_filesrc(files, row.file, NULL, NULL);
	if (!f)
		return false;
	*file = f;
	*lineno = row.line;
	*col = row.column;
	return true;
}

struct fgk_error *fgk_dwarf_lookup(struct fgk_dwarf *d, uint64_t addr,
				   struct fgk_srcframe **ret, size_t *nret)
{
	struct fgk_srcframe *v = NULL;
	size_t n = 0;
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu, *scopes = NULL;
	Dwfl_Line *line;
	const char *comp_dir = NULL, *file = NULL;
	int lineno = 0, col = 0, nscopes, call_line = 0;
	bool outer_found = false;
	char *call_file = NULL;
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;

	*ret = NULL;
	*nret = 0;
	cu = dwfl_module_addrdie(d->mod, addr, &bias);
	if (!cu)
		return fgk__error_new(FGK_ERR_LOOKUP, d->path,
				      "no debug information for 0x%llx",
				      (unsigned long long)addr);
	comp_dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir,
					       &(Dwarf_Attribute){ 0 }));
	line = dwfl_module_getsrc(d->mod, addr);
	if (line) {
		file = dwfl_lineinfo(line, &(Dwarf_Addr){ 0 }, &lineno, &col,
				     NULL, NULL);
		seq_line(d, cu, line, addr, bias, &file, &lineno, &col);
	}
	dwarf_getsrcfiles(cu, &files, &nfiles);
	nscopes = dwarf_getscopes(cu, addr - bias, &scopes);
	if (nscopes > 0) {
		/*
		 * dwarf_getscopes() can skip a parent whose own ranges do not
		 * list pc (gcc's nested inline bodies); the DIE tree itself has
		 * the whole chain: walk the parents of the innermost scope.
		 */
		Dwarf_Die inner = scopes[0], *chain;
		int nchain = dwarf_getscopes_die(&inner, &chain);

		if (nchain > 0) {
			free(scopes);
			scopes = chain;
			nscopes = nchain;
		}
	}
	for (int i = 0; i < nscopes; i++) {
		Dwarf_Die *s = &scopes[i];
		int tag = dwarf_tag(s);
		Dwarf_Attribute attr;
		Dwarf_Word w;
		char *f;
		int l;

		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
			continue;
		if (!n) {
			f = file ? relpath(file, comp_dir) : NULL;
			l = lineno;
		} else {
			f = call_file;
			l = call_line;
			call_file = NULL;
		}
		if (push(&v, &n, die_name(s), f, l, n ? 0 : col) < 0)
			goto nomem;
		if (n > 1)
			v[n - 2].inlined = true;
		if (tag == DW_TAG_subprogram) {
			outer_found = true;
			break;
		}
		/* where this inlined body was called from, in the next scope */
		call_line = 0;
		if (dwarf_formudata(dwarf_attr(s, DW_AT_call_line, &attr), &w) == 0)
			call_line = (int)w;
		if (dwarf_formudata(dwarf_attr(s, DW_AT_call_file, &attr), &w) == 0 &&
		    files && w < nfiles) {
			const char *cf = dwarf_filesrc(files, w, NULL, NULL);

			call_file = cf ? relpath(cf, comp_dir) : NULL;
		}
	}
	if (n && !outer_found) {
		/*
		 * The scope chain ended at an inlined body without reaching its
		 * subprogram (gcc sometimes nests the inlined DIE straight in the
		 * CU): the caller is the function the ELF symbol table names.
		 */
		const char *fn = dwfl_module_addrname(d->mod, addr);

		if (push(&v, &n, fn ? fn : "??", call_file, call_line, 0) < 0) {
			call_file = NULL;
			goto nomem;
		}
		call_file = NULL;
		v[n - 2].inlined = true;
	}
	free(call_file);
	free(scopes);
	if (!n) {
		/* No scope DIE (e.g. assembly): the line table alone. */
		if (push(&v, &n, "??", file ? relpath(file, comp_dir) : NULL,
			 lineno, col) < 0)
			goto nomem;
	}
	*ret = v;
	*nret = n;
	return NULL;
nomem:
	free(call_file);
	free(scopes);
	fgk_srcframes_free(v, n);
	return &fgk_enomem;
}

void fgk_srcframes_free(struct fgk_srcframe *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].function);
		free(v[i].file);
	}
	free(v);
}

/*
 * Where libdwfl put section shndx of a relocatable file (a .ko): libdwfl
 * lays out an ET_REL file's allocated sections itself and records the
 * addresses in its section headers; lookups take those addresses.
 */
struct fgk_error *fgk__dwarf_section_address(struct fgk_dwarf *d, size_t shndx,
					     uint64_t *addr)
{
	Dwarf_Addr bias = 0;
	Elf *elf = dwfl_module_getelf(d->mod, &bias);
	Elf_Scn *scn = elf ? elf_getscn(elf, shndx) : NULL;
	GElf_Shdr sh;

	if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC))
		return fgk__error_new(FGK_ERR_LOOKUP, d->path,
				      "no address for section %zu", shndx);
	*addr = sh.sh_addr + bias;
	return NULL;
}
