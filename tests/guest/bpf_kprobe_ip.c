// SPDX-License-Identifier: GPL-2.0
/*
 * bpf_kprobe_ip FUNC [TRIGGER-FILE]: a BPF kprobe program, with no library
 * between it and the kernel, for the FG-KASLR tests (tests/test_distro_features.py).
 *
 * Loads a BPF_PROG_TYPE_KPROBE program (JIT-compiled by the kernel) that
 * stores bpf_get_func_ip() in an array map, attaches it to FUNC through the
 * kprobe PMU (perf_event_open + PERF_EVENT_IOC_SET_BPF), reads
 * TRIGGER-FILE (default /proc/version) to make FUNC run, and prints
 *
 *     hits N
 *     ip 0xADDRESS
 *
 * Built static on the host at test time and run as root in the guest.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

static void die(const char *what)
{
	fprintf(stderr, "bpf_kprobe_ip: %s: %s\n", what, strerror(errno));
	exit(1);
}

#define INSN(c, d, s, o, i) ((struct bpf_insn){ .code = (c), .dst_reg = (d), \
	.src_reg = (s), .off = (o), .imm = (i) })

int main(int argc, char **argv)
{
	const char *func = argc > 1 ? argv[1] : "version_proc_show";
	const char *trigger = argc > 2 ? argv[2] : "/proc/version";
	static char log[65536];
	union bpf_attr attr;
	struct perf_event_attr pe;
	uint64_t hits = 0, ip = 0;
	uint32_t key;
	int map, prog, ev, type, fd;
	char buf[4096];
	FILE *f;

	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = 4;
	attr.value_size = 8;
	attr.max_entries = 2;
	map = sys_bpf(BPF_MAP_CREATE, &attr);
	if (map < 0)
		die("BPF_MAP_CREATE");

	/*
	 * key 0 <- bpf_get_func_ip(ctx); key 1 <- key 1 + 1 (hits).
	 * r6 = ctx; r0 = get_func_ip(r6); *(u64 *)(fp - 8) = r0;
	 * *(u32 *)(fp - 12) = 0; map_update_elem(map, fp - 12, fp - 8, 0);
	 * *(u32 *)(fp - 12) = 1; r0 = map_lookup_elem(map, fp - 12);
	 * if r0: lock *(u64 *)r0 += 1; return 0
	 */
	struct bpf_insn insns[] = {
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_6, BPF_REG_1, 0, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_6, 0, 0),
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_func_ip),
		INSN(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_10, BPF_REG_0, -8, 0),
		INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -12, 0),
		INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, map),
		INSN(0, 0, 0, 0, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -12),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_3, BPF_REG_10, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_3, 0, 0, -8),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_4, 0, 0, 0),
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_update_elem),
		INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -12, 1),
		INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, map),
		INSN(0, 0, 0, 0, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -12),
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem),
		INSN(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_0, 0, 2, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_1, 0, 0, 1),
		INSN(BPF_STX | BPF_ATOMIC | BPF_DW, BPF_REG_0, BPF_REG_1, 0, BPF_ADD),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_KPROBE;
	attr.insns = (uintptr_t)insns;
	attr.insn_cnt = sizeof(insns) / sizeof(insns[0]);
	attr.license = (uintptr_t)"GPL";
	attr.log_buf = (uintptr_t)log;
	attr.log_size = sizeof(log);
	attr.log_level = 1;
	prog = sys_bpf(BPF_PROG_LOAD, &attr);
	if (prog < 0) {
		fprintf(stderr, "%s\n", log);
		die("BPF_PROG_LOAD");
	}

	f = fopen("/sys/bus/event_source/devices/kprobe/type", "r");
	if (!f || fscanf(f, "%d", &type) != 1)
		die("/sys/bus/event_source/devices/kprobe/type");
	fclose(f);
	memset(&pe, 0, sizeof(pe));
	pe.size = sizeof(pe);
	pe.type = type;
	pe.config1 = (uintptr_t)func;		/* kprobe_func */
	pe.config2 = 0;				/* probe_offset */
	ev = syscall(__NR_perf_event_open, &pe, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (ev < 0)
		die("perf_event_open(kprobe)");
	if (ioctl(ev, PERF_EVENT_IOC_SET_BPF, prog) < 0)
		die("PERF_EVENT_IOC_SET_BPF");
	if (ioctl(ev, PERF_EVENT_IOC_ENABLE, 0) < 0)
		die("PERF_EVENT_IOC_ENABLE");

	fd = open(trigger, O_RDONLY);
	if (fd < 0)
		die(trigger);
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);

	memset(&attr, 0, sizeof(attr));
	attr.map_fd = map;
	key = 0;
	attr.key = (uintptr_t)&key;
	attr.value = (uintptr_t)&ip;
	if (sys_bpf(BPF_MAP_LOOKUP_ELEM, &attr) < 0)
		die("BPF_MAP_LOOKUP_ELEM");
	key = 1;
	attr.value = (uintptr_t)&hits;
	if (sys_bpf(BPF_MAP_LOOKUP_ELEM, &attr) < 0)
		die("BPF_MAP_LOOKUP_ELEM");
	printf("hits %llu\nip 0x%llx\n", (unsigned long long)hits, (unsigned long long)ip);
	return 0;
}
