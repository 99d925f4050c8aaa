/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the libFuzzer harnesses: fuzz input as a file libfgk can open
 * by path (a memfd, reached through /proc/self/fd), and input helpers.
 */
#ifndef FGK_FUZZ_H
#define FGK_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <fgk/fgk.h>

/* Replace the contents of the harness's memfd; returns its path. */
static inline const char *fuzz_file(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];

	if (fd < 0) {
		fd = memfd_create("fgk-fuzz", 0);
		if (fd < 0) {
			perror("memfd_create");
			abort();
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) < 0 ||
	    (size && pwrite(fd, data, size, 0) != (ssize_t)size)) {
		perror("memfd write");
		abort();
	}
	return path;
}

/* NUL-terminated copy of the input (malloc'd). */
static inline char *fuzz_string(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* Every error libfgk returns must be well formed: a code and a message. */
static inline void fuzz_check_error(struct fgk_error *err)
{
	char buf[512];

	if (!err)
		return;
	if (!err->code || !err->message)
		abort();
	fgk_error_string(err, buf, sizeof(buf));
	fgk_error_free(err);
}

#endif
