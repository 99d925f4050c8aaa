/* perf-model: cache and TLB model (see model.h, docs/runtime-cost.md). */
#include "model.h"
#include <stdlib.h>
#include <string.h>

int cache_init(struct cache *c, uint64_t entries, unsigned ways, unsigned shift)
{
    memset(c, 0, sizeof *c);
    if (!ways || entries % ways)
        return -1;
    c->sets = entries / ways;
    c->ways = ways;
    c->shift = shift;
    c->tag = calloc(entries, sizeof *c->tag);
    c->stamp = calloc(entries, sizeof *c->stamp);
    return c->tag && c->stamp ? 0 : -1;
}

void cache_free(struct cache *c)
{
    free(c->tag);
    free(c->stamp);
    c->tag = c->stamp = NULL;
}

int cache_access(struct cache *c, uint64_t addr)
{
    uint64_t blk = addr >> c->shift;
    unsigned set = blk % c->sets;
    uint64_t *t = c->tag + (uint64_t)set * c->ways, *s = c->stamp + (uint64_t)set * c->ways;
    unsigned i, victim = 0;

    c->accesses++;
    c->clock++;
    for (i = 0; i < c->ways; i++)
        if (t[i] == blk + 1) {
            s[i] = c->clock;
            return 1;
        }
    for (i = 1; i < c->ways; i++)
        if (s[i] < s[victim])
            victim = i;
    t[victim] = blk + 1;
    s[victim] = c->clock;
    c->misses++;
    return 0;
}

void machine_default_penalties(struct penalties *p)
{
    p->base = 1;
    p->l2_hit = 12;
    p->l2_miss = 40;
    p->stlb_hit = 9;
    p->walk = 30;
}

int machine_init(struct machine *m, const struct penalties *p)
{
    memset(m, 0, sizeof *m);
    m->pen = *p;
    m->last_line = m->last_page = ~0ULL;
    /* L1i 32 KiB 8-way 64 B; L2 1 MiB 16-way 64 B; iTLB 4K: 128 entries
     * 8-way; iTLB 2M: 8 entries fully associative; STLB 1536 entries
     * 12-way, shared by both page sizes; L1d (data=on) 48 KiB 12-way (Skylake-like, docs/runtime-cost.md) */
    if (cache_init(&m->l1i, 32768 / 64, 8, 6) || cache_init(&m->l1d, 49152 / 64, 12, 6) || cache_init(&m->l2, 1048576 / 64, 16, 6) ||
        cache_init(&m->itlb4k, 128, 8, 12) || cache_init(&m->itlb2m, 8, 8, 21) ||
        cache_init(&m->stlb, 1536, 12, 12))
        return -1;
    return 0;
}

void machine_free(struct machine *m)
{
    cache_free(&m->l1i);
    cache_free(&m->l1d);
    cache_free(&m->l2);
    cache_free(&m->itlb4k);
    cache_free(&m->itlb2m);
    cache_free(&m->stlb);
}

static void fetch_line(struct machine *m, uint64_t line)
{
    /* the MRU line of an LRU set stays MRU: a repeat is a hit that changes
     * nothing, so it is not looked up (nor counted as an access) */
    if (line == m->last_line)
        return;
    m->last_line = line;
    if (!cache_access(&m->l1i, line << 6))
        cache_access(&m->l2, line << 6);
}

static void fetch_page(struct machine *m, uint64_t vaddr, unsigned page_shift)
{
    uint64_t page = (vaddr >> page_shift) << 1 | (page_shift == 21);
    int hit;

    if (page == m->last_page)
        return;
    m->last_page = page;
    hit = page_shift == 21 ? cache_access(&m->itlb2m, vaddr) : cache_access(&m->itlb4k, vaddr);
    if (hit)
        return;
    m->itlb_misses++;
    /* the STLB holds both sizes; a 2M entry's key (vaddr >> 21 << 12) is below
     * 2^55 while a kernel-half 4K key is above 2^63: they never collide */
    if (!cache_access(&m->stlb, page_shift == 21 ? (vaddr >> 21) << 12 : vaddr))
        m->stlb_misses++;
}

void machine_fetch(struct machine *m, uint64_t vaddr, unsigned size, unsigned page_shift)
{
    uint64_t first = vaddr >> 6, last = (vaddr + (size ? size : 1) - 1) >> 6;

    m->insns++;
    fetch_page(m, vaddr, page_shift);
    if ((vaddr >> page_shift) != ((vaddr + (size ? size : 1) - 1) >> page_shift))
        fetch_page(m, vaddr + size - 1, page_shift);
    fetch_line(m, first);
    if (last != first)
        fetch_line(m, last);
}

void machine_data(struct machine *m, uint64_t vaddr)
{
    if (cache_access(&m->l1d, vaddr))
        return;
    m->l2_data_accesses++;
    if (!cache_access(&m->l2, vaddr))
        m->l2_data_misses++;
}

uint64_t machine_cycles(const struct machine *m)
{
    uint64_t l2_ifetch_miss = m->l2.misses - m->l2_data_misses;
    uint64_t l2_ifetch_hit = m->l1i.misses - l2_ifetch_miss;

    return m->insns * m->pen.base + l2_ifetch_hit * m->pen.l2_hit +
           l2_ifetch_miss * (m->pen.l2_hit + m->pen.l2_miss) +
           (m->itlb_misses - m->stlb_misses) * m->pen.stlb_hit +
           m->stlb_misses * (m->pen.stlb_hit + m->pen.walk);
}
