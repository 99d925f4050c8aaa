// SPDX-License-Identifier: GPL-2.0
/*
 * Files: opening untrusted inputs (never blocking on a FIFO, regular files
 * only), bounded whole-file reads, and safe outputs: atomic writes through
 * a temp file next to the target that is removed on SIGINT/SIGTERM (the
 * CLI's handlers call fgk_remove_temp_files()) and, when a SIGKILL left it
 * behind, by the next run (fgk_clean_stale_temp_files()).  Outputs are
 * private (mode 0600 from creation, directories 0700): each holds a seed or
 * the layout it gives, i.e. every function address of a booted kernel.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "error.h"
#include "file.h"

/* ---- inputs --------------------------------------------------------- */

struct fgk_error *fgk__open_regular(const char *path, enum fgk_error_code code,
				    const char *what, int *fd, struct stat *st)
{
	int f, fl;

	/* O_NONBLOCK: open() of a FIFO would wait for a writer forever */
	f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (f < 0)
		return fgk__error_os(errno, path, "cannot open %s", what);
	if (fstat(f, st) < 0) {
		struct fgk_error *err = fgk__error_os(errno, path, "cannot stat %s", what);

		close(f);
		return err;
	}
	if (!S_ISREG(st->st_mode)) {
		close(f);
		return fgk__error_new(code, path, "not a regular file (a %s is expected)",
				      what);
	}
	fl = fcntl(f, F_GETFL);
	if (fl >= 0)
		fcntl(f, F_SETFL, fl & ~O_NONBLOCK);
	*fd = f;
	return NULL;
}

struct fgk_error *fgk__read_fd(int fd, const char *name, size_t max, bool text,
			       char **ret, size_t *retlen)
{
	size_t cap = 0, len = 0;
	char *buf = NULL;

	for (;;) {
		ssize_t r;

		if (cap - len < 2) {
			size_t ncap = cap ? cap * 2 : 65536;
			char *nb;

			if (ncap > max + 2 || ncap < cap)
				ncap = max + 2;
			nb = realloc(buf, ncap);
			if (!nb) {
				free(buf);
				return &fgk_enomem;
			}
			buf = nb;
			cap = ncap;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			free(buf);
			return fgk__error_os(e, name, "read error");
		}
		if (r == 0)
			break;
		if (text && memchr(buf + len, '\0', (size_t)r)) {
			free(buf);
			return fgk__error_new(FGK_ERR_INVALID, name,
					      "binary data (a NUL byte), not text");
		}
		len += (size_t)r;
		if (len > max) {
			free(buf);
			return fgk__error_new(FGK_ERR_INVALID, name,
					      "larger than %zu bytes: refusing to read it all",
					      max);
		}
	}
	buf[len] = '\0';
	*ret = buf;
	*retlen = len;
	return NULL;
}

struct fgk_error *fgk_read_file(const char *path, size_t max, bool text,
				char **buf, size_t *len)
{
	struct fgk_error *err;
	int fd;

	if (!strcmp(path, "-"))
		return fgk__read_fd(STDIN_FILENO, "stdin", max, text, buf, len);
	/* text inputs may be pipes (<(...)); O_NONBLOCK only guards open() */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return fgk__error_os(errno, path, "cannot open");
	{
		struct stat st;

		if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
			close(fd);
			return fgk__error_new(FGK_ERR_INVALID, path, "is a directory");
		}
	}
	err = fgk__read_fd(fd, path, max, text, buf, len);
	close(fd);
	return err;
}

/* ---- temp files ------------------------------------------------------- */

#define NTEMPS 8
static char *volatile temps[NTEMPS];

void fgk_remove_temp_files(void)
{
	int e = errno;

	for (int i = 0; i < NTEMPS; i++) {
		char *t = temps[i];

		if (t)
			unlink(t);	/* async-signal-safe */
	}
	errno = e;
}

static void temp_register(char *tmp)
{
	for (int i = 0; i < NTEMPS; i++)
		if (__sync_bool_compare_and_swap(&temps[i], NULL, tmp))
			return;
	/* more than NTEMPS at once: not cleaned on signals, still correct */
}

