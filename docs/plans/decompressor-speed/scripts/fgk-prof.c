/* per-PC guest instruction counts below 4 GiB until the first kernel-half block */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <qemu-plugin.h>
QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;
#define KHALF 0xffff800000000000ULL
#define NSLOT (1u << 22)
struct slot { uint64_t pc, n; };
static struct slot *tab;
static int done;
static char *out_path;
static struct slot *get(uint64_t pc)
{
    uint64_t h = (pc * 0x9E3779B97F4A7C15ULL) >> 42;
    for (;; h = (h + 1) & (NSLOT - 1)) {
        if (tab[h].pc == pc) return &tab[h];
        if (!tab[h].pc) { tab[h].pc = pc; return &tab[h]; }
    }
}
static void report(void)
{
    if (done) return;
    done = 1;
    FILE *f = fopen(out_path, "w");
    for (uint32_t i = 0; i < NSLOT; i++)
        if (tab[i].pc && tab[i].n)
            fprintf(f, "%" PRIx64 " %" PRIu64 "\n", tab[i].pc, tab[i].n);
    fclose(f);
}
static void tb_exec(unsigned int vcpu, void *udata) { (void)vcpu; (void)udata; report(); }
static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    uint64_t va = qemu_plugin_tb_vaddr(tb);
    (void)id;
    if (done) return;
    if (va >= KHALF) {
        qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS, NULL);
        return;
    }
    if (va >= (1ULL << 32)) return;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
        struct slot *s = get(qemu_plugin_insn_vaddr(in));
        qemu_plugin_register_vcpu_insn_exec_inline(in, QEMU_PLUGIN_INLINE_ADD_U64, &s->n, 1);
    }
}
static void at_exit(qemu_plugin_id_t id, void *p) { (void)id; (void)p; report(); }
QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++)
        if (!strncmp(argv[i], "out=", 4)) out_path = strdup(argv[i] + 4);
    tab = calloc(NSLOT, sizeof(*tab));
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
