/* fgk-perf: a QEMU TCG plugin (QEMU 7.2 plugin API) that runs the guest's
 * kernel-mode instruction fetches through the cache and TLB model of
 * model.c and estimates kernel cycles (docs/runtime-cost.md).
 *
 *   qemu-system-x86_64 -accel tcg,thread=single \
 *       -plugin build/perf-model/fgk-perf.so,out=FILE[,text_page=2M|4K][,data=on]
 *               [,kernel_base=HEX][,base=N,l2_hit=N,l2_miss=N,stlb_hit=N,walk=N]
 *               [,trace=FILE,trace_mark=K[,trace_max=MiB]]
 *
 * Kernel mode is told by address: an instruction at or above kernel_base
 * (default 0xffff800000000000) is the kernel's (x86-64's kernel half; the plugin API
 * of 7.2 exposes no privilege level).  The kernel image (the top 2 GiB,
 * 0xffffffff80000000..0xffffffffc0000000) is mapped with text_page pages
 * (x86-64 Linux maps its text with 2 MiB pages); other kernel code
 * (modules, BPF) with 4 KiB pages.
 *
 * Phases: "pre" until the first kernel-half instruction (firmware, the
 * decompressor), "boot" from there until the first user instruction
 * (address 1 MiB..0x800000000000: init), "run" after it.  Per phase the
 * plugin writes key=value lines to out= (or QEMU's log) at exit.
 *
 * Workloads: an instruction whose bytes hold the marker `0f 1f 80 K 47 4b 46`
 * (`nopl 0x464b47KK(%rax)`, perf-model/fgk-work.c) starts segment K (0..15)
 * when its block is entered; the plugin also writes "work=K" lines with
 * each marked segment's counters (K 0: everything outside the markers).
 *
 * trace= (off by default): the kernel blocks executed in marked segment K
 * (trace_mark=, 1..15), in order, for perf-model/fgk-replay.c, which runs
 * them through the same model under other layouts.  The file: "FGKTRC1\n" (8 bytes),
 * then little-endian 32-bit words.  A block's first execution in the
 * segment is preceded by its definition: 0xffffffff, id, n, the first
 * instruction's address (low word, high word), then the n instruction sizes
 * as bytes, zero-padded to a multiple of 4 (a block's instructions are
 * contiguous).  Each execution is one word, vcpu << 28 | id.  At trace_max
 * MiB (default 256) tracing stops and the report says trace_truncated=1.
 *
 * A translated block's instructions are fetched and counted when the block
 * is entered (one callback per block, not per instruction): a block left
 * early (exception, interrupt, QEMU exiting inside it) counts its rest too.
 *
 * The model is per vCPU; it assumes TCG runs one vCPU at a time
 * (-accel tcg,thread=single), as fgk's runner does.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>
#include "model.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MAX_VCPUS 64
#define IMAGE_START 0xffffffff80000000ULL
#define IMAGE_END 0xffffffffc0000000ULL
#define USER_LOW 0x100000ULL
#define USER_END 0x800000000000ULL

enum { PRE, BOOT, RUN, NPHASES };
static const char *phase_name[NPHASES] = {"pre", "boot", "run"};

struct counters {
    uint64_t all_insns, insns, l1i_acc, l1i_miss, l2_acc, l2_miss, l2_data_acc, l2_data_miss;
    uint64_t itlb_acc, itlb_miss, stlb_miss, cycles;
    uint64_t tb_exec, tb_cross_page, tb_trans, tb_trans_kernel, tb_trans_span;
};

#define FIELDS(X)                                                                            \
    X(all_insns) X(insns) X(l1i_acc) X(l1i_miss) X(l2_acc) X(l2_miss) X(l2_data_acc)         \
    X(l2_data_miss) X(itlb_acc) X(itlb_miss) X(stlb_miss) X(cycles) X(tb_exec)                \
    X(tb_cross_page) X(tb_trans) X(tb_trans_kernel) X(tb_trans_span)

#define NMARKS 16
static const uint8_t marker[7] = {0x0f, 0x1f, 0x80, 0 /* K */, 0x47, 0x4b, 0x46};

struct tbinfo {
    uint64_t first_page, last_page;   /* 4 KiB pages of the first and last byte */
    unsigned n, kernel;
    int mark;                         /* workload marker in the block, or -1 */
    uint32_t trace_id;                /* trace=: its id once defined, or 0 */
    uint8_t page_shift;
    uint64_t *vaddr;
    uint8_t *size;
};

struct vcpu {
    struct machine m;
    int ready;
    uint64_t prev_last_page;   /* last page of the previous kernel TB, or ~0 */
    uint64_t all_insns, tb_exec, tb_cross_page;
};

