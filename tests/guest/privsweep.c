// SPDX-License-Identifier: GPL-2.0
/*
 * privsweep: look for the FG-KASLR seed and the layout where a user without
 * privileges can read them (run in a test guest by tests/test_privacy.py).
 *
 *   privsweep CONF user|nocaps
 *
 * As root it reads CONF (root-only), the seed in use (/proc/fgkaslr_seed)
 * and the randomized region (/proc/fgkaslr_stats, /proc/kallsyms). Then it
 * drops to uid/gid 1000 ("user") or stays uid 0 with every capability
 * dropped ("nocaps"), and reads every file under /proc and /sys it can open,
 * the kernel log (syslog(2) and /dev/kmsg) and /proc/1/cmdline. In all of it
 * it looks for:
 *   - every secret (the seed in use and the seeds named in CONF): as hex in
 *     either case, also split across lines or separated (all non-hex bytes
 *     removed before matching), and in binary; halves of each too;
 *   - any number (hex with or without 0x, 8 to 16 digits; decimal 19 or 20
 *     digits; little-endian 64-bit words in binary files) that falls in the
 *     runtime range of the shuffled functions.
 * It prints the counts and one "HIT ..." line per finding, and exits 0 if
 * the sweep itself ran (the test decides), 2 on a setup error.
 *
 * CONF lines: "secret <64 hex>" (repeatable), "link_text <hex>".
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_SECRETS	8
#define MAX_FILE	(4u << 20)

static char secret_hex[MAX_SECRETS][65];	/* lowercase */
static unsigned char secret_bin[MAX_SECRETS][32];
static int nr_secrets;
static uint64_t lo, hi;				/* runtime shuffled range */
static unsigned long files, bytes, numbers, denied, hits, timeouts;
static char self_dir[64];
static unsigned char *buf, *norm;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stdout, "privsweep: error: ");
	vfprintf(stdout, fmt, ap);
	fprintf(stdout, "\n");
	va_end(ap);
	exit(2);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static void add_secret(const char *hex)
{
	int i;

	if (nr_secrets == MAX_SECRETS || strlen(hex) != 64)
		die("bad secret '%s'", hex);
	for (i = 0; i < 64; i++) {
		if (hexval(hex[i]) < 0)
			die("bad secret '%s'", hex);
		secret_hex[nr_secrets][i] = tolower(hex[i]);
	}
	for (i = 0; i < 32; i++)
		secret_bin[nr_secrets][i] = hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]);
	nr_secrets++;
}

static void hit(const char *what, const char *path, unsigned long off)
{
	hits++;
	printf("HIT %s %s +%lu\n", what, path, off);
}

