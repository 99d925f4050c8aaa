/* SPDX-License-Identifier: GPL-2.0 */
/* Internal: opening untrusted input files, temp-file bookkeeping. */
#ifndef FGK_LIB_FILE_H
#define FGK_LIB_FILE_H

#include <sys/stat.h>
#include <fgk/fgk.h>

/*
 * Open path read-only without blocking on a FIFO or a device, and require
 * a regular file (what = "vmlinux", "dump", ... for the message).  On
 * success *fd is a blocking descriptor and *st its fstat().
 */
struct fgk_error *fgk__open_regular(const char *path, enum fgk_error_code code,
				    const char *what, int *fd, struct stat *st);

/* Read all of fd (at most max bytes; text: refuse NUL bytes).  NUL-terminated. */
/* write()/read() all of len bytes, retrying EINTR: 0, or -1 (error, EOF). */
int fgk__write_full(int fd, const void *buf, size_t len);
int fgk__read_full(int fd, void *buf, size_t len);

struct fgk_error *fgk__read_fd(int fd, const char *name, size_t max, bool text,
			       char **buf, size_t *len);

/*
 * Temp files being written: removed by fgk_remove_temp_files() (signal
 * handlers).  fgk__temp_create() makes "<path>.tmp.<pid>.XXXXXX" next to
 * path (mkostemp: O_EXCL, never follows a symlink) and registers it.
 */
int fgk__temp_create(const char *path, char **tmp);
void fgk__temp_forget(const char *tmp);

/* Refuse to replace anything but a regular file (or nothing) at path. */
struct fgk_error *fgk__check_output_target(const char *path);

/*
 * Private files and directories.  Everything libfgk writes holds a seed or
 * what it gives (a layout, a relinked vmlinux, a dump): every function
 * address of a booted kernel.  Such files are created FGK_PRIVATE_FILE_MODE
 * (fgk__temp_create() sets it before the first byte, whatever the umask),
 * the directories that hold them FGK_PRIVATE_DIR_MODE.
 */
#define FGK_PRIVATE_FILE_MODE 0600
#define FGK_PRIVATE_DIR_MODE 0700

/*
 * mkdir -p of path: the directories it creates are FGK_PRIVATE_DIR_MODE
 * (set explicitly, not left to the umask); existing ones are not touched.
 * what names path in errors ("cache directory").
 */
struct fgk_error *fgk__mkdirs_private(const char *path, const char *what);

/*
 * Make the existing directory path private: a real directory (not a
 * symlink) owned by the effective uid, mode FGK_PRIVATE_DIR_MODE (tightened
 * if it is looser, e.g. made by an older fgk).  A directory of another
 * user is an FGK_ERR_OS error (EPERM): it is not used.
 */
struct fgk_error *fgk__private_dir(const char *path, const char *what);

/*
 * The same for an existing regular file (not a symlink): owned by the
 * effective uid, mode tightened to FGK_PRIVATE_FILE_MODE.
 */
struct fgk_error *fgk__private_file(const char *path, const char *what);

#endif