static struct vcpu vcpus[MAX_VCPUS];
static struct penalties pen;
static unsigned text_shift = 21;
/* kernel_base=: the lowest kernel address (tests: 0, every instruction) */
static uint64_t kernel_half = 0xffff800000000000ULL;
static bool with_data;
static char *out_path;
static int phase = PRE;
static struct counters snap[NPHASES + 1];   /* totals at each phase's start */
static uint64_t tb_trans, tb_trans_kernel, tb_trans_span;
/* workload segments: counters per marker, and the totals at the current one's start */
static int cur_mark;
static bool mark_seen[NMARKS] = {true};   /* 0: outside the markers */
static struct counters mark_sum[NMARKS], mark_start;
static void *xcalloc(size_t n, size_t size);

/* trace=: the executed kernel blocks of segment trace_mark */
static char *trace_path;
static FILE *trace_f;
static int trace_mark = -1;
static uint64_t trace_max = 256ULL << 20, trace_bytes, trace_execs;
static uint32_t trace_next_id = 1;
static bool trace_truncated;

static void trace_words(const uint32_t *w, size_t n)
{
    if (trace_bytes + 4 * n > trace_max) {
        trace_truncated = true;
        return;
    }
    if (fwrite(w, 4, n, trace_f) != n) {
        fprintf(stderr, "fgk-perf: %s: cannot write\n", trace_path);
        exit(1);
    }
    trace_bytes += 4 * n;
}

/* one execution of kernel block t on vcpu (its definition first, once) */
static void trace_exec(unsigned vcpu, struct tbinfo *t)
{
    uint32_t w;

    if (vcpu >= 16)   /* 4 bits of vCPU in an execution word */
        trace_truncated = true;
    if (trace_truncated)
        return;
    if (!t->trace_id) {
        size_t nw = 5 + (t->n + 3) / 4;
        uint32_t *d = xcalloc(nw, 4);
        d[0] = 0xffffffffu;
        d[1] = trace_next_id;
        d[2] = t->n;
        d[3] = (uint32_t)t->vaddr[0];
        d[4] = (uint32_t)(t->vaddr[0] >> 32);
        memcpy(d + 5, t->size, t->n);
        trace_words(d, nw);
        free(d);
        if (trace_truncated)
            return;
        t->trace_id = trace_next_id++;
        if (trace_next_id >= 1u << 28) {
            trace_truncated = true;
            return;
        }
    }
    w = (uint32_t)vcpu << 28 | t->trace_id;
    trace_words(&w, 1);
    trace_execs++;
}

static struct vcpu *vcpu_get(unsigned idx)
{
    struct vcpu *v;

    if (idx >= MAX_VCPUS) {
        fprintf(stderr, "fgk-perf: vCPU %u: more than %d vCPUs\n", idx, MAX_VCPUS);
        exit(1);
    }
    v = &vcpus[idx];
    if (!v->ready) {
        if (machine_init(&v->m, &pen)) {
            fprintf(stderr, "fgk-perf: out of memory\n");
            exit(1);
        }
        v->prev_last_page = ~0ULL;
        v->ready = 1;
    }
    return v;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (!p) {
        fprintf(stderr, "fgk-perf: out of memory\n");
        exit(1);
    }
    return p;
}

/* a growing text buffer for the report */
struct buf {
    char *s;
    size_t len, cap;
};

static void bprintf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bprintf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n >= 0 && b->s && b->len + n < b->cap) {
            b->len += n;
            return;
        }
        b->cap = b->cap * 2 + n + 256;
        b->s = realloc(b->s, b->cap);
        if (!b->s) {
            fprintf(stderr, "fgk-perf: out of memory\n");
            exit(1);
        }
    }
}

static void totals(struct counters *c)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < MAX_VCPUS; i++) {
        struct vcpu *v = &vcpus[i];
        if (!v->ready)
            continue;
        c->all_insns += v->all_insns;
        c->insns += v->m.insns;
        c->l1i_acc += v->m.l1i.accesses;
        c->l1i_miss += v->m.l1i.misses;
        c->l2_acc += v->m.l2.accesses;
        c->l2_miss += v->m.l2.misses;
        c->l2_data_acc += v->m.l2_data_accesses;
        c->l2_data_miss += v->m.l2_data_misses;
        c->itlb_acc += v->m.itlb4k.accesses + v->m.itlb2m.accesses;
        c->itlb_miss += v->m.itlb_misses;
        c->stlb_miss += v->m.stlb_misses;
        c->cycles += machine_cycles(&v->m);
        c->tb_exec += v->tb_exec;
        c->tb_cross_page += v->tb_cross_page;
    }
    c->tb_trans = tb_trans;
    c->tb_trans_kernel = tb_trans_kernel;
    c->tb_trans_span = tb_trans_span;
}

