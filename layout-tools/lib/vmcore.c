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

#include <signal.h>
#include <sys/wait.h>

#include "error.h"
#include "file.h"
#include "vmcore_mem.h"

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

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* The keys fgk reads; each may appear once. */
enum { K_OSRELEASE, K_BUILD_ID, K_KERNELOFFSET, K_SEED, NKEYS };
static const char *const keys[NKEYS] = {
	"OSRELEASE", "BUILD-ID", "KERNELOFFSET", "FGKASLR_SEED",
};

static struct fgk_error *vmcoreinfo_parse(const char *text, size_t len,
					  const char *path,
					  struct fgk_vmcoreinfo *info);

/* On error nothing is left to free in info (only ->format is kept). */
static struct fgk_error *keep_format_only(struct fgk_vmcoreinfo *info,
					  struct fgk_error *err)
{
	if (err) {
		enum fgk_vmcore_format format = info->format;

		fgk_vmcoreinfo_clear(info);
		info->format = format;
	}
	return err;
}

struct fgk_error *fgk_vmcoreinfo_parse(const char *text, size_t len,
				       const char *path,
				       struct fgk_vmcoreinfo *info)
{
	return keep_format_only(info, vmcoreinfo_parse(text, len, path, info));
}

static struct fgk_error *vmcoreinfo_parse(const char *text, size_t len,
					  const char *path,
					  struct fgk_vmcoreinfo *info)
{
	enum fgk_vmcore_format format = info->format;
	const char *p = text, *end = text + len;
	bool seen[NKEYS] = { false };

