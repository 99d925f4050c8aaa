// SPDX-License-Identifier: GPL-2.0
/*
 * VMCOREINFO of crash dumps, for fgk crash and fgk seed capture.
 *
 * ELF cores (QEMU's dump-guest-memory, /proc/vmcore): the PT_NOTE note named
 * "VMCOREINFO", read with libelf.  kdump-compressed files ("KDUMP   ", what
 * makedumpfile and QEMU's kdump-* formats write): libkdumpfile.  QEMU writes
 * kdump files in makedumpfile's *flattened* format (a stream of
 * <offset, size, data> records, `makedumpfile -F`), which libkdumpfile 0.5.1
 * does not read; those are rewritten to a temporary regular file first
 * (what `makedumpfile -R` does).
 *
 * libkdumpfile 0.5.1 (Debian 12) has a use-after-free in kdump_free() for
 * every diskdump file (attribute cleanup hooks run after the attributes
 * were freed: ptesarik/libkdumpfile issue #72, fixed upstream in 2023);
 * valgrind reports it, it is harmless in practice and fgk frees the
 * context once per dump.  The alternative the diskdump format allows --
 * reading the sub-header's offset_vmcoreinfo/size_vmcoreinfo by hand --
 * was not needed.
 */
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <gelf.h>
#include <libkdumpfile/kdumpfile.h>

#include "error.h"

#define KDUMP_SIG "KDUMP   "
#define FLAT_SIG "makedumpfile"
#define FLAT_HEADER_SIZE 4096

const char *fgk_vmcore_format_name(enum fgk_vmcore_format format)
{
	switch (format) {
	case FGK_VMCORE_ELF:
		return "ELF core";
	case FGK_VMCORE_KDUMP:
		return "kdump-compressed";
	case FGK_VMCORE_KDUMP_FLAT:
		return "kdump-compressed (flattened)";
	default:
		return "VMCOREINFO text";
	}
}

void fgk_vmcoreinfo_clear(struct fgk_vmcoreinfo *info)
{
	free(info->raw);
	free(info->osrelease);
	free(info->build_id);
	memset(info, 0, sizeof(*info));
}

static char *lower_dup(const char *s, size_t n)
{
	char *d = strndup(s, n);

	if (d)
		for (char *p = d; *p; p++)
			*p = (char)tolower((unsigned char)*p);
	return d;
}

struct fgk_error *fgk_vmcoreinfo_parse(const char *text, size_t len,
				       const char *path,
				       struct fgk_vmcoreinfo *info)
{
	enum fgk_vmcore_format format = info->format;
	const char *p = text, *end = text + len;

	fgk_vmcoreinfo_clear(info);
	info->format = format;
	/* the note may carry trailing NULs */
	while (end > text && end[-1] == '\0')
		end--;
	info->raw = strndup(text, end - text);
	if (!info->raw)
		return &fgk_enomem;
	if (strlen(info->raw) != (size_t)(end - text))
		return fgk_error_new(FGK_ERR_VMCORE, path,
				     "VMCOREINFO contains NUL bytes: corrupt dump");
	while (p < end) {
		const char *eol = memchr(p, '\n', end - p), *eq;
		size_t klen, vlen;
		const char *v;

		if (!eol)
			eol = end;
		eq = memchr(p, '=', eol - p);
		if (!eq)
			goto next;
		klen = eq - p;
		v = eq + 1;
		vlen = eol - v;
		while (vlen && isspace((unsigned char)v[vlen - 1]))
			vlen--;
#define KEY(k) (klen == sizeof(k) - 1 && !memcmp(p, k, klen))
		if (KEY("OSRELEASE")) {
			free(info->osrelease);
			info->osrelease = strndup(v, vlen);
			if (!info->osrelease)
				return &fgk_enomem;
		} else if (KEY("BUILD-ID")) {
			free(info->build_id);
			info->build_id = lower_dup(v, vlen);
			if (!info->build_id)
				return &fgk_enomem;
		} else if (KEY("KERNELOFFSET")) {
			char buf[32], *e;

			if (!vlen || vlen >= sizeof(buf))
				return fgk_error_new(FGK_ERR_VMCORE, path,
						     "VMCOREINFO: bad KERNELOFFSET line");
			memcpy(buf, v, vlen);
			buf[vlen] = '\0';
			errno = 0;
			info->offset = strtoull(buf, &e, 16);
			if (*e || errno)
				return fgk_error_new(FGK_ERR_VMCORE, path,
						     "VMCOREINFO: bad KERNELOFFSET=%s", buf);
			info->has_offset = true;
		} else if (KEY("FGKASLR_SEED")) {
			char buf[80];
			struct fgk_error *err;

			if (vlen == 8 && !memcmp(v, "disabled", 8)) {
				info->seed_state = FGK_VMCORE_SEED_DISABLED;
				goto next;
			}
			if (vlen >= sizeof(buf))
				vlen = sizeof(buf) - 1;
			memcpy(buf, v, vlen);
			buf[vlen] = '\0';
			err = fgk_seed_parse(buf, &info->seed);
			if (err) {
				fgk_error_free(err);
				return fgk_error_new(FGK_ERR_VMCORE, path,
						     "VMCOREINFO: bad FGKASLR_SEED=%s (want 64 hex digits or 'disabled')",
						     buf);
			}
			info->seed_state = FGK_VMCORE_SEED_PRESENT;
		}
#undef KEY
next:
		p = eol + 1;
	}
	return NULL;
}

