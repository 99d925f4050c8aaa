// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel modules (.ko): their identity (.modinfo name= and vermagic=,
 * build-id), the core text layout the module loader gives them under
 * FG-KASLR (docs/layout-spec.md §8), and finding them on disk.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "dwarf.h"
#include "module.h"
#include "symbols.h"
#include "vmlinux.h"

struct fgk_module {
	struct fgk_vmlinux *elf;	/* the .ko, read like a vmlinux */
	char *name;			/* .modinfo name= */
	char *vermagic;			/* .modinfo vermagic=, or NULL */
	struct fgk_dwarf *dwarf;	/* lazy (fgk_module_dwarf) */
	struct fgk_error *dwarf_err;
};

struct fgk_vmlinux *fgk__module_elf(struct fgk_module *m)
{
	return m->elf;
}

/* "key=value" of .modinfo (NUL-separated strings), malloc'd, or NULL. */
static char *modinfo(struct fgk_vmlinux *vm, const char *key)
{
	size_t klen = strlen(key);

	for (size_t i = 1; i < vm->shnum; i++) {
		const GElf_Shdr *sh = &vm->secs[i].shdr;
		const char *p, *end;

		if (strcmp(vm->secs[i].name, ".modinfo") || sh->sh_type != SHT_PROGBITS)
			continue;
		p = vm->image + sh->sh_offset;
		end = p + sh->sh_size;
		while (p < end) {
			const char *z = memchr(p, '\0', (size_t)(end - p));
			size_t len = z ? (size_t)(z - p) : (size_t)(end - p);

			if (len > klen && !strncmp(p, key, klen) && p[klen] == '=')
				return strndup(p + klen + 1, len - klen - 1);
			p += len + 1;
		}
	}
	return NULL;
}

struct fgk_error *fgk_module_open(const char *path, struct fgk_module **ret)
{
	struct fgk_module *m = calloc(1, sizeof(*m));
	struct fgk_error *err;

	if (!m)
		return &fgk_enomem;
	err = fgk_vmlinux_open(path, &m->elf);
	if (err) {
		free(m);
		return err;
	}
	if (m->elf->ehdr.e_type != ET_REL) {
		err = fgk__error_new(FGK_ERR_ELF, path,
				     "not a kernel module (ELF type %u, a relocatable .ko expected)",
				     (unsigned)m->elf->ehdr.e_type);
		goto fail;
	}
	m->name = modinfo(m->elf, "name");
	if (!m->name) {
		err = fgk__error_new(FGK_ERR_ELF, path,
				     "not a kernel module (no name= in .modinfo)");
		goto fail;
	}
	m->vermagic = modinfo(m->elf, "vermagic");
	err = fgk__require_symtab(m->elf, "module symbols");
	if (err)
		goto fail;
	*ret = m;
	return NULL;
fail:
	fgk_module_close(m);
	return err;
}

void fgk_module_close(struct fgk_module *m)
{
	if (!m)
		return;
	fgk_dwarf_close(m->dwarf);
	if (m->dwarf_err)
		fgk_error_free(m->dwarf_err);
	fgk_vmlinux_close(m->elf);
	free(m->name);
	free(m->vermagic);
	free(m);
}

const char *fgk_module_path(const struct fgk_module *m)
{
	return m->elf->path;
}

const char *fgk_module_name(const struct fgk_module *m)
{
	return m->name;
}

const char *fgk_module_vermagic(const struct fgk_module *m)
{
	return m->vermagic;
}

const char *fgk_module_build_id(const struct fgk_module *m)
{
	return m->elf->build_id;
}

/* The kernel's VERMAGIC_STRING: vmlinux's "vermagic" object. */
static char *vmlinux_vermagic(struct fgk_vmlinux *vm)
{
	const struct fgk__symbol *s = fgk__find_symbol(vm, "vermagic");
	const char *str, *z;
	uint64_t avail;

	if (!s)
		return NULL;
	str = fgk__section_tail(vm, s->shndx, s->value, &avail);
	if (!str || !(z = memchr(str, '\0', avail)))
		return NULL;
	return strndup(str, (size_t)(z - str));
}

/* First word of a vermagic string (the release). */
static size_t release_len(const char *vermagic)
{
	return strcspn(vermagic, " ");
}

struct fgk_error *fgk_module_check(struct fgk_module *m, struct fgk_vmlinux *vm)
{
	const char *rel = fgk_vmlinux_release(vm);
	char *kmagic;
	struct fgk_error *err = NULL;