	fgk_vmcoreinfo_clear(info);
	info->format = format;
	/* the note may carry trailing NULs */
	while (end > text && end[-1] == '\0')
		end--;
	info->raw = strndup(text, end - text);
	if (!info->raw)
		return &fgk_enomem;
	if (strlen(info->raw) != (size_t)(end - text))
		return fgk__error_new(FGK_ERR_VMCORE, path,
				      "VMCOREINFO contains NUL bytes: corrupt dump");
	while (p < end) {
		const char *eol = memchr(p, '\n', end - p), *eq;
		size_t klen, vlen;
		const char *v;
		int key;

		if (!eol)
			eol = end;
		eq = memchr(p, '=', eol - p);
		if (!eq)
			goto next;
		klen = eq - p;
		v = eq + 1;
		vlen = eol - v;
		while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == ' ' ||
				v[vlen - 1] == '\t'))
			vlen--;
		for (key = 0; key < NKEYS; key++)
			if (klen == strlen(keys[key]) && !memcmp(p, keys[key], klen))
				break;
		if (key == NKEYS)
			goto next;
		if (seen[key])
			return fgk__error_new(FGK_ERR_VMCORE, path,
					      "VMCOREINFO: %s= appears twice: corrupt or tampered dump",
					      keys[key]);
		seen[key] = true;
		switch (key) {
		case K_OSRELEASE:
			for (size_t i = 0; i < vlen; i++)
				if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
					return fgk__error_new(FGK_ERR_VMCORE, path,
							      "VMCOREINFO: OSRELEASE= contains control characters");
			info->osrelease = strndup(v, vlen);
			if (!info->osrelease)
				return &fgk_enomem;
			break;
		case K_BUILD_ID:
			if (!vlen || vlen > 128 || vlen % 2 || !all_hex(v, vlen))
				return fgk__error_new(FGK_ERR_VMCORE, path,
						      "VMCOREINFO: bad BUILD-ID=%.*s (want hex bytes)",
						      (int)(vlen > 80 ? 80 : vlen), v);
			info->build_id = lower_dup(v, vlen);
			if (!info->build_id)
				return &fgk_enomem;
			break;
		case K_KERNELOFFSET:
			/* what the kernel prints: %lx, 1 to 16 hex digits */
			if (!vlen || vlen > 16 || !all_hex(v, vlen))
				return fgk__error_new(FGK_ERR_VMCORE, path,
						      "VMCOREINFO: bad KERNELOFFSET=%.*s (want 1 to 16 hex digits)",
						      (int)(vlen > 80 ? 80 : vlen), v);
			info->offset = 0;
			for (size_t i = 0; i < vlen; i++) {
				int c = tolower((unsigned char)v[i]);

				info->offset = info->offset << 4 |
					       (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
			}
			info->has_offset = true;
			break;
		case K_SEED: {
			char buf[FGK_SEED_HEX_LEN + 1];
			struct fgk_error *err;

			if (vlen == 8 && !memcmp(v, "disabled", 8)) {
				info->seed_state = FGK_VMCORE_SEED_DISABLED;
				break;
			}
			if (vlen != FGK_SEED_HEX_LEN || !all_hex(v, vlen))
				return fgk__error_new(FGK_ERR_VMCORE, path,
						      "VMCOREINFO: bad FGKASLR_SEED=%.*s (want 64 hex digits or 'disabled')",
						      (int)(vlen > 80 ? 80 : vlen), v);
			memcpy(buf, v, vlen);
			buf[vlen] = '\0';
			err = fgk_seed_parse(buf, &info->seed);
			if (err)
				return err;
			info->seed_state = FGK_VMCORE_SEED_PRESENT;
			break;
		}
		}
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
		return fgk__error_libelf(FGK_ERR_ELF, path, "libelf initialisation");
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return fgk__error_libelf(FGK_ERR_VMCORE, path,
					 "not a readable ELF core");
	if (!gelf_getehdr(elf, &ehdr) || elf_getphdrnum(elf, &phnum) < 0) {
		err = fgk__error_libelf(FGK_ERR_VMCORE, path, "corrupt ELF header");
		goto out;
	}
	if (ehdr.e_type != ET_CORE) {
		err = fgk__error_new(FGK_ERR_VMCORE, path,
				     "an ELF file but not a core dump (e_type %u): give the dump, not vmlinux",
				     ehdr.e_type);
		goto out;
	}
	if (!phnum) {
		err = fgk__error_new(FGK_ERR_VMCORE, path,
				     "ELF core without program headers: corrupt dump");
		goto out;
	}
	/* truncation: every segment's file bytes must be present */
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph)) {
			err = fgk__error_libelf(FGK_ERR_VMCORE, path,
						"truncated or corrupt dump: program header %zu unreadable",
						i);
			goto out;
		}
		if (ph.p_offset + ph.p_filesz < ph.p_offset) {
			err = fgk__error_new(FGK_ERR_VMCORE, path,
					     "program header %zu: bad size", i);
			goto out;
		}
		if (ph.p_offset + ph.p_filesz > need)
			need = ph.p_offset + ph.p_filesz;
	}
	if (need > (uint64_t)fsize) {
		err = fgk__error_new(FGK_ERR_VMCORE, path,
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
			err = fgk__error_libelf(FGK_ERR_VMCORE, path,
						"PT_NOTE segment unreadable");
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
		err = fgk__error_new(FGK_ERR_NO_VMCOREINFO, path,
				     "ELF core without a VMCOREINFO note (QEMU: -device vmcoreinfo and a guest with CONFIG_FW_CFG_SYSFS)");
out:
	elf_end(elf);
	return err;
}

/* ---- kdump-compressed: the header, checked by hand ----------------------- */

/*
 * makedumpfile's diskdump_mod.h (x86_64): struct disk_dump_header at 0,
 * struct kdump_sub_header at block 1.  libkdumpfile 0.5.1 trusts these
 * fields (a huge size_note crashes it), so they are checked against the
 * file before it sees them, and it runs in a child process anyway.
 */
#define DDH_VERSION	8
#define DDH_BLOCK_SIZE	428
#define DDH_SUB_HDR	432
#define DDH_BITMAP	436
#define DDH_MAX_MAPNR	440
#define DDH_SIZE	464
#define KSH_VMCI_OFF	32
#define KSH_VMCI_SIZE	40
#define KSH_NOTE_OFF	48
#define KSH_NOTE_SIZE	56
#define KSH_ERASE_OFF	64
#define KSH_ERASE_SIZE	72
#define KSH_MAX_MAPNR64	96
#define KSH_SIZE	104
#define PAGE_DESC_SIZE	24

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
	return le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* [off, off + size) inside a file of fsize bytes? */
static bool in_file(uint64_t off, uint64_t size, uint64_t fsize)
{
	return off <= fsize && size <= fsize - off;
}

static struct fgk_error *pread_full(int fd, const char *path, void *buf,
				    size_t len, uint64_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t r = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return fgk__error_os(errno, path, "read error");
		if (r == 0)
			return fgk__error_new(FGK_ERR_VMCORE, path,
					      "truncated dump: ends inside its headers");
		got += (size_t)r;
	}
	return NULL;
}

