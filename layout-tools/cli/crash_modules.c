// SPDX-License-Identifier: GPL-2.0
/* fgk crash: module symbols for crash ('mod -S' on the dump's .ko files). */
#include <elf.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crash_run.h"

struct mod_collect {
	struct crash_run *c;
	bool link;		/* make the links (else only check and count) */
	char **names;		/* the modules collected so far */
	size_t nnames;
};

static bool with_init_text(struct crash_run *c, struct fgk_module *m,
			   const char *name, const struct fgk_module_layout *l,
			   struct fgk_module_layout *ext);

/* An errno error about path, for the fgk_module_each callback. */
static struct fgk_error *os_error(int errnum, const char *path, const char *what)
{
	struct fgk_error *e = calloc(1, sizeof(*e));

	if (!e)
		return &fgk_enomem;
	e->code = FGK_ERR_OS;
	e->errnum = errnum;
	e->path = strdup(path);
	if (asprintf(&e->message, "%s: %s", what, strerror(errnum)) < 0)
		e->message = NULL;
	if (!e->path || !e->message) {
		fgk_error_free(e);
		return &fgk_enomem;
	}
	return e;
}

/*
 * Whether crash needs the module relinked in layout l (its core text in
 * the order the dump's kernel laid it out, unshuffled or not): crash
 * places only a module's .text at its base (docs/fgk-crash.1.md), so
 * every core text section other than .text must move into it; and gdb,
 * crash's too, relocates a .ko's DWARF only when no section has an
 * address of its own, which 6.12's module linker script gives
 * __patchable_function_entries and .data (0x10, 0x88).  false: a link to
 * the .ko serves (one .text, no section address), or no .text to relink
 * into.
 */
static bool needs_relink(struct fgk_module *m, const struct fgk_module_layout *l)
{
	bool text = false, placed = false;

	for (size_t k = 0; k < l->n; k++)
		text |= !strcmp(l->secs[k].name, ".text");
	if (!text)
		return false;
	if (l->nrandomized || l->n > 1)
		return true;
	for (size_t i = 1; i < fgk_module_section_count(m) && !placed; i++) {
		struct fgk_section_info si;
		struct fgk_error *err = fgk_module_section_info(m, i, &si);

		if (err)
			fgk_error_free(err);
		else
			placed = si.addr != 0;
	}
	return placed;
}

/*
 * One NAME.ko: checked against vmlinux, then put in mod_tmp/modules as
 * NAME.ko: relinked in the dump's order (shuffled by the dump's seed, or
 * the loader's index order when the dump's kernel did not shuffle) when
 * crash needs that (needs_relink), else a link to it.
 */
static struct fgk_error *collect_module(const char *path, const char *name, void *arg)
{
	struct mod_collect *mc = arg;
	struct crash_run *c = mc->c;
	struct fgk_module_layout *l = NULL;
	struct fgk_module *m;
	struct fgk_error *err = fgk_module_open(path, &m);
	char *target = NULL, *link = NULL;

	if (err)
		return err;
	err = fgk_module_check(m, c->t.vm);
	if (!err && !c->layout)
		err = fgk_module_layout_compute(m, c->shuffle ? &c->t.seed : NULL, &l);
	if (err)
		goto out;
	c->nmodules++;
	{
		char **nn = realloc(mc->names, (mc->nnames + 1) * sizeof(*nn));

		if (!nn || !(nn[mc->nnames] = strdup(name))) {
			if (nn)
				mc->names = nn;
			err = &fgk_enomem;
			goto out;
		}
		mc->names = nn;
		mc->nnames++;
	}
	if (!mc->link)
		goto out;
	if (asprintf(&link, "%s/modules/%s.ko", c->mod_tmp, name) < 0) {
		link = NULL;
		err = &fgk_enomem;
		goto out;
	}
	if (l && needs_relink(m, l)) {
		struct fgk_module_layout ext;

		if (with_init_text(c, m, name, l, &ext)) {
			err = fgk_module_relink(m, &ext, link);
			free(ext.secs);
		} else {
			err = fgk_module_relink(m, l, link);
		}
		if (!err)
			c->nrelinked++;
		goto out;
	}
	/* crash looks for <struct module name>.ko: the link has that name */
	target = realpath(path, NULL);
	if (!target)
		err = os_error(errno, path, "cannot resolve module path");
	else if (symlink(target, link) < 0)
		err = os_error(errno, link, "cannot link module");
out:
	fgk_module_layout_free(l);
	fgk_module_close(m);
	free(target);
	free(link);
	return err;
}

/*
 * l plus the module's .init.text at the offset from its core text where
 * the dump's kernel put it (*ext, malloc'd secs), so that crash, which
 * places only .text, finds the init functions of a module that was still
 * initializing (its init frame in bt).  false: nothing to add (the dump
 * does not say, init freed, no .init.text, or too far to fill the gap).
 */