void fgk__temp_forget(const char *tmp)
{
	for (int i = 0; i < NTEMPS; i++)
		if (temps[i] == tmp)
			__sync_bool_compare_and_swap(&temps[i], (char *)tmp, NULL);
}

int fgk__temp_create(const char *path, char **ret)
{
	sigset_t all, old;
	char *tmp;
	int fd, e;

	if (asprintf(&tmp, "%s.tmp.%ld.XXXXXX", path, (long)getpid()) < 0) {
		errno = ENOMEM;
		return -1;
	}
	/* no window in which the file exists but is not registered */
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	fd = mkostemp(tmp, O_CLOEXEC);
	e = errno;
	if (fd >= 0)
		temp_register(tmp);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (fd < 0) {
		free(tmp);
		errno = e;
		return -1;
	}
	/*
	 * 0600 before the first byte, whatever the umask: every file libfgk
	 * writes holds a seed or what it gives (a layout, a dump).  mkostemp
	 * asks for 0600 already; the umask can only take bits away.
	 */
	if (fchmod(fd, FGK_PRIVATE_FILE_MODE) < 0) {
		e = errno;
		close(fd);
		unlink(tmp);
		fgk__temp_forget(tmp);
		free(tmp);
		errno = e;
		return -1;
	}
	*ret = tmp;
	return fd;
}

/* "NAME.tmp.<pid>.XXXXXX": the pid of its writer, or 0. */
static long temp_owner(const char *name)
{
	const char *p = strstr(name, ".tmp."), *q;
	long pid = 0;

	while (p) {
		const char *next = strstr(p + 1, ".tmp.");

		if (!next)
			break;
		p = next;
	}
	if (!p)
		return 0;
	q = p + 5;
	while (isdigit((unsigned char)*q) && pid < 1L << 30)
		pid = pid * 10 + (*q++ - '0');
	if (q == p + 5 || *q != '.' || strlen(q + 1) != 6)
		return 0;
	return pid;
}

struct fgk_error *fgk_clean_stale_temp_files(const char *dir, const char *prefix,
					     size_t *removed)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	if (removed)
		*removed = 0;
	if (!d)
		return fgk__error_os(errno, dir, "cannot read directory");
	while ((de = readdir(d)) != NULL) {
		long pid = temp_owner(de->d_name);
		struct stat st;

		if (pid <= 0 || (prefix && strncmp(de->d_name, prefix, strlen(prefix))))
			continue;
		if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;	/* its writer may still be running */
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0)
			n++;
	}
	closedir(d);
	if (removed)
		*removed = n;
	return NULL;
}

/* ---- outputs ------------------------------------------------------------ */

struct fgk_error *fgk__check_output_target(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return NULL;
		return fgk__error_os(errno, path, "cannot write");
	}
	if (S_ISLNK(st.st_mode))
		return fgk__error_new(FGK_ERR_INVALID, path,
				      "is a symbolic link: refusing to replace it (give the real path)");
	if (!S_ISREG(st.st_mode))
		return fgk__error_new(FGK_ERR_INVALID, path,
				      "not a regular file: refusing to replace it%s",
				      S_ISDIR(st.st_mode) ? " (a directory)" : "");
	return NULL;
}

static char *dir_of(const char *path, const char **base)
{
	const char *slash = strrchr(path, '/');

	*base = slash ? slash + 1 : path;
	if (!slash)
		return strdup(".");
	return strndup(path, slash == path ? 1 : (size_t)(slash - path));
}