/*
 * The page descriptors follow the bitmaps, one per page set in the second
 * bitmap, in PFN order; the pages were written in the same order, so the
 * last descriptor names the end of the data: a truncated file cuts it.
 */
static struct fgk_error *kdump_check_pages(const char *path, int fd,
					   uint64_t fsize, uint64_t bs,
					   uint64_t sub, uint64_t bitmap,
					   uint64_t mapnr)
{
	uint64_t bm2 = (1 + sub + bitmap / 2) * bs, nbytes = (mapnr + 7) / 8;
	uint64_t ndump = 0, desc = (1 + sub + bitmap) * bs;
	unsigned char chunk[65536], d[PAGE_DESC_SIZE];
	struct fgk_error *err;

	for (uint64_t done = 0; done < nbytes;) {
		size_t n = nbytes - done > sizeof(chunk) ? sizeof(chunk)
							 : (size_t)(nbytes - done);

		err = pread_full(fd, path, chunk, n, bm2 + done);
		if (err)
			return err;
		if (done + n == nbytes && mapnr % 8)
			chunk[n - 1] &= (unsigned char)((1u << (mapnr % 8)) - 1);
		for (size_t i = 0; i < n; i++)
			ndump += (uint64_t)__builtin_popcount(chunk[i]);
		done += n;
	}
	if (!ndump)
		return NULL;
	if (!in_file(desc, ndump * PAGE_DESC_SIZE, fsize))
		return fgk__error_new(FGK_ERR_VMCORE, path,
				      "truncated or corrupt dump: %llu bytes, the descriptors of its %llu pages need %llu",
				      (unsigned long long)fsize, (unsigned long long)ndump,
				      (unsigned long long)(desc + ndump * PAGE_DESC_SIZE));
	err = pread_full(fd, path, d, sizeof(d), desc + (ndump - 1) * PAGE_DESC_SIZE);
	if (err)
		return err;
	if (!in_file(le64(d), le32(d + 8), fsize))
		return fgk__error_new(FGK_ERR_VMCORE, path,
				      "truncated or corrupt dump: %llu bytes, its last page is stored at %llu + %u",
				      (unsigned long long)fsize, (unsigned long long)le64(d),
				      (unsigned)le32(d + 8));
	return NULL;
}

#define BAD_HEADER(...) \
	fgk__error_new(FGK_ERR_VMCORE, path, "corrupt kdump header: " __VA_ARGS__)

/*
 * Check the kdump headers of fd (fsize bytes); on success *raw is the
 * VMCOREINFO text the sub-header points at (or NULL if it names none) and
 * *rawlen its length.
 */
