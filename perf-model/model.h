/* perf-model: the instruction-side cache and TLB model of fgk's run-time
 * cost plugin (docs/runtime-cost.md).  Plain C, no QEMU: the plugin and the
 * unit test (test_model.c) use the same code.
 *
 * A cache is set-associative with true LRU: cache_access() returns 1 on a
 * hit, 0 on a miss (the line is then filled, evicting the set's LRU way).
 */
#ifndef FGK_PERF_MODEL_H
#define FGK_PERF_MODEL_H
#include <stdint.h>

struct cache {
    unsigned sets, ways, shift;   /* shift: log2(line or page size) */
    uint64_t *tag;                /* sets*ways, tag+1 (0 = empty) */
    uint64_t *stamp;              /* LRU stamps */
    uint64_t clock;
    uint64_t accesses, misses;
};

int cache_init(struct cache *c, uint64_t size_entries, unsigned ways, unsigned shift);
void cache_free(struct cache *c);
int cache_access(struct cache *c, uint64_t addr);

/* The machine: L1i -> unified L2; iTLB (4 KiB and 2 MiB arrays) -> STLB. */
struct penalties {
    unsigned base;     /* cycles per instruction without i-side stalls */
    unsigned l2_hit;   /* L1i miss that hits L2 */
    unsigned l2_miss;  /* L2 miss (served by L3) */
    unsigned stlb_hit; /* iTLB miss that hits the STLB */
    unsigned walk;     /* STLB miss: page walk */
};

struct machine {
    struct cache l1i, l1d, l2, itlb4k, itlb2m, stlb;
    struct penalties pen;
    uint64_t last_line, last_page;   /* MRU shortcut: same line, same page */
    uint64_t insns, l2_data_accesses, l2_data_misses;
    uint64_t itlb_misses, stlb_misses;
};

void machine_default_penalties(struct penalties *p);
int machine_init(struct machine *m, const struct penalties *p);
void machine_free(struct machine *m);
/* one instruction fetch of size bytes at vaddr; page_shift 12 or 21 */
void machine_fetch(struct machine *m, uint64_t vaddr, unsigned size, unsigned page_shift);
/* a data access: L1d (48 KiB 12-way), on a miss the unified L2 */
void machine_data(struct machine *m, uint64_t vaddr);
uint64_t machine_cycles(const struct machine *m);

#endif
