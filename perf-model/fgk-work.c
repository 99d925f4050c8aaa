// SPDX-License-Identifier: GPL-2.0
/* fgk-work: the guest side of bench/run-time-cost.py (docs/runtime-cost.md).
 * A static program that runs one kernel-heavy workload between two markers
 * the fgk-perf plugin recognises, so the plugin attributes the kernel's
 * instruction fetches to that workload:
 *
 *   fgk-work WORKLOAD N      run WORKLOAD N times, marked as its number
 *   fgk-work mark K          only the marker K (0 = unattributed), e.g. around
 *                            a shell pipeline such as a compression job
 *   fgk-work exit 0          nothing (what the forkexec workload executes)
 *
 * The marker is a 7-byte no-op, `nopl 0x464b47NN(%rax)` (0f 1f 80 NN 47 4b
 * 46: "G K F" and the workload number NN in its displacement), which the
 * plugin finds in the instruction bytes when QEMU translates it.  It
 * changes no register or memory, so the program runs the same without the
 * plugin.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <unistd.h>

#define MARK(k) __asm__ volatile(".byte 0x0f, 0x1f, 0x80, " #k ", 0x47, 0x4b, 0x46" ::: "memory")

static void mark(int k)
{
	switch (k) {
	case 0: MARK(0); break;
	case 1: MARK(1); break;
	case 2: MARK(2); break;
	case 3: MARK(3); break;
	case 4: MARK(4); break;
	case 5: MARK(5); break;
	case 6: MARK(6); break;
	case 7: MARK(7); break;
	case 8: MARK(8); break;
	case 9: MARK(9); break;
	case 10: MARK(10); break;
	case 11: MARK(11); break;
	case 12: MARK(12); break;
	case 13: MARK(13); break;
	case 14: MARK(14); break;
	case 15: MARK(15); break;
	}
}

static const char *prog;

static void die(const char *what)
{
	fprintf(stderr, "fgk-work: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void xwrite(int fd, const void *b, size_t n)
{
	if (write(fd, b, n) != (ssize_t)n)
		die("write");
}

static void xread(int fd, void *b, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)b + got, n - got);

		if (r <= 0)
			die("read");
		got += r;
	}
}

static void reap(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		die("child");
}

static int w_getpid(long n)
{
	for (long i = 0; i < n; i++)
		syscall(SYS_getpid);
	return 0;
}

/* one byte back and forth between two processes: 2 syscalls and a switch
 * each way */
static int w_pipe(long n)
{
	int a[2], b[2];
	char c = 0;
	pid_t pid;

	if (pipe(a) || pipe(b))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		for (long i = 0; i < n; i++) {
			xread(a[0], &c, 1);
			xwrite(b[1], &c, 1);
		}
		_exit(0);
	}
	for (long i = 0; i < n; i++) {
		xwrite(a[1], &c, 1);
		xread(b[0], &c, 1);
	}
	reap(pid);
	return 0;
}

static int w_forkexec(long n)
{
	for (long i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (!pid) {
			execl(prog, prog, "exit", "0", (char *)NULL);
			_exit(127);
		}
		reap(pid);
	}
	return 0;
}

static int w_open(long n)
{
	char buf[512];

	for (long i = 0; i < n; i++) {
		int fd = open("/proc/self/stat", O_RDONLY);

		if (fd < 0)
			die("open /proc/self/stat");
		if (read(fd, buf, sizeof(buf)) <= 0)
			die("read /proc/self/stat");
		close(fd);
	}
	return 0;
}

static int w_create(long n)
{
	char name[64];

	for (long i = 0; i < n; i++) {
		int fd;

		snprintf(name, sizeof(name), "/tmp/fgk-work.%ld", i % 16);
		fd = open(name, O_CREAT | O_TRUNC | O_WRONLY, 0600);
		if (fd < 0)
			die("create");
		xwrite(fd, name, 16);
		close(fd);
		if (unlink(name))
			die("unlink");
	}
	return 0;
}

/* 64 KiB anonymous, every page touched (page faults), then unmapped */
static int w_mmap(long n)
{
	for (long i = 0; i < n; i++) {
		char *p = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			die("mmap");
		for (int off = 0; off < 65536; off += 4096)
			p[off] = 1;
		if (munmap(p, 65536))
			die("munmap");
	}
	return 0;
}

/* two processes on one CPU handing it to each other with sched_yield */
static int w_ctxsw(long n)
{
	cpu_set_t one;
	pid_t pid;

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		die("sched_setaffinity");
	pid = fork();
	if (pid < 0)
		die("fork");
	for (long i = 0; i < n; i++)
		sched_yield();
	if (!pid)
		_exit(0);
	reap(pid);
	return 0;
}

/* TCP over loopback: a 64-byte request and reply per round */
static int w_tcp(long n)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	char buf[64] = { 0 };
	int ls, one = 1;
	pid_t pid;

	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0) {
		/* a kernel without networking: say so, do nothing */
		printf("fgk-work: tcp: no IPv4 sockets in this kernel (%s)\n", strerror(errno));
		return 0;
	}
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1) ||
	    getsockname(ls, (struct sockaddr *)&sa, &len))
		die("tcp listen (is lo up?)");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		int c = accept(ls, NULL, NULL);

		if (c < 0)
			die("accept");
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		for (long i = 0; i < n; i++) {
			xread(c, buf, sizeof(buf));
			xwrite(c, buf, sizeof(buf));
		}
		_exit(0);
	}
	close(ls);
	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || connect(ls, (struct sockaddr *)&sa, sizeof(sa)))
		die("connect");
	setsockopt(ls, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (long i = 0; i < n; i++) {
		xwrite(ls, buf, sizeof(buf));
		xread(ls, buf, sizeof(buf));
	}
	close(ls);
	reap(pid);
	return 0;
}

/* numbered as the markers: keep in step with bench/run-time-cost.py */
static const struct {
	const char *name;
	int (*run)(long n);
} works[] = {
	[1] = { "getpid", w_getpid },
	[2] = { "pipe", w_pipe },
	[3] = { "forkexec", w_forkexec },
	[4] = { "open", w_open },
	[5] = { "create", w_create },
	[6] = { "mmap", w_mmap },
	[7] = { "ctxsw", w_ctxsw },
	[8] = { "tcp", w_tcp },
};

int main(int argc, char **argv)
{
	char *end;
	long n;

	prog = argv[0];
	if (argc != 3) {
		fprintf(stderr, "usage: fgk-work WORKLOAD N | mark K\n");
		return 2;
	}
	errno = 0;
	n = strtol(argv[2], &end, 10);
	if (errno || *end || n < 0) {
		fprintf(stderr, "fgk-work: %s: not a count\n", argv[2]);
		return 2;
	}
	if (!strcmp(argv[1], "exit"))
		return 0;
	if (!strcmp(argv[1], "mark")) {
		if (n > 15) {
			fprintf(stderr, "fgk-work: mark %ld: 0..15\n", n);
			return 2;
		}
		mark(n);
		return 0;
	}
	for (size_t k = 1; k < sizeof(works) / sizeof(works[0]); k++) {
		int rc;

		if (strcmp(argv[1], works[k].name))
			continue;
		mark(k);
		rc = works[k].run(n);
		mark(0);
		return rc;
	}
	fprintf(stderr, "fgk-work: %s: unknown workload\n", argv[1]);
	return 2;
}
