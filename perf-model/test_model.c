/* perf-model unit test: the cache and TLB model against counts worked out
 * by hand (each case says how).  Exit status 0 when every check holds. */
#include "model.h"
#include <inttypes.h>
#include <stdio.h>

static int failed;

#define CHECK(what, got, want)                                                                \
    do {                                                                                      \
        uint64_t g_ = (got), w_ = (want);                                                     \
        if (g_ != w_) {                                                                       \
            printf("FAIL %s: %" PRIu64 ", expected %" PRIu64 "\n", what, g_, w_);            \
            failed = 1;                                                                       \
        } else {                                                                              \
            printf("ok   %s: %" PRIu64 "\n", what, g_);                                       \
        }                                                                                     \
    } while (0)

/* a loop body of `bytes` bytes of 4-byte instructions at base, run `iters` times */
static void loop(struct machine *m, uint64_t base, uint64_t bytes, int iters, unsigned shift)
{
    for (int i = 0; i < iters; i++)
        for (uint64_t a = 0; a < bytes; a += 4)
            machine_fetch(m, base + a, 4, shift);
}

int main(void)
{
    struct penalties p;
    struct machine m;
    struct cache c;
    const uint64_t K = 0xffffffff81000000ULL;

    machine_default_penalties(&p);

    /* LRU by hand: 1 set of 2 ways.  A B A(hit) C: C evicts B (LRU), the
     * set holds A C; B evicts A; A evicts C: 1 hit, 5 misses. */
    cache_init(&c, 2, 2, 6);
    uint64_t seq[] = {0, 64, 0, 128, 64, 0};
    int hits = 0;
    for (unsigned i = 0; i < 6; i++)
        hits += cache_access(&c, seq[i]);
    CHECK("2-way LRU: hits in A B A C B A", hits, 1);
    CHECK("2-way LRU: misses", c.misses, 5);
    cache_free(&c);

    /* 16 KiB loop (half of L1i), 10 iterations: 256 lines miss once (cold),
     * never again; 4096 insns per iteration. */
    machine_init(&m, &p);
    loop(&m, K, 16384, 10, 21);
    CHECK("16 KiB loop: instructions", m.insns, 40960);
    CHECK("16 KiB loop: L1i misses (cold only)", m.l1i.misses, 256);
    CHECK("16 KiB loop: L1i accesses (one per line entered)", m.l1i.accesses, 2560);
    CHECK("16 KiB loop: L2 misses (cold only)", m.l2.misses, 256);
    CHECK("16 KiB loop: iTLB misses (one 2M page)", m.itlb_misses, 1);
    /* cycles: 40960*1 + 256 lines * (12 + 40) + 1 iTLB miss * (9 + 30) */
    CHECK("16 KiB loop: cycles", machine_cycles(&m), 40960 + 256 * 52 + 39);
    machine_free(&m);

    /* 64 KiB loop (twice L1i) run in order: LRU with 8 ways per set and 16
     * lines per set in the loop misses every line every time: 1024 lines x
     * 10 iterations; L2 (1 MiB) keeps them after the first pass. */
    machine_init(&m, &p);
    loop(&m, K, 65536, 10, 21);
    CHECK("64 KiB loop: L1i misses (every line, every pass)", m.l1i.misses, 10240);
    CHECK("64 KiB loop: L2 misses (cold only)", m.l2.misses, 1024);
    machine_free(&m);

    /* Exactly 32 KiB: fits (8 lines per set, 8 ways): cold misses only. */
    machine_init(&m, &p);
    loop(&m, K, 32768, 5, 21);
    CHECK("32 KiB loop: L1i misses (cold only)", m.l1i.misses, 512);
    machine_free(&m);

    /* iTLB: 16 KiB loop spans 4 pages of 4 KiB: 4 cold misses, all STLB
     * misses; a 2 MiB page: 1.  Then 129 distinct 4K pages round robin: 128
     * entries in 16 sets of 8; pages 0..128 put 9 pages in set 0 (0, 16, ...,
     * 128): set 0 misses each time (LRU, 9 > 8), other 15 sets hit;
     * 9 misses per pass after the first; the STLB (1536) holds all 129. */
    machine_init(&m, &p);
    loop(&m, K, 16384, 3, 12);
    CHECK("16 KiB loop, 4K pages: iTLB misses", m.itlb_misses, 4);
    CHECK("16 KiB loop, 4K pages: STLB misses", m.stlb_misses, 4);
    machine_free(&m);

    machine_init(&m, &p);
    for (int pass = 0; pass < 3; pass++)
        for (uint64_t pg = 0; pg <= 128; pg++)
            machine_fetch(&m, K + (pg << 12), 4, 12);
    CHECK("129 4K pages x 3: iTLB misses", m.itlb_misses, 129 + 2 * 9);
    CHECK("129 4K pages x 3: STLB misses", m.stlb_misses, 129);
    machine_free(&m);

    /* An instruction across a line boundary touches two lines. */
    machine_init(&m, &p);
    machine_fetch(&m, K + 62, 5, 21);
    CHECK("insn across a line: L1i misses", m.l1i.misses, 2);
    machine_free(&m);

    /* data=on: a data access hitting L1d does not reach L2. */
    machine_init(&m, &p);
    machine_data(&m, K);
    machine_data(&m, K + 8);
    CHECK("data: L2 accesses (the first only)", m.l2_data_accesses, 1);
    machine_free(&m);

    printf(failed ? "perf-model: FAILED\n" : "perf-model: all checks passed\n");
    return failed;
}
