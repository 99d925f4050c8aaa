/* Scratch (docs/plans/decompressor-speed.md, "The work share"): a model of
 * QEMU 7.2's softmmu data TLB (direct mapped, 2^bits entries, 8-entry victim
 * TLB) for the loads and stores of the pre-kernel code at user-range addresses,
 * in intervals between executed rdtsc instructions (the FG-KASLR phase ends). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <qemu-plugin.h>
QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;
#define USER_LOW 0x100000ULL
#define USER_END 0x800000000000ULL
#define KHALF 0xffff800000000000ULL
#define NS 4
static const int bits[NS] = {8, 10, 12, 14};
struct tlb { uint64_t *e; uint64_t v[8]; unsigned vi; uint64_t miss, vhit; };
static struct tlb T[NS];
static uint64_t count, acc;
static int done;
#define MAXI 64
static uint64_t i_ins[MAXI], i_acc[MAXI], i_miss[MAXI][NS], i_pages[MAXI];
static int cur;
static char *out_path;
#define MB 4096
static uint64_t hist[MAXI][MB];   /* 256-entry misses per 1 MiB of address */
/* distinct pages per interval */
#define HB 20
static uint32_t seen[1 << HB];
static uint64_t seen_tag[1 << HB];
static void touch(uint64_t pg)
{
    uint64_t h = (pg * 0x9e3779b97f4a7c15ULL) >> (64 - HB);
    for (;; h = (h + 1) & ((1 << HB) - 1)) {
        if (seen[h] == (uint32_t)cur + 1 && seen_tag[h] == pg) return;
        if (seen[h] != (uint32_t)cur + 1) { seen[h] = cur + 1; seen_tag[h] = pg; i_pages[cur]++; return; }
    }
}
static void mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t va, void *u)
{
    (void)vcpu; (void)info; (void)u;
    if (done) return;
    uint64_t pg = va >> 12;
    acc++;
    i_acc[cur]++;
    for (int s = 0; s < NS; s++) {
        struct tlb *t = &T[s];
        uint64_t idx = pg & ((1ULL << bits[s]) - 1);
        if (t->e[idx] == pg + 1) continue;
        int hit = -1;
        for (int j = 0; j < 8; j++) if (t->v[j] == pg + 1) { hit = j; break; }
        if (hit >= 0) { t->v[hit] = t->e[idx]; t->e[idx] = pg + 1; t->vhit++; continue; }
        t->miss++; i_miss[cur][s]++;
        if (s == 0 && (va >> 20) < MB) hist[cur][va >> 20]++;
        if (t->e[idx]) { t->v[t->vi] = t->e[idx]; t->vi = (t->vi + 1) & 7; }
        t->e[idx] = pg + 1;
    }
}
static void rd(unsigned int vcpu, void *u)
{
    (void)vcpu; (void)u;
    if (done) return;
    i_ins[cur] = count;
    if (cur < MAXI - 1) cur++;
    /* interval pages: new interval id */
}
static void ktb(unsigned int vcpu, void *u)
{
    (void)vcpu; (void)u;
    if (done) return;
    i_ins[cur] = count;
    done = 1;
    FILE *f = fopen(out_path, "w");
    uint64_t prev = 0;
    for (int i = 0; i <= cur; i++) {
        fprintf(f, "int %d insns=%" PRIu64 " acc=%" PRIu64 " pages=%" PRIu64, i, i_ins[i] - prev, i_acc[i], i_pages[i]);
        for (int s = 0; s < NS; s++) fprintf(f, " miss%d=%" PRIu64, 1 << bits[s], i_miss[i][s]);
        fprintf(f, "\n");
        for (int m = 0; m < MB; m++) if (hist[i][m] > 200) fprintf(f, "  mb %#x %" PRIu64 "\n", m, hist[i][m]);
        prev = i_ins[i];
    }
    fclose(f);
}
static void mem_pages(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t va, void *u)
{
    if (!done) touch(va >> 12);
    mem(vcpu, info, va, u);
}
static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    if (done) return;
    size_t n = qemu_plugin_tb_n_insns(tb);
    uint64_t va = qemu_plugin_tb_vaddr(tb);
    if (va >= KHALF) { qemu_plugin_register_vcpu_tb_exec_cb(tb, ktb, QEMU_PLUGIN_CB_NO_REGS, NULL); return; }
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
        qemu_plugin_register_vcpu_insn_exec_inline(in, QEMU_PLUGIN_INLINE_ADD_U64, &count, 1);
        if (va < USER_LOW || va >= USER_END) continue;
        const uint8_t *d = qemu_plugin_insn_data(in);
        if (qemu_plugin_insn_size(in) == 2 && d[0] == 0x0f && d[1] == 0x31)
            qemu_plugin_register_vcpu_insn_exec_cb(in, rd, QEMU_PLUGIN_CB_NO_REGS, NULL);
        qemu_plugin_register_vcpu_mem_cb(in, mem_pages, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
    }
}
QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) if (!strncmp(argv[i], "out=", 4)) out_path = strdup(argv[i] + 4);
    for (int s = 0; s < NS; s++) T[s].e = calloc(1ULL << bits[s], 8);
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    return 0;
}
