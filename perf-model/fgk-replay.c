/* fgk-replay: runs a kernel block trace written by fgk-perf (trace=,
 * trace_mark=) through the same cache and TLB model (model.c), with the
 * code moved by a map: the cost of one workload's instruction stream under
 * another text layout (docs/runtime-cost.md, "Remedies").
 *
 *   fgk-replay [--map FILE] [--lines FILE] [--sets FILE [--hot N]] [--pairs FILE] [--warm] [--text-page 2M|4K] TRACE
 *
 * --map FILE: lines "OLD_START OLD_END NEW_START" (hex, half-open ranges,
 *   no overlaps, any order): an instruction at OLD_START + d with d below
 *   OLD_END - OLD_START is fetched at NEW_START + d; every other address
 *   stays.  '#' lines and blank lines are ignored.
 * --lines FILE: the L1i misses per 64-byte line of the trace's own
 *   addresses (before the map: "LINE MISSES FETCHES", hex, decimal,
 *   decimal, by line), charged to the line of the instruction whose fetch
 *   missed; FETCHES: in how many block executions an instruction starting
 *   in that line ran.  Lines that never missed are left out (with the
 *   caches cold at the start, every fetched line misses once).
 * --sets FILE: per L1i set (0..63) of the fetched (mapped) addresses,
 *   "SET LINES MISSES": how many distinct lines of that set the trace
 *   fetches in at least N block executions (--hot N, default 1), and the
 *   L1i misses in it; more hot lines than its 8 ways can thrash a set.
 * --pairs FILE: the L1i misses of each block execution charged to the pair
 *   (address of the previous block's last instruction on that vCPU,
 *   address of the block's first), "FROM TO MISSES" (traced addresses;
 *   FROM ffffffffffffffff for a vCPU's first block): which transitions
 *   (calls, returns, jumps between functions) lead into code that missed.
 * --text-page: as fgk-perf's text_page= (default 2M): the kernel image
 *   0xffffffff80000000..0xffffffffc0000000 on 2 MiB pages, the rest 4 KiB.
 *
 * Each vCPU of the trace gets its own model, as in the plugin; the caches
 * start empty (the plugin's are warm from what ran before the segment), or
 * with --warm as the trace leaves them: it is run twice, the second time
 * counted.
 * Prints key=value lines: insns, l1i_miss, l2_miss, itlb_miss, stlb_miss,
 * cycles, execs, blocks.  Bad input: one line naming the file, exit 1.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#define IMAGE_START 0xffffffff80000000ULL
#define IMAGE_END 0xffffffffc0000000ULL
#define NVCPU 16

struct range {
    uint64_t start, end, to;
};

struct block {
    unsigned n;
    uint8_t shift;
    uint64_t *addr;   /* mapped */
    uint64_t *orig;   /* as traced (for --lines) */
    uint8_t *size;
};

static const char *prog = "fgk-replay";

static void die(const char *file, const char *msg)
{
    fprintf(stderr, "%s: %s: %s\n", prog, file, msg);
    exit(1);
}

static void *xalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        fprintf(stderr, "%s: out of memory\n", prog);
        exit(1);
    }
    return p;
}

static int range_cmp(const void *a, const void *b)
{
    const struct range *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static struct range *read_map(const char *path, size_t *n)
{
    FILE *f = fopen(path, "r");
    char line[256];
    size_t cap = 0, lineno = 0;
    struct range *r = NULL;

    *n = 0;
    if (!f)
        die(path, "cannot open");
    while (fgets(line, sizeof line, f)) {
        struct range x;
        char *p = line, *end;
        char msg[80];
        lineno++;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '#' || *p == '\n' || !*p)
            continue;
        x.start = strtoull(p, &end, 16);
        if (end == p)
            goto bad;
        p = end;
        x.end = strtoull(p, &end, 16);
        if (end == p)
            goto bad;
        p = end;
        x.to = strtoull(p, &end, 16);
        if (end == p || (*end && *end != '\n' && *end != ' ') || x.end <= x.start)
            goto bad;
        if (*n == cap) {
            cap = cap * 2 + 1024;
            r = realloc(r, cap * sizeof *r);
            if (!r)
                die(path, "out of memory");
        }
        r[(*n)++] = x;
        continue;
bad:
        snprintf(msg, sizeof msg, "line %zu: expected OLD_START OLD_END NEW_START (hex)", lineno);
        die(path, msg);
    }
    fclose(f);
    qsort(r, *n, sizeof *r, range_cmp);
    for (size_t i = 1; i < *n; i++)
        if (r[i].start < r[i - 1].end)
            die(path, "overlapping ranges");
    return r;
}