static void search(const char *path, const unsigned char *p, size_t n)
{
	size_t i, m = 0, j;
	int s, binary = memchr(p, 0, n) != NULL;
	const unsigned char *q;

	files++;
	bytes += n;
	/* secrets: binary, whole and halves */
	for (s = 0; s < nr_secrets; s++) {
		if ((q = memmem(p, n, secret_bin[s], 32)))
			hit("seed-binary", path, q - p);
		else if ((q = memmem(p, n, secret_bin[s], 16)) ||
			 (q = memmem(p, n, secret_bin[s] + 16, 16)))
			hit("seed-binary-half", path, q - p);
	}
	/* secrets as hex: everything but hex digits removed, lowercased */
	for (i = 0; i < n; i++)
		if (hexval(p[i]) >= 0)
			norm[m++] = tolower(p[i]);
	for (s = 0; s < nr_secrets; s++) {
		if ((q = memmem(norm, m, secret_hex[s], 64)))
			hit("seed-hex", path, q - norm);
		else if ((q = memmem(norm, m, secret_hex[s], 32)) ||
			 (q = memmem(norm, m, secret_hex[s] + 32, 32)))
			hit("seed-hex-half", path, q - norm);
	}
	/* numbers in the shuffled range */
	for (i = 0; i < n;) {
		uint64_t v = 0;
		int is_hex = 0, digits = 0;

		if (!isxdigit(p[i]) || (i && isalnum(p[i - 1]))) {
			i++;
			continue;
		}
		if (p[i] == '0' && i + 1 < n && (p[i + 1] == 'x' || p[i + 1] == 'X')) {
			is_hex = 1;
			i += 2;
		}
		for (j = i; j < n && isxdigit(p[j]); j++)
			digits++;
		if (!is_hex) {
			for (s = 0, j = i; j < i + digits; j++)
				if (!isdigit(p[j]))
					s = 1;
			is_hex = s || (digits >= 8 && digits <= 16);
		}
		if (is_hex && digits >= 8 && digits <= 16) {
			for (j = i; j < i + digits; j++)
				v = v << 4 | hexval(p[j]);
			numbers++;
			if (v >= lo && v < hi)
				hit("address-hex", path, i);
		}
		if (digits >= 19 && digits <= 20) {
			int ok = 1;

			for (v = 0, j = i; j < i + digits; j++) {
				if (!isdigit(p[j]))
					ok = 0;
				v = v * 10 + (p[j] - '0');
			}
			if (ok) {
				numbers++;
				if (v >= lo && v < hi)
					hit("address-decimal", path, i);
			}
		}
		i += digits ? digits : 1;
	}
	if (binary && n >= 8) {
		for (i = 0; i + 8 <= n; i++) {
			uint64_t v;

			memcpy(&v, p + i, 8);
			if (v >= lo && v < hi) {
				hit("address-binary", path, i);
				break;
			}
		}
		numbers += n - 7;
	}
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void sweep_file(const char *path)
{
	ssize_t r;
	size_t n = 0;
	int fd;

	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		denied++;
		return;
	}
	alarm(2);
	while (n < MAX_FILE) {
		r = read(fd, buf + n, MAX_FILE - n);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				timeouts++;
			break;
		}
		n += r;
	}
	alarm(0);
	close(fd);
	search(path, buf, n);
}

static int skip(const char *path, const char *name)
{
	static const char * const names[] = {
		/* streams that never end or wait for data */
		"trace_pipe", "trace_pipe_raw", "kmsg", "kcore",
		/* the sweep's own files (its memory holds the secrets) */
		"self", "thread-self",
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return 1;
	return !strcmp(path, self_dir);
}

static void sweep_dir(const char *dir, int depth)
{
	struct dirent *d;
	char path[4096];
	struct stat st;
	DIR *dp;

	if (depth > 24 || !(dp = opendir(dir))) {
		denied++;
		return;
	}
	while ((d = readdir(dp))) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		if (skip(path, d->d_name) || lstat(path, &st))
			continue;
		if (S_ISDIR(st.st_mode))
			sweep_dir(path, depth + 1);
		else if (S_ISREG(st.st_mode))
			sweep_file(path);
	}
	closedir(dp);
}

static void sweep_log(void)
{
	int n = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	size_t total = 0;
	ssize_t r;
	int fd;

	if (n > 0 && (size_t)n <= MAX_FILE) {
		n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, (char *)buf, n);
		if (n >= 0)
			search("syslog(2)", buf, n);
		else
			denied++;
	}
	fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (fd < 0) {
		denied++;
		return;
	}
	/* one record per read(); each search alone, records may be split */
	while (total < MAX_FILE) {
		r = read(fd, buf + total, MAX_FILE - total);
		if (r < 0 && errno == EPIPE)
			continue;
		if (r <= 0)
			break;
		total += r;
	}
	close(fd);
	search("/dev/kmsg", buf, total);
}

/* The seed in use and the runtime range of the shuffled region (as root). */
static void read_layout(uint64_t link_text)
{
	uint64_t text_start = 0, text_end = 0, rt_text = 0, a;
	char line[512], name[256], t;
	FILE *f;

	f = fopen("/proc/fgkaslr_seed", "r");
	if (!f || !fgets(line, sizeof(line), f))
		die("cannot read /proc/fgkaslr_seed as root: %s", strerror(errno));
	fclose(f);
	line[strcspn(line, "\n")] = 0;
	if (strcmp(line, "disabled"))
		add_secret(line);
	memset(line, 0, sizeof(line));

	f = fopen("/proc/fgkaslr_stats", "r");
	if (!f)
		die("cannot read /proc/fgkaslr_stats as root: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "text: %" SCNx64 "-%" SCNx64, &text_start, &text_end) == 2)
			continue;
		if (!strncmp(line, "seed: ", 6))
			printf("stats-%s", line);
	}
	fclose(f);
	f = fopen("/proc/kallsyms", "r");
	if (!f)
		die("cannot read /proc/kallsyms");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%" SCNx64 " %c %255s", &a, &t, name) == 3 &&
		    !strcmp(name, "_text")) {
			rt_text = a;
			break;
		}
	fclose(f);
	if (!text_start || !text_end || !rt_text)
		die("no text range (stats %" PRIx64 "-%" PRIx64 ", _text %" PRIx64 ")",
		    text_start, text_end, rt_text);
	lo = text_start - link_text + rt_text;
	hi = text_end - link_text + rt_text;
	printf("range %#" PRIx64 "-%#" PRIx64 "\n", lo, hi);
}

