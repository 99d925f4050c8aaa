// SPDX-License-Identifier: GPL-2.0
/* Randomized symbol maps: /proc/kallsyms (§9) and System.map. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "layout.h"
#include "vmlinux.h"

struct sort_item {
	uint64_t addr;
	uint32_t index;		/* kallsyms index / symtab index */
	char type;
	const char *name;
};

static int cmp_kallsyms(const void *a, const void *b)
{
	const struct sort_item *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static int cmp_sysmap(const void *a, const void *b)
{
	const struct sort_item *x = a, *y = b;
	int c;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	c = strcmp(x->name, y->name);	/* nm -n: then by name (C locale) */
	if (c)
		return c;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* The filter of scripts/mksysmap (Linux 6.1) over nm -n output. */
static bool sysmap_keep(const struct fgk__symbol *s)
{
	const char *n = s->name;

	if (s->type == STT_SECTION || s->type == STT_FILE)
		return false;	/* nm hides these without -a */
	if (strchr("aNUw", s->nmtype))
		return false;
	if (n[0] == '$' || !strncmp(n, ".L", 2) || !strncmp(n, "__crc_", 6) ||
	    !strncmp(n, "__kstrtab_", 10) || !strncmp(n, "__kstrtabns_", 12))
		return false;
	if (!strcmp(n, "L0"))
		return false;
	return true;
}

void fgk_map_free(struct fgk_map *map)
{
	if (!map)
		return;
	free(map->entries);
	fgk_kallsyms_free(map->priv);
	free(map);
}

struct fgk_error *fgk_map_build(struct fgk_vmlinux *vm,
				const struct fgk_layout *l,
				enum fgk_map_format format, uint64_t offset,
				struct fgk_map **ret)
{
	struct fgk_map *map = calloc(1, sizeof(*map));
	struct sort_item *items = NULL;
	struct fgk_error *err = NULL;
	size_t n = 0;

	if (!map)
		return &fgk_enomem;
	if (format == FGK_MAP_KALLSYMS) {
		struct fgk_kallsyms *ks;

		err = fgk_kallsyms_read(vm, &ks);
		if (err)
			goto fail;
		map->priv = ks;
		items = malloc((ks->n ? ks->n : 1) * sizeof(*items));
		if (!items) {
			err = &fgk_enomem;
			goto fail;
		}
		for (size_t i = 0; i < ks->n; i++) {
			const struct fgk_symbol *s = &ks->syms[i];
			struct sort_item *it = &items[n];

			if (!s->name[0])
				continue;	/* s_show() skips nameless symbols */
			it->addr = s->absolute ? s->addr :
				   fgk_layout_map(l, s->addr) + offset;
			it->index = (uint32_t)i;
			it->type = s->type;
			it->name = s->name;
			n++;
		}
		qsort(items, n, sizeof(*items), cmp_kallsyms);
	} else {
		err = fgk__require_symtab(vm, "System.map");
		if (err)
			goto fail;
		items = malloc((vm->nsyms ? vm->nsyms : 1) * sizeof(*items));
		if (!items) {
			err = &fgk_enomem;
			goto fail;
		}
		for (size_t i = 0; i < vm->nsyms; i++) {
			const struct fgk__symbol *s = &vm->syms[i];
			struct sort_item *it = &items[n];
			bool absolute;

			if (!sysmap_keep(s))
				continue;
			/* absolute, or inside a per-CPU section linked at 0 */
			absolute = s->shndx == VM_SHN_ABS ||
				   (s->shndx < vm->shnum &&
				    vm->secs[s->shndx].shdr.sh_addr == 0 &&
				    s->value <= vm->secs[s->shndx].shdr.sh_size);
			it->addr = absolute ? s->value :
				   fgk_layout_map(l, s->value) + offset;
			it->index = (uint32_t)i;
			it->type = s->nmtype;
			it->name = s->name;
			n++;
		}
		qsort(items, n, sizeof(*items), cmp_sysmap);
	}
	map->entries = malloc((n ? n : 1) * sizeof(*map->entries));
	if (!map->entries) {
		err = &fgk_enomem;
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		map->entries[i].addr = items[i].addr;
		map->entries[i].type = items[i].type;
		map->entries[i].name = items[i].name;
	}
	map->n = n;
	free(items);
	*ret = map;
	return NULL;
fail:
	free(items);
	fgk_map_free(map);
	return err;
}

struct fgk_error *fgk_map_write(const struct fgk_map *map, FILE *f)
{
	static const char hex[] = "0123456789abcdef";
	char line[16 + 3 + 512 + 2];

	for (size_t i = 0; i < map->n; i++) {
		const struct fgk_map_entry *e = &map->entries[i];
		size_t nl = strlen(e->name);
		uint64_t a = e->addr;

		for (int k = 15; k >= 0; k--, a >>= 4)
			line[k] = hex[a & 15];
		line[16] = ' ';
		line[17] = e->type;
		line[18] = ' ';
		if (nl <= 512) {
			memcpy(line + 19, e->name, nl);
			line[19 + nl] = '\n';
			if (fwrite(line, 1, 20 + nl, f) != 20 + nl)
				return fgk__error_os(errno ? errno : EIO, NULL, "write error");
		} else if (fwrite(line, 1, 19, f) != 19 ||
			   fwrite(e->name, 1, nl, f) != nl || fputc('\n', f) == EOF) {
			return fgk__error_os(errno ? errno : EIO, NULL, "write error");
		}
	}
	return NULL;
}