static bool with_init_text(struct crash_run *c, struct fgk_module *m,
			   const char *name, const struct fgk_module_layout *l,
			   struct fgk_module_layout *ext)
{
	const struct fgk_vmcore_module *d = NULL;
	struct fgk_section_info si;
	struct fgk_error *err;
	uint64_t off;

	for (size_t i = 0; i < c->ndmods && !d; i++)
		if (fgk_module_name_eq(c->dmods[i].name, strlen(c->dmods[i].name),
				       name, strlen(name)))
			d = &c->dmods[i];
	if (!d || !d->init_base || !d->init_text_size || d->init_base <= d->core_base)
		return false;
	off = d->init_base - d->core_base;
	if (off < l->size || off - l->size > (64u << 20))
		return false;
	err = fgk_module_section(m, ".init.text", &si);
	if (err) {
		fgk_error_free(err);
		return false;
	}
	if (!si.size || si.type != SHT_PROGBITS || off % si.align)
		return false;
	*ext = *l;
	ext->secs = malloc((l->n + 1) * sizeof(*ext->secs));
	if (!ext->secs)
		return false;
	memcpy(ext->secs, l->secs, l->n * sizeof(*ext->secs));
	ext->secs[l->n] = (struct fgk_module_section){
		.index = si.index, .name = si.name, .size = si.size,
		.align = si.align, .offset = off,
	};
	ext->n = l->n + 1;
	ext->size = off + si.size;
	return true;
}

/* Copy FILE (the user's -i) to out; 0 or the exit status. */
static int append_file(FILE *out, const char *path)
{
	char buf[8192];
	size_t n;
	FILE *in = fopen(path, "r");

	if (!in)
		return cli_errorf("-i %s: %s", path, strerror(errno));
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			break;
	if (ferror(in)) {
		fclose(in);
		return cli_errorf("-i %s: read error", path);
	}
	fclose(in);
	return 0;
}

/*
 * The modules crash gets: --modules, else VMLINUX's directory's modules/.
 * Every .ko is checked against vmlinux (another build: refused); unless
 * -n, a private directory gets links NAME.ko -> the module and crash's
 * input: "mod -S" on that directory, then the user's -i FILE.
 */
/*
 * The modules loaded in the dump that no directory had: fetched by the
 * build-id of their notes in the dump's memory through debuginfod, then
 * collected like the others.  A module that cannot be fetched is said and
 * skipped (crash runs without its symbols); listing the dump's modules
 * failing is said once.
 */
static struct fgk_error *fetch_modules(struct crash_run *c, struct mod_collect *mc)
{
	struct fgk_vmcore_module *mods = c->dmods;
	struct fgk_error *err = NULL;
	char buf[1024];
	size_t n = c->ndmods;

	if (!c->dmods_listed) {
		if (!c->quiet)
			fprintf(stderr, "fgk crash: cannot list the dump's modules to fetch them: %s\n",
				c->dmods_error);
		return NULL;
	}
	for (size_t i = 0; i < n && !err; i++) {
		struct fgk_fetch f = { 0 };
		struct fgk_module *m;
		bool have = false;

		for (size_t k = 0; k < mc->nnames && !have; k++)
			have = fgk_module_name_eq(mc->names[k], strlen(mc->names[k]),
						  mods[i].name, strlen(mods[i].name));
		if (have)
			continue;
		if (!mods[i].build_id) {
			if (!c->quiet)
				fprintf(stderr, "fgk crash: module %s: no build-id in the dump, not fetched\n",
					mods[i].name);
			continue;
		}
		err = fgk_module_fetch(mods[i].build_id, mods[i].name, &f, &m);
		if (err) {
			if (!c->quiet)
				fprintf(stderr, "fgk crash: %s; its symbols are not loaded\n",
					fgk_error_string(err, buf, sizeof(buf)));
			fgk_error_free(err);
			err = NULL;
			continue;
		}
		fgk_module_close(m);
		if (!c->quiet)
			fprintf(stderr, f.url ? "fgk crash: fetched module %s (build-id %s) from %s into %s\n"
					      : "fgk crash: module %s (build-id %s) from the debuginfod cache%s: %s\n",
				mods[i].name, mods[i].build_id, f.url ? f.url : "", f.path);
		err = collect_module(f.path, mods[i].name, mc);
		if (!err)
			c->nfetched++;
		fgk_fetch_clear(&f);
	}
	return err;
}