struct fgk_error *fgk_write_file_atomic(const char *path, const void *data,
					size_t len)
{
	const char *p = data, *base;
	struct fgk_error *err = NULL;
	char *tmp = NULL, *dir;
	int fd;

	err = fgk__check_output_target(path);
	if (err)
		return err;
	/* temp files of this output that a killed run left behind */
	dir = dir_of(path, &base);
	if (dir && *base) {
		char *prefix;

		if (asprintf(&prefix, "%s.tmp.", base) >= 0) {
			fgk_error_free(fgk_clean_stale_temp_files(dir, prefix, NULL));
			free(prefix);
		}
	}
	free(dir);
	fd = fgk__temp_create(path, &tmp);
	if (fd < 0)
		return fgk__error_os(errno, path, "cannot create");
	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			err = fgk__error_os(errno, path, "cannot write");
			goto fail;
		}
		p += w;
		len -= (size_t)w;
	}
	if (fsync(fd) < 0) {
		err = fgk__error_os(errno, path, "cannot write");
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		err = fgk__error_os(errno, path, "cannot write");
		goto fail;
	}
	fd = -1;
	/* the target may have changed since the check: look again */
	err = fgk__check_output_target(path);
	if (err)
		goto fail;
	if (rename(tmp, path) < 0) {
		err = fgk__error_os(errno, path, "cannot write");
		goto fail;
	}
	fgk__temp_forget(tmp);
	free(tmp);
	return NULL;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	fgk__temp_forget(tmp);
	free(tmp);
	return err;
}

/* ---- private files and directories -------------------------------------- */

/* fd (open on path) owned by us, with exactly mode among its permission bits. */
static struct fgk_error *make_private(int fd, const char *path, const char *what,
				      mode_t mode)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return fgk__error_os(errno, path, "cannot stat %s", what);
	if (st.st_uid != geteuid())
		return fgk__error_os(EPERM, path,
				     "%s is owned by uid %u, not by this user (uid %u): not using it",
				     what, (unsigned)st.st_uid, (unsigned)geteuid());
	if ((st.st_mode & 07777) != mode && fchmod(fd, mode) < 0)
		return fgk__error_os(errno, path, "cannot make %s private (mode %04o)",
				     what, (unsigned)mode);
	return NULL;
}

struct fgk_error *fgk__private_dir(const char *path, const char *what)
{
	struct fgk_error *err;
	int fd;

	/* O_NOFOLLOW: a symlink planted in place of the directory is refused */
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return fgk__error_os(errno, path, "cannot open %s", what);
	err = make_private(fd, path, what, FGK_PRIVATE_DIR_MODE);
	close(fd);
	return err;
}

struct fgk_error *fgk__private_file(const char *path, const char *what)
{
	struct fgk_error *err;
	struct stat st;
	int fd;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return fgk__error_os(errno, path, "cannot open %s", what);
	if (fstat(fd, &st) < 0)
		err = fgk__error_os(errno, path, "cannot stat %s", what);
	else if (!S_ISREG(st.st_mode))
		err = fgk__error_new(FGK_ERR_INVALID, path, "%s is not a regular file", what);
	else
		err = make_private(fd, path, what, FGK_PRIVATE_FILE_MODE);
	close(fd);
	return err;
}

struct fgk_error *fgk__mkdirs_private(const char *path, const char *what)
{
	struct fgk_error *err = NULL;
	char *d = strdup(path);

	if (!d)
		return &fgk_enomem;
	if (!*d) {
		free(d);
		return NULL;
	}
	for (char *p = d + 1;; p++) {
		char c = *p;

		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (mkdir(d, FGK_PRIVATE_DIR_MODE) == 0) {
			/* ours, just made: the umask may have taken bits away */
			err = fgk__private_dir(d, what);
		} else if (errno != EEXIST) {
			err = fgk__error_os(errno, d, "cannot create %s", what);
		}
		*p = c;
		if (err || !c)
			break;
	}
	free(d);
	return err;
}

struct fgk_error *fgk_private_dir(const char *path)
{
	struct fgk_error *err = fgk__mkdirs_private(path, "directory");

	return err ? err : fgk__private_dir(path, "directory");
}

int fgk__write_full(int fd, const void *buf, size_t len)
{
	while (len) {
		ssize_t w = write(fd, buf, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		buf = (const char *)buf + w;
		len -= (size_t)w;
	}
	return 0;
}

int fgk__read_full(int fd, void *buf, size_t len)
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
