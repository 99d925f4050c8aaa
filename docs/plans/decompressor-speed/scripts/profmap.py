#!/usr/bin/env python3
"""usage: profmap.py PROF DISASSEMBLY [OUT]: map prof.py's run-time PCs to the
decompressor's link addresses (objdump -d --no-show-raw-insn of
arch/x86/boot/compressed/vmlinux; the offset is found from the hot PCs) and
print instructions per function; OUT gets "linkaddr count" lines."""
import sys, re, bisect, collections
prof, dis = sys.argv[1], sys.argv[2]
pcs = {}
for l in open(prof):
    a, n = l.split(); pcs[int(a, 16)] = int(n)
starts = set(); syms = []
for l in open(dis):
    m = re.match(r'^([0-9a-f]+) <([^>]+)>:', l)
    if m: syms.append((int(m.group(1), 16), m.group(2))); continue
    m = re.match(r'^\s+([0-9a-f]+):', l)
    if m: starts.add(int(m.group(1), 16))
hot = sorted(pcs, key=lambda p: -pcs[p])[:2000]
lo, hi = min(starts), max(starts)
best = None
cands = collections.Counter()
# candidate offsets: hot pc - start with same low 12 bits
bylow = collections.defaultdict(list)
for s in starts: bylow[s & 0xfff].append(s)
for p in hot[:50]:
    for s in bylow[p & 0xfff]:
        cands[p - s] += 1
for off, c in cands.most_common(5):
    score = sum(1 for p in hot if (p - off) in starts)
    if not best or score > best[1]: best = (off, score)
off = best[0]
print("offset %x score %d/%d" % (off, best[1], len(hot)), file=sys.stderr)
syms.sort(); keys = [s[0] for s in syms]
per = collections.Counter(); tot = 0
out = open(sys.argv[3], 'w') if len(sys.argv) > 3 else None
for p, n in pcs.items():
    l = p - off
    if lo <= l <= hi + 16:
        i = bisect.bisect_right(keys, l) - 1
        per[syms[i][1]] += n; tot += n
        if out: out.write("%x %d\n" % (l, n))
for s, n in per.most_common(40):
    print("%-40s %12d" % (s, n))
print("total", tot)
