// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer: the kernel's kallsyms tables.  Random ELF files rarely get
 * as far as a symbol table naming kallsyms_*; this harness keeps a real
 * one (the fixture vmlinux, $FGK_FUZZ_VMLINUX) and lets the input replace
 * the bytes of the section holding the tables (fgk_kallsyms_read, the
 * kallsyms map).
 */
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>

#include "fuzz.h"

static uint8_t *image;
static size_t image_size, tab_off, tab_size;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *path = getenv("FGK_FUZZ_VMLINUX");
	struct fgk_vmlinux *vm;
	struct fgk_section_info si;
	struct fgk_error *err;
	struct stat st;
	int fd;

	(void)argc;
	(void)argv;
	if (!path) {
		fprintf(stderr, "fuzz_kallsyms: set FGK_FUZZ_VMLINUX to a vmlinux with kallsyms tables\n");
		exit(2);
	}
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		perror(path);
		exit(2);
	}
	image_size = (size_t)st.st_size;
	image = malloc(image_size);
	if (!image || pread(fd, image, image_size, 0) != (ssize_t)image_size) {
		perror(path);
		exit(2);
	}
	close(fd);
	err = fgk_vmlinux_open(path, &vm);
	if (!err)
		err = fgk_vmlinux_section(vm, ".rodata", &si);
	if (err) {
		fprintf(stderr, "fuzz_kallsyms: %s: %s\n", path, err->message);
		exit(2);
	}
	/* file offset of .rodata: from the ELF section header */
	{
		Elf *e;

		elf_version(EV_CURRENT);
		fd = open(path, O_RDONLY);
		e = elf_begin(fd, ELF_C_READ, NULL);
		GElf_Shdr sh;

		if (!e || !gelf_getshdr(elf_getscn(e, si.index), &sh)) {
			fprintf(stderr, "fuzz_kallsyms: %s: no .rodata header\n", path);
			exit(2);
		}
		tab_off = sh.sh_offset;
		tab_size = sh.sh_size;
		elf_end(e);
		close(fd);
	}
	fgk_vmlinux_close(vm);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *img = malloc(image_size);
	struct fgk_vmlinux *vm;
	struct fgk_kallsyms *ks = NULL;
	struct fgk_layout *l = NULL;
	struct fgk_map *map = NULL;
	struct fgk_seed seed = { { 9 } };
	struct fgk_error *err;

	if (!img)
		abort();
	memcpy(img, image, image_size);
	memcpy(img + tab_off, data, size < tab_size ? size : tab_size);
	err = fgk_vmlinux_open(fuzz_file(img, image_size), &vm);
	free(img);
	if (err) {
		fuzz_check_error(err);
		return 0;
	}
	err = fgk_kallsyms_read(vm, &ks);
	if (!err) {
		for (size_t i = 0; i < ks->n; i++)
			if (!ks->syms[i].name)
				abort();
		fgk_kallsyms_free(ks);
		err = fgk_layout_compute(vm, &seed, &l);
		if (!err)
			err = fgk_map_build(vm, l, FGK_MAP_KALLSYMS, 0x2000000, &map);
		fgk_map_free(map);
		fgk_layout_free(l);
	}
	fuzz_check_error(err);
	fgk_vmlinux_close(vm);
	return 0;
}
