// SPDX-License-Identifier: GPL-2.0
/*
 * The modules loaded in a dumped kernel and their build-ids, from the
 * dump's memory: the `modules` list, each struct module's name and its
 * notes_attrs (the /sys/module/NAME/notes/ files: bin_attributes whose
 * private data is the module's note section in module memory), the
 * NT_GNU_BUILD_ID note among them.  Structure offsets come from vmlinux's
 * DWARF; virtual addresses outside the kernel image (module memory) are
 * translated through the dump's page tables (init_top_pgt, 4 or 5 levels
 * as NUMBER(pgtable_l5_enabled) says).
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "vmcore_mem.h"
#include "symbols.h"
#include "vmlinux.h"

#define START_KERNEL_MAP 0xffffffff80000000ull
#define PTE_PRESENT 0x1ull
#define PTE_PSE 0x80ull
#define PTE_ADDR 0x000ffffffffff000ull
#define MAX_MODULES 4096
#define MODULE_NAME_LEN 56

enum {
	F_MODULE_LIST, F_MODULE_NAME, F_MODULE_NOTES, F_NOTES_NOTES,
	F_NOTES_ATTRS, F_BIN_SIZE, F_BIN_PRIVATE, S_BIN_ATTR,
	/* optional (Linux < 6.4: struct module_layout; later kernels: mem[]) */
	F_MODULE_CORE, F_MODULE_INIT, F_LAYOUT_BASE, F_LAYOUT_TEXT_SIZE,
	F_MODULE_MEM, F_MEM_BASE, F_MEM_SIZE, S_MEM,
	E_MOD_TEXT, E_MOD_INIT_TEXT, NFIELDS	/* E_: enum mod_mem_type values */
};
#define NREQUIRED F_MODULE_CORE

struct want {
	const char *type, *member;	/* member NULL: the type's size */
};

static const struct want wanted[NFIELDS] = {
	[F_MODULE_LIST] = { "module", "list" },
	[F_MODULE_NAME] = { "module", "name" },
	[F_MODULE_NOTES] = { "module", "notes_attrs" },
	[F_NOTES_NOTES] = { "module_notes_attrs", "notes" },
	[F_NOTES_ATTRS] = { "module_notes_attrs", "attrs" },
	[F_BIN_SIZE] = { "bin_attribute", "size" },
	[F_BIN_PRIVATE] = { "bin_attribute", "private" },
	[S_BIN_ATTR] = { "bin_attribute", NULL },
	[F_MODULE_CORE] = { "module", "core_layout" },
	[F_MODULE_INIT] = { "module", "init_layout" },
	[F_LAYOUT_BASE] = { "module_layout", "base" },
	[F_LAYOUT_TEXT_SIZE] = { "module_layout", "text_size" },
	[F_MODULE_MEM] = { "module", "mem" },
	[F_MEM_BASE] = { "module_memory", "base" },
	[F_MEM_SIZE] = { "module_memory", "size" },
	[S_MEM] = { "module_memory", NULL },
	[E_MOD_TEXT] = { "mod_mem_type", "MOD_TEXT" },
	[E_MOD_INIT_TEXT] = { "mod_mem_type", "MOD_INIT_TEXT" },
};

struct ctx {
	const char *dump, *vmpath;
	uint64_t phys_base, offset, pgd;
	bool l5;
	int64_t f[NFIELDS];
};