/* ---- ELF cores ------------------------------------------------------- */

static struct fgk_error *read_elf(const char *path, int fd, off_t fsize,
				  struct fgk_vmcoreinfo *info)
{
	struct fgk_error *err = NULL;
	GElf_Ehdr ehdr;
	size_t phnum;
	uint64_t need = 0;
	Elf *elf;
	bool found = false;

	info->format = FGK_VMCORE_ELF;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return fgk_error_libelf(path, "libelf initialisation");
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return fgk_error_new(FGK_ERR_VMCORE, path,
				     "not a readable ELF core (%s)", elf_errmsg(-1));
	if (!gelf_getehdr(elf, &ehdr) || elf_getphdrnum(elf, &phnum) < 0) {
		err = fgk_error_new(FGK_ERR_VMCORE, path,
				    "corrupt ELF header (%s)", elf_errmsg(-1));
		goto out;
	}
	if (ehdr.e_type != ET_CORE) {
		err = fgk_error_new(FGK_ERR_VMCORE, path,
				    "an ELF file but not a core dump (e_type %u): give the dump, not vmlinux",
				    ehdr.e_type);
		goto out;
	}
	if (!phnum) {
		err = fgk_error_new(FGK_ERR_VMCORE, path,
				    "ELF core without program headers: corrupt dump");
		goto out;
	}
	/* truncation: every segment's file bytes must be present */
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph)) {
			err = fgk_error_new(FGK_ERR_VMCORE, path,
					    "program header %zu unreadable (%s): truncated or corrupt dump",
					    i, elf_errmsg(-1));
			goto out;
		}
		if (ph.p_offset + ph.p_filesz < ph.p_offset) {
			err = fgk_error_new(FGK_ERR_VMCORE, path,
					    "program header %zu: bad size", i);
			goto out;
		}
		if (ph.p_offset + ph.p_filesz > need)
			need = ph.p_offset + ph.p_filesz;
	}
	if (need > (uint64_t)fsize) {
		err = fgk_error_new(FGK_ERR_VMCORE, path,
				    "truncated dump: %lld bytes, its program headers need %llu",
				    (long long)fsize, (unsigned long long)need);
		goto out;
	}
	for (size_t i = 0; i < phnum && !found && !err; i++) {
		GElf_Phdr ph;
		Elf_Data *d;
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(elf, ph.p_offset, ph.p_filesz, ELF_T_NHDR);
		if (!d) {
			err = fgk_error_new(FGK_ERR_VMCORE, path,
					    "PT_NOTE segment unreadable (%s)", elf_errmsg(-1));
			break;
		}
		while (off < d->d_size &&
		       (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			const char *name = (const char *)d->d_buf + name_off;

			if (nh.n_namesz == sizeof("VMCOREINFO") &&
			    !memcmp(name, "VMCOREINFO", sizeof("VMCOREINFO"))) {
				err = fgk_vmcoreinfo_parse((const char *)d->d_buf + desc_off,
							   nh.n_descsz, path, info);
				found = true;
				break;
			}
		}
	}
	if (!err && !found)
		err = fgk_error_new(FGK_ERR_NO_VMCOREINFO, path,
				    "ELF core without a VMCOREINFO note (QEMU: -device vmcoreinfo and a guest with CONFIG_FW_CFG_SYSFS)");
out:
	elf_end(elf);
	return err;
}