static struct fgk_error *kdump_check_header(const char *path, int fd,
					    uint64_t fsize, char **raw,
					    size_t *rawlen)
{
	unsigned char h[DDH_SIZE], sh[KSH_SIZE];
	uint64_t bs, sub, bitmap, data, mapnr, vo, vs;
	int32_t version;
	struct fgk_error *err;
	size_t shlen = 0;

	*raw = NULL;
	*rawlen = 0;
	if (fsize < DDH_SIZE)
		return fgk__error_new(FGK_ERR_VMCORE, path,
				      "truncated dump: %llu bytes, shorter than a kdump header",
				      (unsigned long long)fsize);
	err = pread_full(fd, path, h, sizeof(h), 0);
	if (err)
		return err;
	version = (int32_t)le32(h + DDH_VERSION);
	bs = le32(h + DDH_BLOCK_SIZE);
	sub = le32(h + DDH_SUB_HDR);
	bitmap = le32(h + DDH_BITMAP);
	mapnr = le32(h + DDH_MAX_MAPNR);
	if (version < 1 || version > 6)
		return BAD_HEADER("version %d (1 to 6 known)", (int)version);
	if (bs < 512 || bs > 65536 || (bs & (bs - 1)))
		return BAD_HEADER("block size %llu", (unsigned long long)bs);
	if ((int32_t)sub < 0 || sub > (1u << 20))
		return BAD_HEADER("sub-header size %lld blocks",
				  (long long)(int32_t)sub);
	if (bitmap == 0 || bitmap % 2)
		return BAD_HEADER("%llu bitmap blocks (want an even, non-zero number)",
				  (unsigned long long)bitmap);
	/* header block, sub-header, both bitmaps: all inside the file */
	data = (1 + sub + bitmap) * bs;		/* < 2^53: no overflow */
	if (data > fsize)
		return fgk__error_new(FGK_ERR_VMCORE, path,
				      "truncated or corrupt dump: %llu bytes, its headers and bitmaps need %llu",
				      (unsigned long long)fsize,
				      (unsigned long long)data);
	if (sub) {
		shlen = version >= 6 ? KSH_SIZE : version >= 5 ? KSH_ERASE_SIZE + 8 :
			version >= 4 ? KSH_NOTE_SIZE + 8 : version >= 3 ? KSH_VMCI_SIZE + 8 : 0;
		if (shlen > sub * bs)
			return BAD_HEADER("sub-header of %llu bytes is too small",
					  (unsigned long long)(sub * bs));
		memset(sh, 0, sizeof(sh));
		if (shlen) {
			err = pread_full(fd, path, sh, shlen, bs);
			if (err)
				return err;
		}
	}
	if (version >= 6 && shlen >= KSH_SIZE && le64(sh + KSH_MAX_MAPNR64))
		mapnr = le64(sh + KSH_MAX_MAPNR64);
	/* each of the two bitmaps has a bit per page frame */
	if (mapnr > bitmap / 2 * bs * 8)
		return BAD_HEADER("%llu page frames but bitmaps for %llu",
				  (unsigned long long)mapnr,
				  (unsigned long long)(bitmap / 2 * bs * 8));
	err = kdump_check_pages(path, fd, fsize, bs, sub, bitmap, mapnr);
	if (err)
		return err;
	if (shlen >= KSH_NOTE_SIZE + 8) {
		uint64_t no = le64(sh + KSH_NOTE_OFF), ns = le64(sh + KSH_NOTE_SIZE);

		if (ns && (!in_file(no, ns, fsize) || ns > (64u << 20)))
			return BAD_HEADER("notes at offset %llu, %llu bytes, outside the file (%llu bytes)",
					  (unsigned long long)no, (unsigned long long)ns,
					  (unsigned long long)fsize);
	}
	if (shlen >= KSH_ERASE_SIZE + 8) {
		uint64_t eo = le64(sh + KSH_ERASE_OFF), es = le64(sh + KSH_ERASE_SIZE);

		if (es && (!in_file(eo, es, fsize) || es > (64u << 20)))
			return BAD_HEADER("erase info at offset %llu, %llu bytes, outside the file",
					  (unsigned long long)eo, (unsigned long long)es);
	}
	if (shlen >= KSH_VMCI_SIZE + 8) {
		vo = le64(sh + KSH_VMCI_OFF);
		vs = le64(sh + KSH_VMCI_SIZE);
		if (vs && (!in_file(vo, vs, fsize) || vs > (1u << 20)))
			return BAD_HEADER("VMCOREINFO at offset %llu, %llu bytes, outside the file (%llu bytes)",
					  (unsigned long long)vo, (unsigned long long)vs,
					  (unsigned long long)fsize);
		if (vs) {
			char *b = malloc(vs + 1);

			if (!b)
				return &fgk_enomem;
			err = pread_full(fd, path, b, vs, vo);
			if (err) {
				free(b);
				return err;
			}
			b[vs] = '\0';
			*raw = b;
			*rawlen = vs;
		}
	}
	return NULL;
}