/* Record the members of struct type die that are wanted. */
static void struct_fields(Dwarf_Die *die, const char *name, struct ctx *c)
{
	Dwarf_Die m;
	Dwarf_Word size;
	Dwarf_Attribute a;

	for (int k = 0; k < NFIELDS; k++) {
		if (strcmp(wanted[k].type, name) || wanted[k].member)
			continue;
		if (dwarf_formudata(dwarf_attr(die, DW_AT_byte_size, &a), &size) == 0)
			c->f[k] = (int64_t)size;
	}
	if (dwarf_child(die, &m) != 0)
		return;
	do {
		const char *mn;
		Dwarf_Word off;

		if ((dwarf_tag(&m) != DW_TAG_member && dwarf_tag(&m) != DW_TAG_enumerator) ||
		    !(mn = dwarf_diename(&m)))
			continue;
		for (int k = 0; k < NFIELDS; k++) {
			if (!wanted[k].member || strcmp(wanted[k].type, name) ||
			    strcmp(wanted[k].member, mn))
				continue;
			/* a member's offset, or an enumerator's value */
			if (dwarf_formudata(dwarf_attr(&m, dwarf_tag(&m) == DW_TAG_enumerator ?
							   DW_AT_const_value :
							   DW_AT_data_member_location, &a),
					    &off) == 0)
				c->f[k] = (int64_t)off;
		}
	} while (dwarf_siblingof(&m, &m) == 0);
}

static bool all_found(const struct ctx *c)
{
	for (int k = 0; k < NREQUIRED; k++)
		if (c->f[k] < 0)
			return false;
	return true;
}

static struct fgk_error *find_fields(struct ctx *c)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	Dwarf *dw;
	int fd;

	for (int k = 0; k < NFIELDS; k++)
		c->f[k] = -1;
	fd = open(c->vmpath, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fgk__error_os(errno, c->vmpath, "open");
	dw = dwarf_begin(fd, DWARF_C_READ);
	if (!dw) {
		close(fd);
		return fgk__error_new(FGK_ERR_ELF, c->vmpath,
				      "no DWARF: cannot find struct module to list the dump's modules");
	}
	while (!all_found(c) &&
	       dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, t;

		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_child(&cu, &t) == 0) {
			do {
				const char *n;
				Dwarf_Attribute a;

				if ((dwarf_tag(&t) != DW_TAG_structure_type &&
				     dwarf_tag(&t) != DW_TAG_enumeration_type) ||
				    dwarf_attr(&t, DW_AT_declaration, &a) ||
				    !(n = dwarf_diename(&t)))
					continue;
				if (!strcmp(n, "module") || !strcmp(n, "module_notes_attrs") ||
				    !strcmp(n, "bin_attribute") || !strcmp(n, "module_layout") ||
				    !strcmp(n, "module_memory") || !strcmp(n, "mod_mem_type"))
					struct_fields(&t, n, c);
			} while (dwarf_siblingof(&t, &t) == 0);
		}
		off = next;
	}
	dwarf_end(dw);
	close(fd);
	for (int k = 0; k < NREQUIRED; k++)
		if (c->f[k] < 0)
			return fgk__error_new(FGK_ERR_ELF, c->vmpath,
					      "no struct %s%s%s in its DWARF: cannot list the dump's modules",
					      wanted[k].type, wanted[k].member ? " member " : "",
					      wanted[k].member ? wanted[k].member : "");
	return NULL;
}

static struct fgk_error *phys(struct ctx *c, uint64_t pa, void *buf, size_t len)
{
	struct fgk__phys_range r = { pa, len, buf };

	return fgk__vmcore_read_phys(c->dump, &r, 1);
}

/* Kernel virtual -> physical: the image directly, the rest by page walk. */
static struct fgk_error *v2p(struct ctx *c, uint64_t va, uint64_t *pa)
{
	static const int shifts5[] = { 48, 39, 30, 21, 12 };
	const int *sh = c->l5 ? shifts5 : shifts5 + 1;
	int levels = c->l5 ? 5 : 4;
	uint64_t table = c->pgd;

	/* the kernel image mapping: [__START_KERNEL_map, MODULES_VADDR) */
	if (va >= START_KERNEL_MAP && va < START_KERNEL_MAP + (1ull << 30)) {
		*pa = va - START_KERNEL_MAP + c->phys_base;
		return NULL;
	}
	for (int l = 0; l < levels; l++) {
		uint64_t e;
		struct fgk_error *err = phys(c, table + ((va >> sh[l]) & 511) * 8, &e, 8);

		if (err)
			return err;
		if (!(e & PTE_PRESENT))
			return fgk__error_new(FGK_ERR_VMCORE, c->dump,
					      "virtual address 0x%" PRIx64 " is not mapped in the dump's page tables",
					      va);
		if (l == levels - 1 || ((e & PTE_PSE) && l >= levels - 3)) {
			uint64_t mask = (1ull << sh[l]) - 1;

			*pa = ((e & PTE_ADDR) & ~mask) | (va & mask);
			return NULL;
		}
		table = e & PTE_ADDR;
	}
	return NULL;
}