static uint64_t map_addr(const struct range *r, size_t n, uint64_t a)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {   /* the last range starting at or below a */
        size_t mid = (lo + hi) / 2;
        if (r[mid].start <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo && a < r[lo - 1].end)
        return r[lo - 1].to + (a - r[lo - 1].start);
    return a;
}

/* counts per line: open addressing, key line+1 */
struct ltab {
    uint64_t *key, *val;
    size_t cap, n;
};
static struct ltab miss_lines, fetched_lines, orig_fetched;

static void line_add(struct ltab *t, uint64_t line)
{
    uint64_t *ltab_key = t->key, *ltab_val = t->val;
    size_t ltab_cap = t->cap, ltab_n = t->n;

    if (2 * (ltab_n + 1) > ltab_cap) {
        size_t oc = ltab_cap;
        uint64_t *ok = ltab_key, *ov = ltab_val;
        ltab_cap = oc ? 2 * oc : 65536;
        ltab_key = xalloc(ltab_cap * sizeof *ltab_key);
        ltab_val = xalloc(ltab_cap * sizeof *ltab_val);
        ltab_n = 0;
        for (size_t i = 0; i < oc; i++) {
            if (!ok[i])
                continue;
            size_t h = (ok[i] * 0x9e3779b97f4a7c15ULL) & (ltab_cap - 1);
            while (ltab_key[h])
                h = (h + 1) & (ltab_cap - 1);
            ltab_key[h] = ok[i];
            ltab_val[h] = ov[i];
            ltab_n++;
        }
        free(ok);
        free(ov);
    }
    size_t h = ((line + 1) * 0x9e3779b97f4a7c15ULL) & (ltab_cap - 1);
    while (ltab_key[h] && ltab_key[h] != line + 1)
        h = (h + 1) & (ltab_cap - 1);
    if (!ltab_key[h]) {
        ltab_key[h] = line + 1;
        ltab_n++;
    }
    ltab_val[h]++;
    t->key = ltab_key;
    t->val = ltab_val;
    t->cap = ltab_cap;
    t->n = ltab_n;
}

/* misses per (previous block's last line, block's first line) */
static struct {
    uint64_t *from, *to, *val;
    size_t cap, n;
} pairs;

