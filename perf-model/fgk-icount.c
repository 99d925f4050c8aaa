// SPDX-License-Identifier: GPL-2.0
/*
 * fgk-icount: a QEMU TCG plugin that counts the guest instructions of a
 * boot up to init (bench/boot-time.py --icount).
 *
 * Two points split the boot, the same as fgk-perf's phases:
 *   pre   from the first guest instruction (the firmware at reset) to the
 *         first instruction at a kernel-half address (>= 0xffff800000000000):
 *         firmware, the boot loader's real-mode code, the setup code, the
 *         decompressor (with its FG-KASLR work) and the kernel's
 *         identity-mapped startup_64;
 *   boot  from there to the first instruction at a user address (1 MiB to
 *         0x800000000000) after it: the kernel's boot up to the first
 *         instruction of init (/init) in user mode.
 * pre + boot is "boot to init".  One vCPU only (-smp 1): the counter is one
 * inline add per guest instruction, not per vCPU.
 *
 * Once init's first instruction runs, the plugin writes
 *   pre=N boot=N total=N first_kernel=0xADDR first_user=0xADDR
 * to out=FILE (and again at exit if QEMU ends before that, with
 * reached=0), and counts nothing more.
 *
 * The count is per executed instruction (an inline add in the translated
 * code), so a block left early (an exception) counts only what ran; under
 * -icount, an instruction that does I/O not at the end of its block is run
 * again in a block of its own and may count twice (a handful per boot).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define KHALF 0xffff800000000000ULL
#define USER_LOW 0x100000ULL
#define USER_END 0x800000000000ULL

static uint64_t count;                  /* instructions run so far */
static uint64_t at_kernel, at_user;     /* count at the two points */
static uint64_t first_kernel, first_user;
static int phase;                       /* 0 pre, 1 boot, 2 after init's start */
static int written;
static char *out_path;

static void report(int reached)
{
    FILE *f;

    if (written)
        return;
    written = 1;
    f = fopen(out_path, "w");
    if (!f) {
        fprintf(stderr, "fgk-icount: %s: cannot write\n", out_path);
        return;
    }
    if (reached)
        fprintf(f, "pre=%" PRIu64 " boot=%" PRIu64 " total=%" PRIu64
                " first_kernel=0x%" PRIx64 " first_user=0x%" PRIx64 " reached=1\n",
                at_kernel, at_user - at_kernel, at_user, first_kernel, first_user);
    else
        fprintf(f, "pre=%" PRIu64 " total=%" PRIu64 " first_kernel=0x%" PRIx64 " reached=0\n",
                phase ? at_kernel : count, count, first_kernel);
    if (fclose(f))
        fprintf(stderr, "fgk-icount: %s: cannot write\n", out_path);
}

/* runs before the block's instructions (and their inline adds) */
static void tb_exec(unsigned int vcpu, void *udata)
{
    uint64_t va = (uintptr_t)udata;

    (void)vcpu;
    if (phase == 0 && va >= KHALF) {
        phase = 1;
        at_kernel = count;
        first_kernel = va;
    } else if (phase == 1 && va >= USER_LOW && va < USER_END) {
        phase = 2;
        at_user = count;
        first_user = va;
        report(1);
    }
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    uint64_t va = qemu_plugin_tb_vaddr(tb);

    (void)id;
    if (phase == 2)
        return;
    for (size_t i = 0; i < n; i++)
        qemu_plugin_register_vcpu_insn_exec_inline(qemu_plugin_tb_get_insn(tb, i),
                                                   QEMU_PLUGIN_INLINE_ADD_U64, &count, 1);
    /* a block that may start a phase: a kernel-half one before the kernel
     * has run (blocks are translated just before they first run), any one
     * at a user address */
    if ((phase == 0 && va >= KHALF) || (va >= USER_LOW && va < USER_END))
        qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS,
                                             (void *)(uintptr_t)va);
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
    (void)id;
    (void)p;
    report(0);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                           int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++)
        if (!strncmp(argv[i], "out=", 4))
            out_path = strdup(argv[i] + 4);
    if (!out_path) {
        fprintf(stderr, "fgk-icount: out=FILE missing\n");
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
