// SPDX-License-Identifier: GPL-2.0
/*
 * Physical memory of a crash dump: an ELF core (its PT_LOAD segments by
 * p_paddr) or a kdump-compressed file (libkdumpfile, in a child process
 * like lib/vmcore.c's VMCOREINFO read: a dump that crashes libkdumpfile
 * gives an error, never a signal in fgk).  Flattened files must be
 * unflattened first (fgk_vmcore_unflatten()).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libkdumpfile/kdumpfile.h>

#include "error.h"
#include "file.h"
#include "vmcore_mem.h"

#define KDUMP_SIG "KDUMP   "

static struct fgk_error *elf_read_phys(const char *path, int fd,
				       const struct fgk__phys_range *r,
				       size_t n)
{
	struct fgk_error *err = NULL;
	size_t nph;
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph)) {
		err = fgk__error_libelf(FGK_ERR_VMCORE, path, "not an ELF core");
		goto out;
	}
	for (size_t k = 0; k < n; k++) {
		bool found = false;

		for (size_t i = 0; i < nph && !found; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
				continue;
			if (r[k].addr < ph.p_paddr ||
			    r[k].len > ph.p_filesz ||
			    r[k].addr - ph.p_paddr > ph.p_filesz - r[k].len)
				continue;
			found = true;
			if (pread(fd, r[k].buf, r[k].len,
				  (off_t)(ph.p_offset + (r[k].addr - ph.p_paddr))) !=
			    (ssize_t)r[k].len) {
				err = fgk__error_new(FGK_ERR_VMCORE, path,
						     "truncated dump: physical memory 0x%llx+0x%zx is beyond the end of the file",
						     (unsigned long long)r[k].addr,
						     r[k].len);
				goto out;
			}
		}
		if (!found) {
			err = fgk__error_new(FGK_ERR_VMCORE, path,
					     "physical memory 0x%llx+0x%zx is not in the dump",
					     (unsigned long long)r[k].addr, r[k].len);
			goto out;
		}
	}
out:
	if (elf)
		elf_end(elf);
	return err;
}

/* The child: each range as one status byte ('O' + data, or 'E'). */
static void kdump_child(int fd, int out, const struct fgk__phys_range *r,
			size_t n)
{
	kdump_ctx_t *ctx = kdump_new();

	if (!ctx || kdump_open_fd(ctx, fd) != KDUMP_OK)
		_exit(2);
	kdump_set_string_attr(ctx, KDUMP_ATTR_OSTYPE, "linux");
	for (size_t k = 0; k < n; k++) {
		size_t len = r[k].len;
		char *buf = malloc(len ? len : 1);

		if (!buf)
			_exit(2);
		if (kdump_read(ctx, KDUMP_MACHPHYSADDR, r[k].addr, buf, &len) !=
			    KDUMP_OK || len != r[k].len) {
			if (fgk__write_full(out, "E", 1) < 0)
				_exit(3);
			free(buf);
			continue;
		}
		if (fgk__write_full(out, "O", 1) < 0 || fgk__write_full(out, buf, len) < 0)
			_exit(3);
		free(buf);
	}
	/* no kdump_free(): see lib/vmcore.c (use-after-free in 0.5.1) */
	_exit(0);
}

static struct fgk_error *kdump_read_phys(const char *path, int fd,
					 const struct fgk__phys_range *r,
					 size_t n)
{
	struct fgk_error *err = NULL;
	int pipefd, wstatus;
	pid_t pid;

	pid = fgk__kdump_fork(path, &pipefd, &err);
	if (pid < 0)
		return err;
	if (pid == 0)
		kdump_child(fd, pipefd, r, n);
	for (size_t k = 0; k < n && !err; k++) {
		char code;

		if (fgk__read_full(pipefd, &code, 1) < 0 ||
		    (code == 'O' && fgk__read_full(pipefd, r[k].buf, r[k].len) < 0))
			err = fgk__error_new(FGK_ERR_VMCORE, path,
					     "corrupt dump: libkdumpfile could not read it");
		else if (code != 'O')
			err = fgk__error_new(FGK_ERR_VMCORE, path,
					     "physical memory 0x%llx+0x%zx is not in the dump (or not readable)",
					     (unsigned long long)r[k].addr, r[k].len);
	}
	close(pipefd);
	if (err)
		kill(pid, SIGKILL);
	while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
		;
	if (!err && (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0))
		err = fgk__error_new(FGK_ERR_VMCORE, path,
				     "corrupt dump: libkdumpfile could not read it");
	return err;
}

struct fgk_error *fgk__vmcore_read_phys(const char *path,
					const struct fgk__phys_range *r,
					size_t n)
{
	unsigned char magic[8];
	struct fgk_error *err;
	struct stat st;
	int fd;

	err = fgk__open_regular(path, FGK_ERR_VMCORE, "crash dump", &fd, &st);
	if (err)
		return err;
	if (pread(fd, magic, sizeof(magic), 0) != (ssize_t)sizeof(magic))
		err = fgk__error_new(FGK_ERR_VMCORE, path,
				     "not a crash dump (too short)");
	else if (!memcmp(magic, ELFMAG, SELFMAG))
		err = elf_read_phys(path, fd, r, n);
	else if (!memcmp(magic, KDUMP_SIG, 8))
		err = kdump_read_phys(path, fd, r, n);
	else
		err = fgk__error_new(FGK_ERR_VMCORE, path,
				     "cannot read memory of this dump: neither an ELF core nor a kdump-compressed file (unflatten a flattened one first)");
	close(fd);
	return err;
}

bool fgk__vmcoreinfo_number(const char *raw, const char *key, int base,
			    uint64_t *v)
{
	size_t klen = strlen(key);

	for (const char *p = raw; p && *p;
	     p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		char *end;

		if (strncmp(p, key, klen) || p[klen] != '=')
			continue;
		*v = strtoull(p + klen + 1, &end, base);
		return end != p + klen + 1 && (*end == '\n' || !*end);
	}
	return false;
}

pid_t fgk__kdump_fork(const char *path, int *fd, struct fgk_error **err)
{
	int pipefd[2];
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		*err = fgk__error_os(errno, path, "cannot read dump (pipe)");
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		*err = fgk__error_os(errno, path, "cannot read dump (fork)");
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		close(pipefd[0]);
		if (devnull >= 0)
			dup2(devnull, STDERR_FILENO);	/* sanitizer reports */
		signal(SIGPIPE, SIG_DFL);
		alarm(300);	/* a dump that makes it loop forever */
		*fd = pipefd[1];
		return 0;
	}
	close(pipefd[1]);
	*fd = pipefd[0];
	return pid;
}