static void switch_mark(int k)
{
    struct counters now;

    totals(&now);
#define ADD(f) mark_sum[cur_mark].f += now.f - mark_start.f;
    FIELDS(ADD)
#undef ADD
    mark_start = now;
    cur_mark = k;
    mark_seen[k] = true;
}

/* the marker's K, or -1: `0f 1f 80 K 47 4b 46` anywhere in the instruction
 * (after prefixes: 16-bit code needs an address-size prefix for disp32) */
static int find_marker(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i + sizeof marker <= n; i++) {
        if (!memcmp(p + i, marker, 3) && !memcmp(p + i + 4, marker + 4, 3) && p[i + 3] < NMARKS)
            return p[i + 3];
    }
    return -1;
}

static void enter_phase(int p)
{
    while (phase < p)
        totals(&snap[++phase]);
}

static void tb_exec(unsigned int vcpu_index, void *udata)
{
    struct tbinfo *t = udata;
    struct vcpu *v = vcpu_get(vcpu_index);

    /* a phase (or workload) starts with the block that starts it */
    if (t->mark >= 0)
        switch_mark(t->mark);
    if (!t->kernel) {
        if (phase == BOOT && t->vaddr[0] >= USER_LOW && t->vaddr[0] < USER_END)
            enter_phase(RUN);
        v->all_insns += t->n;
        v->prev_last_page = ~0ULL;
        return;
    }
    if (phase == PRE)
        enter_phase(BOOT);
    v->all_insns += t->n;
    v->tb_exec++;
    /* TCG chains a direct jump only to a TB on the same guest page: a
     * kernel TB entered from a TB that ended on another page was reached
     * through the TB lookup (or an indirect jump, exception, interrupt) */
    if (v->prev_last_page != ~0ULL && v->prev_last_page != t->first_page)
        v->tb_cross_page++;
    v->prev_last_page = t->last_page;
    if (trace_f && cur_mark == trace_mark)
        trace_exec(vcpu_index, t);
    for (unsigned i = 0; i < t->n; i++)
        machine_fetch(&v->m, t->vaddr[i], t->size[i], t->page_shift);
}

static void mem_access(unsigned int vcpu_index, qemu_plugin_meminfo_t info, uint64_t vaddr,
                       void *udata)
{
    (void)info;
    (void)udata;
    machine_data(&vcpu_get(vcpu_index)->m, vaddr);
}

static void tb_trans_cb(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    struct tbinfo *t = xcalloc(1, sizeof *t);
    uint64_t start = qemu_plugin_tb_vaddr(tb), end;

    (void)id;
    t->n = n;
    t->kernel = start >= kernel_half;
    t->page_shift = (start >= IMAGE_START && start < IMAGE_END) ? text_shift : 12;
    t->vaddr = xcalloc(n ? n : 1, sizeof *t->vaddr);
    t->size = xcalloc(n ? n : 1, sizeof *t->size);
    t->vaddr[0] = start;
    t->mark = -1;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        t->vaddr[i] = qemu_plugin_insn_vaddr(insn);
        t->size[i] = qemu_plugin_insn_size(insn);
        if (t->size[i] >= sizeof marker && t->mark < 0)
            t->mark = find_marker(qemu_plugin_insn_data(insn), t->size[i]);
        if (t->kernel && with_data)
            qemu_plugin_register_vcpu_mem_cb(insn, mem_access, QEMU_PLUGIN_CB_NO_REGS,
                                             QEMU_PLUGIN_MEM_RW, NULL);
    }
    end = n ? t->vaddr[n - 1] + (t->size[n - 1] ? t->size[n - 1] : 1) - 1 : start;
    t->first_page = start >> 12;
    t->last_page = end >> 12;
    tb_trans++;
    if (t->kernel) {
        tb_trans_kernel++;
        if (t->first_page != t->last_page)
            tb_trans_span++;
    }
    qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS, t);
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
    struct buf s = {0};
    (void)id;
    (void)p;

    enter_phase(RUN);
    totals(&snap[NPHASES]);
    switch_mark(cur_mark);
    bprintf(&s,
                           "model: l1i=32KiB/8way/64B l1d=48KiB/12way l2=1MiB/16way/64B "
                           "itlb4k=128/8way itlb2m=8/full stlb=1536/12way text_page=%s data=%s\n",
                           text_shift == 21 ? "2M" : "4K", with_data ? "on" : "off");
    bprintf(&s,
                           "penalties: base=%u l2_hit=%u l2_miss=%u stlb_hit=%u walk=%u\n",
                           pen.base, pen.l2_hit, pen.l2_miss, pen.stlb_hit, pen.walk);
    for (int ph = 0; ph < NPHASES; ph++) {
        struct counters *a = &snap[ph], *b = &snap[ph + 1];
        bprintf(&s, "phase=%s", phase_name[ph]);
#define PR(f) bprintf(&s, " " #f "=%" PRIu64, b->f - a->f);
        FIELDS(PR)
#undef PR
        bprintf(&s, "\n");
    }
    for (int k = 0; k < NMARKS; k++) {
        if (!mark_seen[k])
            continue;
        bprintf(&s, "work=%d", k);
#define PR(f) bprintf(&s, " " #f "=%" PRIu64, mark_sum[k].f);
        FIELDS(PR)
#undef PR
        bprintf(&s, "\n");
    }
    if (trace_f) {
        bprintf(&s, "trace_mark=%d trace_execs=%" PRIu64 " trace_blocks=%u trace_bytes=%" PRIu64
                " trace_truncated=%d\n", trace_mark, trace_execs, trace_next_id - 1, trace_bytes,
                trace_truncated);
        if (fclose(trace_f))
            fprintf(stderr, "fgk-perf: %s: cannot write\n", trace_path);
        trace_f = NULL;
    }
    if (out_path) {
        FILE *f = fopen(out_path, "w");
        if (!f || fputs(s.s, f) == EOF || fclose(f)) {
            fprintf(stderr, "fgk-perf: %s: cannot write\n", out_path);
        }
    } else {
        qemu_plugin_outs(s.s);
    }
    free(s.s);
}