/* Read len bytes at kernel virtual address va, page by page. */
static struct fgk_error *vread(struct ctx *c, uint64_t va, void *buf, size_t len)
{
	while (len) {
		size_t n = 4096 - (va & 4095);
		uint64_t pa = 0;
		struct fgk_error *err;

		if (n > len)
			n = len;
		err = v2p(c, va, &pa);
		if (!err)
			err = phys(c, pa, buf, n);
		if (err)
			return err;
		va += n;
		buf = (char *)buf + n;
		len -= n;
	}
	return NULL;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

void fgk_vmcore_modules_free(struct fgk_vmcore_module *mods, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(mods[i].build_id);
	free(mods);
}

struct fgk_error *fgk_vmcore_modules(struct fgk_vmlinux *vm, const char *dump,
				     const struct fgk_vmcoreinfo *info,
				     struct fgk_vmcore_module **ret, size_t *n)
{
	struct ctx c = { .dump = dump, .vmpath = vm->path };
	struct fgk_vmcore_module *mods = NULL;
	const struct fgk__symbol *list;
	struct fgk_error *err;
	uint64_t pgt, l5 = 0, head, p;
	uint8_t b8[8];
	size_t cnt = 0;

	*ret = NULL;
	*n = 0;
	if (!info->raw || !info->has_offset ||
	    !fgk__vmcoreinfo_number(info->raw, "NUMBER(phys_base)", 10, &c.phys_base) ||
	    !fgk__vmcoreinfo_number(info->raw, "SYMBOL(init_top_pgt)", 16, &pgt))
		return fgk__error_new(FGK_ERR_VMCORE, dump,
				      "its VMCOREINFO lacks KERNELOFFSET, NUMBER(phys_base) or SYMBOL(init_top_pgt): cannot list its modules");
	fgk__vmcoreinfo_number(info->raw, "NUMBER(pgtable_l5_enabled)", 10, &l5);
	c.l5 = l5 != 0;
	c.offset = info->offset;
	c.pgd = pgt - START_KERNEL_MAP + c.phys_base;
	list = fgk__find_symbol(vm, "modules");
	if (!list)
		return fgk__error_new(FGK_ERR_LOOKUP, vm->path,
				      "no symbol 'modules': a kernel without CONFIG_MODULES?");
	err = find_fields(&c);
	if (err)
		return err;
	head = list->value + c.offset;
	err = vread(&c, head, b8, 8);
	for (p = le64(b8); !err && p != head; ) {
		uint64_t mod = p - (uint64_t)c.f[F_MODULE_LIST], notes;
		struct fgk_vmcore_module *nm, *e;
		uint8_t buf[8];
		uint32_t nnotes = 0;

		if (cnt == MAX_MODULES) {
			err = fgk__error_new(FGK_ERR_VMCORE, dump,
					     "more than %d modules in its module list: corrupt dump",
					     MAX_MODULES);
			break;
		}
		nm = realloc(mods, (cnt + 1) * sizeof(*mods));
		if (!nm) {
			err = &fgk_enomem;
			break;
		}
		mods = nm;
		e = &mods[cnt++];
		memset(e, 0, sizeof(*e));
		err = vread(&c, mod + (uint64_t)c.f[F_MODULE_NAME], e->name,
			    MODULE_NAME_LEN);
		e->name[MODULE_NAME_LEN] = '\0';
		if (!err && c.f[F_MODULE_CORE] >= 0 && c.f[F_MODULE_INIT] >= 0 &&
		    c.f[F_LAYOUT_BASE] >= 0 && c.f[F_LAYOUT_TEXT_SIZE] >= 0) {
			/* where the kernel put its core and init text */
			uint64_t core = mod + (uint64_t)c.f[F_MODULE_CORE],
				 init = mod + (uint64_t)c.f[F_MODULE_INIT];
			uint8_t ts[4];

			err = vread(&c, core + (uint64_t)c.f[F_LAYOUT_BASE], buf, 8);
			e->core_base = err ? 0 : le64(buf);
			if (!err)
				err = vread(&c, init + (uint64_t)c.f[F_LAYOUT_BASE], buf, 8);
			e->init_base = err ? 0 : le64(buf);
			if (!err)
				err = vread(&c, init + (uint64_t)c.f[F_LAYOUT_TEXT_SIZE], ts, 4);
			e->init_text_size = err ? 0 :
				(ts[0] | ts[1] << 8 | ts[2] << 16 | (uint32_t)ts[3] << 24);
		} else if (!err && c.f[F_MODULE_MEM] >= 0 && c.f[F_MEM_BASE] >= 0 &&
			   c.f[F_MEM_SIZE] >= 0 && c.f[S_MEM] > 0) {
			/*
			 * Linux 6.4+: struct module_memory mem[MOD_MEM_NUM_TYPES],
			 * indexed by enum mod_mem_type; its values from the DWARF
			 * when the CUs read had the enum, else include/linux/module.h's
			 * (MOD_TEXT 0, MOD_INIT_TEXT 4 since 6.4)
			 */
			int64_t it = c.f[E_MOD_TEXT] >= 0 ? c.f[E_MOD_TEXT] : 0,
				ii = c.f[E_MOD_INIT_TEXT] >= 0 ? c.f[E_MOD_INIT_TEXT] : 4;
			uint64_t mem = mod + (uint64_t)c.f[F_MODULE_MEM];
			uint8_t ts[4];

			err = vread(&c, mem + (uint64_t)(it * c.f[S_MEM] + c.f[F_MEM_BASE]), buf, 8);
			e->core_base = err ? 0 : le64(buf);
			if (!err)
				err = vread(&c, mem + (uint64_t)(ii * c.f[S_MEM] + c.f[F_MEM_BASE]),
					    buf, 8);
			e->init_base = err ? 0 : le64(buf);
			if (!err)
				err = vread(&c, mem + (uint64_t)(ii * c.f[S_MEM] + c.f[F_MEM_SIZE]),
					    ts, 4);
			e->init_text_size = err ? 0 :
				(ts[0] | ts[1] << 8 | ts[2] << 16 | (uint32_t)ts[3] << 24);
		}
		if (!err)
			err = vread(&c, mod + (uint64_t)c.f[F_MODULE_NOTES], buf, 8);
		notes = err ? 0 : le64(buf);
		if (!err && notes) {
			uint8_t cb[4];

			err = vread(&c, notes + (uint64_t)c.f[F_NOTES_NOTES], cb, 4);
			nnotes = cb[0] | cb[1] << 8 | cb[2] << 16 | (uint32_t)cb[3] << 24;
		}
		for (uint32_t i = 0; !err && i < nnotes && i < 64 && !e->build_id; i++) {
			uint64_t attr = notes + (uint64_t)c.f[F_NOTES_ATTRS] +
					i * (uint64_t)c.f[S_BIN_ATTR];
			uint8_t sb[8], pb[8], *data;
			uint64_t size;

			err = vread(&c, attr + (uint64_t)c.f[F_BIN_SIZE], sb, 8);
			if (!err)
				err = vread(&c, attr + (uint64_t)c.f[F_BIN_PRIVATE], pb, 8);
			size = err ? 0 : le64(sb);
			if (err || !size || size > 4096)
				continue;
			data = malloc(size);
			if (!data) {
				err = &fgk_enomem;
				break;
			}
			err = vread(&c, le64(pb), data, size);
			if (!err)
				err = fgk_notes_build_id(data, size, &e->build_id);
			free(data);
		}
		if (!err)
			err = vread(&c, p, b8, 8);
		p = le64(b8);
	}
	if (err) {
		fgk_vmcore_modules_free(mods, cnt);
		return err;
	}
	*ret = mods;
	*n = cnt;
	return NULL;
}