/* ---- kdump-compressed: libkdumpfile, in a child process ------------------ */

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
		return fgk__error_libkdumpfile(ctx, path,
					       "truncated or corrupt dump: page %#llx unreadable",
					       (unsigned long long)pfn);
	}
	return NULL;
}

/* What the libkdumpfile child reports: */
enum { KD_OK = 'O', KD_NODATA = 'N', KD_ERROR = 'E' };

/* In the child: open fd with libkdumpfile; *raw = its VMCOREINFO. */
static struct fgk_error *kdump_library_read(const char *path, int fd,
					    char **raw, int *status)
{
	struct fgk_error *err = NULL;
	kdump_ctx_t *ctx;
	kdump_status st;

	*raw = NULL;
	*status = KD_ERROR;
	ctx = kdump_new();
	if (!ctx)
		return &fgk_enomem;
	st = kdump_open_fd(ctx, fd);
	if (st != KDUMP_OK)
		return fgk__error_libkdumpfile(ctx, path, "not a readable kdump file");
	/* vmcoreinfo attributes live under the OS ("linux.vmcoreinfo") */
	st = kdump_set_string_attr(ctx, KDUMP_ATTR_OSTYPE, "linux");
	if (st != KDUMP_OK && st != KDUMP_ERR_NODATA)
		return fgk__error_libkdumpfile(ctx, path, "cannot set the OS type");
	st = kdump_vmcoreinfo_raw(ctx, raw);
	if (st == KDUMP_ERR_NODATA) {
		*raw = NULL;
		*status = KD_NODATA;
	} else if (st != KDUMP_OK) {
		*raw = NULL;
		return fgk__error_libkdumpfile(ctx, path, "cannot read VMCOREINFO");
	}
	err = kdump_check_tail(path, ctx);
	if (!err && *status != KD_NODATA)
		*status = KD_OK;
	/*
	 * No kdump_free(): the child exits now, and 0.5.1's kdump_free()
	 * has a use-after-free (ptesarik/libkdumpfile issue #72).
	 */
	return err;
}

/*
 * Run libkdumpfile on fd in a child process: a dump that crashes or hangs
 * it gives "corrupt dump", never a signal in fgk.  *status is KD_OK (and
 * *raw its VMCOREINFO, if any) or KD_NODATA.
 */
static struct fgk_error *kdump_isolated(const char *path, int fd, char **raw,
					int *status)
{
	int pipefd, wstatus;
	struct fgk_error *err = NULL;
	char *buf = NULL;
	size_t len;
	pid_t pid;

	*raw = NULL;
	pid = fgk__kdump_fork(path, &pipefd, &err);
	if (pid < 0)
		return err;
	if (pid == 0) {
		char *r = NULL, code;
		int st;

		err = kdump_library_read(path, fd, &r, &st);
		code = (char)(err ? KD_ERROR : st);
		if (fgk__write_full(pipefd, &code, 1) < 0)
			_exit(3);
		if (err) {
			if (fgk__write_full(pipefd, err->message, strlen(err->message)) < 0)
				_exit(3);
		} else if (r && fgk__write_full(pipefd, r, strlen(r)) < 0) {
			_exit(3);
		}
		_exit(0);
	}
	err = fgk__read_fd(pipefd, path, 4u << 20, false, &buf, &len);
	close(pipefd);
	while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
		;
	if (!err && (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0 || !len)) {
		free(buf);
		buf = NULL;
		if (WIFSIGNALED(wstatus))
			return fgk__error_new(FGK_ERR_VMCORE, path,
					      "corrupt dump: libkdumpfile could not read it (killed by signal %d)",
					      WTERMSIG(wstatus));
		return fgk__error_new(FGK_ERR_VMCORE, path,
				      "corrupt dump: libkdumpfile could not read it");
	}
	if (err) {
		fgk_error_free(err);
		return fgk__error_new(FGK_ERR_VMCORE, path,
				      "corrupt dump: libkdumpfile could not read it");
	}
	*status = buf[0];
	if (*status == KD_ERROR) {
		err = fgk__error_new(FGK_ERR_VMCORE, path, "%s", buf + 1);
		free(buf);
		return err;
	}
	if (*status != KD_OK && *status != KD_NODATA) {
		free(buf);
		return fgk__error_new(FGK_ERR_VMCORE, path,
				      "corrupt dump: libkdumpfile could not read it");
	}
	if (len > 1) {
		*raw = strdup(buf + 1);
		free(buf);
		return *raw ? NULL : &fgk_enomem;
	}
	free(buf);
	return NULL;
}

