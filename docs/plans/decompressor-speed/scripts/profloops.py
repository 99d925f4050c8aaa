#!/usr/bin/env python3
"""usage: profloops.py MAPPED DISASSEMBLY FUNCTION [MIN [MAX]]: profmap.py's
"linkaddr count" lines grouped into loops: each run of consecutive
instructions of FUNCTION whose counts are from MIN (default 20000) to MAX,
with its instruction count and its instructions executed (M), largest first.
Run-time counts that differ by a few (a loop's entry and exit) stay in one
run; a loop nested in another shows as a run of its own."""
import re
import sys

cnt = {}
for line in open(sys.argv[1]):
    a, n = line.split()
    cnt[int(a, 16)] = int(n)
fn = sys.argv[3]
lo = int(sys.argv[4]) if len(sys.argv) > 4 else 20000
hi = int(sys.argv[5]) if len(sys.argv) > 5 else 1 << 62
on = False
runs, cur = [], None
for line in open(sys.argv[2]):
    m = re.match(r'^([0-9a-f]+) <([^>]+)>:', line)
    if m:
        on = m.group(2) == fn
        continue
    if not on:
        continue
    m = re.match(r'^\s+([0-9a-f]+):', line)
    if not m:
        continue
    a = int(m.group(1), 16)
    n = cnt.get(a, 0)
    if lo <= n <= hi:
        if cur is None:
            cur = [a, a, 0, 0]
        cur[1] = a
        cur[2] += n
        cur[3] += 1
    elif cur is not None and n < lo:
        runs.append(cur)
        cur = None
if cur is not None:
    runs.append(cur)
for r in sorted(runs, key=lambda r: -r[2])[:30]:
    print("%x-%x %3d insns %6.2f M" % (r[0], r[1], r[3], r[2] / 1e6))