	if (!m->vermagic)
		return fgk__error_new(FGK_ERR_BUILD_ID, m->elf->path,
				      "module %s has no vermagic: cannot tell which kernel it was built for",
				      m->name);
	if (rel && (release_len(m->vermagic) != strlen(rel) ||
		    strncmp(m->vermagic, rel, strlen(rel))))
		return fgk__error_new(FGK_ERR_BUILD_ID, m->elf->path,
				      "module %s was built for kernel %.*s, not for %s's %s (vermagic mismatch)",
				      m->name, (int)release_len(m->vermagic),
				      m->vermagic, vm->path, rel);
	kmagic = vmlinux_vermagic(vm);
	if (kmagic && strcmp(kmagic, m->vermagic))
		err = fgk__error_new(FGK_ERR_BUILD_ID, m->elf->path,
				     "module %s has vermagic \"%s\", %s has \"%s\" (vermagic mismatch)",
				     m->name, m->vermagic, vm->path, kmagic);
	free(kmagic);
	return err;
}

/* ---- §8 layout ------------------------------------------------------- */

static bool core_text(const struct fgk__section *s, bool unload)
{
	const char *n = s->name;

	if ((s->shdr.sh_flags & (SHF_ALLOC | SHF_EXECINSTR)) !=
	    (SHF_ALLOC | SHF_EXECINSTR))
		return false;
	/* module_init_layout_section(): .init*, and .exit* without unloading */
	if (!strncmp(n, ".init", 5))
		return false;
	if (!unload && !strncmp(n, ".exit", 5))
		return false;
	return true;
}

static bool randomized(const struct fgk__section *s, bool unload)
{
	return core_text(s, unload) && s->shdr.sh_type == SHT_PROGBITS &&
	       !strncmp(s->name, ".text.", 6) && s->shdr.sh_size > 0;
}