static struct fgk_error *read_kdump(const char *path, int fd, uint64_t fsize,
				    struct fgk_vmcoreinfo *info)
{
	enum fgk_vmcore_format format = info->format;
	struct fgk_error *err;
	char *raw = NULL, *libraw = NULL;
	size_t rawlen;
	int status = KD_OK;

	err = kdump_check_header(path, fd, fsize, &raw, &rawlen);
	if (err)
		return err;
#ifndef FGK_FUZZING	/* fuzzing covers fgk's own parsing, not libkdumpfile's */
	err = kdump_isolated(path, fd, &libraw, &status);
	if (err)
		goto out;
#else
	(void)kdump_isolated;
	(void)status;
#endif
	if (!raw && libraw) {
		raw = libraw;
		rawlen = strlen(raw);
		libraw = NULL;
	}
	if (!raw) {
		err = fgk__error_new(FGK_ERR_NO_VMCOREINFO, path,
				     "kdump file without VMCOREINFO");
		goto out;
	}
	err = fgk_vmcoreinfo_parse(raw, rawlen, path, info);
out:
	info->format = format;
	free(raw);
	free(libraw);
	return err;
}

/* ---- flattened format ---------------------------------------------------- */

/*
 * Reassemble the flattened stream in (insize bytes) into out (out_name for
 * messages).  A regular kdump file is never larger than the stream that
 * carries it, so records reaching beyond 2 * insize are corrupt.
 */
static struct fgk_error *unflatten_fd(const char *path, int in, uint64_t insize,
				      int out, const char *out_name,
				      uint64_t *outsize)
{
	char hdr[FLAT_HEADER_SIZE];
	size_t bufsz = 1 << 20;
	char *buf;
	struct fgk_error *err = NULL;
	unsigned long long records = 0;
	uint64_t limit = 2 * insize + 4096, end = 0;

	if (fgk__read_full(in, hdr, sizeof(hdr)))
		return fgk__error_new(FGK_ERR_VMCORE, path,
				      "truncated flattened kdump header");
	if (memcmp(hdr, FLAT_SIG, sizeof(FLAT_SIG) - 1))
		return fgk__error_new(FGK_ERR_VMCORE, path,
				      "not a flattened kdump file");
	buf = malloc(bufsz);
	if (!buf)
		return &fgk_enomem;
	for (;;) {
		unsigned char rec[16];
		uint64_t off, size;

		if (fgk__read_full(in, rec, sizeof(rec))) {
			err = fgk__error_new(FGK_ERR_VMCORE, path,
					     "truncated dump: flattened stream ends after %llu records without its end marker",
					     records);
			break;
		}
		off = be64toh(*(uint64_t *)memcpy(&off, rec, 8));
		size = be64toh(*(uint64_t *)memcpy(&size, rec + 8, 8));
		if (off == UINT64_MAX)	/* the end marker: offset -1 */
			break;
		if (off > limit || size > limit - off) {
			err = fgk__error_new(FGK_ERR_VMCORE, path,
					     "corrupt flattened record %llu (offset %lld, size %lld): beyond what a %llu-byte stream can hold",
					     records, (long long)off, (long long)size,
					     (unsigned long long)insize);
			break;
		}
		if (off + size > end)
			end = off + size;
		while (size > 0) {
			size_t n = size > bufsz ? bufsz : (size_t)size;
			ssize_t w;

			if (fgk__read_full(in, buf, n)) {
				err = fgk__error_new(FGK_ERR_VMCORE, path,
						     "truncated dump: flattened record %llu cut short",
						     records);
				goto out;
			}
			w = pwrite(out, buf, n, (off_t)off);
			if (w != (ssize_t)n) {
				err = fgk__error_os(w < 0 ? errno : ENOSPC, out_name,
						    "writing the dump reassembled from %s",
						    path);
				goto out;
			}
			off += n;
			size -= n;
		}
		records++;
	}
out:
	free(buf);
	if (outsize)
		*outsize = end;
	return err;
}