/* ---- kdump-compressed (libkdumpfile) ------------------------------------ */

static struct fgk_error *kdump_error(const char *path, kdump_ctx_t *ctx,
				     const char *what)
{
	return fgk_error_new(FGK_ERR_VMCORE, path, "%s: %s (libkdumpfile)",
			     what, ctx ? kdump_get_err(ctx) : "out of memory");
}

/*
 * Truncation check: makedumpfile and QEMU write pages in PFN order, so the
 * highest-numbered page stored is the one furthest into the file.  Read it.
 */
static struct fgk_error *kdump_check_tail(const char *path, kdump_ctx_t *ctx)
{
	kdump_num_t max_pfn, pagesize;
	char buf[65536];

	if (kdump_get_number_attr(ctx, "max_pfn", &max_pfn) != KDUMP_OK ||
	    kdump_get_number_attr(ctx, "arch.page_size", &pagesize) != KDUMP_OK ||
	    pagesize > sizeof(buf))
		return NULL;	/* cannot tell; libkdumpfile reports later */
	for (kdump_num_t pfn = max_pfn, tries = 0; pfn-- > 0 && tries < 4096; tries++) {
		size_t sz = pagesize;
		kdump_status st = kdump_read(ctx, KDUMP_MACHPHYSADDR,
					     pfn * pagesize, buf, &sz);

		if (st == KDUMP_OK)
			return NULL;
		if (st == KDUMP_ERR_NODATA)
			continue;
		return fgk_error_new(FGK_ERR_VMCORE, path,
				     "truncated or corrupt dump: page %#llx unreadable: %s",
				     (unsigned long long)pfn, kdump_get_err(ctx));
	}
	return NULL;
}

static struct fgk_error *read_kdump(const char *path, const char *file,
				    struct fgk_vmcoreinfo *info)
{
	struct fgk_error *err = NULL;
	kdump_ctx_t *ctx;
	char *raw = NULL;
	kdump_status st;
	int fd;

	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fgk_error_os(errno, path, "cannot open");
	ctx = kdump_new();
	if (!ctx) {
		close(fd);
		return &fgk_enomem;
	}
	st = kdump_open_fd(ctx, fd);
	if (st != KDUMP_OK) {
		err = kdump_error(path, ctx, "not a readable kdump file");
		goto out;
	}
	/* vmcoreinfo attributes live under the OS ("linux.vmcoreinfo") */
	st = kdump_set_string_attr(ctx, KDUMP_ATTR_OSTYPE, "linux");
	if (st != KDUMP_OK && st != KDUMP_ERR_NODATA) {
		err = kdump_error(path, ctx, "cannot set the OS type");
		goto out;
	}
	st = kdump_vmcoreinfo_raw(ctx, &raw);
	if (st == KDUMP_ERR_NODATA) {
		err = fgk_error_new(FGK_ERR_NO_VMCOREINFO, path,
				    "kdump file without VMCOREINFO");
		goto out;
	}
	if (st != KDUMP_OK) {
		err = kdump_error(path, ctx, "cannot read VMCOREINFO");
		goto out;
	}
	err = fgk_vmcoreinfo_parse(raw, strlen(raw), path, info);
	if (!err)
		err = kdump_check_tail(path, ctx);
out:
	free(raw);
	kdump_free(ctx);
	close(fd);
	return err;
}

/* ---- flattened format ---------------------------------------------------- */

static int read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t r = read(fd, (char *)buf + got, len - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;	/* error or end of file */
		got += r;
	}
	return 0;
}

static struct fgk_error *unflatten_fd(const char *path, int in, int out)
{
	char hdr[FLAT_HEADER_SIZE];
	size_t bufsz = 1 << 20;
	char *buf;
	struct fgk_error *err = NULL;
	unsigned long long records = 0;

