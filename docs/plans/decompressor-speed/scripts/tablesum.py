#!/usr/bin/env python3
"""usage: tablesum.py DIR...
Boot each kernel dir with fgkaslr_seed=5eed.. nokaslr; sha256 of the pages of the
shuffled region and of the tables the decompressor rewrites (ORC, kallsyms index and
offsets, exception table), read from /proc/kcore after boot."""
import sys
from pathlib import Path
from guest import boot_seeded, kcore_offset
RANGES = [("region", "__fgkaslr_text_start", "__fgkaslr_text_end"),
          ("orc_ip", "__start_orc_unwind_ip", "__stop_orc_unwind_ip"),
          ("orc", "__start_orc_unwind", "__stop_orc_unwind"),
          ("ks_idx", "kallsyms_fgk_idx", None),
          ("ks_offsets", "kallsyms_offsets", None),
          ("extable", "__start___ex_table", "__stop___ex_table")]
def syms(kdir):
    m = {}
    for l in open(kdir / "System.map"):
        a, t, n = l.split()
        m[n] = int(a, 16)
    return m
for kd in sys.argv[1:]:
    kdir = Path(kd)
    m = syms(kdir)
    t = m["_text"]
    after = sorted(set(m.values()))
    cmd = kcore_offset(t)
    for name, s, e in RANGES:
        a = m[s]
        if e:
            b = m[e]
        else:   # to the next symbol
            b = min(x for x in after if x > a)
        skip, count = (a - t) // 4096, (b - t + 4095) // 4096 - (a - t) // 4096
        cmd += f"echo {name} $(dd if=/proc/kcore bs=4096 skip=$((off/4096+{skip})) count={count} 2>/dev/null | sha256sum)\n"
    cmd += "grep -E '^(flags|sections):' /proc/fgkaslr_stats\n"
    r = boot_seeded(kdir, cmd)
    print("==", kdir.name)
    print(r.output, flush=True)