static int parse_uint(const char *key, const char *val, unsigned *out)
{
    char *end;
    unsigned long v = strtoul(val, &end, 10);
    if (!*val || *end || v > 100000) {
        fprintf(stderr, "fgk-perf: %s=%s: not a cycle count\n", key, val);
        return -1;
    }
    *out = v;
    return 0;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                           int argc, char **argv)
{
    (void)info;
    machine_default_penalties(&pen);
    for (int i = 0; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        const char *key = argv[i], *val;
        if (!eq) {
            fprintf(stderr, "fgk-perf: %s: expected key=value\n", argv[i]);
            return -1;
        }
        *eq = 0;
        val = eq + 1;
        if (!strcmp(key, "out")) {
            out_path = strdup(val);
        } else if (!strcmp(key, "text_page")) {
            if (!strcmp(val, "2M"))
                text_shift = 21;
            else if (!strcmp(val, "4K"))
                text_shift = 12;
            else {
                fprintf(stderr, "fgk-perf: text_page=%s: 2M or 4K\n", val);
                return -1;
            }
        } else if (!strcmp(key, "kernel_base")) {
            char *end;
            kernel_half = strtoull(val, &end, 16);
            if (!*val || *end) {
                fprintf(stderr, "fgk-perf: kernel_base=%s: not a hex address\n", val);
                return -1;
            }
        } else if (!strcmp(key, "trace")) {
            trace_path = strdup(val);
        } else if (!strcmp(key, "trace_mark") || !strcmp(key, "trace_max")) {
            char *end;
            unsigned long v = strtoul(val, &end, 10);
            bool mark = !strcmp(key, "trace_mark");
            if (!*val || *end || (mark ? v < 1 || v >= NMARKS : v < 1 || v > 65536)) {
                fprintf(stderr, "fgk-perf: %s=%s: %s\n", key, val,
                        mark ? "a workload marker, 1..15" : "a size in MiB, 1..65536");
                return -1;
            }
            if (mark)
                trace_mark = (int)v;
            else
                trace_max = (uint64_t)v << 20;
        } else if (!strcmp(key, "data")) {
            if (!qemu_plugin_bool_parse(key, val, &with_data)) {
                fprintf(stderr, "fgk-perf: data=%s: on or off\n", val);
                return -1;
            }
        } else if (!strcmp(key, "base") ? parse_uint(key, val, &pen.base)
                   : !strcmp(key, "l2_hit") ? parse_uint(key, val, &pen.l2_hit)
                   : !strcmp(key, "l2_miss") ? parse_uint(key, val, &pen.l2_miss)
                   : !strcmp(key, "stlb_hit") ? parse_uint(key, val, &pen.stlb_hit)
                   : !strcmp(key, "walk") ? parse_uint(key, val, &pen.walk)
                   : (fprintf(stderr, "fgk-perf: %s: unknown argument\n", key), -1)) {
            return -1;
        }
    }
    if (!trace_path != (trace_mark < 0)) {
        fprintf(stderr, "fgk-perf: trace= and trace_mark= go together\n");
        return -1;
    }
    if (trace_path) {
        trace_f = fopen(trace_path, "wb");
        if (!trace_f || fputs("FGKTRC1\n", trace_f) == EOF) {
            fprintf(stderr, "fgk-perf: %s: cannot create the trace\n", trace_path);
            return -1;
        }
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans_cb);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
