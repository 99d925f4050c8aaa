#!/usr/bin/env python3
"""usage: profannot.py MAPPED DISASSEMBLY FUNCTION [MIN]: the function's
instructions run at least MIN times, with their counts."""
import sys, re
cnt = {}
for l in open(sys.argv[1]):
    a, n = l.split(); cnt[int(a, 16)] = int(n)
fn = sys.argv[3]; thr = int(sys.argv[4]) if len(sys.argv) > 4 else 100000
on = False
for l in open(sys.argv[2]):
    m = re.match(r'^([0-9a-f]+) <([^>]+)>:', l)
    if m: on = m.group(2) == fn; continue
    if not on: continue
    m = re.match(r'^\s+([0-9a-f]+):', l)
    if m:
        n = cnt.get(int(m.group(1), 16), 0)
        if n >= thr: print("%10d %s" % (n, l.rstrip()))