/* CONFIG_MODULE_UNLOAD, as vermagic says it ("mod_unload"). */
static bool module_unload(const struct fgk_module *m)
{
	const char *p = m->vermagic;

	if (!p)
		return true;
	for (p = strstr(p, "mod_unload"); p; p = strstr(p + 1, "mod_unload"))
		if ((p == m->vermagic || p[-1] == ' ') &&
		    (p[10] == ' ' || p[10] == '\0'))
			return true;
	return false;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static void put(struct fgk_module_layout *l, const struct fgk__section *s,
		size_t index, bool rnd)
{
	struct fgk_module_section *e = &l->secs[l->n++];
	uint64_t a = s->shdr.sh_addralign ? s->shdr.sh_addralign : 1;

	e->index = index;
	e->name = s->name;
	e->size = s->shdr.sh_size;
	e->align = a;
	e->randomized = rnd;
	e->offset = align_up(l->size, a);
	l->size = e->offset + e->size;
}

struct fgk_error *fgk_module_layout_compute(struct fgk_module *m,
					    const struct fgk_seed *seed,
					    struct fgk_module_layout **ret)
{
	struct fgk_vmlinux *vm = m->elf;
	bool unload = module_unload(m);
	struct fgk_module_layout *l = calloc(1, sizeof(*l));
	uint32_t *idx = NULL, *order = NULL;
	size_t nr = 0;
	struct fgk_error *err = NULL;

	if (!l)
		return &fgk_enomem;
	l->secs = calloc(vm->shnum ? vm->shnum : 1, sizeof(*l->secs));
	idx = calloc(vm->shnum ? vm->shnum : 1, sizeof(*idx));
	order = calloc(vm->shnum ? vm->shnum : 1, sizeof(*order));
	if (!l->secs || !idx || !order) {
		err = &fgk_enomem;
		goto out;
	}
	if (seed) {
		l->seed = *seed;
		l->shuffled = true;
	}
	/* the other core text sections first, in index order (§8) */
	for (size_t i = 1; i < vm->shnum; i++) {
		if (!core_text(&vm->secs[i], unload))
			continue;
		if (seed && randomized(&vm->secs[i], unload))
			idx[nr++] = (uint32_t)i;
		else
			put(l, &vm->secs[i], i, false);
	}
	if (nr) {
		uint8_t nonce[FGK_NONCE_SIZE];

		fgk_module_nonce(m->name, nonce);
		err = fgk_permutation(seed, nonce, nr, order);
		if (err)
			goto out;
		for (size_t k = 0; k < nr; k++)
			put(l, &vm->secs[idx[order[k]]], idx[order[k]], true);
	}
	l->nrandomized = nr;
out:
	free(idx);
	free(order);
	if (err) {
		fgk_module_layout_free(l);
		return err;
	}
	*ret = l;
	return NULL;
}

void fgk_module_layout_free(struct fgk_module_layout *l)
{
	if (!l)
		return;
	free(l->secs);
	free(l);
}

/* ---- sections, symbols, DWARF for the symbolizer -------------------- */

struct fgk_error *fgk_module_dwarf(struct fgk_module *m, struct fgk_dwarf **ret)
{
	if (!m->dwarf && !m->dwarf_err)
		m->dwarf_err = fgk_dwarf_open(m->elf->path, &m->dwarf);
	*ret = m->dwarf;
	if (m->dwarf_err)
		return fgk__error_new(m->dwarf_err->code, m->dwarf_err->path, "%s",
				      m->dwarf_err->message);
	return NULL;
}

struct fgk_error *fgk_module_section(struct fgk_module *m, const char *name,
				     struct fgk_section_info *ret)
{
	return fgk_vmlinux_section(m->elf, name, ret);
}

/*
 * The function symbol of the module called name (size preferred, as the
 * /0xSIZE of a frame tells same-named statics apart).
 */
struct fgk_error *fgk_module_symbol(struct fgk_module *m, const char *name,
				    size_t len, uint64_t size,
				    struct fgk_module_symbol *ret)
{
	const struct fgk__symbol *first = NULL;
	struct fgk_vmlinux *vm = m->elf;

	for (size_t i = 0; i < vm->nsyms; i++) {
		const struct fgk__symbol *s = &vm->syms[i];

		if (s->type != STT_FUNC || s->shndx == SHN_UNDEF ||
		    s->shndx >= vm->shnum)
			continue;
		if (strncmp(s->name, name, len) || s->name[len])
			continue;
		if (s->size == size) {
			first = s;
			break;
		}
		/* else the largest that fits the trace's size (padding) */
		if (!first || (s->size <= size &&
			       (first->size > size || s->size > first->size)))
			first = s;
	}
	if (!first)
		return fgk__error_new(FGK_ERR_LOOKUP, vm->path,
				      "no function %.*s in module %s", (int)len,
				      name, m->name);
	ret->name = first->name;
	ret->shndx = first->shndx;
	ret->section = vm->secs[first->shndx].name;
	ret->value = first->value;
	ret->size = first->size;
	return NULL;
}

/* The function of section shndx containing section offset off. */
struct fgk_error *fgk_module_symbol_at(struct fgk_module *m, size_t shndx,
				       uint64_t off,
				       struct fgk_module_symbol *ret)
{
	const struct fgk__symbol *best = NULL;
	struct fgk_vmlinux *vm = m->elf;

	for (size_t i = 0; i < vm->nsyms; i++) {
		const struct fgk__symbol *s = &vm->syms[i];

		if (s->shndx != shndx || (s->type != STT_FUNC && s->type != STT_NOTYPE) ||
		    !s->name[0] || s->value > off)
			continue;
		if (s->type == STT_FUNC && off < s->value + s->size) {
			best = s;
			break;
		}
		if (!best || s->value > best->value)
			best = s;
	}
	if (!best || shndx >= vm->shnum)
		return fgk__error_new(FGK_ERR_LOOKUP, vm->path,
				      "no symbol at %s+0x%" PRIx64 " in module %s",
				      shndx < vm->shnum ? vm->secs[shndx].name : "?",
				      off, m->name);
	ret->name = best->name;
	ret->shndx = shndx;
	ret->section = vm->secs[shndx].name;
	ret->value = best->value;
	ret->size = best->size;
	return NULL;
}

size_t fgk_module_section_count(const struct fgk_module *m)
{
	return m->elf->shnum;
}

struct fgk_error *fgk_module_section_info(struct fgk_module *m, size_t shndx,
					  struct fgk_section_info *ret)
{
	const struct fgk__section *s;

	if (shndx == 0 || shndx >= m->elf->shnum)
		return fgk__error_new(FGK_ERR_INVALID, m->elf->path,
				      "no section %zu", shndx);
	s = &m->elf->secs[shndx];
	ret->index = shndx;
	ret->name = s->name;
	ret->type = s->shdr.sh_type;
	ret->flags = s->shdr.sh_flags;
	ret->addr = s->shdr.sh_addr;
	ret->size = s->shdr.sh_size;
	ret->align = s->shdr.sh_addralign ? s->shdr.sh_addralign : 1;
	ret->entsize = s->shdr.sh_entsize;
	return NULL;
}

/* ---- finding NAME.ko --------------------------------------------------- */

/* Module names compare with '-' and '_' equal (the kernel's own rule). */
bool fgk_module_name_eq(const char *a, size_t alen, const char *b, size_t blen)
{
	if (alen != blen)
		return false;
	for (size_t i = 0; i < alen; i++) {
		char x = a[i] == '-' ? '_' : a[i], y = b[i] == '-' ? '_' : b[i];

		if (x != y)
			return false;
	}
	return true;
}

/*
 * Call visit(path, name, namelen, arg) for every *.ko under dir, depth
 * first, in directory order; stops when visit sets *stop or fails.
 */
typedef struct fgk_error *(*ko_visit_fn)(char **path, const char *name,
					  size_t namelen, void *arg, bool *stop);

static struct fgk_error *walk(const char *dir, int depth, ko_visit_fn visit,
			      void *arg, bool *stop)
{
	DIR *d;
	struct dirent *de;
	struct fgk_error *err = NULL;

	if (depth > 32)
		return NULL;
	d = opendir(dir);
	if (!d)
		return depth ? NULL : fgk__error_os(errno, dir, "cannot read module directory");
	while (!*stop && !err && (de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char *p;
		struct stat st;

		if (de->d_name[0] == '.' && (!de->d_name[1] ||
					     (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		if (asprintf(&p, "%s/%s", dir, de->d_name) < 0) {
			err = &fgk_enomem;
			break;
		}
		/* lstat: a symlink loop (build/source links) is not followed */
		if (lstat(p, &st) == 0) {
			if (S_ISDIR(st.st_mode))
				err = walk(p, depth + 1, visit, arg, stop);
			else if (S_ISREG(st.st_mode) && len > 3 &&
				 !strcmp(de->d_name + len - 3, ".ko"))
				err = visit(&p, de->d_name, len - 3, arg, stop);
		}
		free(p);
	}
	closedir(d);
	return err;
}

struct find_one {
	const char *name;
	char *found;
};

static struct fgk_error *visit_find(char **path, const char *name, size_t namelen,
				    void *arg, bool *stop)
{
	struct find_one *f = arg;

	if (fgk_module_name_eq(name, namelen, f->name, strlen(f->name))) {
		f->found = *path;
		*path = NULL;
		*stop = true;
	}
	return NULL;
}

struct fgk_error *fgk_module_find(const char *const *dirs, const char *name,
				  char **path)
{
	struct find_one f = { .name = name };

	*path = NULL;
	for (size_t i = 0; dirs && dirs[i]; i++) {
		bool stop = false;
		struct fgk_error *err = walk(dirs[i], 0, visit_find, &f, &stop);

		if (err) {
			free(f.found);
			return err;
		}
		if (f.found) {
			*path = f.found;
			return NULL;
		}
	}
	return fgk__error_new(FGK_ERR_LOOKUP, NULL,
			      "module %s: no %s.ko under the module directories (--modules)",
			      name, name);
}

struct each_ko {
	fgk_module_each_fn fn;
	void *arg;
	char **seen;		/* module names (with '_') already visited */
	size_t nseen, cap;
};

static struct fgk_error *visit_each(char **path, const char *name, size_t namelen,
				    void *arg, bool *stop)
{
	struct each_ko *e = arg;
	char *norm;

	for (size_t i = 0; i < e->nseen; i++)
		if (fgk_module_name_eq(e->seen[i], strlen(e->seen[i]), name, namelen))
			return NULL;	/* the first one found wins, as in fgk_module_find */
	if (e->nseen == e->cap) {
		size_t cap = e->cap ? 2 * e->cap : 16;
		char **v = realloc(e->seen, cap * sizeof(*v));

		if (!v)
			return &fgk_enomem;
		e->seen = v;
		e->cap = cap;
	}
	norm = strndup(name, namelen);
	if (!norm)
		return &fgk_enomem;
	for (char *c = norm; *c; c++)
		if (*c == '-')
			*c = '_';
	e->seen[e->nseen++] = norm;
	(void)stop;
	return e->fn(*path, norm, e->arg);
}

struct fgk_error *fgk_module_each(const char *const *dirs, fgk_module_each_fn fn,
				  void *arg)
{
	struct each_ko e = { .fn = fn, .arg = arg };
	struct fgk_error *err = NULL;

	for (size_t i = 0; !err && dirs && dirs[i]; i++) {
		bool stop = false;

		err = walk(dirs[i], 0, visit_each, &e, &stop);
	}
	for (size_t i = 0; i < e.nseen; i++)
		free(e.seen[i]);
	free(e.seen);
	return err;
}

struct fgk_error *fgk_module_lookup(struct fgk_module *m, size_t shndx,
				    uint64_t off, struct fgk_srcframe **frames,
				    size_t *n)
{
	struct fgk_dwarf *d;
	struct fgk_error *err = fgk_module_dwarf(m, &d);
	uint64_t base;

	*frames = NULL;
	*n = 0;
	if (err)
		return err;
	err = fgk__dwarf_section_address(d, shndx, &base);
	if (err)
		return err;
	if (shndx >= m->elf->shnum || off >= m->elf->secs[shndx].shdr.sh_size + 1)
		return fgk__error_new(FGK_ERR_LOOKUP, m->elf->path,
				      "offset 0x%" PRIx64 " beyond section %zu", off, shndx);
	return fgk_dwarf_lookup(d, base + off, frames, n);
}