	if (read_full(in, hdr, sizeof(hdr)))
		return fgk_error_new(FGK_ERR_VMCORE, path,
				     "truncated flattened kdump header");
	if (memcmp(hdr, FLAT_SIG, sizeof(FLAT_SIG) - 1))
		return fgk_error_new(FGK_ERR_VMCORE, path,
				     "not a flattened kdump file");
	buf = malloc(bufsz);
	if (!buf)
		return &fgk_enomem;
	for (;;) {
		int64_t rec[2], off, size;

		if (read_full(in, rec, sizeof(rec))) {
			err = fgk_error_new(FGK_ERR_VMCORE, path,
					    "truncated dump: flattened stream ends after %llu records without its end marker",
					    records);
			break;
		}
		off = (int64_t)be64toh((uint64_t)rec[0]);
		size = (int64_t)be64toh((uint64_t)rec[1]);
		if (off == -1)
			break;
		if (off < 0 || size < 0 || size > (int64_t)1 << 40) {
			err = fgk_error_new(FGK_ERR_VMCORE, path,
					    "corrupt flattened record %llu (offset %lld, size %lld)",
					    records, (long long)off, (long long)size);
			break;
		}
		while (size > 0) {
			size_t n = size > (int64_t)bufsz ? bufsz : (size_t)size;

			if (read_full(in, buf, n)) {
				err = fgk_error_new(FGK_ERR_VMCORE, path,
						    "truncated dump: flattened record %llu cut short",
						    records);
				goto out;
			}
			if (pwrite(out, buf, n, off) != (ssize_t)n) {
				err = fgk_error_os(errno ? errno : EIO, NULL,
						   "writing the reassembled dump");
				goto out;
			}
			off += n;
			size -= n;
		}
		records++;
	}
out:
	free(buf);
	return err;
}

struct fgk_error *fgk_vmcore_unflatten(const char *in_path, const char *out_path)
{
	struct fgk_error *err;
	int in, out;

	in = open(in_path, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return fgk_error_os(errno, in_path, "cannot open");
	out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		err = fgk_error_os(errno, out_path, "cannot create");
		close(in);
		return err;
	}
	err = unflatten_fd(in_path, in, out);
	if (close(out) < 0 && !err)
		err = fgk_error_os(errno, out_path, "close");
	close(in);
	if (err)
		unlink(out_path);
	return err;
}

static struct fgk_error *read_flat(const char *path, int fd,
				   struct fgk_vmcoreinfo *info)
{
	const char *tmpdir = getenv("TMPDIR");
	struct fgk_error *err;
	char *tmp;
	int out;

	if (!tmpdir || !*tmpdir)
		tmpdir = "/tmp";
	if (asprintf(&tmp, "%s/fgk-vmcore-XXXXXX", tmpdir) < 0)
		return &fgk_enomem;
	out = mkostemp(tmp, O_CLOEXEC);
	if (out < 0) {
		err = fgk_error_os(errno, tmp, "cannot create a temporary file");
		free(tmp);
		return err;
	}
	if (lseek(fd, 0, SEEK_SET) < 0) {
		err = fgk_error_os(errno, path, "seek");
	} else {
		err = unflatten_fd(path, fd, out);
	}
	close(out);
	if (!err)
		err = read_kdump(path, tmp, info);
	unlink(tmp);
	free(tmp);
	info->format = FGK_VMCORE_KDUMP_FLAT;
	return err;
}

struct fgk_error *fgk_vmcore_read(const char *path, struct fgk_vmcoreinfo *info)
{
	unsigned char magic[16];
	struct fgk_error *err;
	struct stat st;
	ssize_t n;
	int fd;

	memset(info, 0, sizeof(*info));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fgk_error_os(errno, path, "cannot open dump");
	if (fstat(fd, &st) < 0) {
		err = fgk_error_os(errno, path, "stat");
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		err = fgk_error_new(FGK_ERR_VMCORE, path, "not a regular file");
		goto out;
	}
	n = pread(fd, magic, sizeof(magic), 0);
	if (n < 0) {
		err = fgk_error_os(errno, path, "read");
		goto out;
	}
	if (n >= 4 && !memcmp(magic, ELFMAG, SELFMAG)) {
		err = read_elf(path, fd, st.st_size, info);
	} else if (n >= 8 && !memcmp(magic, KDUMP_SIG, 8)) {
		info->format = FGK_VMCORE_KDUMP;
		err = read_kdump(path, path, info);
		info->format = FGK_VMCORE_KDUMP;
	} else if (n >= 12 && !memcmp(magic, FLAT_SIG, 12)) {
		err = read_flat(path, fd, info);
	} else {
		err = fgk_error_new(FGK_ERR_VMCORE, path,
				    n ? "not a crash dump (neither an ELF core nor a kdump-compressed file)"
				      : "empty file: not a crash dump");
	}
out:
	close(fd);
	return err;
}