/*
 * The matchers find what they look for: the seed in use, upper case and
 * split over two lines, an address in the range as hex and as decimal, and
 * the seed in binary. Counted apart from the sweep.
 */
static void selftest(void)
{
	unsigned char t[256];
	int n, i;

	if (!nr_secrets)
		die("no secret to look for");
	n = 0;
	for (i = 0; i < 64; i++) {
		t[n++] = toupper(secret_hex[nr_secrets - 1][i]);
		if (i == 20)
			t[n++] = '\n';
	}
	n += sprintf((char *)t + n, " %016" PRIx64 " %" PRIu64 " ", lo + 16, lo + 32);
	search("selftest-text", t, n);
	memset(t, 0xee, 64);
	memcpy(t + 3, secret_bin[nr_secrets - 1], 32);
	t[1] = 0;
	search("selftest-binary", t, 64);
	printf("selftest hits %lu\n", hits);
	hits = files = bytes = numbers = 0;
}

static void drop(const char *mode)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { };
	int c;

	if (!strcmp(mode, "user")) {
		if (setgroups(0, NULL) || setgid(1000) || setuid(1000))
			die("cannot become uid 1000: %s", strerror(errno));
	} else if (!strcmp(mode, "nocaps")) {
		for (c = 0; c <= 63; c++)
			prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
		if (syscall(SYS_capset, &h, d))
			die("capset: %s", strerror(errno));
	} else {
		die("mode must be user or nocaps");
	}
	printf("mode %s uid %d\n", mode, (int)getuid());
}

int main(int argc, char **argv)
{
	uint64_t link_text = 0;
	char line[256], hex[128];
	struct sigaction sa = { .sa_handler = on_alarm };
	FILE *f;
	int fd;

	if (argc != 3)
		die("usage: privsweep CONF user|nocaps");
	setvbuf(stdout, NULL, _IOLBF, 0);
	buf = malloc(MAX_FILE);
	norm = malloc(MAX_FILE);
	if (!buf || !norm)
		die("out of memory");
	f = fopen(argv[1], "r");
	if (!f)
		die("%s: %s", argv[1], strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "secret %127s", hex) == 1)
			add_secret(hex);
		else if (sscanf(line, "link_text %" SCNx64, &link_text) != 1)
			die("%s: bad line '%s'", argv[1], line);
	}
	fclose(f);
	if (!link_text)
		die("%s: no link_text", argv[1]);
	read_layout(link_text);
	snprintf(self_dir, sizeof(self_dir), "/proc/%d", (int)getpid());
	sigaction(SIGALRM, &sa, NULL);

	selftest();
	drop(argv[2]);
	fd = open("/proc/fgkaslr_seed", O_RDONLY);
	printf("open /proc/fgkaslr_seed: %s\n", fd < 0 ? strerror(errno) : "allowed");
	fd = open("/proc/fgkaslr_stats", O_RDONLY);
	printf("open /proc/fgkaslr_stats: %s\n", fd < 0 ? strerror(errno) : "allowed");

	sweep_file("/proc/1/cmdline");
	sweep_log();
	sweep_dir("/proc", 0);
	sweep_dir("/sys", 0);
	printf("swept files %lu bytes %lu numbers %lu secrets %d unreadable %lu timeouts %lu hits %lu\n",
	       files, bytes, numbers, nr_secrets, denied, timeouts, hits);
	return 0;
}