static void pair_add(uint64_t from, uint64_t to, uint64_t inc)
{
    if (2 * (pairs.n + 1) > pairs.cap) {
        size_t oc = pairs.cap;
        uint64_t *of = pairs.from, *ot = pairs.to, *ov = pairs.val;
        pairs.cap = oc ? 2 * oc : 65536;
        pairs.from = xalloc(pairs.cap * sizeof *pairs.from);
        pairs.to = xalloc(pairs.cap * sizeof *pairs.to);
        pairs.val = xalloc(pairs.cap * sizeof *pairs.val);
        pairs.n = 0;
        for (size_t i = 0; i < oc; i++)
            if (ov[i])
                pair_add(of[i], ot[i], ov[i]);
        free(of);
        free(ot);
        free(ov);
    }
    size_t h = ((from * 0x9e3779b97f4a7c15ULL) ^ (to * 0xc2b2ae3d27d4eb4fULL)) & (pairs.cap - 1);
    while (pairs.val[h] && (pairs.from[h] != from || pairs.to[h] != to))
        h = (h + 1) & (pairs.cap - 1);
    if (!pairs.val[h]) {
        pairs.from[h] = from;
        pairs.to[h] = to;
        pairs.n++;
    }
    pairs.val[h] += inc;
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const char *map_path = NULL, *lines_path = NULL, *sets_path = NULL, *trace_path = NULL;
    uint64_t set_miss[64] = {0}, set_lines[64] = {0}, hot = 1;
    bool warm = false;
    const char *pairs_path = NULL;
    uint64_t last_orig[NVCPU];

    memset(last_orig, 0xff, sizeof last_orig);
    unsigned text_shift = 21;
    struct range *map = NULL;
    size_t nmap = 0, nblocks = 0, cap = 0;
    struct block *blocks = NULL;
    struct machine m[NVCPU];
    bool used[NVCPU] = {false};
    struct penalties pen;
    uint64_t execs = 0;
    uint32_t w;
    char magic[8];
    FILE *f;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--map") && i + 1 < argc)
            map_path = argv[++i];
        else if (!strcmp(argv[i], "--lines") && i + 1 < argc)
            lines_path = argv[++i];
        else if (!strcmp(argv[i], "--pairs") && i + 1 < argc)
            pairs_path = argv[++i];
        else if (!strcmp(argv[i], "--warm"))
            warm = true;
        else if (!strcmp(argv[i], "--sets") && i + 1 < argc)
            sets_path = argv[++i];
        else if (!strcmp(argv[i], "--hot") && i + 1 < argc) {
            char *end;
            hot = strtoull(argv[++i], &end, 10);
            if (!*argv[i] || *end || !hot) {
                fprintf(stderr, "%s: --hot %s: a count of block executions, 1 or more\n", prog, argv[i]);
                return 2;
            }
        }
        else if (!strcmp(argv[i], "--text-page") && i + 1 < argc) {
            i++;
            if (!strcmp(argv[i], "2M"))
                text_shift = 21;
            else if (!strcmp(argv[i], "4K"))
                text_shift = 12;
            else {
                fprintf(stderr, "%s: --text-page %s: 2M or 4K\n", prog, argv[i]);
                return 2;
            }
        } else if (argv[i][0] != '-' && !trace_path)
            trace_path = argv[i];
        else {
            fprintf(stderr, "usage: %s [--map FILE] [--lines FILE] [--sets FILE [--hot N]] [--pairs FILE] [--warm] [--text-page 2M|4K] TRACE\n",
                    prog);
            return 2;
        }
    }
    if (!trace_path) {
        fprintf(stderr, "usage: %s [--map FILE] [--lines FILE] [--sets FILE [--hot N]] [--pairs FILE] [--warm] [--text-page 2M|4K] TRACE\n",
                prog);
        return 2;
    }
    if (map_path)
        map = read_map(map_path, &nmap);
    f = fopen(trace_path, "rb");
    if (!f)
        die(trace_path, "cannot open");
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, "FGKTRC1\n", 8))
        die(trace_path, "not an fgk-perf trace (no FGKTRC1 header)");
    machine_default_penalties(&pen);
    for (int pass = warm ? 0 : 1; pass < 2; pass++) {
    bool counting = pass == 1;
    if (pass == 1 && warm) {   /* again, from warm caches, counting from zero */
        if (fseek(f, 8, SEEK_SET))
            die(trace_path, "cannot seek");
        execs = 0;
        for (int v = 0; v < NVCPU; v++) {
            struct cache *cs[] = {&m[v].l1i, &m[v].l1d, &m[v].l2, &m[v].itlb4k, &m[v].itlb2m, &m[v].stlb};
            if (!used[v])
                continue;
            for (size_t c = 0; c < sizeof cs / sizeof *cs; c++)
                cs[c]->accesses = cs[c]->misses = 0;
            m[v].insns = m[v].l2_data_accesses = m[v].l2_data_misses = 0;
            m[v].itlb_misses = m[v].stlb_misses = 0;
        }
    }
    while (fread(&w, 4, 1, f) == 1) {
        if (w == 0xffffffffu) {
            uint32_t h[4];
            struct block *b;
            if (fread(h, 4, 4, f) != 4)
                die(trace_path, "truncated block definition");
            if (pass == 1 && warm && h[0] <= nblocks) {   /* defined in the first pass */
                if (fseek(f, (blocks[h[0] - 1].n + 3) / 4 * 4, SEEK_CUR))
                    die(trace_path, "truncated block definition");
                continue;
            }
            if (h[0] != nblocks + 1)
                die(trace_path, "block ids out of sequence");
            if (!h[1] || h[1] > 4096)
                die(trace_path, "block with a bad instruction count");
            if (nblocks == cap) {
                cap = cap * 2 + 4096;
                blocks = realloc(blocks, cap * sizeof *blocks);
                if (!blocks)
                    die(trace_path, "out of memory");
            }
            b = &blocks[nblocks++];
            b->n = h[1];
            b->addr = xalloc(b->n * sizeof *b->addr);
            b->orig = xalloc(b->n * sizeof *b->orig);
            b->size = xalloc((b->n + 3) / 4 * 4);
            if (fread(b->size, 1, (b->n + 3) / 4 * 4, f) != (b->n + 3) / 4 * 4)
                die(trace_path, "truncated block definition");
            uint64_t a = h[2] | (uint64_t)h[3] << 32;
            b->shift = (a >= IMAGE_START && a < IMAGE_END) ? text_shift : 12;
            for (unsigned i = 0; i < b->n; i++) {
                b->orig[i] = a;
                b->addr[i] = map_addr(map, nmap, a);
                a += b->size[i];
            }
            continue;
        }
        unsigned vcpu = w >> 28, id = w & 0x0fffffffu;
        if (!id || id > nblocks)
            die(trace_path, "execution of an undefined block");
        if (!used[vcpu]) {
            if (machine_init(&m[vcpu], &pen))
                die(trace_path, "out of memory");
            used[vcpu] = true;
        }
        struct block *b = &blocks[id - 1];
        struct machine *mm = &m[vcpu];
        uint64_t prev_line = ~0ULL, prev_orig = ~0ULL, block_before = mm->l1i.misses;
        execs++;
        for (unsigned i = 0; i < b->n; i++) {
            uint64_t before = mm->l1i.misses;
            machine_fetch(mm, b->addr[i], b->size[i], b->shift);
            if (!counting)
                continue;
            if (lines_path && (b->orig[i] >> 6) != prev_orig) {   /* once per block execution */
                prev_orig = b->orig[i] >> 6;
                line_add(&orig_fetched, prev_orig);
            }
            if (mm->l1i.misses != before) {
                if (lines_path)
                    line_add(&miss_lines, b->orig[i] >> 6);
                /* the instruction's first or last line missed: charge the last */
                set_miss[((b->addr[i] + (b->size[i] ? b->size[i] : 1) - 1) >> 6) & 63] +=
                    mm->l1i.misses - before;
            }
            if (sets_path) {   /* once per block execution */
                uint64_t l0 = b->addr[i] >> 6, l1 = (b->addr[i] + (b->size[i] ? b->size[i] : 1) - 1) >> 6;
                if (l0 != prev_line)
                    line_add(&fetched_lines, l0);
                if (l1 != l0)
                    line_add(&fetched_lines, l1);
                prev_line = l1;
            }
        }
        if (counting && pairs_path && mm->l1i.misses != block_before)
            pair_add(last_orig[vcpu], b->orig[0], mm->l1i.misses - block_before);
        last_orig[vcpu] = b->orig[b->n - 1];
    }
    if (ferror(f))
        die(trace_path, "read error");
    }
    fclose(f);

    uint64_t insns = 0, l1i = 0, l2 = 0, itlb = 0, stlb = 0, cycles = 0;
    for (int v = 0; v < NVCPU; v++) {
        if (!used[v])
            continue;
        insns += m[v].insns;
        l1i += m[v].l1i.misses;
        l2 += m[v].l2.misses;
        itlb += m[v].itlb_misses;
        stlb += m[v].stlb_misses;
        cycles += machine_cycles(&m[v]);
    }
    if (pairs_path) {
        FILE *o = fopen(pairs_path, "w");
        if (!o)
            die(pairs_path, "cannot create");
        for (size_t i = 0; i < pairs.cap; i++)
            if (pairs.val[i])
                fprintf(o, "%016" PRIx64 " %016" PRIx64 " %" PRIu64 "\n", pairs.from[i],
                        pairs.to[i], pairs.val[i]);
        if (fclose(o))
            die(pairs_path, "cannot write");
    }
    if (sets_path) {
        FILE *o = fopen(sets_path, "w");
        if (!o)
            die(sets_path, "cannot create");
        for (size_t i = 0; i < fetched_lines.cap; i++)
            if (fetched_lines.key[i] && fetched_lines.val[i] >= hot)
                set_lines[(fetched_lines.key[i] - 1) & 63]++;
        for (int k = 0; k < 64; k++)
            fprintf(o, "%d %" PRIu64 " %" PRIu64 "\n", k, set_lines[k], set_miss[k]);
        if (fclose(o))
            die(sets_path, "cannot write");
    }
    if (lines_path) {
        FILE *o = fopen(lines_path, "w");
        uint64_t *pairs = xalloc(2 * miss_lines.n * sizeof *pairs);
        size_t k = 0;
        if (!o)
            die(lines_path, "cannot create");
        for (size_t i = 0; i < miss_lines.cap; i++)
            if (miss_lines.key[i]) {
                pairs[2 * k] = miss_lines.key[i] - 1;
                pairs[2 * k + 1] = miss_lines.val[i];
                k++;
            }
        qsort(pairs, k, 2 * sizeof *pairs, u64_cmp);
        for (size_t i = 0; i < k; i++) {
            uint64_t fetches = 0, key = pairs[2 * i] + 1;
            size_t h = (key * 0x9e3779b97f4a7c15ULL) & (orig_fetched.cap - 1);
            while (orig_fetched.key[h] && orig_fetched.key[h] != key)
                h = (h + 1) & (orig_fetched.cap - 1);
            if (orig_fetched.key[h])
                fetches = orig_fetched.val[h];
            fprintf(o, "%016" PRIx64 " %" PRIu64 " %" PRIu64 "\n", pairs[2 * i] << 6,
                    pairs[2 * i + 1], fetches);
        }
        if (fclose(o))
            die(lines_path, "cannot write");
    }
    printf("insns=%" PRIu64 " l1i_miss=%" PRIu64 " l2_miss=%" PRIu64 " itlb_miss=%" PRIu64
           " stlb_miss=%" PRIu64 " cycles=%" PRIu64 " execs=%" PRIu64 " blocks=%zu\n",
           insns, l1i, l2, itlb, stlb, cycles, execs, nblocks);
    return 0;
}