int crash_prepare_modules(struct crash_run *c)
{
	struct mod_collect mc = { .c = c, .link = !c->dry };
	const char *def[2] = { NULL, NULL };
	const char *const *dirs = c->mod_dirs;
	char *base = NULL, *sub = NULL;
	struct fgk_error *err;
	FILE *f;
	int fd, rc = 0;

	if (c->no_modules)
		return 0;
	if (c->layout) {
		if (!c->quiet)
			fprintf(stderr, "fgk crash: module symbols not loaded: the dump's kernel shuffled its modules with a seed the dump does not carry (give --seed or --seed-file for them)\n");
		return 0;
	}
	if (!dirs) {
		char *vd = crash_dir_of(c->t.vmlinux);
		struct stat st;

		if (!vd || asprintf(&c->default_mod_dir, "%s/modules", vd) < 0) {
			free(vd);
			c->default_mod_dir = NULL;
			return cli_fail(&fgk_enomem);
		}
		free(vd);
		if (stat(c->default_mod_dir, &st) == 0 && S_ISDIR(st.st_mode)) {
			def[0] = c->default_mod_dir;
			dirs = def;
		}
	}
	if (!dirs && !fgk_debuginfod_enabled())
		return 0;
	if (mc.link) {
		base = crash_private_tmp_dir();
		if (!base)
			return cli_fail(&fgk_enomem);
		err = fgk_private_dir(base);
		if (!err && asprintf(&c->mod_tmp, "%s/modules.XXXXXX", base) < 0) {
			c->mod_tmp = NULL;
			err = &fgk_enomem;
		}
		free(base);
		if (!err && !mkdtemp(c->mod_tmp))
			err = os_error(errno, c->mod_tmp, "cannot create directory");
		if (err) {
			free(c->mod_tmp);
			c->mod_tmp = NULL;
			return cli_fail(err);
		}
		if (asprintf(&sub, "%s/modules", c->mod_tmp) < 0)
			return cli_fail(&fgk_enomem);
		if (mkdir(sub, 0700) < 0)
			rc = cli_errorf("%s: %s", sub, strerror(errno));
		if (rc) {
			free(sub);
			return rc;
		}
	}
	/* the dump's module list: init text addresses, modules to fetch */
	err = fgk_vmcore_modules(c->t.vm, c->dump, &c->vi, &c->dmods, &c->ndmods);
	c->dmods_listed = !err;
	if (err) {
		fgk_error_string(err, c->dmods_error, sizeof(c->dmods_error));
		fgk_error_free(err);
	}
	err = dirs ? fgk_module_each(dirs, collect_module, &mc) : NULL;
	if (!err && fgk_debuginfod_enabled())
		err = fetch_modules(c, &mc);
	for (size_t i = 0; i < mc.nnames; i++)
		free(mc.names[i]);
	free(mc.names);
	if (err) {
		free(sub);
		return cli_fail(err);
	}
	if (!c->quiet && dirs)
		fprintf(stderr, "fgk crash: module symbols: %zu module%s under %s%s%s",
			c->nmodules, c->nmodules == 1 ? "" : "s", dirs[0],
			dirs[1] ? " and more" : "",
			c->nfetched ? " and fetched" : "");
	else if (!c->quiet)
		fprintf(stderr, "fgk crash: module symbols: %zu module%s fetched",
			c->nmodules, c->nmodules == 1 ? "" : "s");
	if (!c->quiet && mc.link)
		fprintf(stderr, " (%zu relinked in the dump's order)", c->nrelinked);
	if (!c->quiet)
		fputc('\n', stderr);
	if (!mc.link || !c->nmodules) {
		free(sub);
		return 0;
	}
	if (asprintf(&c->mod_input, "%s/input", c->mod_tmp) < 0) {
		c->mod_input = NULL;
		free(sub);
		return cli_fail(&fgk_enomem);
	}
	fd = open(c->mod_input, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		rc = cli_errorf("%s: %s", c->mod_input, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(sub);
		return rc;
	}
	fprintf(f, "mod -S %s\n", sub);
	free(sub);
	if (c->input)
		rc = append_file(f, c->input);
	if (fclose(f) != 0 && !rc)
		rc = cli_errorf("%s: write error", c->mod_input);
	if (!rc)
		c->input = c->mod_input;
	return rc;
}

/* Remove the private module directory: its links and crash's input. */
void crash_cleanup_modules(struct crash_run *c)
{
	char *sub = NULL;
	DIR *d;
	struct dirent *de;

	if (c->mod_tmp && asprintf(&sub, "%s/modules", c->mod_tmp) >= 0) {
		d = opendir(sub);
		while (d && (de = readdir(d)))
			if (de->d_name[0] != '.')
				unlinkat(dirfd(d), de->d_name, 0);
		if (d)
			closedir(d);
		rmdir(sub);
		free(sub);
		if (c->mod_input)
			unlink(c->mod_input);
		rmdir(c->mod_tmp);
	}
	fgk_vmcore_modules_free(c->dmods, c->ndmods);
	free(c->mod_tmp);
	free(c->mod_input);
	free(c->default_mod_dir);
	free(c->mod_dirs);
}