struct fgk_error *fgk_vmcore_unflatten(const char *in_path, const char *out_path)
{
	struct fgk_error *err;
	struct stat st, ost;
	char *tmp = NULL;
	int in, out;

	err = fgk__open_regular(in_path, FGK_ERR_VMCORE, "dump", &in, &st);
	if (err)
		return err;
	if (stat(out_path, &ost) == 0 && ost.st_dev == st.st_dev &&
	    ost.st_ino == st.st_ino) {
		close(in);
		return fgk__error_new(FGK_ERR_INVALID, out_path,
				      "is the input dump: refusing to overwrite it");
	}
	err = fgk__check_output_target(out_path);
	if (err) {
		close(in);
		return err;
	}
	out = fgk__temp_create(out_path, &tmp);
	if (out < 0) {
		err = fgk__error_os(errno, out_path, "cannot create");
		close(in);
		return err;
	}
	/* out is 0600 (fgk__temp_create): the dump holds the seed */
	err = unflatten_fd(in_path, in, (uint64_t)st.st_size, out, out_path, NULL);
	if (close(out) < 0 && !err)
		err = fgk__error_os(errno, out_path, "cannot write");
	close(in);
	if (!err && rename(tmp, out_path) < 0)
		err = fgk__error_os(errno, out_path, "cannot write");
	if (err)
		unlink(tmp);
	fgk__temp_forget(tmp);
	free(tmp);
	return err;
}

static struct fgk_error *read_flat(const char *path, int fd, uint64_t fsize,
				   struct fgk_vmcoreinfo *info)
{
	const char *tmpdir = getenv("TMPDIR");
	struct fgk_error *err;
	uint64_t size = 0;
	char *base, *tmp;
	int out;

	if (!tmpdir || !*tmpdir)
		tmpdir = "/tmp";
	if (asprintf(&base, "%s/fgk-vmcore", tmpdir) < 0)
		return &fgk_enomem;
	out = fgk__temp_create(base, &tmp);
	if (out < 0) {
		err = fgk__error_os(errno, base, "cannot create a temporary file for the reassembled dump");
		free(base);
		return err;
	}
	free(base);
	unlink(tmp);	/* only the descriptor is needed: nothing to clean up */
	fgk__temp_forget(tmp);
	if (lseek(fd, 0, SEEK_SET) < 0)
		err = fgk__error_os(errno, path, "seek");
	else
		err = unflatten_fd(path, fd, fsize, out, tmp, &size);
	info->format = FGK_VMCORE_KDUMP_FLAT;
	if (!err)
		err = read_kdump(path, out, size, info);
	close(out);
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
	err = fgk__open_regular(path, FGK_ERR_VMCORE, "crash dump", &fd, &st);
	if (err)
		return err;
	n = pread(fd, magic, sizeof(magic), 0);
	if (n < 0) {
		err = fgk__error_os(errno, path, "read");
		goto out;
	}
	if (n >= 4 && !memcmp(magic, ELFMAG, SELFMAG)) {
		err = read_elf(path, fd, st.st_size, info);
	} else if (n >= 8 && !memcmp(magic, KDUMP_SIG, 8)) {
		info->format = FGK_VMCORE_KDUMP;
		err = read_kdump(path, fd, (uint64_t)st.st_size, info);
	} else if (n >= 12 && !memcmp(magic, FLAT_SIG, 12)) {
		err = read_flat(path, fd, (uint64_t)st.st_size, info);
	} else {
		err = fgk__error_new(FGK_ERR_VMCORE, path,
				     n ? "not a crash dump (neither an ELF core nor a kdump-compressed file)"
				     : "empty file: not a crash dump");
	}
out:
	close(fd);
	return keep_format_only(info, err);
}
